// RUN: ge-opt %s -p precision-mode --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'precision-mode{mode=must_keep_origin_dtype}' --split-input-file | filecheck %s --check-prefix=KEEP
// RUN: ge-opt %s -p 'precision-mode{mode=allow_mix_precision}' --split-input-file | filecheck %s --check-prefix=MIX

// precision-mode applies ATC's --precision_mode and records it on the module. The default,
// force_fp16, computes every f32 op in f16: weights are converted at compile time, graph
// inputs and outputs keep f32 through a graph.cast at the boundary.
// must_keep_origin_dtype changes nothing but the record (the KEEP lines check the first
// function; it has no other effect on the others). allow_mix_precision puts Cube ops
// and pools in f16 and softmax / normalizations / exp / log / pow / sqrt, and the ops
// next to them, in f32.

// CHECK:       builtin.module attributes {ge.precision_mode = "force_fp16"} {
// CHECK-LABEL: func.func @conv_softmax(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<1x1x2x2xf32> to tensor<1x1x2x2xf16>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<[{{\[\[\[}}1.000980e+00{{\]\]\]}}, {{\[\[\[}}-2.500000e-01{{\]\]\]}}]> : tensor<2x1x1x1xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %[[X]], %[[W]] {{.*}} : (tensor<1x1x2x2xf16>, tensor<2x1x1x1xf16>) -> tensor<1x2x2x2xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[C]] : tensor<1x2x2x2xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.softmax %[[R]] {axis = 1 : i64} : tensor<1x2x2x2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.cast %[[S]] : tensor<1x2x2x2xf16> to tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x2x2x2xf32>

// KEEP:       builtin.module attributes {ge.precision_mode = "must_keep_origin_dtype"} {
// KEEP-LABEL: func.func @conv_softmax(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
// KEEP-NEXT:    %w = graph.constant dense<[{{\[\[\[}}1.00097704{{\]\]\]}}, {{\[\[\[}}-2.500000e-01{{\]\]\]}}]> : tensor<2x1x1x1xf32>
// KEEP-NEXT:    %c = graph.conv2d %x, %w
// KEEP-NEXT:    %r = graph.relu %c : tensor<1x2x2x2xf32>
// KEEP-NEXT:    %s = graph.softmax %r {axis = 1 : i64} : tensor<1x2x2x2xf32>
// KEEP-NEXT:    func.return %s : tensor<1x2x2x2xf32>

