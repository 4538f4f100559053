// RUN: ge-opt %s -p insert-sync --split-input-file --verify-diagnostics | filecheck %s

// Straight-line code: the vector op waits for the load (RAW, MTE2 -> V), the store for the
// vector op (V -> MTE3). Within the Vector pipe, vln reads what vexp wrote: a barrier; the
// independent vabs needs none.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @straight ins(%x: memref<64xf32, #isa.space<gm>>) outs(%y: memref<64xf32, #isa.space<gm>>) block_dim 1 {
    %a = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
    %b = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer offset 512 : memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [64] : memref<64xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
    isa.vexp %b, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    isa.vabs %c, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    isa.vln %b, %b repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    isa.copy_ub_to_gm %b to %y sizes [64] : memref<64xf32, #isa.space<ub>> to memref<64xf32, #isa.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @straight
// CHECK:           isa.copy_gm_to_ub %x to %a sizes [64] : memref<64xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.set_flag [MTE2, V, 0]
// CHECK-NEXT:      isa.wait_flag [MTE2, V, 0]
// CHECK-NEXT:      isa.vexp %b, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.vabs %c, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.pipe_barrier [V]
// CHECK-NEXT:      isa.vln %b, %b repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.set_flag [V, MTE3, 0]
// CHECK-NEXT:      isa.wait_flag [V, MTE3, 0]
// CHECK-NEXT:      isa.copy_ub_to_gm %b to %y sizes [64] : memref<64xf32, #isa.space<ub>> to memref<64xf32, #isa.space<gm>>
// CHECK-NEXT:    }

// -----

