// RUN: ge-opt %s -p plan-local-memory --split-input-file --verify-diagnostics | filecheck %s
// RUN: ge-opt %s -p 'plan-local-memory{reuse=false}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOREUSE

// Buffers live in one loop: each gets bytes of its own, aligned to its memory (UB: 32 B,
// so 100 f16 = 200 B round up to 224). The slots of a double buffer are one allocation,
// slot k at offset + k * 224. Unused buffers share bytes with anything; without reuse,
// each gets its own, aligned (L0A: 512 B).
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @live_together ins(%x: memref<1024xf16, #isa.space<gm>>) outs(%y: memref<1024xf16, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a, %b = isa.buffer slots 2 : memref<100xf16, #isa.space<ub>>
    %t = isa.buffer : memref<128xf16, #isa.space<ub>>
    %l0 = isa.buffer : memref<16xf16, #isa.space<l0a>>
    %l1 = isa.buffer : memref<16xf16, #isa.space<l0a>>
    scf.for %i = %c0 to %c4 step %c1 {
      isa.copy_gm_to_ub %x[%i] to %a sizes [100] : memref<1024xf16, #isa.space<gm>> to memref<100xf16, #isa.space<ub>>
      isa.copy_gm_to_ub %x[%i] to %b sizes [100] : memref<1024xf16, #isa.space<gm>> to memref<100xf16, #isa.space<ub>>
      isa.vadd %t, %a, %b repeat 1 mask 96 : memref<128xf16, #isa.space<ub>>, memref<100xf16, #isa.space<ub>>, memref<100xf16, #isa.space<ub>>
      isa.copy_ub_to_gm %t to %y[%i] sizes [128] : memref<128xf16, #isa.space<ub>> to memref<1024xf16, #isa.space<gm>>
    }
  }
}
// CHECK-LABEL: isa.kernel @live_together
// CHECK:         %a, %b = isa.buffer offset 0 slots 2 : memref<100xf16, #isa.space<ub>>
// CHECK-NEXT:    %t = isa.buffer offset 448 : memref<128xf16, #isa.space<ub>>
// CHECK-NEXT:    %l0 = isa.buffer offset 0 : memref<16xf16, #isa.space<l0a>>
// CHECK-NEXT:    %l1 = isa.buffer offset 0 : memref<16xf16, #isa.space<l0a>>
// NOREUSE-LABEL: isa.kernel @live_together
// NOREUSE:         %l0 = isa.buffer offset 0 : memref<16xf16, #isa.space<l0a>>
// NOREUSE-NEXT:    %l1 = isa.buffer offset 512 : memref<16xf16, #isa.space<l0a>>

// -----

// Two phases, one after the other: the vector temporaries of the first loop (V only) and
// of the second share bytes; the loaded tiles (MTE2 and V) are kept apart while that fits.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @phases ins(%x: memref<1024xf32, #isa.space<gm>>) outs() block_dim 1 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %in0 = isa.buffer : memref<64xf32, #isa.space<ub>>
    %tmp0 = isa.buffer : memref<64xf32, #isa.space<ub>>
    %in1 = isa.buffer : memref<64xf32, #isa.space<ub>>
    %tmp1 = isa.buffer : memref<64xf32, #isa.space<ub>>
    scf.for %i = %c0 to %c4 step %c1 {
      isa.copy_gm_to_ub %x[%i] to %in0 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
      isa.vexp %tmp0, %in0 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
      isa.vln %tmp0, %tmp0 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    }
    scf.for %i = %c0 to %c4 step %c1 {
      isa.copy_gm_to_ub %x[%i] to %in1 sizes [64] : memref<1024xf32, #isa.space<gm>> to memref<64xf32, #isa.space<ub>>
      isa.vexp %tmp1, %in1 repeat 1 : memref<64xf32, #isa.space<ub>>, memref<64xf32, #isa.space<ub>>
    }
  }
}
// CHECK-LABEL: isa.kernel @phases
// CHECK:         %in0 = isa.buffer offset 0 : memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:    %tmp0 = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:    %in1 = isa.buffer offset 512 : memref<64xf32, #isa.space<ub>>
// CHECK-NEXT:    %tmp1 = isa.buffer offset 256 : memref<64xf32, #isa.space<ub>>
// NOREUSE-LABEL: isa.kernel @phases
// NOREUSE:         %tmp1 = isa.buffer offset 768 : memref<64xf32, #isa.space<ub>>

// -----

// When keeping pipes apart does not fit (2 x 160 KB in a 256 KB UB), any two buffers
// whose lifetimes do not overlap share bytes.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @pressure ins(%x: memref<81920xf16, #isa.space<gm>>) outs(%y: memref<81920xf16, #isa.space<gm>>) block_dim 1 {
    %p = isa.buffer : memref<81920xf16, #isa.space<ub>>
    %q = isa.buffer : memref<81920xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %p sizes [81920] : memref<81920xf16, #isa.space<gm>> to memref<81920xf16, #isa.space<ub>>
    isa.copy_ub_to_gm %p to %y sizes [81920] : memref<81920xf16, #isa.space<ub>> to memref<81920xf16, #isa.space<gm>>
    isa.copy_gm_to_ub %y to %q sizes [81920] : memref<81920xf16, #isa.space<gm>> to memref<81920xf16, #isa.space<ub>>
    isa.copy_ub_to_gm %q to %y sizes [81920] : memref<81920xf16, #isa.space<ub>> to memref<81920xf16, #isa.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @pressure
// CHECK:         %p = isa.buffer offset 0 : memref<81920xf16, #isa.space<ub>>
// CHECK-NEXT:    %q = isa.buffer offset 0 : memref<81920xf16, #isa.space<ub>>
// NOREUSE: plan-local-memory: kernel @pressure: ub overflow, the buffers need 327680 bytes while 262144 are available on ascend910

// -----

// Must not change anything: every buffer already has an offset (even overlapping ones).
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @placed ins() outs() block_dim 1 {
    %a = isa.buffer offset 64 : memref<16xf32, #isa.space<ub>>
    %b = isa.buffer offset 64 : memref<16xf32, #isa.space<ub>>
  }
}
// CHECK-LABEL: isa.kernel @placed
// CHECK-NEXT:    %a = isa.buffer offset 64 : memref<16xf32, #isa.space<ub>>
// CHECK-NEXT:    %b = isa.buffer offset 64 : memref<16xf32, #isa.space<ub>>
// CHECK-NEXT:  }

// -----

// A double-buffered L0A tile of 2 x 40 KB does not fit the 64 KB of L0A: the error names
// the kernel with its ONNX node, the memory and the bytes needed and available.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @too_big ins() outs() block_dim 1 {
    %a, %b = isa.buffer slots 2 : memref<160x128xf16, #isa.space<l0a>>
  } loc("conv7")
}
// CHECK: plan-local-memory: kernel @too_big (node conv7): l0a overflow, the buffers need 81920 bytes while 65536 are available on ascend910
