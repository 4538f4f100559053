// RUN: ge-opt %s --split-input-file -p assign-layouts | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'assign-layouts{target=ascend910b}' | filecheck %s --check-prefix=TARGET
// RUN: not ge-opt %s --split-input-file -p 'assign-layouts{target=ascend999}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// assign-layouts (lowering/assign_layouts.py): graph level -> layout level. Feature-map ops
// in NC1HWC0, conv weights pre-transformed to FRACTAL_Z and matmul weights to FRACTAL_NZ
// at compile time, layout.trans_data only where a value crosses to an op with no native
// implementation in its format, graph inputs and outputs kept plain.

// The module records the chip it is compiled for; an unknown chip is refused by name.
// TARGET:  builtin.module attributes {ge.target = "ascend910b"}
// UNKNOWN: ge-opt: error: a pass failed on {{.*}}assign-layouts.mlir: assign-layouts: unknown target 'ascend999'; known targets: ascend310b, ascend910, ascend910b

// Conv / per-channel scale / ReLU / pool in NC1HWC0 (f16: C0 = 16, 20 channels -> C1 = 2).
// The weight becomes a FRACTAL_Z constant and the scale an NC1HWC0 constant at compile
// time (the originals are gone); only the graph input and output are converted at run time.
// CHECK-LABEL: func.func @conv_chain(%x: tensor<1x3x8x8xf16>) -> tensor<1x20x4x4xf16>
// CHECK-NEXT:    %[[X:.*]] = layout.trans_data %x : tensor<1x3x8x8xf16> to tensor<1x1x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 8, 8]>>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense_resource<{{.*}}> : tensor<9x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 3, 3, 3]>>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<1.000000e+00> : tensor<20xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense_resource<{{.*}}> : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<1x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 8, 8]>>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[Y]], %[[S]] : {{.*}} -> tensor<1x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 8, 8]>>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[M]] : tensor<1x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 8, 8]>>
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool %[[R]] {{.*}} -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    %[[O:.*]] = layout.trans_data %[[P]] : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
// CHECK-NEXT:    func.return %[[O]] : tensor<1x20x4x4xf16>

func.func @conv_chain(%x: tensor<1x3x8x8xf16>) -> tensor<1x20x4x4xf16> {
  %w = graph.constant dense<5.000000e-01> : tensor<20x3x3x3xf16>
  %b = graph.constant dense<1.000000e+00> : tensor<20xf16>
  %s = graph.constant dense<2.000000e+00> : tensor<20x1x1xf16>
  %y = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf16>, tensor<20x3x3x3xf16>, tensor<20xf16>) -> tensor<1x20x8x8xf16>
  %m = graph.mul %y, %s : (tensor<1x20x8x8xf16>, tensor<20x1x1xf16>) -> tensor<1x20x8x8xf16>
  %r = graph.relu %m : tensor<1x20x8x8xf16>
  %p = graph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x20x8x8xf16>) -> tensor<1x20x4x4xf16>
  func.return %p : tensor<1x20x4x4xf16>
}

// -----

// resnet50's tail: the pool stays in NC1HWC0, the reshape before the Gemm needs a plain
// tensor (one conversion), the Gemm weight is a FRACTAL_NZ constant, its activation and
// result stay ND (the softmax takes no storage format).
// CHECK-LABEL: func.func @classifier(%x: tensor<1x32x2x2xf32>) -> tensor<1x10xf32>
// CHECK-NEXT:    %[[X:.*]] = layout.trans_data %x : tensor<1x32x2x2xf32> to tensor<1x4x2x2x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 2, 2]>>
// CHECK-NEXT:    %[[G:.*]] = graph.global_avg_pool %[[X]] : {{.*}} -> tensor<1x4x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 1, 1]>>
// CHECK-NEXT:    %[[GP:.*]] = layout.trans_data %[[G]] : tensor<1x4x1x1x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 1, 1]>> to tensor<1x32x1x1xf32>
// CHECK-NEXT:    %[[SH:.*]] = graph.constant dense<[1, 32]> : tensor<2xi64>
// CHECK-NEXT:    %[[F:.*]] = graph.reshape %[[GP]], %[[SH]] : (tensor<1x32x1x1xf32>, tensor<2xi64>) -> tensor<1x32xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense_resource<{{.*}}> : tensor<4x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [10, 32]>>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<0.000000e+00> : tensor<10xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.gemm %[[F]], %[[W]], %[[B]] {{.*}} : (tensor<1x32xf32>, tensor<4x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [10, 32]>>, tensor<10xf32>) -> tensor<1x10xf32>
// CHECK-NEXT:    %{{.*}} = graph.softmax %[[Y]] {axis = 1 : i64} : tensor<1x10xf32>
// CHECK-NOT:     layout.trans_data