// One buffer per tile, reused every iteration: besides the forward pairs, the load of
// iteration i+1 must wait until the vector op of iteration i has read the tile (WAR,
// V -> MTE2), and the vector op until the store of iteration i has read the result
// (WAR, MTE3 -> V). Loop-carried pairs are set once before the loop and waited once after.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @single ins(%x: memref<1024xf32, #isa.space<gm>>) outs(%y: memref<1024xf32, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %a = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
    %b = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
    scf.for %i = %c0 to %c1024 step %c64 {
      isa.copy_gm_to_ub %x[%i] to %a sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
      isa.vexp %b, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
      isa.copy_ub_to_gm %b to %y[%i] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @single
// CHECK:           isa.set_flag [V, MTE2, 0]
// CHECK-NEXT:      isa.set_flag [MTE3, V, 0]
// CHECK-NEXT:      scf.for %i = %c0 to %c1024 step %c64 {
// CHECK-NEXT:        isa.wait_flag [V, MTE2, 0]
// CHECK-NEXT:        isa.copy_gm_to_ub %x[%i] to %a sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [MTE2, V, 0]
// CHECK-NEXT:        isa.wait_flag [MTE2, V, 0]
// CHECK-NEXT:        isa.wait_flag [MTE3, V, 0]
// CHECK-NEXT:        isa.vexp %b, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [V, MTE2, 0]
// CHECK-NEXT:        isa.set_flag [V, MTE3, 0]
// CHECK-NEXT:        isa.wait_flag [V, MTE3, 0]
// CHECK-NEXT:        isa.copy_ub_to_gm %b to %y[%i] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
// CHECK-NEXT:        isa.set_flag [MTE3, V, 0]
// CHECK-NEXT:      }
// CHECK-NEXT:      isa.wait_flag [V, MTE2, 0]
// CHECK-NEXT:      isa.wait_flag [MTE3, V, 0]
// CHECK-NEXT:    }

// -----

// Double buffering: the loop body holds one copy per slot. Each slot gets its own pairs
// and event ids, so the load into slot 1 does not wait for the vector op on slot 0. The
// two stores write different tiles of %y (offsets %i and %i + 64 differ by a constant):
// no barrier between them.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @double ins(%x: memref<1024xf32, #isa.space<gm>>) outs(%y: memref<1024xf32, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %a0, %a1 = isa.buffer offset 0 slots 2 : memref<64xf32, #isa.space<ub>>
    %b0, %b1 = isa.buffer offset 512 slots 2 : memref<64xf32, #isa.space<ub>>
    scf.for %i = %c0 to %c1024 step %c128 {
      isa.copy_gm_to_ub %x[%i] to %a0 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
      isa.vexp %b0, %a0 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
      isa.copy_ub_to_gm %b0 to %y[%i] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
      %j = arith.addi %i, %c64 : index
      isa.copy_gm_to_ub %x[%j] to %a1 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
      isa.vexp %b1, %a1 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
      isa.copy_ub_to_gm %b1 to %y[%j] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @double
// CHECK:           isa.set_flag [V, MTE2, 0]
// CHECK-NEXT:      isa.set_flag [V, MTE2, 1]
// CHECK-NEXT:      isa.set_flag [MTE3, V, 0]
// CHECK-NEXT:      isa.set_flag [MTE3, V, 1]
// CHECK-NEXT:      scf.for %i = %c0 to %c1024 step %c128 {
// CHECK-NEXT:        isa.wait_flag [V, MTE2, 0]
// CHECK-NEXT:        isa.copy_gm_to_ub %x[%i] to %a0 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [MTE2, V, 0]
// CHECK-NEXT:        isa.wait_flag [MTE2, V, 0]
// CHECK-NEXT:        isa.wait_flag [MTE3, V, 0]
// CHECK-NEXT:        isa.vexp %b0, %a0 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [V, MTE2, 0]
// CHECK-NEXT:        isa.set_flag [V, MTE3, 0]
// CHECK-NEXT:        isa.wait_flag [V, MTE3, 0]
// CHECK-NEXT:        isa.copy_ub_to_gm %b0 to %y[%i] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
// CHECK-NEXT:        isa.set_flag [MTE3, V, 0]
// CHECK-NEXT:        %j = arith.addi %i, %c64 : index
// CHECK-NEXT:        isa.wait_flag [V, MTE2, 1]
// CHECK-NEXT:        isa.copy_gm_to_ub %x[%j] to %a1 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [MTE2, V, 1]
// CHECK-NEXT:        isa.wait_flag [MTE2, V, 1]
// CHECK-NEXT:        isa.wait_flag [MTE3, V, 1]
// CHECK-NEXT:        isa.vexp %b1, %a1 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:        isa.set_flag [V, MTE2, 1]
// CHECK-NEXT:        isa.set_flag [V, MTE3, 1]
// CHECK-NEXT:        isa.wait_flag [V, MTE3, 1]
// CHECK-NEXT:        isa.copy_ub_to_gm %b1 to %y[%j] sizes [64] : memref<64xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
// CHECK-NEXT:        isa.set_flag [MTE3, V, 1]
// CHECK-NEXT:      }
// CHECK-NEXT:      isa.wait_flag [V, MTE2, 0]
// CHECK-NEXT:      isa.wait_flag [V, MTE2, 1]
// CHECK-NEXT:      isa.wait_flag [MTE3, V, 0]
// CHECK-NEXT:      isa.wait_flag [MTE3, V, 1]
// CHECK-NEXT:    }

// -----

// The Cube path: GM -> L1 (MTE2) -> L0A / L0B (MTE1) -> mmad (M) -> fixpipe (FIX). The two
// mmads accumulate into one L0C buffer: the Cube finishes each instruction before the
// next, so they need no barrier.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @cube ins(%a: memref<256xf16, #isa.space<gm>>) outs(%c: memref<256xf32, #isa.space<gm>>) block_dim 1 {
    %true = arith.constant true
    %l1 = isa.buffer offset 0 : memref<256xf16, #isa.space<l1>>
    %l0a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    %l0b = isa.buffer offset 0 : memref<256xf16, #isa.space<l0b>>
    %acc = isa.buffer offset 0 : memref<256xf32, #isa.space<l0c>>
    isa.copy_gm_to_l1 %a to %l1 sizes [256] : memref<256xf16, #isa.space<gm>> to memref<256xf16, #isa.space<l1>>
    isa.copy_l1_to_l0a %l1 to %l0a sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0a>>
    isa.copy_l1_to_l0b %l1 to %l0b sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0b>>
    isa.mmad %acc, %l0a, %l0b m 16 k 16 n 16 init %true : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
    isa.mmad %acc, %l0a, %l0b m 16 k 16 n 16 : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
    isa.fixpipe %acc to %c sizes [256] : memref<256xf32, #isa.space<l0c>> to memref<256xf32, #isa.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @cube
// CHECK:           isa.copy_gm_to_l1 %a to %l1 sizes [256] : memref<256xf16, #isa.space<gm>> to memref<256xf16, #isa.space<l1>>
// CHECK-NEXT:      isa.set_flag [MTE2, MTE1, 0]
// CHECK-NEXT:      isa.wait_flag [MTE2, MTE1, 0]
// CHECK-NEXT:      isa.copy_l1_to_l0a %l1 to %l0a sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0a>>
// CHECK-NEXT:      isa.copy_l1_to_l0b %l1 to %l0b sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0b>>
// CHECK-NEXT:      isa.set_flag [MTE1, M, 0]
// CHECK-NEXT:      isa.wait_flag [MTE1, M, 0]
// CHECK-NEXT:      isa.mmad %acc, %l0a, %l0b m 16 k 16 n 16 init %true : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
// CHECK-NEXT:      isa.mmad %acc, %l0a, %l0b m 16 k 16 n 16 : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
// CHECK-NEXT:      isa.set_flag [M, FIX, 0]
// CHECK-NEXT:      isa.wait_flag [M, FIX, 0]
// CHECK-NEXT:      isa.fixpipe %acc to %c sizes [256] : memref<256xf32, #isa.space<l0c>> to memref<256xf32, #isa.space<gm>>
// CHECK-NEXT:    }

// -----

// Must not change anything: the loads fill different buffers and nothing reads them.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @independent ins(%x: memref<128xf32, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
    %b = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %b sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
  }
}
// CHECK-LABEL: isa.kernel @independent
// CHECK:           isa.copy_gm_to_ub %x to %a sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.copy_gm_to_ub %x to %b sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:    }

