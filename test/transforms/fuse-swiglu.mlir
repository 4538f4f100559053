// RUN: ge-opt %s -p fuse-swiglu --split-input-file | filecheck %s

// fuse-swiglu, the example plugin's pass (examples/ge_plugin_example, README "Extending
// ge"): SwiGLU spelled with standard ops (a two-way Split of the last axis, Sigmoid, two
// Muls in either order) becomes one graph.custom op of com.example::SwiGLU, an operator
// with its own tile kernel; the matched ops are gone. The last case (the gate taken from the
// first half) is another computation and must not change.

// CHECK-LABEL: func.func @swiglu(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
// CHECK-NEXT:    %[[Y:.*]] = graph.custom "SwiGLU"(%x) {domain = "com.example"} : (tensor<4x64xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<4x32xf32>
// CHECK-NEXT:  }
func.func @swiglu(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %a, %g = graph.split %x {axis = 1 : i64, sizes = array<i64: 32, 32>} : (tensor<4x64xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>)
  %s = graph.sigmoid %a : tensor<4x32xf32>
  %silu = graph.mul %s, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %g, %silu : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %y : tensor<4x32xf32>
}

// -----

// CHECK-LABEL: func.func @gate_from_the_first_half(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
// CHECK-NEXT:    graph.split
// CHECK-NEXT:    graph.sigmoid
// CHECK-NEXT:    graph.mul
// CHECK-NEXT:    graph.mul
// CHECK-NOT:     graph.custom
func.func @gate_from_the_first_half(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %a, %g = graph.split %x {axis = 1 : i64, sizes = array<i64: 32, 32>} : (tensor<4x64xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>)
  %s = graph.sigmoid %g : tensor<4x32xf32>
  %silu = graph.mul %g, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %silu, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %y : tensor<4x32xf32>
}
