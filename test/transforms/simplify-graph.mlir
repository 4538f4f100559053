// RUN: ge-opt %s -p simplify-graph --split-input-file | filecheck %s

// simplify-graph removes ops that compute nothing, merges reshape and transpose chains,
// drops neutral operands, and normalizes Gemm with constant weights.

// Identity, inference Dropout, one-input Sum / Concat and a cast to the same type pass
// their input through.

// CHECK-LABEL: func.func @no_ops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x : tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x3xf32>
func.func @no_ops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.identity %x : tensor<2x3xf32>
  %b = graph.dropout %a {ratio = 5.000000e-01 : f32} : tensor<2x3xf32>
  %c = graph.sum %b : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = graph.concat %c {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = graph.cast %d : tensor<2x3xf32> to tensor<2x3xf32>
  %r = graph.relu %e : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// A reshape / flatten / unsqueeze chain is one reshape to the final, static shape; an
// unsqueeze undone by a squeeze disappears.

// CHECK-LABEL: func.func @views(%x: tensor<2x3x4xf32>) -> (tensor<6x4x1xf32>, tensor<2x3x4xf32>) {
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[6, 4, 1]> : tensor<3xi64>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x, %[[S]] : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<6x4x1xf32>
// CHECK-NEXT:    func.return %[[R]], %x : tensor<6x4x1xf32>, tensor<2x3x4xf32>
func.func @views(%x: tensor<2x3x4xf32>) -> (tensor<6x4x1xf32>, tensor<2x3x4xf32>) {
  %s = graph.constant dense<[4, -1]> : tensor<2xi64>
  %a = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  %b = graph.flatten %a {axis = 2 : i64} : (tensor<4x6xf32>) -> tensor<24x1xf32>
  %t = graph.constant dense<[6, -1, 1]> : tensor<3xi64>
  %c = graph.reshape %b, %t : (tensor<24x1xf32>, tensor<3xi64>) -> tensor<6x4x1xf32>
  %u = graph.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x1x4xf32>
  %v = graph.squeeze %u {axes = array<i64: 0, 3>} : (tensor<1x2x3x1x4xf32>) -> tensor<2x3x4xf32>
  func.return %c, %v : tensor<6x4x1xf32>, tensor<2x3x4xf32>
}

// -----

// A reshape whose shape is computed at run time gets the static result shape as a
// constant, and the computation goes away.

// CHECK-LABEL: func.func @dynamic_target(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %x, %[[S]] : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x12xf32>
func.func @dynamic_target(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = graph.shape %x {end = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<1xi64>
  %m = graph.constant dense<-1> : tensor<1xi64>
  %t = graph.concat %s, %m {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = graph.reshape %x, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}

// -----

// Inverse transposes cancel; a pair that is not inverse becomes one transpose with the
// composed permutation (output dim i = input dim p1[p2[i]]), not nothing.

// CHECK-LABEL: func.func @inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT:    func.return %x : tensor<2x3x4xf32>
func.func @inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  func.return %b : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @not_inverse(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<4x3x2xf32>
func.func @not_inverse(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  func.return %b : tensor<4x3x2xf32>
}

// The inner transpose has another user: merging would not save an op, so both stay.

// CHECK-LABEL: func.func @shared_inner(%x: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<3x4x2xf32>) {
// CHECK-NEXT:    %[[A:.*]] = graph.transpose %x {perm = array<i64: 1, 2, 0>}
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %[[A]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    func.return %[[B]], %[[A]]
func.func @shared_inner(%x: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<3x4x2xf32>) {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  func.return %b, %a : tensor<4x3x2xf32>, tensor<3x4x2xf32>
}

// -----

// A cast of a cast whose first step is exact is one cast (f16 -> f32 -> i32 is f16 -> i32),
// or nothing when it comes back to the first type; a first step that rounds (f32 -> f16)
// must stay.

// CHECK-LABEL: func.func @casts(%h: tensor<4xf16>, %x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf16>, tensor<4xf32>) {
// CHECK-NEXT:    %[[I:.*]] = graph.cast %h : tensor<4xf16> to tensor<4xi32>
// CHECK-NEXT:    %[[R:.*]] = graph.cast %x : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.cast %[[R]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT:    func.return %[[I]], %h, %[[B]] : tensor<4xi32>, tensor<4xf16>, tensor<4xf32>
func.func @casts(%h: tensor<4xf16>, %x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf16>, tensor<4xf32>) {
  %a = graph.cast %h : tensor<4xf16> to tensor<4xf32>
  %i = graph.cast %a : tensor<4xf32> to tensor<4xi32>
  %b = graph.cast %h : tensor<4xf16> to tensor<4xf32>
  %back = graph.cast %b : tensor<4xf32> to tensor<4xf16>
  %r = graph.cast %x : tensor<4xf32> to tensor<4xf16>
  %rb = graph.cast %r : tensor<4xf16> to tensor<4xf32>
  func.return %i, %back, %rb : tensor<4xi32>, tensor<4xf16>, tensor<4xf32>
}

// -----

// x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 are x.

// CHECK-LABEL: func.func @neutral(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @neutral(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = graph.constant dense<1.0> : tensor<3xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %a = graph.mul %x, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = graph.mul %one, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = graph.div %b, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d = graph.add %c, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %e = graph.add %zero, %d : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = graph.sub %e, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}

// Not neutral: 1 / x, 0 - x, x * 2, and x * 1 that broadcasts x to a larger shape.

// CHECK-LABEL: func.func @not_neutral(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
// CHECK-NEXT:    %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ONES:.*]] = graph.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.div %[[ONE]], %x
// CHECK-NEXT:    %[[B:.*]] = graph.sub %[[ZERO]], %x
// CHECK-NEXT:    %[[C:.*]] = graph.mul %x, %[[TWO]]
// CHECK-NEXT:    %[[D:.*]] = graph.mul %x, %[[ONES]]
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @not_neutral(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %ones = graph.constant dense<1.0> : tensor<2x3xf32>
  %a = graph.div %one, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %b = graph.sub %zero, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %c = graph.mul %x, %two : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %d = graph.mul %x, %ones : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>
}

// -----

// Gemm with a constant B: trans_b and alpha are folded into B (B' = alpha * B^T), beta
// into a constant C; a Gemm whose B is not a constant keeps its attributes.

// CHECK-LABEL: func.func @gemm(%a: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[}}2.000000e+00, 8.000000e+00, 1.400000e+01, 2.000000e+01], [4.000000e+00, 1.000000e+01, 1.600000e+01, 2.200000e+01], [6.000000e+00, 1.200000e+01, 1.800000e+01, 2.400000e+01{{\]\]}}> : tensor<3x4xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[5.000000e-01, 1.000000e+00, 1.500000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %a, %[[B]], %[[C]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.gemm %a, %w {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_b} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[G]], %[[H]]
func.func @gemm(%a: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %b = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xf32>
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %g = graph.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %h = graph.gemm %a, %w {alpha = 2.0 : f32, beta = 1.0 : f32, trans_b} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %g, %h : tensor<2x4xf32>, tensor<2x4xf32>
}
