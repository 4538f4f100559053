// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

// The group reductions (CCE vcgadd / vcgmax / vcgmin: one value per 32-byte block) in their
// custom form, printed back unchanged: contiguous repeats, 8 rows on the blocks of a repeat
// (block stride = the row stride) with a dst repeat stride in elements, a partial mask.

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @group ins(%x: memref<1024xf32, #isa.space<gm>>) outs() block_dim 1 {
    %c32 = arith.constant 32 : index
    %a = isa.buffer offset 0 : memref<512xf32, #isa.space<ub>>
    %b = isa.buffer offset 2048 : memref<64xf32, #isa.space<ub>>
    %h = isa.buffer offset 4096 : memref<512xf16, #isa.space<ub>>
    %g = isa.buffer offset 5120 : memref<64xf16, #isa.space<ub>>
    isa.vcgadd %b, %a repeat 8 : memref<64xf32, #isa.space<ub>>, memref<512xf32, #isa.space<ub>>
    isa.vcgmax %b[%c32], %a repeat 1 mask 40 blk_stride [1, 8] rep_stride [8, 64] : memref<64xf32, #isa.space<ub>>, memref<512xf32, #isa.space<ub>>
    isa.vcgmin %g, %h repeat 4 rep_stride [16, 8] : memref<64xf16, #isa.space<ub>>, memref<512xf16, #isa.space<ub>>
  }
}

// CHECK:      isa.vcgadd %b, %a repeat 8 : memref<64xf32, #isa.space<ub>>, memref<512xf32, #isa.space<ub>>
// CHECK-NEXT: isa.vcgmax %b[%c32], %a repeat 1 mask 40 blk_stride [1, 8] rep_stride [8, 64] : memref<64xf32, #isa.space<ub>>, memref<512xf32, #isa.space<ub>>
// CHECK-NEXT: isa.vcgmin %g, %h repeat 4 rep_stride [16, 8] : memref<64xf16, #isa.space<ub>>, memref<512xf16, #isa.space<ub>>

// The generic form: the dst offset is its own operand segment, the strides dense arrays.
// CHECK-GENERIC: "isa.vcgmax"(%b, %c32, %a) <{repeat = 1 : i64, mask = 40 : i64, blk_stride = array<i64: 1, 8>, rep_stride = array<i64: 8, 64>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}>