// -----

// Must not change anything: a kernel that already has sync ops is left as written.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @synced ins(%x: memref<64xf32, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [64] : memref<64xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
    isa.pipe_barrier [ALL]
    isa.vexp %a, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
  }
}
// CHECK-LABEL: isa.kernel @synced
// CHECK:           isa.copy_gm_to_ub %x to %a sizes [64] : memref<64xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.pipe_barrier [ALL]
// CHECK-NEXT:      isa.vexp %a, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:    }

// -----

// Dependencies are found on planned bytes: an unplaced buffer is an error.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @unplaced ins(%x: memref<64xf32, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer : memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [64] : memref<64xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
  }
}
// CHECK: insert-sync: kernel @unplaced: isa.copy_gm_to_ub uses a buffer without an offset; run plan-local-memory first

// -----

// Six double-buffered inputs read by five Vector instructions per slot: ten loop-carried
// V -> MTE2 pairs (refill a buffer only after its last read) would be live at once, two
// more than the 910B's eight event ids (the 910 has four); the nearest pairs merge (set
// after both reads, waited before both loads) until eight ids suffice.
builtin.module attributes {ge.target = "ascend910b"} {
  isa.kernel @six_inputs ins(%x: memref<8192xf16, #isa.space<gm>>) outs(%y: memref<8192xf16, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %a0, %b0 = isa.buffer offset 0 slots 2 : memref<128xf16, #isa.space<ub>>
    %a1, %b1 = isa.buffer offset 512 slots 2 : memref<128xf16, #isa.space<ub>>
    %a2, %b2 = isa.buffer offset 1024 slots 2 : memref<128xf16, #isa.space<ub>>
    %a3, %b3 = isa.buffer offset 1536 slots 2 : memref<128xf16, #isa.space<ub>>
    %a4, %b4 = isa.buffer offset 2048 slots 2 : memref<128xf16, #isa.space<ub>>
    %a5, %b5 = isa.buffer offset 2560 slots 2 : memref<128xf16, #isa.space<ub>>
    %o = isa.buffer offset 8192 : memref<128xf16, #isa.space<ub>>
    scf.for %t = %c0 to %c8 step %c2 {
      isa.copy_gm_to_ub %x[%c128] to %a0 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %a1 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %a2 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %a3 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %a4 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %a5 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %a0, %a1 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %a2 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %a3 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %a4 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %a5 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.copy_ub_to_gm %o to %y[%c128] sizes [128] : memref<128xf16, #isa.space<ub>> to memref<8192xf16, #isa.space<gm>>
      isa.copy_gm_to_ub %x[%c128] to %b0 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %b1 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %b2 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %b3 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %b4 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%c128] to %b5 sizes [128] : memref<8192xf16, #isa.space<gm>> to memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %b0, %b1 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %b2 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %b3 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %b4 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.vadd %o, %o, %b5 repeat 1 : memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>, memref<128xf16, #isa.space<ub>>
      isa.copy_ub_to_gm %o to %y[%c128] sizes [128] : memref<128xf16, #isa.space<ub>> to memref<8192xf16, #isa.space<gm>>
    }
  }
}

