// RUN: ge-opt %s -p fuse-rmsnorm --split-input-file | filecheck %s

// fuse-rmsnorm, the example plugin's pass (examples/ge_plugin_example, README "Extending
// ge"): RMSNorm spelled with standard ops becomes the decomposition of the custom operator
// com.example::RMSNorm; the matched ops are gone. The last case (a mean over another axis)
// is not RMSNorm and must not change.

// CHECK-LABEL: func.func @pow_div(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    %[[SQ:.*]] = graph.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %[[MS:.*]] = graph.reduce_mean %[[SQ]] {axes = array<i64: 1>, keepdims} : (tensor<4x16xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[EPS:.*]] = graph.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[MS]], %[[EPS]]
// CHECK-NEXT:    %[[R:.*]] = graph.sqrt %[[A]] : tensor<4x1xf32>
// CHECK-NEXT:    %[[I:.*]] = graph.reciprocal %[[R]] : tensor<4x1xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.mul %x, %[[I]]
// CHECK-NEXT:    %[[Y:.*]] = graph.mul %[[N]], %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<4x16xf32>
// CHECK-NOT:   graph.pow
// CHECK-NOT:   graph.div
func.func @pow_div(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = graph.constant dense<0.125> : tensor<1xf32>
  %a = graph.add %eps, %ms : (tensor<1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %rms = graph.sqrt %a : tensor<4x1xf32>
  %n = graph.div %x, %rms : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = graph.mul %w, %n : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @other_axis(
// CHECK-NEXT:    graph.mul %x, %x
// CHECK-NEXT:    graph.reduce_mean %{{.*}} {axes = array<i64: 0>, keepdims}
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.sqrt
// CHECK-NEXT:    graph.div %x,
// CHECK-NEXT:    graph.mul %w,
// CHECK-NEXT:    func.return
func.func @other_axis(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %sq = graph.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 0>, keepdims} : (tensor<4x16xf32>) -> tensor<1x16xf32>
  %eps = graph.constant dense<0.125> : tensor<f32>
  %a = graph.add %ms, %eps : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %rms = graph.sqrt %a : tensor<1x16xf32>
  %n = graph.div %x, %rms : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %y = graph.mul %w, %n : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
