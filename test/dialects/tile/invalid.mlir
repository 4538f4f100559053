// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 0 kind "elementwise" {
}
// CHECK: Operation does not verify: block_dim must be >= 1, got 0
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "magic" {
}
// CHECK: Operation does not verify: unknown kernel kind 'magic' (one of cube_epilogue, elementwise, reduce, pool, opaque)
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4xf32, #tile.space<ub>>) outs() block_dim 1 kind "elementwise" {
}
// CHECK: Operation does not verify: kernel argument #0 must be in gm, got ub
// CHECK: -----

// -----

func.func @f(%x: memref<4xf32, #tile.space<gm>>) {
  tile.launch @nope ins(%x : memref<4xf32, #tile.space<gm>>)
  func.return
}
// CHECK: Operation does not verify: no tile.kernel named @nope
// CHECK: -----

// -----

builtin.module {
  tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  }
  func.func @f(%x: memref<8xf32, #tile.space<gm>>) {
    tile.launch @k ins(%x : memref<8xf32, #tile.space<gm>>)
    func.return
  }
}
// CHECK: Operation does not verify: the launch passes ins (memref<8xf32, #tile.space<gm>>) outs () but @k takes ins (memref<4xf32, #tile.space<gm>>) outs ()
// CHECK: -----

// -----

func.func @f() {
  %w = tile.const dense<1.0> : tensor<4xf32> -> memref<8xf32, #tile.space<gm>>
  func.return
}
// CHECK: Operation does not verify: the value's type tensor<4xf32> does not match the buffer memref<8xf32, #tile.space<gm>>
// CHECK: -----

// -----

func.func @f() {
  %b = tile.alloc buffers 1 : memref<8xf32, #tile.space<ub>>
  func.return
}
// CHECK: Operation does not verify: a ub buffer can only be allocated inside a tile.kernel
// CHECK: -----

// -----

func.func @f() {
  %b = tile.alloc buffers 2 : memref<8xf32, #tile.space<gm>>
  func.return
}
// CHECK: Operation does not verify: a gm buffer has one copy, got buffers 2
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "elementwise" {
  %b = tile.alloc buffers 0 : memref<8xf32, #tile.space<ub>>
}
// CHECK: Operation does not verify: buffers must be >= 1, got 0
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "elementwise" {
  %b = tile.alloc buffers 1 : memref<8xf32, #tile.space<gm>>
}
// CHECK: Operation does not verify: kernels take their gm buffers as arguments; allocate gm outside kernels
// CHECK: -----

// -----

func.func @f(%x: memref<4x4xf32, #tile.space<gm>>) {
  %v = tile.view %x : memref<4x4xf32, #tile.space<gm>> to memref<15xf32, #tile.space<gm>>
  func.return
}
// CHECK: Operation does not verify: a view keeps the element count: 16 elements to 15
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<16xf16, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  %c0 = arith.constant 0 : index
  %b = tile.alloc buffers 1 : memref<16xf16, #tile.space<l0a>>
  tile.copy %x[%c0] to %b[%c0] sizes [16] : memref<16xf16, #tile.space<gm>> to memref<16xf16, #tile.space<l0a>>
}
// CHECK: Operation does not verify: no data path from gm to l0a
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<16xf16, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  %c0 = arith.constant 0 : index
  %b = tile.alloc buffers 1 : memref<16xf32, #tile.space<ub>>
  tile.copy %x[%c0] to %b[%c0] sizes [16] : memref<16xf16, #tile.space<gm>> to memref<16xf32, #tile.space<ub>>
}
// CHECK: Operation does not verify: a copy keeps the element type: f16 to f32
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4x4xf16, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  %c0 = arith.constant 0 : index
  %b = tile.alloc buffers 1 : memref<4x4xf16, #tile.space<ub>>
  tile.copy %x[%c0] to %b[%c0, %c0] sizes [4, 4] : memref<4x4xf16, #tile.space<gm>> to memref<4x4xf16, #tile.space<ub>>
}
// CHECK: Operation does not verify: the source has rank 2: it needs 2 offsets, sizes and strides, got 1, 2, 2
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4x4xf16, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  %c0 = arith.constant 0 : index
  %b = tile.alloc buffers 1 : memref<4x4xf16, #tile.space<ub>>
  tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] perm [0, 0] : memref<4x4xf16, #tile.space<gm>> to memref<4x4xf16, #tile.space<ub>>
}
// CHECK: Operation does not verify: perm [0, 0] is not a permutation of 0..1
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<8x8xf16, #tile.space<gm>>) outs() block_dim 1 kind "elementwise" {
  %c0 = arith.constant 0 : index
  %b = tile.alloc buffers 1 : memref<4x4xf16, #tile.space<ub>>
  tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [8, 4] : memref<8x8xf16, #tile.space<gm>> to memref<4x4xf16, #tile.space<ub>>
}
// CHECK: Operation does not verify: a 8x4 rectangle does not fit the destination memref<4x4xf16, #tile.space<ub>>
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %c0 = arith.constant 0 : index
  %f = tile.alloc buffers 1 : memref<1x1x4x4x16xf16, #tile.space<ub>>
  %a = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0a>>
  tile.img2col %f[%c0, %c0, %c0, %c0] to %a {kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64} : memref<1x1x4x4x16xf16, #tile.space<ub>> to memref<16x16xf16, #tile.space<l0a>>
}
// CHECK: Operation does not verify: the feature map must be in l1, got ub
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %c0 = arith.constant 0 : index
  %f = tile.alloc buffers 1 : memref<1x1x4x4x8xf16, #tile.space<l1>>
  %a = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0a>>
  tile.img2col %f[%c0, %c0, %c0, %c0] to %a {kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64} : memref<1x1x4x4x8xf16, #tile.space<l1>> to memref<16x16xf16, #tile.space<l0a>>
}
// CHECK: Operation does not verify: the feature map must be [1, C1, rows, W, 16] (NC1HWC0) or [1, C, rows, W] (NCHW), got memref<1x1x4x4x8xf16, #tile.space<l1>>
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %t = arith.constant true
  %a = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l0a>>
  %b = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0b>>
  %c = tile.alloc buffers 1 : memref<16x16xf32, #tile.space<l0c>>
  tile.mmad %a, %b, %c init %t : memref<16x32xf16, #tile.space<l0a>>, memref<16x16xf16, #tile.space<l0b>>, memref<16x16xf32, #tile.space<l0c>>
}
// CHECK: Operation does not verify: shapes do not chain: A 16x32, B 16x16, C 16x16
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %t = arith.constant true
  %c0 = arith.constant 0 : index
  %a = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l0a>>
  %b = tile.alloc buffers 1 : memref<32x64xf16, #tile.space<l0b>>
  %c = tile.alloc buffers 1 : memref<16x16xf32, #tile.space<l0c>>
  tile.mmad %a, %b[%c0], %c init %t : memref<16x32xf16, #tile.space<l0a>>, memref<32x64xf16, #tile.space<l0b>>, memref<16x16xf32, #tile.space<l0c>>
}
// CHECK: Operation does not verify: a B column offset needs one K block of 16 rows at least C's 16 columns wide, got B 32x64
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %t = arith.constant true
  %a = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0a>>
  %b = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0b>>
  %c = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0c>>
  tile.mmad %a, %b, %c init %t : memref<16x16xf16, #tile.space<l0a>>, memref<16x16xf16, #tile.space<l0b>>, memref<16x16xf16, #tile.space<l0c>>
}
// CHECK: Operation does not verify: C must accumulate in f32, got f16
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "cube_epilogue" {
  %t = arith.constant true
  %a = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<ub>>
  %b = tile.alloc buffers 1 : memref<16x16xf16, #tile.space<l0b>>
  %c = tile.alloc buffers 1 : memref<16x16xf32, #tile.space<l0c>>
  tile.mmad %a, %b, %c init %t : memref<16x16xf16, #tile.space<ub>>, memref<16x16xf16, #tile.space<l0b>>, memref<16x16xf32, #tile.space<l0c>>
}
// CHECK: Operation does not verify: A must be in l0a, got ub
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "elementwise" {
  %a = tile.alloc buffers 1 : memref<16xf16, #tile.space<ub>>
  %b = tile.alloc buffers 1 : memref<16xf16, #tile.space<ub>>
  tile.vector ins(%a : memref<16xf16, #tile.space<ub>>) outs(%b : memref<16xf16, #tile.space<ub>>) {
  ^bb0(%x: tensor<8xf16>):
    %r = graph.relu %x : tensor<8xf16>
    tile.yield %r : tensor<8xf16>
  }
}
// CHECK: Operation does not verify: in #0: the body's type tensor<8xf16> does not hold the 16 elements of memref<16xf16, #tile.space<ub>>
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "elementwise" {
  %a = tile.alloc buffers 1 : memref<16xf16, #tile.space<ub>>
  %b = tile.alloc buffers 1 : memref<16xf16, #tile.space<ub>>
  tile.vector ins(%a : memref<16xf16, #tile.space<ub>>) outs(%b : memref<16xf16, #tile.space<ub>>) {
  ^bb0(%x: tensor<16xf16>):
    tile.yield
  }
}
// CHECK: Operation does not verify: tile.yield gives 0 values for 1 outs
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "elementwise" {
  %a = tile.alloc buffers 1 : memref<16xf16, #tile.space<l1>>
  %b = tile.alloc buffers 1 : memref<16xf16, #tile.space<ub>>
  tile.vector ins(%a : memref<16xf16, #tile.space<l1>>) outs(%b : memref<16xf16, #tile.space<ub>>) {
  ^bb0(%x: tensor<16xf16>):
    tile.yield %x : tensor<16xf16>
  }
}
// CHECK: Operation does not verify: in #0 must be in ub, got l1
// CHECK: -----