// CHECK-LABEL: isa.kernel @six_inputs
// CHECK-NOT:     {{\[}}V, MTE2, {{[89]}}{{\]}}
// CHECK:         isa.set_flag [V, MTE2, 7]
// CHECK-NOT:     {{\[}}V, MTE2, {{[89]}}{{\]}}
// CHECK:       }

// -----

// Copies to GM through a window write only the window (no pad): two copies of adjacent
// 64-column pieces of a 100-column map through one strided [16, 64] rectangle do not
// overlap once each rectangle is cut to the largest window its loop counters allow (here
// columns [0, 64) and [0, 36) at offsets 0 and 64), so MTE3 needs no barrier between them;
// the third copy, without a window, writes over the second.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @windows ins(%x: memref<2048xf16, #isa.space<gm>>) outs(%y: memref<1700xf16, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %c1024 = arith.constant 1024 : index
    %a = isa.buffer offset 0 : memref<1024xf16, #isa.space<ub>>
    %b = isa.buffer offset 2048 : memref<1024xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [1024] : memref<2048xf16, #isa.space<gm>> to memref<1024xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x[%c1024] to %b sizes [1024] : memref<2048xf16, #isa.space<gm>> to memref<1024xf16, #isa.space<ub>>
    scf.for %i = %c0 to %c1 step %c1 {
      %lo = arith.subi %c0, %i : index
      %hi = arith.subi %c100, %i : index
      %j = arith.addi %i, %c64 : index
      %hi2 = arith.subi %hi, %c64 : index
      isa.copy_ub_to_gm %a to %y[%i] sizes [16, 64] dst_strides [100, 1] window (%c0, %c16, %lo, %hi) : memref<1024xf16, #isa.space<ub>> to memref<1700xf16, #isa.space<gm>>
      isa.copy_ub_to_gm %b to %y[%j] sizes [16, 64] dst_strides [100, 1] window (%c0, %c16, %lo, %hi2) : memref<1024xf16, #isa.space<ub>> to memref<1700xf16, #isa.space<gm>>
      isa.copy_ub_to_gm %b to %y[%j] sizes [16, 64] dst_strides [100, 1] : memref<1024xf16, #isa.space<ub>> to memref<1700xf16, #isa.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @windows
// CHECK:         isa.copy_ub_to_gm %a to %y[%i] sizes [16, 64] dst_strides [100, 1] window (%c0, %c16, %lo, %hi)
// CHECK-NEXT:    isa.copy_ub_to_gm %b to %y[%j] sizes [16, 64] dst_strides [100, 1] window (%c0, %c16, %lo, %hi2)
// CHECK-NEXT:    isa.pipe_barrier [MTE3]
// CHECK-NEXT:    isa.copy_ub_to_gm %b to %y[%j] sizes [16, 64] dst_strides [100, 1] :

// -----

// Overlapping forward dependencies of one pipe pair each get their own pair, set right after
// their first side: the first vexp waits for the first load only, not for the second (one
// pair set after the later load would serialize an unrolled K chunk's steps).
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @overlapping ins(%x: memref<128xf32, #isa.space<gm>>) outs(%y: memref<64xf32, #isa.space<gm>>) block_dim 1 {
    %a = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
    %b = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer offset 512 : memref<64xf32, #isa.space<ub>>
    %d = isa.buffer offset 768 : memref<64xf32, #isa.space<ub>>
    %c64 = arith.constant 64 : index
    isa.copy_gm_to_ub %x to %a sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x[%c64] to %b sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
    isa.vexp %c, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    isa.vexp %d, %b repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    isa.copy_ub_to_gm %d to %y sizes [64] : memref<64xf32, #isa.space<ub>> to memref<64xf32, #isa.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @overlapping
// CHECK:           isa.copy_gm_to_ub %x to %a sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.set_flag [MTE2, V, 0]
// CHECK-NEXT:      isa.copy_gm_to_ub %x[%c64] to %b sizes [64] : memref<128xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.set_flag [MTE2, V, 1]
// CHECK-NEXT:      isa.wait_flag [MTE2, V, 0]
// CHECK-NEXT:      isa.vexp %c, %a repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:      isa.wait_flag [MTE2, V, 1]
// CHECK-NEXT:      isa.vexp %d, %b repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>

// -----

// A loop's pre-set goes above the work its pipe does before the loop when nothing after
// the loop needs it there (insert_sync._early_presets): the L1 -> L0A move of the
// prologue (a Cube kernel's resident ones block) no longer holds the loop's first load.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @early ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %p = isa.buffer offset 0 : memref<256xf16, #isa.space<l1>>
    %q = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    %a = isa.buffer offset 512 : memref<64xf16, #isa.space<l1>>
    %b = isa.buffer offset 0 : memref<64xf16, #isa.space<l0b>>
    isa.copy_l1_to_l0a %p to %q sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0a>>
    scf.for %i = %c0 to %c1024 step %c64 {
      isa.copy_gm_to_l1 %x[%i] to %a sizes [64] : memref<1024xf16, #isa.space<gm>> to memref<64xf16, #isa.space<l1>>
      isa.copy_l1_to_l0b %a to %b sizes [64] : memref<64xf16, #isa.space<l1>> to memref<64xf16, #isa.space<l0b>>
    }
  }
}
// CHECK-LABEL: isa.kernel @early
// CHECK:           %b = isa.buffer offset 0 : memref<64xf16, #isa.space<l0b>>
// CHECK-NEXT:      isa.set_flag [MTE1, MTE2, 0]
// CHECK-NEXT:      isa.copy_l1_to_l0a %p to %q
// CHECK-NEXT:      scf.for %i = %c0 to %c1024 step %c64 {
// CHECK-NEXT:        isa.wait_flag [MTE1, MTE2, 0]
// CHECK-NEXT:        isa.copy_gm_to_l1 %x[%i] to %a
// CHECK:             isa.copy_l1_to_l0b %a to %b
// CHECK-NEXT:        isa.set_flag [MTE1, MTE2, 0]
// CHECK-NEXT:      }
// CHECK-NEXT:      isa.wait_flag [MTE1, MTE2, 0]

