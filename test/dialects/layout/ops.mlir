// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

// Round trip of the layout dialect: `layout.trans_data` between every kind of format pair
// (plain <-> NC1HWC0 from NCHW and NHWC origins, NCHW -> NHWC storage, FRACTAL_Z,
// FRACTAL_NZ with a batch dim, NC1HWC0 -> FRACTAL_NZ, int8 with C0 = 32, a rank-3
// broadcast operand right-aligned into NC1HWC0), and graph ops whose operands and results
// carry `#layout.fmt` encodings (conv on NC1HWC0 + FRACTAL_Z, a per-channel constant
// broadcast in NC1HWC0, concat, pools, shape, matmul on FRACTAL_NZ, a single-element plain
// operand of an elementwise op on FRACTAL_NZ).

// CHECK:         builtin.module {
// CHECK-GENERIC: "builtin.module"() ({

// CHECK-LABEL: func.func @trans_data(%x: tensor<2x20x3x3xf16>, %n: tensor<2x3x3x20xf16>, %w: tensor<20x3x2x2xf16>, %m: tensor<3x20x30xf16>, %q: tensor<1x40x2x2xi8>, %c: tensor<20x1x1xf32>)
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "trans_data"
func.func @trans_data(%x: tensor<2x20x3x3xf16>, %n: tensor<2x3x3x20xf16>, %w: tensor<20x3x2x2xf16>, %m: tensor<3x20x30xf16>, %q: tensor<1x40x2x2xi8>, %c: tensor<20x1x1xf32>) {
  // CHECK-GENERIC: ^bb0(%x: tensor<2x20x3x3xf16>, %n: tensor<2x3x3x20xf16>, %w: tensor<20x3x2x2xf16>, %m: tensor<3x20x30xf16>, %q: tensor<1x40x2x2xi8>, %c: tensor<20x1x1xf32>):
  %a = layout.trans_data %x : tensor<2x20x3x3xf16> to tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>
  // CHECK-NEXT: %a = layout.trans_data %x : tensor<2x20x3x3xf16> to tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>
  // CHECK-GENERIC-NEXT: %a = "layout.trans_data"(%x) : (tensor<2x20x3x3xf16>) -> tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>
  %b = layout.trans_data %a : tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>> to tensor<2x20x3x3xf16>
  // CHECK-NEXT: %b = layout.trans_data %a : tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>> to tensor<2x20x3x3xf16>
  // CHECK-GENERIC-NEXT: %b = "layout.trans_data"(%a) : (tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>) -> tensor<2x20x3x3xf16>
  %h = layout.trans_data %n : tensor<2x3x3x20xf16> to tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NHWC [2, 3, 3, 20]>>
  // CHECK-NEXT: %h = layout.trans_data %n : tensor<2x3x3x20xf16> to tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NHWC [2, 3, 3, 20]>>
  // CHECK-GENERIC-NEXT: %h = "layout.trans_data"(%n) : (tensor<2x3x3x20xf16>) -> tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NHWC [2, 3, 3, 20]>>
  %p = layout.trans_data %x : tensor<2x20x3x3xf16> to tensor<2x3x3x20xf16, #layout.fmt<NHWC, origin NCHW [2, 20, 3, 3]>>
  // CHECK-NEXT: %p = layout.trans_data %x : tensor<2x20x3x3xf16> to tensor<2x3x3x20xf16, #layout.fmt<NHWC, origin NCHW [2, 20, 3, 3]>>
  // CHECK-GENERIC-NEXT: %p = "layout.trans_data"(%x) : (tensor<2x20x3x3xf16>) -> tensor<2x3x3x20xf16, #layout.fmt<NHWC, origin NCHW [2, 20, 3, 3]>>
  %z = layout.trans_data %w : tensor<20x3x2x2xf16> to tensor<4x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 2, 2]>>
  // CHECK-NEXT: %z = layout.trans_data %w : tensor<20x3x2x2xf16> to tensor<4x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 2, 2]>>
  // CHECK-GENERIC-NEXT: %z = "layout.trans_data"(%w) : (tensor<20x3x2x2xf16>) -> tensor<4x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 2, 2]>>
  %nz = layout.trans_data %m : tensor<3x20x30xf16> to tensor<3x2x2x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [3, 20, 30]>>
  // CHECK-NEXT: %nz = layout.trans_data %m : tensor<3x20x30xf16> to tensor<3x2x2x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [3, 20, 30]>>
  // CHECK-GENERIC-NEXT: %nz = "layout.trans_data"(%m) : (tensor<3x20x30xf16>) -> tensor<3x2x2x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [3, 20, 30]>>
  %nz2 = layout.trans_data %a : tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>> to tensor<2x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [2, 20, 3, 3]>>
  // CHECK-NEXT: %nz2 = layout.trans_data %a : tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>> to tensor<2x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [2, 20, 3, 3]>>
  // CHECK-GENERIC-NEXT: %nz2 = "layout.trans_data"(%a) : (tensor<2x2x3x3x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 20, 3, 3]>>) -> tensor<2x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [2, 20, 3, 3]>>
  %i8 = layout.trans_data %q : tensor<1x40x2x2xi8> to tensor<1x2x2x2x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 2, 2]>>
  // CHECK-NEXT: %i8 = layout.trans_data %q : tensor<1x40x2x2xi8> to tensor<1x2x2x2x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 2, 2]>>
  // CHECK-GENERIC-NEXT: %i8 = "layout.trans_data"(%q) : (tensor<1x40x2x2xi8>) -> tensor<1x2x2x2x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 2, 2]>>
  %bc = layout.trans_data %c : tensor<20x1x1xf32> to tensor<1x3x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
  // CHECK-NEXT: %bc = layout.trans_data %c : tensor<20x1x1xf32> to tensor<1x3x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
  // CHECK-GENERIC-NEXT: %bc = "layout.trans_data"(%c) : (tensor<20x1x1xf32>) -> tensor<1x3x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}

