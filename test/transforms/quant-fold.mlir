// RUN: ge-opt %s -p quant-fold --split-input-file | filecheck %s

// quant-fold turns dequantize(int8 x) -> Conv / MatMul / Gemm <- dequantize(const int8 w)
// into quant_conv2d / quant_matmul (int8 x int8 -> int32) and one dequantize by
// sx * sw. Here sx = 0.5, sw = [0.25, 0.125]: the accumulator's scale is [0.125, 0.0625];
// the i32 bias already has that scale, so it is used as is. The activation's zero point 3
// becomes input_offset.

// CHECK-LABEL: func.func @conv_exact_bias(%x: tensor<1x1x3x3xi8>) -> tensor<1x2x3x3xf32> {
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1{{\]\]\]}}, {{\[\[\[}}-2{{\]\]\]\]}}> : tensor<2x1x1x1xi8>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[8, -5]> : tensor<2xi32>
// CHECK-NEXT:    %[[ACC:.*]] = graph.quant_conv2d %x, %[[W]], %[[B]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_offset = 3 : i64} : (tensor<1x1x3x3xi8>, tensor<2x1x1x1xi8>, tensor<2xi32>) -> tensor<1x2x3x3xi32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1.250000e-01, 6.250000e-02]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.dequantize %[[ACC]], %[[S]] {axis = 1 : i64, offset = 0 : i64} : (tensor<1x2x3x3xi32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x2x3x3xf32>
func.func @conv_exact_bias(%x: tensor<1x1x3x3xi8>) -> tensor<1x2x3x3xf32> {
  %sx = graph.constant dense<5.000000e-01> : tensor<f32>
  %w = graph.constant dense<[[[[1]]], [[[-2]]]]> : tensor<2x1x1x1xi8>
  %sw = graph.constant dense<[2.500000e-01, 1.250000e-01]> : tensor<2xf32>
  %b = graph.constant dense<[8, -5]> : tensor<2xi32>
  %sb = graph.constant dense<[1.250000e-01, 6.250000e-02]> : tensor<2xf32>
  %xf = graph.dequantize %x, %sx {axis = 0 : i64, offset = 3 : i64} : (tensor<1x1x3x3xi8>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %wf = graph.dequantize %w, %sw {axis = 0 : i64, offset = 0 : i64} : (tensor<2x1x1x1xi8>, tensor<2xf32>) -> tensor<2x1x1x1xf32>
  %bf = graph.dequantize %b, %sb {axis = 0 : i64, offset = 0 : i64} : (tensor<2xi32>, tensor<2xf32>) -> tensor<2xf32>
  %y = graph.conv2d %xf, %wf, %bf {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// A float bias is quantized with the accumulator's scale [0.125, 0.0625], rounding half
// to even: [1.0, -0.3] -> [1.0 / 0.125, -0.3 / 0.0625] = [8, -4.8] -> [8, -5]. A weight
// with zero point 3 is centered: [4, 1] - 3 = [1, -2].

// CHECK-LABEL: func.func @conv_float_bias
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1{{\]\]\]}}, {{\[\[\[}}-2{{\]\]\]\]}}> : tensor<2x1x1x1xi8>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[8, -5]> : tensor<2xi32>
// CHECK-NEXT:    %[[ACC:.*]] = graph.quant_conv2d %x, %[[W]], %[[B]] {{.*}}input_offset = 0 : i64}
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1.250000e-01, 6.250000e-02]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.dequantize %[[ACC]], %[[S]] {axis = 1 : i64, offset = 0 : i64}
// CHECK-NEXT:    func.return %[[Y]]
func.func @conv_float_bias(%x: tensor<1x1x3x3xi8>) -> tensor<1x2x3x3xf32> {
  %sx = graph.constant dense<5.000000e-01> : tensor<f32>
  %w = graph.constant dense<[[[[4]]], [[[1]]]]> : tensor<2x1x1x1xi8>
  %sw = graph.constant dense<[2.500000e-01, 1.250000e-01]> : tensor<2xf32>
  %bf = graph.constant dense<[1.0, -0.3]> : tensor<2xf32>
  %xf = graph.dequantize %x, %sx {axis = 0 : i64, offset = 0 : i64} : (tensor<1x1x3x3xi8>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %wf = graph.dequantize %w, %sw {axis = 0 : i64, offset = 3 : i64} : (tensor<2x1x1x1xi8>, tensor<2xf32>) -> tensor<2x1x1x1xf32>
  %y = graph.conv2d %xf, %wf, %bf {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// Gemm with trans_b and alpha = 2: B [N=2, K=3] is transposed to [K, N] for quant_matmul,
// and the dequantize scale is alpha * sx * sw = 2 * 0.5 * [0.25, 0.5] = [0.25, 0.5]; the
// float C [1.0, 1.25] becomes round(C / [0.25, 0.5]) = [4, 2] (2.5 rounds to even).

// CHECK-LABEL: func.func @gemm_trans_b
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[}}1, 4], [2, 5], [3, 6]]> : tensor<3x2xi8>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[4, 2]> : tensor<2xi32>
// CHECK-NEXT:    %[[ACC:.*]] = graph.quant_matmul %x, %[[W]], %[[B]] {lhs_offset = -1 : i64} : (tensor<4x3xi8>, tensor<3x2xi8>, tensor<2xi32>) -> tensor<4x2xi32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.dequantize %[[ACC]], %[[S]] {axis = 1 : i64, offset = 0 : i64} : (tensor<4x2xi32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gemm_trans_b(%x: tensor<4x3xi8>) -> tensor<4x2xf32> {
  %sx = graph.constant dense<5.000000e-01> : tensor<f32>
  %w = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %sw = graph.constant dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>
  %c = graph.constant dense<[1.0, 1.25]> : tensor<2xf32>
  %xf = graph.dequantize %x, %sx {axis = 0 : i64, offset = -1 : i64} : (tensor<4x3xi8>, tensor<f32>) -> tensor<4x3xf32>
  %wf = graph.dequantize %w, %sw {axis = 0 : i64, offset = 0 : i64} : (tensor<2x3xi8>, tensor<2xf32>) -> tensor<2x3xf32>
  %y = graph.gemm %xf, %wf, %c {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_b} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

