// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The verifier of isa.broadcast_ub_to_l0c: one element type (f16, f32 or i32), UB to L0C,
// 8-bit fields, a fractal-aligned destination inside its buffer.

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %b = isa.buffer : memref<64xf16, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c count 4 len 1 src_gap 0 dst_gap 1 : memref<64xf16, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
  }
}
// CHECK: Operation does not verify: broadcast_ub_to_l0c keeps the element type: f16 to f32

// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %b = isa.buffer : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %c to %b count 4 len 1 src_gap 0 dst_gap 1 : memref<2048xf32, #isa.space<l0c>> to memref<64xf32, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: isa.broadcast_ub_to_l0c takes its src in ub, got l0c

// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %b = isa.buffer : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c count 0 len 1 src_gap 0 dst_gap 1 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
  }
}
// CHECK: Operation does not verify: count 0 is out of range 1..255

// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %c16 = arith.constant 16 : index
    %b = isa.buffer : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c[%c16] count 4 len 1 src_gap 0 dst_gap 1 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
  }
}
// CHECK: Operation does not verify: dst offset 16 is not on a 256-element fractal

// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %b = isa.buffer : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c count 4 len 1 src_gap 0 dst_gap 2 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
  }
}
// CHECK: Operation does not verify: dst elements [0, 2560) are outside its 2048 elements

// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins() outs() block_dim 1 {
    %b = isa.buffer : memref<64xi8, #isa.space<ub>>
    %c = isa.buffer : memref<2048xi8, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c count 1 len 1 src_gap 0 dst_gap 0 : memref<64xi8, #isa.space<ub>> to memref<2048xi8, #isa.space<l0c>>
  }
}
// CHECK: Operation does not verify: broadcast_ub_to_l0c moves f16, f32 or i32 elements, got i8
