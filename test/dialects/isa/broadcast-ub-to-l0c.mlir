// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP
// isa.broadcast_ub_to_l0c (CCE broadcast_ub_to_cc, Ascend C BroadCastVecToMM): a per-column
// vector in UB into L0C fractals, 16 rows each; count blocks of len fractals, the gaps in
// 32-byte source blocks and in 256-element destination fractals.

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @bias ins() outs() block_dim 1 {
    %c256 = arith.constant 256 : index
    %b = isa.buffer : memref<64xf32, #isa.space<ub>>
    %c = isa.buffer : memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c count 4 len 1 src_gap 0 dst_gap 1 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
    isa.broadcast_ub_to_l0c %b to %c[%c256] count 4 len 1 src_gap 0 dst_gap 1 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
  }
}
// CHECK-LABEL: isa.kernel @bias
// CHECK:         isa.broadcast_ub_to_l0c %[[B:.*]] to %[[C:.*]] count 4 len 1 src_gap 0 dst_gap 1 : memref<64xf32, #isa.space<ub>> to memref<2048xf32, #isa.space<l0c>>
// CHECK-NEXT:    isa.broadcast_ub_to_l0c %[[B]] to %[[C]][%{{.*}}] count 4 len 1 src_gap 0 dst_gap 1
// CHECK-GENERIC: "isa.broadcast_ub_to_l0c"(%{{.*}}, %{{.*}}) <{count = 4 : i64, len = 1 : i64, src_gap = 0 : i64, dst_gap = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>}>
