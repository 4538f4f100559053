// RUN: ge-opt %s -p fold-batch-norm --split-input-file | filecheck %s

// fold-batch-norm folds an inference BatchNorm, y = x * s + t per channel with
// s = scale / sqrt(var + eps) and t = bias - mean * s, and per-channel Mul / Add by
// constants, into the weights of the Conv / Gemm / MatMul / BatchNorm before it.

// Here s = [1, 2] / sqrt([3, 0] + 1) = [0.5, 2] and t = [0.5, 0] - [1, 2] * s = [0, -4], so
// W' = W * s = [1, 6] and b' = b * s + t = [0.5, -6].

// CHECK-LABEL: func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<[{{\[\[\[}}1.000000e+00{{\]\]\]}}, {{\[\[\[}}6.000000e+00{{\]\]\]}}]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[5.000000e-01, -6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x2x4x4xf32>
func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bias = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// A conv without bias gets one; a Mul then an Add by per-channel constants fold the same
// way (x * [2, 3] + [1, 1]: W' = [4, 9], b' = [1, 1]).

// CHECK-LABEL: func.func @conv_mul_add(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<[{{\[\[\[}}4.000000e+00{{\]\]\]}}, {{\[\[\[}}9.000000e+00{{\]\]\]}}]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %[[W]], %[[B]]
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x2x4x4xf32>
func.func @conv_mul_add(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %s = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %one = graph.constant dense<1.0> : tensor<1x2x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %m = graph.mul %s, %c : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.add %m, %one : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Gemm: the columns of op(B) scale by s and C' = beta * C * s + t (here s = [0.5, 2],
// t = [0, -4], beta = 2: C' = [1, 4]).

// CHECK-LABEL: func.func @gemm_bn(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[}}5.000000e-01, 2.000000e+00], [1.000000e+00, 4.000000e+00{{\]\]}}> : tensor<2x2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[1.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %a, %[[B]], %[[C]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_b}
// CHECK-NEXT:    func.return %[[G]] : tensor<3x2xf32>
func.func @gemm_bn(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = graph.constant dense<[[1.0, 4.0], [0.5, 2.0]]> : tensor<2x2xf32>
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bias = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %g = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 2.0 : f32, trans_b} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y = graph.batch_norm %g, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// A rank-2 MatMul with a constant B and a BatchNorm becomes a Gemm with the shift as C.

// CHECK-LABEL: func.func @matmul_bn(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[}}5.000000e-01, 8.000000e+00], [5.000000e-01, 2.000000e+00{{\]\]}}> : tensor<2x2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[0.000000e+00, -4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %a, %[[B]], %[[C]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %[[G]] : tensor<3x2xf32>
func.func @matmul_bn(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = graph.constant dense<[[1.0, 4.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bias = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %m = graph.matmul %a, %b : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %y = graph.batch_norm %m, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// A per-channel Mul and Add after a BatchNorm that follows no conv fold into its scale and
// bias: scale' = scale * 3, bias' = bias * 3 + 1.

// CHECK-LABEL: func.func @bn_mul_add(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
// CHECK-NEXT:    %[[M:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.constant dense<[3.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[3.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[2.500000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.batch_norm %[[R]], %[[S]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e+00 : f32}
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x2x4x4xf32>
func.func @bn_mul_add(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %scale = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bias = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<2x1x1xf32>
  %r = graph.relu %x : tensor<1x2x4x4xf32>
  %n = graph.batch_norm %r, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %m = graph.mul %n, %three : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %y = graph.add %m, %one : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Must not fold: the conv result has a second user (it would see scaled values); the
// BatchNorm statistics are not constants; the Mul constant varies along W, not along the
// channels.

// CHECK-LABEL: func.func @second_user(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
// CHECK:         %[[C:.*]] = graph.conv2d %x
// CHECK-NEXT:    %[[Y:.*]] = graph.batch_norm %[[C]]
// CHECK-NEXT:    func.return %[[Y]], %[[C]]
func.func @second_user(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %p = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @runtime_stats(%x: tensor<1x1x4x4xf32>, %mean: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
// CHECK:         %[[C:.*]] = graph.conv2d %x
// CHECK-NEXT:    %[[Y:.*]] = graph.batch_norm %[[C]], %{{.*}}, %{{.*}}, %mean, %{{.*}}
// CHECK-NEXT:    func.return %[[Y]]
func.func @runtime_stats(%x: tensor<1x1x4x4xf32>, %mean: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %p = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %p, %p, %mean, %p {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @not_per_channel(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
// CHECK:         %[[C:.*]] = graph.conv2d %x
// CHECK-NEXT:    %[[Y:.*]] = graph.mul %[[C]], %{{.*}}
// CHECK-NEXT:    func.return %[[Y]]
func.func @not_per_channel(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %s = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.mul %c, %s : (tensor<1x2x4x4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Two convs summed (ResNet's projection shortcut and its block's last conv) carry one
// bias: the first keeps [1, 2] + [10, 20] = [11, 22], the second loses its own.

// CHECK-LABEL: func.func @summed_convs(
// CHECK:         %[[B:.*]] = graph.constant dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.conv2d %x, %{{.*}}, %[[B]] {
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %y, %{{.*}} {strides = array<i64: 2, 2>
// CHECK-SAME:      (tensor<1x1x8x8xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[A]], %[[C]]
func.func @summed_convs(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x8x8xf32>) -> tensor<1x2x4x4xf32> {
  %wa = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %ba = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %wb = graph.constant dense<[[[[4.0]]], [[[5.0]]]]> : tensor<2x1x1x1xf32>
  %bb = graph.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %a = graph.conv2d %x, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.conv2d %y, %wb, %bb {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x8x8xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %s = graph.add %a, %c : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %s : tensor<1x2x4x4xf32>
}

// -----

// A conv whose result is used elsewhere too keeps its bias (that user would lose it).

// CHECK-LABEL: func.func @summed_convs_shared(
// CHECK:         graph.conv2d %x, %{{.*}}, %{{.*}} {
// CHECK:         graph.conv2d %x, %{{.*}}, %{{.*}} {
// CHECK:         graph.add
func.func @summed_convs_shared(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %wa = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %ba = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %wb = graph.constant dense<[[[[4.0]]], [[[5.0]]]]> : tensor<2x1x1x1xf32>
  %bb = graph.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %a = graph.conv2d %x, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.conv2d %x, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %s = graph.add %a, %c : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %s, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
