// RUN: ge-opt %s -p fuse --split-input-file | filecheck %s
// TbeMatmulElemwiseFusionPass: matmul/gemm + bias + activation + residual add.

func.func @linear_gelu_residual(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %b = graph.constant dense<0.5> : tensor<8xf32>
  %m = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a = graph.add %m, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %g = graph.gelu %a : tensor<2x8xf32>
  %r = graph.add %x, %g : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @linear_gelu_residual
// CHECK:         %r = fusion.group "cube_epilogue" ["TbeMatmulElemwiseFusionPass"] ins(%x, %w, %b)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.gelu
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      fusion.yield

// -----

// Must not fire: a bias along the row dim (not the output channels) is a separate kernel.
func.func @row_bias(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %b = graph.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %m = graph.gemm %x, %w {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a = graph.add %m, %b : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  func.return %a : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @row_bias
// CHECK:         %m = fusion.group "cube_epilogue" [] ins(%x, %w)
// CHECK:         %a = fusion.group "elementwise" [] ins(%m, %b)
