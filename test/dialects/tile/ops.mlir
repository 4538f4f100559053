// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

// A small cube kernel: GM -> L1 -> L0A/L0B -> mmad -> L0C -> UB -> relu -> GM, two cores.
builtin.module {
  tile.kernel @mm ins(%x: memref<64x128xf16, #tile.space<gm>>, %w: memref<128x32xf16, #tile.space<gm>>) outs(%y: memref<64x32xf16, #tile.space<gm>>) block_dim 2 kind "cube_epilogue" attributes {tile.cycles = 100 : i64} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %b = tile.block_idx : index
    %m = arith.muli %b, %c32 : index
    %a1 = tile.alloc buffers 2 : memref<32x128xf16, #tile.space<l1>>
    %b1 = tile.alloc buffers 1 : memref<128x32xf16, #tile.space<l1>>
    %a0 = tile.alloc buffers 2 : memref<32x64xf16, #tile.space<l0a>>
    %b0 = tile.alloc buffers 2 : memref<64x32xf16, #tile.space<l0b>>
    %acc = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
    %u = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<ub>>
    %o = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<ub>>
    tile.copy %x[%m, %c0] to %a1[%c0, %c0] sizes [32, 128] : memref<64x128xf16, #tile.space<gm>> to memref<32x128xf16, #tile.space<l1>>
    tile.copy %w[%c0, %c0] to %b1[%c0, %c0] sizes [128, 32] strides [1, 1] {pad = 0.000000e+00 : f32} : memref<128x32xf16, #tile.space<gm>> to memref<128x32xf16, #tile.space<l1>>
    scf.for %k = %c0 to %c128 step %c64 {
      tile.copy %a1[%c0, %k] to %a0[%c0, %c0] sizes [32, 64] : memref<32x128xf16, #tile.space<l1>> to memref<32x64xf16, #tile.space<l0a>>
      %bt = tile.view %b1 : memref<128x32xf16, #tile.space<l1>> to memref<32x128xf16, #tile.space<l1>>
      tile.copy %bt[%c0, %k] to %b0[%c0, %c0] sizes [32, 64] perm [1, 0] : memref<32x128xf16, #tile.space<l1>> to memref<64x32xf16, #tile.space<l0b>>
      %first = arith.cmpi eq, %k, %c0 : index
      tile.mmad %a0, %b0, %acc init %first : memref<32x64xf16, #tile.space<l0a>>, memref<64x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
    }
    tile.copy %acc[%c0, %c0] to %u[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<l0c>> to memref<32x32xf32, #tile.space<ub>>
    tile.vector ins(%u : memref<32x32xf32, #tile.space<ub>>) outs(%o : memref<32x32xf16, #tile.space<ub>>) {
    ^bb0(%t: tensor<32x32xf32>):
      %r = graph.relu %t : tensor<32x32xf32>
      %h = graph.cast %r : tensor<32x32xf32> to tensor<32x32xf16>
      tile.yield %h : tensor<32x32xf16>
    }
    tile.copy %o[%c0, %c0] to %y[%m, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<ub>> to memref<64x32xf16, #tile.space<gm>>
  }
  // A conv's Load3D and a max pool on NC1HWC0 tiles.
  tile.kernel @conv ins(%x: memref<1x1x8x8x16xf16, #tile.space<gm>>) outs(%y: memref<1x1x4x4x16xf16, #tile.space<gm>>) block_dim 1 kind "pool" {
    %c0 = arith.constant 0 : index
    %cm1 = arith.constant -1 : index
    %fm = tile.alloc buffers 1 : memref<1x1x10x8x16xf16, #tile.space<l1>>
    %a = tile.alloc buffers 1 : memref<16x144xf16, #tile.space<l0a>>
    tile.copy %x[%c0, %c0, %cm1, %c0, %c0] to %fm[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 10, 8, 16] {pad = 0.000000e+00 : f32} : memref<1x1x8x8x16xf16, #tile.space<gm>> to memref<1x1x10x8x16xf16, #tile.space<l1>>
    tile.img2col %fm[%c0, %c0, %c0, %cm1] to %a {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64} : memref<1x1x10x8x16xf16, #tile.space<l1>> to memref<16x144xf16, #tile.space<l0a>>
    %in = tile.alloc buffers 2 : memref<1x1x9x9x16xf16, #tile.space<ub>>
    %out = tile.alloc buffers 2 : memref<1x1x4x4x16xf16, #tile.space<ub>>
    tile.copy %x[%c0, %c0, %cm1, %cm1, %c0] to %in[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 9, 9, 16] {pad = 0xFF800000 : f32} : memref<1x1x8x8x16xf16, #tile.space<gm>> to memref<1x1x9x9x16xf16, #tile.space<ub>>
    tile.vpool "max" %in[%cm1, %cm1] to %out {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 8, 8>, pads = array<i64: 1, 1, 1, 1>} : memref<1x1x9x9x16xf16, #tile.space<ub>> to memref<1x1x4x4x16xf16, #tile.space<ub>>
    tile.copy %out[%c0, %c0, %c0, %c0, %c0] to %y[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 4, 4, 16] : memref<1x1x4x4x16xf16, #tile.space<ub>> to memref<1x1x4x4x16xf16, #tile.space<gm>>
  }
  // Before tiling: the group's ops on whole GM tensors.
  tile.kernel @untiled ins(%a: memref<4x8xf32, #tile.space<gm>>) outs(%r: memref<4x8xf32, #tile.space<gm>>) block_dim 1 kind "elementwise" {
    tile.untiled ins(%a : memref<4x8xf32, #tile.space<gm>>) outs(%r : memref<4x8xf32, #tile.space<gm>>) {
    ^bb0(%t: tensor<4x8xf32>):
      %s = graph.sigmoid %t : tensor<4x8xf32>
      tile.yield %s : tensor<4x8xf32>
    }
  }
  func.func @main(%x: memref<64x128xf16, #tile.space<gm>>) -> memref<2048xf16, #tile.space<gm>> {
    %w = tile.const dense<1.000000e+00> : tensor<128x32xf16> -> memref<128x32xf16, #tile.space<gm>>
    %y = tile.alloc buffers 1 : memref<64x32xf16, #tile.space<gm>>
    tile.launch @mm ins(%x, %w : memref<64x128xf16, #tile.space<gm>>, memref<128x32xf16, #tile.space<gm>>) outs(%y : memref<64x32xf16, #tile.space<gm>>)
    %v = tile.view %y : memref<64x32xf16, #tile.space<gm>> to memref<2048xf16, #tile.space<gm>>
    func.return %v : memref<2048xf16, #tile.space<gm>>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   tile.kernel @mm ins(%x: memref<64x128xf16, #tile.space<gm>>, %w: memref<128x32xf16, #tile.space<gm>>) outs(%y: memref<64x32xf16, #tile.space<gm>>) block_dim 2 kind "cube_epilogue" attributes {tile.cycles = 100 : i64} {
// CHECK:          %{{.*}} = tile.block_idx : index
// CHECK:          %{{.*}} = tile.alloc buffers 2 : memref<32x128xf16, #tile.space<l1>>
// CHECK:          %{{.*}} = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
// CHECK:          tile.copy %x[%{{.*}}, %{{.*}}] to %{{.*}}[%{{.*}}, %{{.*}}] sizes [32, 128] : memref<64x128xf16, #tile.space<gm>> to memref<32x128xf16, #tile.space<l1>>
// CHECK-NEXT:     tile.copy %w[%{{.*}}, %{{.*}}] to %{{.*}}[%{{.*}}, %{{.*}}] sizes [128, 32] strides [1, 1] {pad = 0.000000e+00 : f32} : memref<128x32xf16, #tile.space<gm>> to memref<128x32xf16, #tile.space<l1>>
// CHECK:            %{{.*}} = tile.view %{{.*}} : memref<128x32xf16, #tile.space<l1>> to memref<32x128xf16, #tile.space<l1>>
// CHECK-NEXT:       tile.copy %{{.*}}[%{{.*}}, %{{.*}}] to %{{.*}}[%{{.*}}, %{{.*}}] sizes [32, 64] perm [1, 0] : memref<32x128xf16, #tile.space<l1>> to memref<64x32xf16, #tile.space<l0b>>
// CHECK:            tile.mmad %{{.*}}, %{{.*}}, %{{.*}} init %{{.*}} : memref<32x64xf16, #tile.space<l0a>>, memref<64x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
// CHECK:          tile.vector ins(%{{.*}} : memref<32x32xf32, #tile.space<ub>>) outs(%{{.*}} : memref<32x32xf16, #tile.space<ub>>) {
// CHECK-NEXT:     ^{{.*}}(%{{.*}}: tensor<32x32xf32>):
// CHECK-NEXT:       %{{.*}} = graph.relu %{{.*}} : tensor<32x32xf32>
// CHECK-NEXT:       %{{.*}} = graph.cast %{{.*}} : tensor<32x32xf32> to tensor<32x32xf16>
// CHECK-NEXT:       tile.yield %{{.*}} : tensor<32x32xf16>
// CHECK-NEXT:     }
// CHECK:        tile.kernel @conv ins(%x: memref<1x1x8x8x16xf16, #tile.space<gm>>) outs(%y: memref<1x1x4x4x16xf16, #tile.space<gm>>) block_dim 1 kind "pool" {
// CHECK:          tile.img2col %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] to %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64} : memref<1x1x10x8x16xf16, #tile.space<l1>> to memref<16x144xf16, #tile.space<l0a>>
// CHECK:          tile.copy %x[{{.*}}] to %{{.*}}[{{.*}}] sizes [1, 1, 9, 9, 16] {pad = 0xff800000 : f32} : memref<1x1x8x8x16xf16, #tile.space<gm>> to memref<1x1x9x9x16xf16, #tile.space<ub>>
// CHECK-NEXT:     tile.vpool "max" %{{.*}}[%{{.*}}, %{{.*}}] to %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 8, 8>, pads = array<i64: 1, 1, 1, 1>} : memref<1x1x9x9x16xf16, #tile.space<ub>> to memref<1x1x4x4x16xf16, #tile.space<ub>>
// CHECK:        tile.kernel @untiled ins(%a: memref<4x8xf32, #tile.space<gm>>) outs(%r: memref<4x8xf32, #tile.space<gm>>) block_dim 1 kind "elementwise" {
// CHECK-NEXT:     tile.untiled ins(%a : memref<4x8xf32, #tile.space<gm>>) outs(%r : memref<4x8xf32, #tile.space<gm>>) {
// CHECK:        func.func @main(%x: memref<64x128xf16, #tile.space<gm>>) -> memref<2048xf16, #tile.space<gm>> {
// CHECK-NEXT:     %{{.*}} = tile.const dense<1.000000e+00> : tensor<128x32xf16> -> memref<128x32xf16, #tile.space<gm>>
// CHECK-NEXT:     %{{.*}} = tile.alloc buffers 1 : memref<64x32xf16, #tile.space<gm>>
// CHECK-NEXT:     tile.launch @mm ins(%{{.*}}, %{{.*}} : memref<64x128xf16, #tile.space<gm>>, memref<128x32xf16, #tile.space<gm>>) outs(%{{.*}} : memref<64x32xf16, #tile.space<gm>>)
// CHECK-NEXT:     %{{.*}} = tile.view %{{.*}} : memref<64x32xf16, #tile.space<gm>> to memref<2048xf16, #tile.space<gm>>
// CHECK-NEXT:     func.return %{{.*}} : memref<2048xf16, #tile.space<gm>>

// CHECK-GENERIC:      "builtin.module"() ({
// CHECK-GENERIC-NEXT:   "tile.kernel"() <{sym_name = "mm", function_type = (memref<64x128xf16, #tile.space<gm>>, memref<128x32xf16, #tile.space<gm>>, memref<64x32xf16, #tile.space<gm>>) -> (), num_ins = 2 : i64, block_dim = 2 : i64, kind = "cube_epilogue"}> ({
// CHECK-GENERIC:          %{{.*}} = "tile.block_idx"() : () -> index
// CHECK-GENERIC:          %{{.*}} = "tile.alloc"() <{count = 2 : i64}> : () -> memref<32x128xf16, #tile.space<l1>>
// CHECK-GENERIC:          "tile.copy"(%x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{sizes = array<i64: 32, 128>, operandSegmentSizes = array<i32: 1, 1, 2, 2, 0>}> : (memref<64x128xf16, #tile.space<gm>>, memref<32x128xf16, #tile.space<l1>>, index, index, index, index) -> ()
// CHECK-GENERIC:          "tile.mmad"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 1>}> : (memref<32x64xf16, #tile.space<l0a>>, memref<64x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>, i1) -> ()
// CHECK-GENERIC:          "tile.vector"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1>}> ({
// CHECK-GENERIC:          "tile.yield"(%{{.*}}) : (tensor<32x32xf16>) -> ()
// CHECK-GENERIC:          "tile.img2col"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64}> : (memref<1x1x10x8x16xf16, #tile.space<l1>>, memref<16x144xf16, #tile.space<l0a>>, index, index, index, index) -> ()
// CHECK-GENERIC:          "tile.vpool"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{mode = "max", kernel = array<i64: 3, 3>
// CHECK-GENERIC:          "tile.untiled"(%a, %r) <{operandSegmentSizes = array<i32: 1, 1>}> ({
// CHECK-GENERIC:          %{{.*}} = "tile.const"() <{value = dense<1.000000e+00> : tensor<128x32xf16>}> : () -> memref<128x32xf16, #tile.space<gm>>
// CHECK-GENERIC:          "tile.launch"(%{{.*}}, %{{.*}}, %{{.*}}) <{callee = @mm, operandSegmentSizes = array<i32: 2, 1>}> : (memref<64x128xf16, #tile.space<gm>>, memref<128x32xf16, #tile.space<gm>>, memref<64x32xf16, #tile.space<gm>>) -> ()
// CHECK-GENERIC:          %{{.*}} = "tile.view"(%{{.*}}) : (memref<64x32xf16, #tile.space<gm>>) -> memref<2048xf16, #tile.space<gm>>

// -----

// Data movement: an index read into the index arithmetic (Gather), a windowed copy (Trilu).
builtin.module {
  tile.kernel @gather ins(%t: memref<50x16xf32, #tile.space<gm>>, %i: memref<4xi64, #tile.space<gm>>) outs(%y: memref<4x16xf32, #tile.space<gm>>) block_dim 1 kind "opaque" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %iu = tile.alloc buffers 1 : memref<4xi64, #tile.space<ub>>
    %ru = tile.alloc buffers 1 : memref<1x16xf32, #tile.space<ub>>
    tile.copy %i[%c0] to %iu[%c0] sizes [4] : memref<4xi64, #tile.space<gm>> to memref<4xi64, #tile.space<ub>>
    scf.for %j = %c0 to %c4 step %c1 {
      %row = tile.load_index %iu[%j] bound 50 : memref<4xi64, #tile.space<ub>>
      tile.copy %t[%row, %c0] to %ru[%c0, %c0] sizes [1, 16] window (%c0, %c1, %j, %c16) {pad = 0.000000e+00 : f32} : memref<50x16xf32, #tile.space<gm>> to memref<1x16xf32, #tile.space<ub>>
      tile.copy %ru[%c0, %c0] to %y[%j, %c0] sizes [1, 16] : memref<1x16xf32, #tile.space<ub>> to memref<4x16xf32, #tile.space<gm>>
    }
  }
}
// CHECK:      %row = tile.load_index %iu[%j] bound 50 : memref<4xi64, #tile.space<ub>>
// CHECK-NEXT: tile.copy %t[%row, %c0] to %ru[%c0, %c0] sizes [1, 16] window (%c0, %c1, %j, %c16) {pad = 0.000000e+00 : f32} : memref<50x16xf32, #tile.space<gm>> to memref<1x16xf32, #tile.space<ub>>

// CHECK-GENERIC: %{{.*}} = "tile.load_index"(%{{.*}}, %{{.*}}) <{bound = 50 : i64}> : (memref<4xi64, #tile.space<ub>>, index) -> index
// CHECK-GENERIC: "tile.copy"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{sizes = array<i64: 1, 16>, pad = 0.000000e+00 : f32, operandSegmentSizes = array<i32: 1, 1, 2, 2, 4>}>

// -----

// The Cube's bias (tile_cube.cube_bias_block): an all-ones A column block times the columns
// of a resident [16, N] bias block that start at the N tile's first column (`b_column`).
tile.kernel @bias ins() outs() block_dim 1 kind "cube_epilogue" {
  %c32 = arith.constant 32 : index
  %later = arith.constant false
  %ones = tile.alloc buffers 1 : memref<32x16xf16, #tile.space<l0a>>
  %block = tile.alloc buffers 1 : memref<16x64xf16, #tile.space<l0b>>
  %acc = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
  tile.mmad %ones, %block[%c32], %acc init %later : memref<32x16xf16, #tile.space<l0a>>, memref<16x64xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
}
// CHECK-LABEL: tile.kernel @bias
// CHECK:         tile.mmad %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} init %{{.*}} : memref<32x16xf16, #tile.space<l0a>>, memref<16x64xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
// CHECK-GENERIC:  "tile.mmad"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
