// RUN: ge-opt %s -p 'fuse,bufferize,tile' --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'fuse,bufferize,tile{target=ascend910b}' --split-input-file | filecheck %s --check-prefix=B910
// RUN: ge-opt %s -p 'fuse,bufferize,tile{target=ascend310b}' --split-input-file | filecheck %s --check-prefix=B310

// Elementwise with a broadcast operand (CopyIn / Compute / CopyOut): the broadcast row is
// loaded once before the loop, the rows of x are split over the cores in double-buffered
// UB tiles; 910 has 32 vector cores, 910B 48 (it uses 32 of them here), 310B one.
func.func @eltwise(%x: tensor<64x1000xf16>, %b: tensor<1000xf16>) -> tensor<64x1000xf16> {
  %a = graph.add %x, %b : (tensor<64x1000xf16>, tensor<1000xf16>) -> tensor<64x1000xf16>
  %r = graph.relu %a : tensor<64x1000xf16>
  func.return %r : tensor<64x1000xf16>
}
// CHECK:       tile.kernel @k0_a ins(%x: memref<64x1000xf16, #tile.space<gm>>, %b: memref<1000xf16, #tile.space<gm>>) outs(%r: memref<64x1000xf16, #tile.space<gm>>) block_dim 32 kind "elementwise"
// CHECK-SAME:    tile.plan = "tile [1, 1000] x64 on 32 cores, UB 16096 B (buffers 2)"
// CHECK:         %[[X:.*]] = tile.alloc buffers 2 : memref<1x1000xf16, #tile.space<ub>>
// CHECK-NEXT:    %[[B:.*]] = tile.alloc buffers 2 : memref<1000xf16, #tile.space<ub>>
// CHECK-NEXT:    %[[R:.*]] = tile.alloc buffers 2 : memref<1x1000xf16, #tile.space<ub>>
// CHECK-NEXT:    tile.copy %b[%{{.*}}] to %[[B]][%{{.*}}] sizes [1000]
// CHECK-NEXT:    %[[BLOCK:.*]] = tile.block_idx : index
// CHECK-NEXT:    %[[LO:.*]] = arith.muli %[[BLOCK]], %c2 : index
// CHECK-NEXT:    %[[END:.*]] = arith.addi %[[LO]], %c2 : index
// CHECK-NEXT:    %[[HI:.*]] = arith.minui %[[END]], %c64 : index
// CHECK-NEXT:    scf.for %[[T:.*]] = %[[LO]] to %[[HI]] step %c1 {
// CHECK-NEXT:      tile.copy %x[%[[T]], %c0] to %[[X]][%c0, %c0] sizes [1, 1000]
// CHECK-NEXT:      tile.vector ins(%[[X]], %[[B]] : {{.*}}) outs(%[[R]] : memref<1x1000xf16, #tile.space<ub>>) {
// CHECK-NEXT:      ^{{.*}}(%[[XT:.*]]: tensor<1x1000xf16>, %[[BT:.*]]: tensor<1000xf16>):
// CHECK-NEXT:        %[[A:.*]] = graph.add %[[XT]], %[[BT]] : (tensor<1x1000xf16>, tensor<1000xf16>) -> tensor<1x1000xf16>
// CHECK-NEXT:        %[[RT:.*]] = graph.relu %[[A]] : tensor<1x1000xf16>
// CHECK-NEXT:        tile.yield %[[RT]] : tensor<1x1000xf16>
// CHECK-NEXT:      }
// CHECK-NEXT:      tile.copy %[[R]][%c0, %c0] to %r[%[[T]], %c0] sizes [1, 1000]
// CHECK-NEXT:    }
// CHECK:       tile.launch @k0_a ins(%x, %b : {{.*}}) outs(%{{.*}} : memref<64x1000xf16, #tile.space<gm>>)
// B910:        tile.kernel @k0_a {{.*}} block_dim 32 kind "elementwise" attributes {{{.*}}tile.plan = "tile [2, 1000] x32 on 32 cores, UB 28032 B (buffers 2)"
// B910:          tile.alloc buffers 2 : memref<2x1000xf16, #tile.space<ub>>
// B310:        tile.kernel @k0_a {{.*}} block_dim 1 kind "elementwise" attributes {{{.*}}tile.plan = "tile [16, 1000] x4 on 1 cores, UB 196032 B (buffers 2)"

// -----

// A reduction keeps its axis whole in every tile: Softmax over 3000 elements, tiles of
// one row.
func.func @softmax(%x: tensor<8x4x3000xf32>) -> tensor<8x4x3000xf32> {
  %s = graph.softmax %x {axis = 2 : i64} : tensor<8x4x3000xf32>
  func.return %s : tensor<8x4x3000xf32>
}
// CHECK:       tile.kernel @k0_s {{.*}} block_dim 32 kind "reduce" attributes {tile.plan = "tile [1, 1, 3000] x32 on 32 cores, UB 60000 B (buffers 2)"
// CHECK:         scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NEXT:      %[[T0:.*]] = arith.divui %[[T]], %c4 : index
// CHECK-NEXT:      %[[T1:.*]] = arith.remui %[[T]], %c4 : index
// CHECK-NEXT:      tile.copy %x[%[[T0]], %[[T1]], %c0] to %{{.*}} sizes [1, 1, 3000]
// CHECK-NEXT:      tile.vector
// CHECK-NEXT:      ^{{.*}}(%[[XT:.*]]: tensor<1x1x3000xf32>):
// CHECK-NEXT:        graph.softmax %[[XT]] {axis = 2 : i64} : tensor<1x1x3000xf32>
// B910:        tile.kernel @k0_s {{.*}} block_dim 32 kind "reduce" attributes {tile.plan = "tile [1, 1, 3000] x32 on 32 cores, UB 60000 B (buffers 2)"
// B310:        tile.kernel @k0_s {{.*}} block_dim 1 kind "reduce" attributes {tile.plan = "tile [1, 4, 3000] x8 on 1 cores, UB 240000 B (buffers 2)"

