// RUN: ge-opt %s -p fuse --split-input-file | filecheck %s
// TbeReduceElemwiseFusionPass: a reduction with its elementwise producers and consumers.

// A decomposed LayerNorm (two reductions, shared intermediates) becomes one kernel.
func.func @decomposed_layer_norm(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %d = graph.sub %x, %mean : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %sq = graph.pow %d, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %ve = graph.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = graph.sqrt %ve : tensor<2x1xf32>
  %y = graph.div %d, %sd : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @decomposed_layer_norm
// CHECK:         %y = fusion.group "reduce" ["TbeReduceElemwiseFusionPass"]
// CHECK-COUNT-2:   graph.reduce_mean
// CHECK:           graph.div
// CHECK-NEXT:      fusion.yield
// CHECK-NOT:     fusion.group

// -----

// The scale and mask of attention scores join the softmax; the exp after it too.
func.func @scaled_masked_softmax(%s: tensor<2x4xf32>, %m: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %k = graph.constant dense<0.125> : tensor<f32>
  %a = graph.mul %s, %k : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %b = graph.add %a, %m : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = graph.softmax %b {axis = 1 : i64} : tensor<2x4xf32>
  %e = graph.exp %p : tensor<2x4xf32>
  func.return %e : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @scaled_masked_softmax
// CHECK:         %e = fusion.group "reduce" ["TbeReduceElemwiseFusionPass"] ins(%s, %m)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.softmax
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      fusion.yield

// -----

// Must not fire backwards: a producer whose result is also used elsewhere stays outside.
func.func @shared_producer(%s: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = graph.neg %s : tensor<2x4xf32>
  %p = graph.softmax %a {axis = 1 : i64} : tensor<2x4xf32>
  func.return %a, %p : tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @shared_producer
// CHECK:         %a = fusion.group "elementwise" [] ins(%s)
// CHECK:         %p = fusion.group "reduce" [] ins(%a)