// -----

// The same with the prologue's move reading the bytes the loop loads into (%p overlaps %a):
// that WAR gets a pair of its own, set after the move and waited before the loop.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @early_pair ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %p = isa.buffer offset 512 : memref<256xf16, #isa.space<l1>>
    %q = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    %a = isa.buffer offset 512 : memref<64xf16, #isa.space<l1>>
    %b = isa.buffer offset 0 : memref<64xf16, #isa.space<l0b>>
    isa.copy_l1_to_l0a %p to %q sizes [256] : memref<256xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0a>>
    scf.for %i = %c0 to %c1024 step %c64 {
      isa.copy_gm_to_l1 %x[%i] to %a sizes [64] : memref<1024xf16, #isa.space<gm>> to memref<64xf16, #isa.space<l1>>
      isa.copy_l1_to_l0b %a to %b sizes [64] : memref<64xf16, #isa.space<l1>> to memref<64xf16, #isa.space<l0b>>
    }
  }
}
// CHECK-LABEL: isa.kernel @early_pair
// CHECK:           isa.set_flag [MTE1, MTE2, 0]
// CHECK-NEXT:      isa.copy_l1_to_l0a %p to %q
// CHECK-NEXT:      isa.set_flag [MTE1, MTE2, 1]
// CHECK-NEXT:      isa.wait_flag [MTE1, MTE2, 1]
// CHECK-NEXT:      scf.for %i = %c0 to %c1024 step %c64 {
// CHECK-NEXT:        isa.wait_flag [MTE1, MTE2, 0]
