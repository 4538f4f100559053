// RUN: ge-opt %s -p to-isa --split-input-file | filecheck %s
// RUN: ge-opt %s -p to-isa,plan-local-memory,insert-sync --split-input-file | filecheck %s --check-prefix=SYNC
// tile -> isa. Local buffers become flat isa buffers; the copies into and out of the
// Cube's L0 buffers get the fractal orders as strides: A [64, 64] in L0A as ZZ
// (16 x 16 fractals, row-major fractals), B [64, 32] in L0B as ZN, C [64, 32] in L0C as NZ
// (column blocks of 16) written to a row-major GM matrix by the fixpipe (the 910B has one;
// L0C -> GM directly needs it).

builtin.module attributes {ge.target = "ascend910b"} {
  tile.kernel @matmul ins(%a: memref<64x64xf16, #tile.space<gm>>, %b: memref<64x32xf16, #tile.space<gm>>) outs(%c: memref<64x32xf32, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %a_l1 = tile.alloc buffers 1 : memref<64x64xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<64x32xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 1 : memref<64x64xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 1 : memref<64x32xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 1 : memref<64x32xf32, #tile.space<l0c>>
    tile.copy %a[%c0, %c0] to %a_l1[%c0, %c0] sizes [64, 64] : memref<64x64xf16, #tile.space<gm>> to memref<64x64xf16, #tile.space<l1>>
    tile.copy %b[%c0, %c0] to %b_l1[%c0, %c0] sizes [64, 32] : memref<64x32xf16, #tile.space<gm>> to memref<64x32xf16, #tile.space<l1>>
    tile.copy %a_l1[%c0, %c0] to %a_l0[%c0, %c0] sizes [64, 64] : memref<64x64xf16, #tile.space<l1>> to memref<64x64xf16, #tile.space<l0a>>
    tile.copy %b_l1[%c0, %c0] to %b_l0[%c0, %c0] sizes [64, 32] : memref<64x32xf16, #tile.space<l1>> to memref<64x32xf16, #tile.space<l0b>>
    tile.mmad %a_l0, %b_l0, %c_l0 init %true : memref<64x64xf16, #tile.space<l0a>>, memref<64x32xf16, #tile.space<l0b>>, memref<64x32xf32, #tile.space<l0c>>
    tile.copy %c_l0[%c0, %c0] to %c[%c0, %c0] sizes [64, 32] : memref<64x32xf32, #tile.space<l0c>> to memref<64x32xf32, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @matmul
// CHECK:         %[[A1:.*]] = isa.buffer : memref<4096xf16, #isa.space<l1>>
// CHECK-NEXT:    %[[B1:.*]] = isa.buffer : memref<2048xf16, #isa.space<l1>>
// CHECK-NEXT:    %[[A0:.*]] = isa.buffer : memref<4096xf16, #isa.space<l0a>>
// CHECK-NEXT:    %[[B0:.*]] = isa.buffer : memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:    %[[C0:.*]] = isa.buffer : memref<2048xf32, #isa.space<l0c>>
// CHECK-NEXT:    isa.copy_gm_to_l1 %a to %[[A1]] sizes [4096]
// CHECK-NEXT:    isa.copy_gm_to_l1 %b to %[[B1]] sizes [2048]
// CHECK-NEXT:    isa.copy_l1_to_l0a %[[A1]] to %[[A0]] sizes [4, 16, 4, 16] dst_strides [1024, 16, 256, 1]
// CHECK-NEXT:    isa.copy_l1_to_l0b %[[B1]] to %[[B0]] sizes [4, 16, 32] dst_strides [512, 1, 16]
// CHECK-NEXT:    isa.mmad %[[C0]], %[[A0]], %[[B0]] m 64 k 64 n 32 init %{{.*}}
// CHECK-NEXT:    isa.fixpipe %[[C0]] to %c sizes [2, 64, 16] dst_strides [16, 32, 1]
// SYNC-LABEL:  isa.kernel @matmul
// SYNC:          isa.copy_gm_to_l1
// SYNC:          isa.set_flag [MTE2, MTE1, 0]
// SYNC:          isa.wait_flag [MTE2, MTE1, 0]
// SYNC-NEXT:     isa.copy_l1_to_l0a
// SYNC:          isa.set_flag [MTE1, M, 0]
// SYNC:          isa.wait_flag [MTE1, M, 0]
// SYNC-NEXT:     isa.mmad
// SYNC-NEXT:     isa.set_flag [M, FIX, 0]
// SYNC-NEXT:     isa.wait_flag [M, FIX, 0]
// SYNC-NEXT:     isa.fixpipe

// -----

// The Cube's epilogue route follows the target. A tile kernel reads L0C out into UB (the
// epilogue's vector ops then work on the f32 tile), then UB -> GM. On the coupled 910 (no FixPipe) the read-out is the
// Vector unit's copy_l0c_to_ub (CCE copy_matrix_cc_to_ubuf), ordered after the mmad by an
// M -> V flag and before the UB -> GM copy by V -> MTE3; no isa.fixpipe anywhere.

builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @epilogue910 ins(%a: memref<32x32xf16, #tile.space<gm>>, %b: memref<32x32xf16, #tile.space<gm>>) outs(%c: memref<32x32xf32, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %a_l1 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
    %c_ub = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<ub>>
    tile.copy %a[%c0, %c0] to %a_l1[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<gm>> to memref<32x32xf16, #tile.space<l1>>
    tile.copy %b[%c0, %c0] to %b_l1[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<gm>> to memref<32x32xf16, #tile.space<l1>>
    tile.copy %a_l1[%c0, %c0] to %a_l0[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<l1>> to memref<32x32xf16, #tile.space<l0a>>
    tile.copy %b_l1[%c0, %c0] to %b_l0[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<l1>> to memref<32x32xf16, #tile.space<l0b>>
    tile.mmad %a_l0, %b_l0, %c_l0 init %true : memref<32x32xf16, #tile.space<l0a>>, memref<32x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
    tile.copy %c_l0[%c0, %c0] to %c_ub[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<l0c>> to memref<32x32xf32, #tile.space<ub>>
    tile.copy %c_ub[%c0, %c0] to %c[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<ub>> to memref<32x32xf32, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @epilogue910
// CHECK-NOT:     isa.fixpipe
// CHECK:         %[[C0:.*]] = isa.buffer : memref<1024xf32, #isa.space<l0c>>
// CHECK-NEXT:    %[[UB:.*]] = isa.buffer : memref<1024xf32, #isa.space<ub>>
// CHECK-NOT:     isa.fixpipe
// CHECK:         isa.mmad %[[C0]]
// CHECK-NEXT:    isa.copy_l0c_to_ub %[[C0]] to %[[UB]] sizes [2, 32, 16] dst_strides [16, 32, 1] : memref<1024xf32, #isa.space<l0c>> to memref<1024xf32, #isa.space<ub>>
// CHECK-NEXT:    isa.copy_ub_to_gm %[[UB]] to %c sizes [1024]
// CHECK-NOT:     isa.fixpipe
// SYNC-LABEL:  isa.kernel @epilogue910
// SYNC-NOT:      FIX
// SYNC:          isa.mmad
// SYNC-NEXT:     isa.set_flag [M, V, 0]
// SYNC-NEXT:     isa.wait_flag [M, V, 0]
// SYNC-NEXT:     isa.copy_l0c_to_ub
// SYNC-NEXT:     isa.set_flag [V, MTE3, 0]
// SYNC-NEXT:     isa.wait_flag [V, MTE3, 0]
// SYNC-NEXT:     isa.copy_ub_to_gm
// SYNC-NOT:      FIX

// -----

// The same kernel on the 910B reads L0C out with its FixPipe (M -> FIX, FIX -> MTE3).

builtin.module attributes {ge.target = "ascend910b"} {
  tile.kernel @epilogue910b ins(%a: memref<32x32xf16, #tile.space<gm>>, %b: memref<32x32xf16, #tile.space<gm>>) outs(%c: memref<32x32xf32, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %a_l1 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
    %c_ub = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<ub>>
    tile.copy %a[%c0, %c0] to %a_l1[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<gm>> to memref<32x32xf16, #tile.space<l1>>
    tile.copy %b[%c0, %c0] to %b_l1[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<gm>> to memref<32x32xf16, #tile.space<l1>>
    tile.copy %a_l1[%c0, %c0] to %a_l0[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<l1>> to memref<32x32xf16, #tile.space<l0a>>
    tile.copy %b_l1[%c0, %c0] to %b_l0[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<l1>> to memref<32x32xf16, #tile.space<l0b>>
    tile.mmad %a_l0, %b_l0, %c_l0 init %true : memref<32x32xf16, #tile.space<l0a>>, memref<32x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
    tile.copy %c_l0[%c0, %c0] to %c_ub[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<l0c>> to memref<32x32xf32, #tile.space<ub>>
    tile.copy %c_ub[%c0, %c0] to %c[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<ub>> to memref<32x32xf32, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @epilogue910b
// CHECK-NOT:     isa.copy_l0c_to_ub
// CHECK:         isa.mmad %[[C0:.*]], %{{.*}}, %{{.*}} m 32
// CHECK-NEXT:    isa.fixpipe %[[C0]] to %[[UB:.*]] sizes [2, 32, 16] dst_strides [16, 32, 1] : memref<1024xf32, #isa.space<l0c>> to memref<1024xf32, #isa.space<ub>>
// CHECK-NEXT:    isa.copy_ub_to_gm %[[UB]] to %c sizes [1024]
// SYNC-LABEL:  isa.kernel @epilogue910b
// SYNC:          isa.mmad
// SYNC-NEXT:     isa.set_flag [M, FIX, 0]
// SYNC-NEXT:     isa.wait_flag [M, FIX, 0]
// SYNC-NEXT:     isa.fixpipe
// SYNC-NEXT:     isa.set_flag [FIX, MTE3, 0]
// SYNC-NEXT:     isa.wait_flag [FIX, MTE3, 0]
// SYNC-NEXT:     isa.copy_ub_to_gm

// -----

// Edge tiles and double buffering: rows -1 .. 2 of the first tile come from outside the
// input (the window starts at row 1 - r and the rest is the pad value), the last tile's
// rows past the output are not written (the UB -> GM window ends at 10 - r); the loop
// over tiles rotates the two slots of the double buffer: two copies of the body per
// iteration of step 2, then the leftover iteration on slot 0.
builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @edges ins(%x: memref<1x2x10x10x16xf16, #tile.space<gm>>) outs(%y: memref<1x2x10x10x16xf16, #tile.space<gm>>) block_dim 2 kind "elementwise" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %in = tile.alloc buffers 2 : memref<1x1x4x10x16xf16, #tile.space<ub>>
    %block = tile.block_idx : index
    scf.for %t = %c0 to %c3 step %c1 {
      %r = arith.muli %t, %c4 : index
      %h = arith.subi %r, %c1 : index
      tile.copy %x[%c0, %block, %h, %c0, %c0] to %in[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 4, 10, 16] {pad = -1.0 : f32} : memref<1x2x10x10x16xf16, #tile.space<gm>> to memref<1x1x4x10x16xf16, #tile.space<ub>>
      tile.copy %in[%c0, %c0, %c0, %c0, %c0] to %y[%c0, %block, %r, %c0, %c0] sizes [1, 1, 4, 10, 16] : memref<1x1x4x10x16xf16, #tile.space<ub>> to memref<1x2x10x10x16xf16, #tile.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @edges
// CHECK:         %[[IN:.*]], %[[IN1:.*]] = isa.buffer slots 2 : memref<640xf16, #isa.space<ub>>
// CHECK:         scf.for %[[T:.*]] = %c0 to %c2 step %c2 {
// CHECK-NEXT:      %[[R:.*]] = arith.muli %[[T]], %c4 : index
// CHECK-NEXT:      %[[H:.*]] = arith.subi %[[R]], %c1 : index
// CHECK:           %[[LO:.*]] = arith.subi %c0, %[[H]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.subi %c9, %[[H]] : index
// CHECK-NEXT:      %[[HI:.*]] = arith.addi %[[LAST]], %c1 : index
// CHECK-NEXT:      isa.copy_gm_to_ub %x[%{{.*}}] to %[[IN]] sizes [4, 160, 1] {{.*}} window (%[[LO]], %[[HI]], %c0, %c160, %{{.*}}, %{{.*}}) pad -1.000000e+00
// CHECK:           isa.copy_ub_to_gm %[[IN]] to %y
// CHECK:           isa.copy_gm_to_ub %x[%{{.*}}] to %[[IN1]]
// CHECK:           isa.copy_ub_to_gm %[[IN1]] to %y
// CHECK:         scf.for %{{.*}} = %c2 to %c3 step %c1 {
// CHECK:           isa.copy_gm_to_ub %x[%{{.*}}] to %[[IN]]
// CHECK:         } {isa.max_trips = 1 : i64}
// SYNC-LABEL:  isa.kernel @edges
// SYNC:          isa.copy_gm_to_ub {{.*}} to %[[S0:[a-z_0-9]+]] sizes
// SYNC-NEXT:     isa.set_flag [MTE2, MTE3, 0]
// SYNC:          isa.copy_gm_to_ub {{.*}} to %[[S1:[a-z_0-9]+]] sizes
// SYNC-NEXT:     isa.set_flag [MTE2, MTE3, 1]

// -----

// The cores' shares of a block-split loop (lo = block * 3, hi = min(lo + 3, 6)) are odd:
// the leftover tile runs in the last round, slot 1 of each round in a loop of at most one
// trip (to_isa.guarded_rounds), not in a loop of its own after the rounds, whose exit
// drain would make it wait for the round's last store.
builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @odd_shares ins(%x: memref<6x1024xf16, #tile.space<gm>>) outs(%y: memref<6x1024xf16, #tile.space<gm>>) block_dim 2 kind "elementwise" {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c6 = arith.constant 6 : index
    %c1 = arith.constant 1 : index
    %in = tile.alloc buffers 2 : memref<1x1024xf16, #tile.space<ub>>
    %block = tile.block_idx : index
    %lo = arith.muli %block, %c3 : index
    %0 = arith.addi %lo, %c3 : index
    %hi = arith.minui %0, %c6 : index
    scf.for %t = %lo to %hi step %c1 {
      tile.copy %x[%t, %c0] to %in[%c0, %c0] sizes [1, 1024] : memref<6x1024xf16, #tile.space<gm>> to memref<1x1024xf16, #tile.space<ub>>
      tile.copy %in[%c0, %c0] to %y[%t, %c0] sizes [1, 1024] : memref<1x1024xf16, #tile.space<ub>> to memref<6x1024xf16, #tile.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @odd_shares
// CHECK:         %[[IN:.*]], %[[IN1:.*]] = isa.buffer slots 2 : memref<1024xf16, #isa.space<ub>>
// CHECK:         %[[HI:.*]] = arith.minui %{{.*}}, %c6 : index
// CHECK:         %[[LO:.*]] = arith.minui %{{.*}}, %[[HI]] : index
// CHECK-NEXT:    scf.for %[[T:.*]] = %[[LO]] to %[[HI]] step %c2 {
// CHECK:           isa.copy_gm_to_ub %x[%{{.*}}] to %[[IN]]
// CHECK:           isa.copy_ub_to_gm %[[IN]] to %y
// CHECK:           %[[T1:.*]] = arith.addi %[[T]], %c1 : index
// CHECK:           %[[END:.*]] = arith.minui %{{.*}}, %[[HI]] : index
// CHECK-NEXT:      scf.for %[[T1IF:.*]] = %[[T1]] to %[[END]] step %c1 {
// CHECK:             isa.copy_gm_to_ub %x[%{{.*}}] to %[[IN1]]
// CHECK:             isa.copy_ub_to_gm %[[IN1]] to %y
// CHECK:           } {isa.max_trips = 1 : i64}
// CHECK-NEXT:    }
// CHECK-NOT:     scf.for
// CHECK:         }
// SYNC-LABEL:  isa.kernel @odd_shares
// SYNC-NOT:      _rest
// SYNC:          isa.copy_gm_to_ub

// -----

// The int8 epilogue on a FixPipe chip: the L0C read-out of the i32 accumulator takes the
// dequantize (f32 cast, multiply by the per-channel scale), the f16 cast, the ReLU and the
// requantize as FixPipe's VREQ8 mode, reading the scale from UB with stride 0 along the
// rows; it writes the int8 result buffer itself, after the scale's copy-in, and no Vector
// instruction is left (nor the i32 accumulator's UB buffer).

builtin.module attributes {ge.target = "ascend910b"} {
  tile.kernel @int8_epilogue ins(%x: memref<16x64xi8, #tile.space<gm>>, %v1_w_fractal_nz: memref<1x4x16x32xi8, #tile.space<gm>>, %v2_s: memref<32xf32, #tile.space<gm>>) outs(%v4: memref<16x32xi8, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a_gm = tile.view %x : memref<16x64xi8, #tile.space<gm>> to memref<1x16x64xi8, #tile.space<gm>>
    %b_gm = tile.view %v1_w_fractal_nz : memref<1x4x16x32xi8, #tile.space<gm>> to memref<1x1x4x16x32xi8, #tile.space<gm>>
    %a_l1 = tile.alloc buffers 2 : memref<1x16x64xi8, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 2 : memref<1x1x4x16x32xi8, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 2 : memref<16x64xi8, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 2 : memref<64x32xi8, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 2 : memref<16x32xi32, #tile.space<l0c>>
    %acc_ub = tile.alloc buffers 2 : memref<1x16x32xi32, #tile.space<ub>>
    %v2_s_ub = tile.alloc buffers 2 : memref<1x1x32xf32, #tile.space<ub>>
    %v4_ub = tile.alloc buffers 2 : memref<1x16x32xi8, #tile.space<ub>>
    %0 = tile.view %v2_s : memref<32xf32, #tile.space<gm>> to memref<1x1x32xf32, #tile.space<gm>>
    %1 = tile.view %v4 : memref<16x32xi8, #tile.space<gm>> to memref<1x16x32xi8, #tile.space<gm>>
    scf.for %tile = %c0 to %c1 step %c1 {
      tile.copy %a_gm[%c0, %c0, %c0] to %a_l1[%c0, %c0, %c0] sizes [1, 16, 64] {pad = 0.000000e+00 : f32} : memref<1x16x64xi8, #tile.space<gm>> to memref<1x16x64xi8, #tile.space<l1>>
      tile.copy %b_gm[%c0, %c0, %c0, %c0, %c0] to %b_l1[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 4, 16, 32] {pad = 0.000000e+00 : f32} : memref<1x1x4x16x32xi8, #tile.space<gm>> to memref<1x1x4x16x32xi8, #tile.space<l1>>
      %2 = tile.view %a_l1 : memref<1x16x64xi8, #tile.space<l1>> to memref<16x64xi8, #tile.space<l1>>
      tile.copy %2[%c0, %c0] to %a_l0[%c0, %c0] sizes [16, 64] : memref<16x64xi8, #tile.space<l1>> to memref<16x64xi8, #tile.space<l0a>>
      %3 = tile.view %b_l1 : memref<1x1x4x16x32xi8, #tile.space<l1>> to memref<1x4x16x32xi8, #tile.space<l1>>
      %4 = tile.view %b_l0 : memref<64x32xi8, #tile.space<l0b>> to memref<4x16x1x32xi8, #tile.space<l0b>>
      tile.copy %3[%c0, %c0, %c0, %c0] to %4[%c0, %c0, %c0, %c0] sizes [1, 4, 16, 32] perm [1, 2, 0, 3] : memref<1x4x16x32xi8, #tile.space<l1>> to memref<4x16x1x32xi8, #tile.space<l0b>>
      %first = arith.constant true
      tile.mmad %a_l0, %b_l0, %c_l0 init %first : memref<16x64xi8, #tile.space<l0a>>, memref<64x32xi8, #tile.space<l0b>>, memref<16x32xi32, #tile.space<l0c>>
      %5 = tile.view %acc_ub : memref<1x16x32xi32, #tile.space<ub>> to memref<16x32xi32, #tile.space<ub>>
      tile.copy %c_l0[%c0, %c0] to %5[%c0, %c0] sizes [16, 32] : memref<16x32xi32, #tile.space<l0c>> to memref<16x32xi32, #tile.space<ub>>
      tile.copy %0[%c0, %c0, %c0] to %v2_s_ub[%c0, %c0, %c0] sizes [1, 1, 32] {pad = 0.000000e+00 : f32} : memref<1x1x32xf32, #tile.space<gm>> to memref<1x1x32xf32, #tile.space<ub>>
      tile.vector ins(%acc_ub, %v2_s_ub : memref<1x16x32xi32, #tile.space<ub>>, memref<1x1x32xf32, #tile.space<ub>>) outs(%v4_ub : memref<1x16x32xi8, #tile.space<ub>>) {
      ^bb0(%acc: tensor<16x32xi32>, %v2_s_1: tensor<32xf32>):
        %6 = graph.cast %acc : tensor<16x32xi32> to tensor<16x32xf32>
        %7 = graph.mul %6, %v2_s_1 : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
        %8 = graph.cast %7 : tensor<16x32xf32> to tensor<16x32xf16>
        %v3 = graph.relu %8 : tensor<16x32xf16>
        %v4_1 = graph.quantize %v3 {scale = 5.000000e-02 : f32, offset = 0 : i64} : tensor<16x32xf16> to tensor<16x32xi8>
        tile.yield %v4_1 : tensor<16x32xi8>
      }
      tile.copy %v4_ub[%c0, %c0, %c0] to %1[%c0, %c0, %c0] sizes [1, 16, 32] : memref<1x16x32xi8, #tile.space<ub>> to memref<1x16x32xi8, #tile.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @int8_epilogue
// CHECK-NOT:     memref<512xi32, #isa.space<ub>>
// CHECK:         isa.mmad %[[C:[a-z0-9_]+]],
// CHECK-NEXT:    isa.copy_gm_to_ub %v2_s to %[[S:[a-z0-9_]+]] sizes [32]
// CHECK-NEXT:    isa.fixpipe %[[C]] to %[[Q:[a-z0-9_]+]] sizes [2, 16, 16] dst_strides [16, 32, 1] quant_pre "VREQ8" scale %[[S]] strides [16, 0, 1] relu quant_scale 5.000000e-02 : f32 quant_offset 0 : memref<512xi32, #isa.space<l0c>> to memref<512xi8, #isa.space<ub>>, memref<32xf32, #isa.space<ub>>
// CHECK-NEXT:    isa.copy_ub_to_gm %[[Q]] to %v4 sizes [512]
// CHECK-NOT:     isa.v

// -----

// The same kernel on the 910 (no FixPipe): L0C is read out as i32 into UB on the Vector
// pipe and the epilogue is Vector instructions (i32 -> f32, * scale, -> f16, ReLU, -> f32,
// / 0.05, rint -> i8).

builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @int8_epilogue ins(%x: memref<16x64xi8, #tile.space<gm>>, %v1_w_fractal_nz: memref<1x4x16x32xi8, #tile.space<gm>>, %v2_s: memref<32xf32, #tile.space<gm>>) outs(%v4: memref<16x32xi8, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a_gm = tile.view %x : memref<16x64xi8, #tile.space<gm>> to memref<1x16x64xi8, #tile.space<gm>>
    %b_gm = tile.view %v1_w_fractal_nz : memref<1x4x16x32xi8, #tile.space<gm>> to memref<1x1x4x16x32xi8, #tile.space<gm>>
    %a_l1 = tile.alloc buffers 2 : memref<1x16x64xi8, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 2 : memref<1x1x4x16x32xi8, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 2 : memref<16x64xi8, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 2 : memref<64x32xi8, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 2 : memref<16x32xi32, #tile.space<l0c>>
    %acc_ub = tile.alloc buffers 2 : memref<1x16x32xi32, #tile.space<ub>>
    %v2_s_ub = tile.alloc buffers 2 : memref<1x1x32xf32, #tile.space<ub>>
    %v4_ub = tile.alloc buffers 2 : memref<1x16x32xi8, #tile.space<ub>>
    %0 = tile.view %v2_s : memref<32xf32, #tile.space<gm>> to memref<1x1x32xf32, #tile.space<gm>>
    %1 = tile.view %v4 : memref<16x32xi8, #tile.space<gm>> to memref<1x16x32xi8, #tile.space<gm>>
    scf.for %tile = %c0 to %c1 step %c1 {
      tile.copy %a_gm[%c0, %c0, %c0] to %a_l1[%c0, %c0, %c0] sizes [1, 16, 64] {pad = 0.000000e+00 : f32} : memref<1x16x64xi8, #tile.space<gm>> to memref<1x16x64xi8, #tile.space<l1>>
      tile.copy %b_gm[%c0, %c0, %c0, %c0, %c0] to %b_l1[%c0, %c0, %c0, %c0, %c0] sizes [1, 1, 4, 16, 32] {pad = 0.000000e+00 : f32} : memref<1x1x4x16x32xi8, #tile.space<gm>> to memref<1x1x4x16x32xi8, #tile.space<l1>>
      %2 = tile.view %a_l1 : memref<1x16x64xi8, #tile.space<l1>> to memref<16x64xi8, #tile.space<l1>>
      tile.copy %2[%c0, %c0] to %a_l0[%c0, %c0] sizes [16, 64] : memref<16x64xi8, #tile.space<l1>> to memref<16x64xi8, #tile.space<l0a>>
      %3 = tile.view %b_l1 : memref<1x1x4x16x32xi8, #tile.space<l1>> to memref<1x4x16x32xi8, #tile.space<l1>>
      %4 = tile.view %b_l0 : memref<64x32xi8, #tile.space<l0b>> to memref<4x16x1x32xi8, #tile.space<l0b>>
      tile.copy %3[%c0, %c0, %c0, %c0] to %4[%c0, %c0, %c0, %c0] sizes [1, 4, 16, 32] perm [1, 2, 0, 3] : memref<1x4x16x32xi8, #tile.space<l1>> to memref<4x16x1x32xi8, #tile.space<l0b>>
      %first = arith.constant true
      tile.mmad %a_l0, %b_l0, %c_l0 init %first : memref<16x64xi8, #tile.space<l0a>>, memref<64x32xi8, #tile.space<l0b>>, memref<16x32xi32, #tile.space<l0c>>
      %5 = tile.view %acc_ub : memref<1x16x32xi32, #tile.space<ub>> to memref<16x32xi32, #tile.space<ub>>
      tile.copy %c_l0[%c0, %c0] to %5[%c0, %c0] sizes [16, 32] : memref<16x32xi32, #tile.space<l0c>> to memref<16x32xi32, #tile.space<ub>>
      tile.copy %0[%c0, %c0, %c0] to %v2_s_ub[%c0, %c0, %c0] sizes [1, 1, 32] {pad = 0.000000e+00 : f32} : memref<1x1x32xf32, #tile.space<gm>> to memref<1x1x32xf32, #tile.space<ub>>
      tile.vector ins(%acc_ub, %v2_s_ub : memref<1x16x32xi32, #tile.space<ub>>, memref<1x1x32xf32, #tile.space<ub>>) outs(%v4_ub : memref<1x16x32xi8, #tile.space<ub>>) {
      ^bb0(%acc: tensor<16x32xi32>, %v2_s_1: tensor<32xf32>):
        %6 = graph.cast %acc : tensor<16x32xi32> to tensor<16x32xf32>
        %7 = graph.mul %6, %v2_s_1 : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
        %8 = graph.cast %7 : tensor<16x32xf32> to tensor<16x32xf16>
        %v3 = graph.relu %8 : tensor<16x32xf16>
        %v4_1 = graph.quantize %v3 {scale = 5.000000e-02 : f32, offset = 0 : i64} : tensor<16x32xf16> to tensor<16x32xi8>
        tile.yield %v4_1 : tensor<16x32xi8>
      }
      tile.copy %v4_ub[%c0, %c0, %c0] to %1[%c0, %c0, %c0] sizes [1, 16, 32] : memref<1x16x32xi8, #tile.space<ub>> to memref<1x16x32xi8, #tile.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @int8_epilogue
// CHECK:         isa.copy_l0c_to_ub %{{.*}} to %[[ACC:[a-z0-9_]+]] sizes [2, 16, 16] dst_strides [16, 32, 1] : memref<512xi32, #isa.space<l0c>> to memref<512xi32, #isa.space<ub>>
// CHECK:         isa.vconv %[[F:[a-z0-9_]+]], %[[ACC]] repeat 8
// CHECK-NEXT:    isa.vmul %[[F]], %[[F]], %{{.*}} repeat 16 mask 32
// CHECK-NEXT:    isa.vconv
// CHECK-NEXT:    isa.vrelu
// CHECK-NEXT:    isa.vconv
// CHECK-NEXT:    isa.vdup
// CHECK-NEXT:    isa.vdiv
// CHECK-NEXT:    isa.vconv %v4_ub{{.*}} round "rint" repeat 8