// -----

tile.kernel @k ins(%a: memref<4x4xf16, #tile.space<gm>>) outs(%b: memref<4x4xf16, #tile.space<gm>>) block_dim 1 kind "elementwise" {
  tile.untiled ins(%a : memref<4x4xf16, #tile.space<gm>>) outs(%b : memref<4x4xf16, #tile.space<gm>>) {
  ^bb0(%x: tensor<16xf16>):
    tile.yield %x : tensor<16xf16>
  }
}
// CHECK: Operation does not verify: in #0: the body's type tensor<16xf16> must have the buffer's shape memref<4x4xf16, #tile.space<gm>>
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "pool" {
  %c0 = arith.constant 0 : index
  %a = tile.alloc buffers 1 : memref<1x1x4x4x16xf16, #tile.space<ub>>
  %b = tile.alloc buffers 1 : memref<1x1x2x2x16xf16, #tile.space<ub>>
  tile.vpool "min" %a[%c0, %c0] to %b {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 4, 4>, pads = array<i64: 0, 0, 0, 0>} : memref<1x1x4x4x16xf16, #tile.space<ub>> to memref<1x1x2x2x16xf16, #tile.space<ub>>
}
// CHECK: Operation does not verify: mode must be one of max, avg, got 'min'
// CHECK: -----