// MatMul with a per-tensor weight scale: one scalar dequantize scale 0.5 * 0.25.

// CHECK-LABEL: func.func @matmul_per_tensor
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[}}1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>
// CHECK-NEXT:    %[[ACC:.*]] = graph.quant_matmul %x, %[[W]] {lhs_offset = 0 : i64} : (tensor<2x4x3xi8>, tensor<3x2xi8>) -> tensor<2x4x2xi32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:    %[[Y:.*]] = graph.dequantize %[[ACC]], %[[S]] {axis = 0 : i64, offset = 0 : i64} : (tensor<2x4x2xi32>, tensor<f32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @matmul_per_tensor(%x: tensor<2x4x3xi8>) -> tensor<2x4x2xf32> {
  %sx = graph.constant dense<5.000000e-01> : tensor<f32>
  %w = graph.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>
  %sw = graph.constant dense<2.500000e-01> : tensor<f32>
  %xf = graph.dequantize %x, %sx {axis = 0 : i64, offset = 0 : i64} : (tensor<2x4x3xi8>, tensor<f32>) -> tensor<2x4x3xf32>
  %wf = graph.dequantize %w, %sw {axis = 0 : i64, offset = 0 : i64} : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %y = graph.matmul %xf, %wf : (tensor<2x4x3xf32>, tensor<3x2xf32>) -> tensor<2x4x2xf32>
  func.return %y : tensor<2x4x2xf32>
}

// -----

// Not folded, so the Q/DQ stay and run elementwise around the float op: a weight that is
// not a constant, and a weight whose zero point takes it out of int8 (-128 - 1).

// CHECK-LABEL: func.func @not_folded
// CHECK:         graph.dequantize %w
// CHECK:         %[[Y1:.*]] = graph.matmul
// CHECK:         graph.dequantize %c
// CHECK:         %[[Y2:.*]] = graph.matmul
// CHECK-NOT:     graph.quant_matmul
// CHECK:         func.return %[[Y1]], %[[Y2]]
func.func @not_folded(%x: tensor<4x3xi8>, %w: tensor<3x2xi8>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %s = graph.constant dense<5.000000e-01> : tensor<f32>
  %c = graph.constant dense<[[-128, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>
  %xf = graph.dequantize %x, %s {axis = 0 : i64, offset = 0 : i64} : (tensor<4x3xi8>, tensor<f32>) -> tensor<4x3xf32>
  %wf = graph.dequantize %w, %s {axis = 0 : i64, offset = 0 : i64} : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %y1 = graph.matmul %xf, %wf : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %cf = graph.dequantize %c, %s {axis = 0 : i64, offset = 1 : i64} : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %y2 = graph.matmul %xf, %cf : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %y1, %y2 : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// A batched constant weight with an activation zero point (z = 2): the Cube takes no zero
// point, and one [N] bias cannot carry a correction that differs per batch, so the product
// runs with offset 0 and -z * sum_k(b) (per batch and column: [[-2, 4]], [[10, 0]]) is added
// in int32: (a - z) @ b = a @ b - z * sum_k(b).
// CHECK-LABEL: func.func @batched_weight_zero_point(%a: tensor<2x3x2xi8>) -> tensor<2x3x2xi32> {
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %[[ACC:.*]] = graph.quant_matmul %a, %b {lhs_offset = 0 : i64} : (tensor<2x3x2xi8>, tensor<2x2x2xi8>) -> tensor<2x3x2xi32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<{{\[\[\[}}-2, 4{{\]\]}}, {{\[\[}}10, 0{{\]\]\]}}> : tensor<2x1x2xi32>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[ACC]], %[[C]] : (tensor<2x3x2xi32>, tensor<2x1x2xi32>) -> tensor<2x3x2xi32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x3x2xi32>
func.func @batched_weight_zero_point(%a: tensor<2x3x2xi8>) -> tensor<2x3x2xi32> {
  %b = graph.constant dense<[[[1, -1], [0, -1]], [[-2, 3], [-3, -3]]]> : tensor<2x2x2xi8>
  %y = graph.quant_matmul %a, %b {lhs_offset = 2 : i64} : (tensor<2x3x2xi8>, tensor<2x2x2xi8>) -> tensor<2x3x2xi32>
  func.return %y : tensor<2x3x2xi32>
}
