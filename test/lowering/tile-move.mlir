// RUN: ge-opt %s -p 'fuse,bufferize,tile' --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'fuse,bufferize,tile,to-isa' --split-input-file | filecheck %s --check-prefix=ISA

// An embedding lookup: 8 indices over 8 cores, one index per chunk; the scalar unit reads
// each index (negative ones wrap at 50) and one copy moves the whole 16-element row in,
// one out.
func.func @gather(%x: tensor<50x16xf32>, %i: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %g = graph.gather %x, %i {axis = 0 : i64} : (tensor<50x16xf32>, tensor<2x4xi64>) -> tensor<2x4x16xf32> loc("embed")
  func.return %g : tensor<2x4x16xf32>
}
// CHECK-LABEL: tile.kernel @k0_embed
// CHECK-SAME:    block_dim 8 kind "opaque" attributes {tile.plan = "gather 8 rows of [1, 16] from 50: index chunks of 1 on 8 cores
// CHECK:         %table = tile.view %x : memref<50x16xf32, #tile.space<gm>> to memref<1x50x16xf32, #tile.space<gm>>
// CHECK:         %row_ub = tile.alloc buffers 2 : memref<1x1x16xf32, #tile.space<ub>>
// CHECK:         scf.for %chunk =
// CHECK-NEXT:      tile.copy %indices[%chunk] to %indices_ub[%c0] sizes [1]
// CHECK-NEXT:      scf.for %j =
// CHECK-NEXT:        %row = tile.load_index %indices_ub[%j] bound 50 : memref<1xi64, #tile.space<ub>>
// CHECK-NEXT:        %slot = arith.addi %chunk, %j : index
// CHECK-NEXT:        tile.copy %table[%c0, %row, %c0] to %row_ub[%c0, %c0, %c0] sizes [1, 1, 16]
// CHECK-NEXT:        tile.copy %row_ub[%c0, %c0, %c0] to %rows[%c0, %slot, %c0] sizes [1, 1, 16]

// ISA-LABEL: isa.kernel @k0_embed
// ISA-SAME:    attributes {isa.data_dependent
// ISA:         %row = isa.load_scalar %indices_ub bound 50 : memref<1xi64, #isa.space<ub>>
// ISA:         %[[OFF:.*]] = arith.muli %row, %c16 : index
// ISA-NEXT:    isa.copy_gm_to_ub %x[%[[OFF]]] to %row_ub sizes [16]

// -----

// A slice with a negative step walks that dim one row per iteration, backwards from 7;
// the positive step 2 is the copy's stride.
func.func @slice(%x: tensor<8x10xf32>) -> tensor<3x5xf32> {
  %s = graph.slice %x {starts = array<i64: 7, 1>, ends = array<i64: 1, 10>, steps = array<i64: -2, 2>} : (tensor<8x10xf32>) -> tensor<3x5xf32> loc("rev")
  func.return %s : tensor<3x5xf32>
}
// CHECK-LABEL: tile.kernel @k0_rev
// CHECK-SAME:    tile.plan = "piece 0: tile [1, 5] x3 on 3 cores"
// CHECK:         scf.for %tile0 =
// CHECK-NEXT:      %[[A:.*]] = arith.muli %tile0, %cm2 : index
// CHECK-NEXT:      %[[B:.*]] = arith.addi %[[A]], %c7 : index
// CHECK-NEXT:      tile.copy %x[%[[B]], %c1] to %part0_ub[%c0, %c0] sizes [1, 5] strides [1, 2]
// CHECK-NEXT:      tile.copy %part0_ub[%c0, %c0] to %s[%tile0, %c0] sizes [1, 5]

// -----