func.func @classifier(%x: tensor<1x32x2x2xf32>) -> tensor<1x10xf32> {
  %g = graph.global_avg_pool %x : (tensor<1x32x2x2xf32>) -> tensor<1x32x1x1xf32>
  %shape = graph.constant dense<[1, 32]> : tensor<2xi64>
  %f = graph.reshape %g, %shape : (tensor<1x32x1x1xf32>, tensor<2xi64>) -> tensor<1x32xf32>
  %w = graph.constant dense<1.000000e-01> : tensor<10x32xf32>
  %b = graph.constant dense<0.000000e+00> : tensor<10xf32>
  %y = graph.gemm %f, %w, %b {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_b} : (tensor<1x32xf32>, tensor<10x32xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %s = graph.softmax %y {axis = 1 : i64} : tensor<1x10xf32>
  func.return %s : tensor<1x10xf32>
}

// -----

// MatMul -> ReLU -> MatMul: the first result feeds only the second MatMul (through the
// ReLU), so it stays in FRACTAL_NZ; the second result goes to a softmax, so it is ND.
// CHECK-LABEL: func.func @mlp(%x: tensor<2x32xf32>) -> tensor<2x10xf32>
// CHECK-NOT:     layout.trans_data
// CHECK:         %[[W1:.*]] = graph.constant dense_resource<{{.*}}> : tensor<8x2x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [32, 64]>>
// CHECK-NEXT:    %[[W2:.*]] = graph.constant dense_resource<{{.*}}> : tensor<2x4x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [64, 10]>>
// CHECK-NEXT:    %[[H:.*]] = graph.matmul %x, %[[W1]] : {{.*}} -> tensor<8x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [2, 64]>>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[H]] : tensor<8x1x16x8xf32, #layout.fmt<FRACTAL_NZ, origin ND [2, 64]>>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %[[R]], %[[W2]] : {{.*}} -> tensor<2x10xf32>
// CHECK-NEXT:    graph.softmax %[[Y]]
// CHECK-NOT:     layout.trans_data

func.func @mlp(%x: tensor<2x32xf32>) -> tensor<2x10xf32> {
  %w1 = graph.constant dense<1.000000e-01> : tensor<32x64xf32>
  %w2 = graph.constant dense<1.000000e-01> : tensor<64x10xf32>
  %h = graph.matmul %x, %w1 : (tensor<2x32xf32>, tensor<32x64xf32>) -> tensor<2x64xf32>
  %r = graph.relu %h : tensor<2x64xf32>
  %y = graph.matmul %r, %w2 : (tensor<2x64xf32>, tensor<64x10xf32>) -> tensor<2x10xf32>
  %s = graph.softmax %y {axis = 1 : i64} : tensor<2x10xf32>
  func.return %s : tensor<2x10xf32>
}

// -----

// One conversion per value and format, shared by every consumer: %x is converted once for
// both pools, %p back once for both flattens and the result. The ReLU of the plain input
// stays plain (an elementwise op follows its operands).
// CHECK-LABEL: func.func @shared(%x: tensor<1x16x4x4xf32>)
// CHECK-NEXT:    %[[X:.*]] = layout.trans_data %x : tensor<1x16x4x4xf32> to tensor<1x2x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 4, 4]>>
// CHECK-NEXT:    %{{.*}} = graph.relu %x : tensor<1x16x4x4xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.avg_pool %[[X]]
// CHECK-NEXT:    %[[PP:.*]] = layout.trans_data %[[P]] : {{.*}} to tensor<1x16x4x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.max_pool %[[X]]
// CHECK-NEXT:    %[[F1:.*]] = graph.flatten %[[PP]]
// CHECK-NEXT:    %[[F2:.*]] = graph.flatten %[[PP]]
// CHECK-NEXT:    func.return %[[PP]], %[[F1]], %[[F2]]

func.func @shared(%x: tensor<1x16x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x256xf32>, tensor<1x256xf32>) {
  %a = graph.relu %x : tensor<1x16x4x4xf32>
  %p = graph.avg_pool %x {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %q = graph.max_pool %x {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %f1 = graph.flatten %p {axis = 1 : i64} : (tensor<1x16x4x4xf32>) -> tensor<1x256xf32>
  %f2 = graph.flatten %p {axis = 1 : i64} : (tensor<1x16x4x4xf32>) -> tensor<1x256xf32>
  func.return %p, %f1, %f2 : tensor<1x16x4x4xf32>, tensor<1x256xf32>, tensor<1x256xf32>
}

// -----

// Concat along C stays in NC1HWC0 when every input but the last fills whole C0 blocks
// (16 + 20 channels in f16); 20 + 20 does not, so that concat takes plain tensors.
// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:    %[[X:.*]] = layout.trans_data %x : {{.*}} to tensor<1x1x2x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
// CHECK-NEXT:    %[[Y:.*]] = layout.trans_data %y : {{.*}} to tensor<1x2x2x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 2, 2]>>
// CHECK-NEXT:    graph.relu %x : tensor<1x16x2x2xf16>
// CHECK-NEXT:    %[[PX:.*]] = graph.max_pool %[[X]]
// CHECK-NEXT:    %[[PY:.*]] = graph.max_pool %[[Y]]
// CHECK-NEXT:    %[[PYP:.*]] = layout.trans_data %[[PY]] : {{.*}} to tensor<1x20x2x2xf16>
// CHECK-NEXT:    %[[A:.*]] = graph.concat %[[PX]], %[[PY]] {axis = 1 : i64} : {{.*}} -> tensor<1x3x2x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 36, 2, 2]>>
// CHECK-NEXT:    %[[AP:.*]] = layout.trans_data %[[A]] : {{.*}} to tensor<1x36x2x2xf16>
// CHECK-NEXT:    %[[U:.*]] = graph.concat %[[PYP]], %[[PYP]] {axis = 1 : i64} : (tensor<1x20x2x2xf16>, tensor<1x20x2x2xf16>) -> tensor<1x40x2x2xf16>
// CHECK-NEXT:    func.return %[[AP]], %[[U]]

func.func @concat(%x: tensor<1x16x2x2xf16>, %y: tensor<1x20x2x2xf16>) -> (tensor<1x36x2x2xf16>, tensor<1x40x2x2xf16>) {
  %a = graph.relu %x : tensor<1x16x2x2xf16>
  %px = graph.max_pool %x {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x2x2xf16>) -> tensor<1x16x2x2xf16>
  %py = graph.max_pool %y {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x20x2x2xf16>) -> tensor<1x20x2x2xf16>
  %aligned = graph.concat %px, %py {axis = 1 : i64} : (tensor<1x16x2x2xf16>, tensor<1x20x2x2xf16>) -> tensor<1x36x2x2xf16>
  %unaligned = graph.concat %py, %py {axis = 1 : i64} : (tensor<1x20x2x2xf16>, tensor<1x20x2x2xf16>) -> tensor<1x40x2x2xf16>
  func.return %aligned, %unaligned : tensor<1x36x2x2xf16>, tensor<1x40x2x2xf16>
}

// -----

// A mask over H and W (one channel) cannot broadcast across C in NC1HWC0: the multiply
// takes plain tensors and its NC1HWC0 operand is converted back.
// CHECK-LABEL: func.func @no_native_broadcast(
// CHECK:         %[[P:.*]] = graph.max_pool
// CHECK-NEXT:    %[[PP:.*]] = layout.trans_data %[[P]] : {{.*}} to tensor<1x16x4x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.mul %[[PP]], %mask : (tensor<1x16x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x16x4x4xf32>

func.func @no_native_broadcast(%x: tensor<1x16x4x4xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %m = graph.mul %p, %mask : (tensor<1x16x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %m : tensor<1x16x4x4xf32>
}

// -----

// Must not fire: a MatMul of two activations (no constant weight to pre-transform) and a
// softmax have no storage format to take; nothing changes but the target attribute.
// CHECK:       builtin.module attributes {ge.target = "ascend910"} {
// CHECK-NEXT:    func.func @plain_only(%x: tensor<2x8xf32>, %y: tensor<8x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:      %m = graph.matmul %x, %y : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:      %s = graph.softmax %m {axis = 1 : i64} : tensor<2x4xf32>
// CHECK-NEXT:      func.return %s : tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

func.func @plain_only(%x: tensor<2x8xf32>, %y: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul %x, %y : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %s = graph.softmax %m {axis = 1 : i64} : tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}