// CHECK-LABEL: func.func @graph_ops(%x: tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %a: tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>)
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "graph_ops"
func.func @graph_ops(%x: tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %a: tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>) {
  // CHECK-GENERIC: ^bb0(%x: tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %a: tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>):
  %w = graph.constant dense<2.500000e-01> : tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>
  // CHECK-NEXT: %w = graph.constant dense<2.500000e-01> : tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>
  // CHECK-GENERIC-NEXT: %w = "graph.constant"() <{value = dense<2.500000e-01> : tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>}> : () -> tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>
  %s = graph.constant dense<1.500000e+00> : tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>
  // CHECK-NEXT: %s = graph.constant dense<1.500000e+00> : tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>
  // CHECK-GENERIC-NEXT: %s = "graph.constant"() <{value = dense<1.500000e+00> : tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>}> : () -> tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-NEXT: %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-GENERIC-NEXT: %y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<27x1x16x8xf32, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  %yr = graph.relu %y : tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-NEXT: %yr = graph.relu %y : tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-GENERIC-NEXT: %yr = "graph.relu"(%y) : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  %r = graph.mul %yr, %s : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-NEXT: %r = graph.mul %yr, %s : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  // CHECK-GENERIC-NEXT: %r = "graph.mul"(%yr, %s) : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x2x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [16, 1, 1]>>) -> tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>
  // CHECK-NEXT: %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>
  // CHECK-GENERIC-NEXT: %p = "graph.max_pool"(%x) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>
  %k = graph.concat %r, %p {axis = 1 : i64} : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>) -> tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>
  // CHECK-NEXT: %k = graph.concat %r, %p {axis = 1 : i64} : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>) -> tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>
  // CHECK-GENERIC-NEXT: %k = "graph.concat"(%r, %p) <{axis = 1 : i64}> : (tensor<1x2x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>, tensor<1x3x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>) -> tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>
  %g = graph.global_avg_pool %k : (tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>) -> tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>
  // CHECK-NEXT: %g = graph.global_avg_pool %k : (tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>) -> tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>
  // CHECK-GENERIC-NEXT: %g = "graph.global_avg_pool"(%k) : (tensor<1x5x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>) -> tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>
  %sh = graph.shape %g : (tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>) -> tensor<4xi64>
  // CHECK-NEXT: %sh = graph.shape %g : (tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>) -> tensor<4xi64>
  // CHECK-GENERIC-NEXT: %sh = "graph.shape"(%g) : (tensor<1x5x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 1, 1]>>) -> tensor<4xi64>
  %b = graph.constant dense<5.000000e-01> : tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>
  // CHECK-NEXT: %b = graph.constant dense<5.000000e-01> : tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>
  // CHECK-GENERIC-NEXT: %b = "graph.constant"() <{value = dense<5.000000e-01> : tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>}> : () -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>
  %mm = graph.matmul %a, %b : (tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>, tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  // CHECK-NEXT: %mm = graph.matmul %a, %b : (tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>, tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  // CHECK-GENERIC-NEXT: %mm = "graph.matmul"(%a, %b) : (tensor<2x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 16]>>, tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [16, 8]>>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  %one = graph.constant dense<2.0> : tensor<1xf32>
  // CHECK-NEXT: %one = graph.constant dense<2.000000e+00> : tensor<1xf32>
  // CHECK-GENERIC-NEXT: %one = "graph.constant"() <{value = dense<2.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
  %sc = graph.mul %mm, %one : (tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>, tensor<1xf32>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  // CHECK-NEXT: %sc = graph.mul %mm, %one : (tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>, tensor<1xf32>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  // CHECK-GENERIC-NEXT: %sc = "graph.mul"(%mm, %one) : (tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>, tensor<1xf32>) -> tensor<1x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [1, 8]>>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT:  }
// CHECK-NEXT: }
// CHECK-GENERIC: }) : () -> ()