// -----

// A max pool: each tile reads its window halo (pads and past-the-edge rows read -inf) and
// reduces it with tile.vpool. The 910 keeps whole 56 x 56 maps (two planes per core; UB holds the source, the dest
// and the vpool scratch -- its clean copy of the window); the
// 910B splits H into 3 x 19 output rows, each reading 39 input rows from row 19 * 2 * t - 1;
// the one-core 310B takes 2 planes per tile (4 left no room for the scratch).
func.func @pool(%x: tensor<1x64x112x112xf16>) -> tensor<1x64x56x56xf16> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x64x112x112xf16>) -> tensor<1x64x56x56xf16>
  func.return %p : tensor<1x64x56x56xf16>
}
// CHECK:       tile.kernel @k0_p {{.*}} block_dim 32 kind "pool" attributes {tile.plan = "tile [1, 1, 56, 56] x64 on 32 cores, UB 95520 B (buffers 2)"
// CHECK:         %[[IN:.*]] = tile.alloc buffers 2 : memref<1x1x113x113xf16, #tile.space<ub>>
// CHECK-NEXT:    %[[OUT:.*]] = tile.alloc buffers 2 : memref<1x1x56x56xf16, #tile.space<ub>>
// CHECK:         scf.for %[[T:.*]] = {{.*}} {
// CHECK-NEXT:      tile.copy %x[%c0, %[[T]], %cm1, %cm1] to %[[IN]][%c0, %c0, %c0, %c0] sizes [1, 1, 113, 113] {pad = 0xff800000 : f32}
// CHECK-NEXT:      tile.vpool "max" %[[IN]][%cm1, %cm1] to %[[OUT]] {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 112, 112>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT:      tile.copy %[[OUT]][%c0, %c0, %c0, %c0] to %p[%c0, %[[T]], %c0, %c0] sizes [1, 1, 56, 56]
// B910:        tile.kernel @k0_p {{.*}} block_dim 48 kind "pool" attributes {tile.plan = "tile [1, 1, 19, 56] x192 on 48 cores, UB 32928 B (buffers 2)"
// B910:          %[[IN:.*]] = tile.alloc buffers 2 : memref<1x1x39x113xf16, #tile.space<ub>>
// B910-NEXT:     %[[OUT:.*]] = tile.alloc buffers 2 : memref<1x1x19x56xf16, #tile.space<ub>>
// B910:          scf.for %[[T:.*]] = {{.*}} {
// B910-NEXT:       %[[C:.*]] = arith.divui %[[T]], %c3 : index
// B910-NEXT:       %[[H:.*]] = arith.remui %[[T]], %c3 : index
// B910-NEXT:       %[[OH:.*]] = arith.muli %[[H]], %c19 : index
// B910-NEXT:       %[[IH2:.*]] = arith.muli %[[OH]], %c2 : index
// B910-NEXT:       %[[IH:.*]] = arith.subi %[[IH2]], %c1 : index
// B910-NEXT:       tile.copy %x[%c0, %[[C]], %[[IH]], %cm1] to %[[IN]][%c0, %c0, %c0, %c0] sizes [1, 1, 39, 113] {pad = 0xff800000 : f32}
// B910-NEXT:       tile.vpool "max" %[[IN]][%[[IH]], %cm1] to %[[OUT]] {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, in_size = array<i64: 112, 112>, pads = array<i64: 1, 1, 1, 1>}
// B910-NEXT:       tile.copy %[[OUT]][%c0, %c0, %c0, %c0] to %p[%c0, %[[C]], %[[OH]], %c0] sizes [1, 1, 19, 56]
// B310:        tile.kernel @k0_p {{.*}} block_dim 1 kind "pool" attributes {tile.plan = "tile [1, 2, 56, 56] x32 on 1 cores, UB 190944 B (buffers 2)"
// B310:          tile.alloc buffers 2 : memref<1x2x113x113xf16, #tile.space<ub>>

// -----

// Must not change: a kernel that is already tiled (no tile.untiled body) is left alone.
builtin.module {
  tile.kernel @done ins(%x: memref<16xf32, #tile.space<gm>>) outs(%y: memref<16xf32, #tile.space<gm>>) block_dim 3 kind "elementwise" {
    %c0 = arith.constant 0 : index
    %u = tile.alloc buffers 1 : memref<16xf32, #tile.space<ub>>
    tile.copy %x[%c0] to %u[%c0] sizes [16] : memref<16xf32, #tile.space<gm>> to memref<16xf32, #tile.space<ub>>
    tile.copy %u[%c0] to %y[%c0] sizes [16] : memref<16xf32, #tile.space<ub>> to memref<16xf32, #tile.space<gm>>
  }
}
// CHECK:       tile.kernel @done ins(%x: memref<16xf32, #tile.space<gm>>) outs(%y: memref<16xf32, #tile.space<gm>>) block_dim 3 kind "elementwise" {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %u = tile.alloc buffers 1 : memref<16xf32, #tile.space<ub>>
// CHECK-NEXT:    tile.copy %x[%c0] to %u[%c0] sizes [16]
// CHECK-NEXT:    tile.copy %u[%c0] to %y[%c0] sizes [16]
// CHECK-NEXT:  }
