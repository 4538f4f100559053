// RUN: ge-opt %s -p fuse | filecheck %s
// TbePoolElemwiseFusionPass: a pool with the elementwise ops after it.

func.func @pool_then_scale(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %k = graph.constant dense<2.0> : tensor<f32>
  %p = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %m = graph.mul %p, %k : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %r = graph.relu %m : tensor<1x2x2x2xf32>
  func.return %r : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @pool_then_scale
// CHECK:         %r = fusion.group "pool" ["TbePoolElemwiseFusionPass"] ins(%x)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.avg_pool
// CHECK-NEXT:      graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      fusion.yield