// -----

tile.kernel @k ins() outs() block_dim 1 kind "pool" {
  %c0 = arith.constant 0 : index
  %a = tile.alloc buffers 1 : memref<1x1x4x4x16xf16, #tile.space<ub>>
  %b = tile.alloc buffers 1 : memref<1x1x3x3x16xf16, #tile.space<ub>>
  tile.vpool "max" %a[%c0, %c0] to %b {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 4, 4>, pads = array<i64: 0, 0, 0, 0>} : memref<1x1x4x4x16xf16, #tile.space<ub>> to memref<1x1x3x3x16xf16, #tile.space<ub>>
}
// CHECK: Operation does not verify: 3 outputs along dim 2 read 6 inputs, the source holds 4
// CHECK: -----

// -----

func.func @f(%t: tensor<4xf32>) {
  tile.yield %t : tensor<4xf32>
}
// CHECK: Operation does not verify: 'tile.yield' expects parent op to be one of 'tile.vector', 'tile.untiled'

// -----

tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "opaque" {
  %c0 = arith.constant 0 : index
  %r = tile.load_index %x[%c0] bound 4 : memref<4xf32, #tile.space<gm>>
}
// CHECK: Operation does not verify: indices are integers, got f32
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<2x4xi64, #tile.space<gm>>) outs() block_dim 1 kind "opaque" {
  %c0 = arith.constant 0 : index
  %r = tile.load_index %x[%c0] bound 4 : memref<2x4xi64, #tile.space<gm>>
}
// CHECK: Operation does not verify: the source has rank 2: it needs 2 offsets, got 1
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4xi64, #tile.space<gm>>) outs() block_dim 1 kind "opaque" {
  %c0 = arith.constant 0 : index
  %r = tile.load_index %x[%c0] bound 0 : memref<4xi64, #tile.space<gm>>
}
// CHECK: Operation does not verify: bound must be >= 1, got 0
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "opaque" {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %u = tile.alloc buffers 1 : memref<4xf32, #tile.space<ub>>
  tile.copy %x[%c0] to %u[%c0] sizes [4] window (%c0, %c2) : memref<4xf32, #tile.space<gm>> to memref<4xf32, #tile.space<ub>>
}
// CHECK: Operation does not verify: the positions outside a window read as pad; the copy needs a pad value
// CHECK: -----

// -----

tile.kernel @k ins(%x: memref<4xf32, #tile.space<gm>>) outs() block_dim 1 kind "opaque" {
  %c0 = arith.constant 0 : index
  %u = tile.alloc buffers 1 : memref<4xf32, #tile.space<ub>>
  tile.copy %x[%c0] to %u[%c0] sizes [4] window (%c0) {pad = 0.000000e+00 : f32} : memref<4xf32, #tile.space<gm>> to memref<4xf32, #tile.space<ub>>
}
// CHECK: Operation does not verify: a window needs a (lo, hi) pair per dim: 2 values, got 1
// CHECK: -----
