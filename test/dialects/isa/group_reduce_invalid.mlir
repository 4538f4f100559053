// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

// a group reduction keeps the element type
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    %f = isa.buffer offset 1024 : memref<256xf32, #isa.space<ub>>
    isa.vcgadd %f, %a repeat 1 : memref<256xf32, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: isa.vcgadd keeps the element type: f16 to f32
// CHECK: -----

// -----

// its results are consecutive: no dst block stride
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    %b = isa.buffer offset 1024 : memref<256xf16, #isa.space<ub>>
    isa.vcgmax %b, %a repeat 1 blk_stride [2, 1] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: isa.vcgmax writes its results consecutively: dst block stride must be 1
// CHECK: -----

// -----

// the mask counts source elements (at most one repeat: 64 f32)
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf32, #isa.space<ub>>
    %b = isa.buffer offset 1024 : memref<256xf32, #isa.space<ub>>
    isa.vcgmin %b, %a repeat 1 mask 65 : memref<256xf32, #isa.space<ub>>, memref<256xf32, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: mask 65 is out of range 1..64 elements of 4 bytes