// Split into unequal parts: one kernel, one copy loop per output. The second part (two
// UB blocks) is spread over two cores, one 32-byte block each (never less than a block).
func.func @split(%x: tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) {
  %a, %b = graph.split %x {axis = 0 : i64, sizes = array<i64: 2, 4>} : (tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) loc("parts")
  func.return %a, %b : tensor<2x4xf32>, tensor<4x4xf32>
}
// CHECK-LABEL: tile.kernel @k0_parts
// CHECK-SAME:    outs(%a: memref<2x4xf32, #tile.space<gm>>, %b: memref<4x4xf32, #tile.space<gm>>) block_dim 2
// CHECK-SAME:    tile.plan = "piece 0: tile [2, 4] x1 on 1 cores; piece 1: tile [2, 4] x2 on 2 cores"
// CHECK:         tile.copy %x[%c0, %c0] to %part0_ub[%c0, %c0] sizes [2, 4]
// CHECK-NEXT:    tile.copy %part0_ub[%c0, %c0] to %a[%c0, %c0] sizes [2, 4]
// CHECK:         scf.for %tile1 = %lo to %hi step %c1 {
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %tile1, %c2 : index
// CHECK-NEXT:      %[[SRC:.*]] = arith.addi %[[ROW]], %c2 : index
// CHECK-NEXT:      tile.copy %x[%[[SRC]], %c0] to %part1_ub[%c0, %c0] sizes [2, 4]
// CHECK-NEXT:      tile.copy %part1_ub[%c0, %c0] to %b[%[[ROW]], %c0] sizes [2, 4]

// -----

// A constant Pad is one copy of the output's rectangle from the input shifted by the
// begin pads; what falls outside the input reads as the pad value.
func.func @pad(%x: tensor<3x4xf32>) -> tensor<5x7xf32> {
  %p = graph.pad %x {pads = array<i64: 1, 2, 1, 1>, mode = "constant", value = 1.500000e+00 : f32} : (tensor<3x4xf32>) -> tensor<5x7xf32> loc("border")
  func.return %p : tensor<5x7xf32>
}
// The five output rows are spread over five cores (one row each).
// CHECK-LABEL: tile.kernel @k0_border
// CHECK-SAME:    tile.plan = "piece 0: tile [1, 7] x5 on 5 cores"
// CHECK:         scf.for %tile0 = %lo to %hi step %c1 {
// CHECK-NEXT:      %[[R:.*]] = arith.addi %tile0, %cm1 : index
// CHECK-NEXT:      tile.copy %x[%[[R]], %cm2] to %part0_ub[%c0, %c0] sizes [1, 7] {pad = 1.500000e+00 : f32}
// CHECK-NEXT:      tile.copy %part0_ub[%c0, %c0] to %p[%tile0, %c0] sizes [1, 7]

// -----

// DepthToSpace (DCR): the input seen as [N, b, b, C', H, W], the output as
// [N, C', H, b, W, b]: one permuted copy.
func.func @d2s(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "DCR"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> loc("d2s")
  func.return %y : tensor<1x2x4x6xf32>
}
// CHECK-LABEL: tile.kernel @k0_d2s
// CHECK:         %x_view = tile.view %x : memref<1x8x2x3xf32, #tile.space<gm>> to memref<1x2x2x2x2x3xf32, #tile.space<gm>>
// CHECK-NEXT:    %y_view = tile.view %y : memref<1x2x4x6xf32, #tile.space<gm>> to memref<1x2x2x2x3x2xf32, #tile.space<gm>>
// CHECK:         tile.copy %x_view[{{.*}}] to %part0_ub[{{.*}}] sizes [1, 1, 2, 1, 1, 3] perm [0, 3, 4, 1, 5, 2]

// -----

// Trilu (upper, k = 1): each row is one copy whose window starts at column r + 1.
func.func @triu(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %y = graph.trilu %x {k = 1 : i64, upper} : (tensor<4x5xf32>) -> tensor<4x5xf32> loc("mask")
  func.return %y : tensor<4x5xf32>
}
// CHECK-LABEL: tile.kernel @k0_mask
// CHECK:         scf.for %row =
// CHECK-NEXT:      %[[E:.*]] = arith.addi %row, %c1 : index
// CHECK-NEXT:      tile.copy %matrices[%c0, %row, %c0] to %row_ub[%c0, %c0, %c0] sizes [1, 1, 5] window (%c0, %c1, %c0, %c1, %[[E]], %c5) {pad = 0.000000e+00 : f32}