// The relu feeds the softmax: as its neighbour it stays f32 with it.
// MIX:       builtin.module attributes {ge.precision_mode = "allow_mix_precision"} {
// MIX-LABEL: func.func @conv_softmax(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
// MIX-NEXT:    %[[X:.*]] = graph.cast %x : tensor<1x1x2x2xf32> to tensor<1x1x2x2xf16>
// MIX-NEXT:    %[[W:.*]] = graph.constant {{.*}} : tensor<2x1x1x1xf16>
// MIX-NEXT:    %[[C:.*]] = graph.conv2d %[[X]], %[[W]] {{.*}} -> tensor<1x2x2x2xf16>
// MIX-NEXT:    %[[C32:.*]] = graph.cast %[[C]] : tensor<1x2x2x2xf16> to tensor<1x2x2x2xf32>
// MIX-NEXT:    %[[R:.*]] = graph.relu %[[C32]] : tensor<1x2x2x2xf32>
// MIX-NEXT:    %[[S:.*]] = graph.softmax %[[R]] {axis = 1 : i64} : tensor<1x2x2x2xf32>
// MIX-NEXT:    func.return %[[S]] : tensor<1x2x2x2xf32>
func.func @conv_softmax(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<[[[[1.000977]]], [[[-0.25]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %r = graph.relu %c : tensor<1x2x2x2xf32>
  %s = graph.softmax %r {axis = 1 : i64} : tensor<1x2x2x2xf32>
  func.return %s : tensor<1x2x2x2xf32>
}

// -----

// A normalization spelled out (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) after a
// MatMul: under allow_mix_precision the MatMul is f16, and one cast brings its result to
// f32 for the reductions, pow, sqrt and every elementwise op between them. The matmul's
// output is also returned as f32 through the same cast.

// Under force_fp16 everything between the input and output casts is f16.
// CHECK-LABEL: func.func @norm(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<1.250000e-01> : tensor<8x8xf16>
// CHECK-NEXT:    %[[H:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %[[M:.*]] = graph.reduce_mean %[[H]] {{.*}} -> tensor<4x1xf16>
// CHECK-NEXT:    %[[D:.*]] = graph.sub %[[H]], %[[M]] : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<f16>
// CHECK-NEXT:    %[[P:.*]] = graph.pow %[[D]], %[[TWO]] : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %[[V:.*]] = graph.reduce_mean %[[P]] {{.*}} -> tensor<4x1xf16>
// CHECK-NEXT:    %[[EPS:.*]] = graph.constant dense<1.001360e-05> : tensor<f16>
// CHECK-NEXT:    %[[E:.*]] = graph.add %[[V]], %[[EPS]] : (tensor<4x1xf16>, tensor<f16>) -> tensor<4x1xf16>
// CHECK-NEXT:    %[[Q:.*]] = graph.sqrt %[[E]] : tensor<4x1xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.div %[[D]], %[[Q]] : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %[[Y32:.*]] = graph.cast %[[Y]] : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK-NEXT:    %[[H32:.*]] = graph.cast %[[H]] : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[Y32]], %[[H32]] : tensor<4x8xf32>, tensor<4x8xf32>

// MIX-LABEL: func.func @norm(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// MIX-NEXT:    %two = graph.constant dense<2.000000e+00> : tensor<f32>
// MIX-NEXT:    %eps = graph.constant dense<1.000000e-05> : tensor<f32>
// MIX-NEXT:    %[[X:.*]] = graph.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
// MIX-NEXT:    %[[W:.*]] = graph.constant {{.*}} : tensor<8x8xf16>
// MIX-NEXT:    %[[H:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
// MIX-NEXT:    %[[H32:.*]] = graph.cast %[[H]] : tensor<4x8xf16> to tensor<4x8xf32>
// MIX-NEXT:    %[[M:.*]] = graph.reduce_mean %[[H32]] {{.*}} -> tensor<4x1xf32>
// MIX-NEXT:    %[[D:.*]] = graph.sub %[[H32]], %[[M]] : {{.*}} -> tensor<4x8xf32>
// MIX-NEXT:    %[[P:.*]] = graph.pow %[[D]], %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// MIX-NEXT:    %[[V:.*]] = graph.reduce_mean %[[P]] {{.*}} -> tensor<4x1xf32>
// MIX-NEXT:    %[[E:.*]] = graph.add %[[V]], %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
// MIX-NEXT:    %[[Q:.*]] = graph.sqrt %[[E]] : tensor<4x1xf32>
// MIX-NEXT:    %[[Y:.*]] = graph.div %[[D]], %[[Q]] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// MIX-NEXT:    func.return %[[Y]], %[[H32]] : tensor<4x8xf32>, tensor<4x8xf32>
func.func @norm(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = graph.constant dense<0.125> : tensor<8x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %h = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %m = graph.reduce_mean %h {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %h, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %p {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %e = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %q = graph.sqrt %e : tensor<4x1xf32>
  %y = graph.div %d, %q : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Must not change: integer and f64 tensors, and f16 inputs (already f16). A cast to an
// integer takes its input as computed (no f16 rounding in front of it); a ConstantOfShape
// of f32 fills with an f16 value.

// MIX-LABEL: func.func @untouched(
// MIX:         graph.constant_of_shape %{{.*}} {value = dense<1.500000e+00> : tensor<1xf16>}

// CHECK-LABEL: func.func @untouched(%i: tensor<3xi64>, %d: tensor<3xf64>, %h: tensor<3xf16>, %x: tensor<3xf32>) -> (tensor<3xi64>, tensor<3xf64>, tensor<3xf16>, tensor<3xi64>, tensor<2x2xf32>) {
// CHECK-NEXT:    %[[I:.*]] = graph.add %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
// CHECK-NEXT:    %[[D:.*]] = graph.exp %d : tensor<3xf64>
// CHECK-NEXT:    %[[H:.*]] = graph.exp %h : tensor<3xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.cast %x : tensor<3xf32> to tensor<3xi64>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<2> : tensor<2xi64>
// CHECK-NEXT:    %[[F:.*]] = graph.constant_of_shape %[[S]] {value = dense<1.500000e+00> : tensor<1xf16>} : (tensor<2xi64>) -> tensor<2x2xf16>
// CHECK-NEXT:    %[[F32:.*]] = graph.cast %[[F]] : tensor<2x2xf16> to tensor<2x2xf32>
// CHECK-NEXT:    func.return %[[I]], %[[D]], %[[H]], %[[C]], %[[F32]]
func.func @untouched(%i: tensor<3xi64>, %d: tensor<3xf64>, %h: tensor<3xf16>, %x: tensor<3xf32>) -> (tensor<3xi64>, tensor<3xf64>, tensor<3xf16>, tensor<3xi64>, tensor<2x2xf32>) {
  %a = graph.add %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %b = graph.exp %d : tensor<3xf64>
  %c = graph.exp %h : tensor<3xf16>
  %k = graph.cast %x : tensor<3xf32> to tensor<3xi64>
  %s = graph.constant dense<2> : tensor<2xi64>
  %f = graph.constant_of_shape %s {value = dense<1.5> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x2xf32>
  func.return %a, %b, %c, %k, %f : tensor<3xi64>, tensor<3xf64>, tensor<3xf16>, tensor<3xi64>, tensor<2x2xf32>
}
