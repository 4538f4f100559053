// RUN: ge-opt %s -p to-isa | filecheck %s
// A ReLU that is the only use of an Add runs on the Add's pass: one vaddrelu (CCE's
// ReLU(src0 + src1), a residual block's join), no vadd and no vrelu. An Add whose result
// is also used elsewhere keeps its vadd, and its ReLU a vrelu.

builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @join ins(%x: memref<64x128xf16, #tile.space<gm>>, %y: memref<64x128xf16, #tile.space<gm>>) outs(%r: memref<64x128xf16, #tile.space<gm>>, %s: memref<64x128xf16, #tile.space<gm>>) block_dim 1 kind "elementwise" {
    %c0 = arith.constant 0 : index
    %x_ub = tile.alloc buffers 1 : memref<64x128xf16, #tile.space<ub>>
    %y_ub = tile.alloc buffers 1 : memref<64x128xf16, #tile.space<ub>>
    %r_ub = tile.alloc buffers 1 : memref<64x128xf16, #tile.space<ub>>
    %s_ub = tile.alloc buffers 1 : memref<64x128xf16, #tile.space<ub>>
    tile.copy %x[%c0, %c0] to %x_ub[%c0, %c0] sizes [64, 128] : memref<64x128xf16, #tile.space<gm>> to memref<64x128xf16, #tile.space<ub>>
    tile.copy %y[%c0, %c0] to %y_ub[%c0, %c0] sizes [64, 128] : memref<64x128xf16, #tile.space<gm>> to memref<64x128xf16, #tile.space<ub>>
    tile.vector ins(%x_ub, %y_ub : memref<64x128xf16, #tile.space<ub>>, memref<64x128xf16, #tile.space<ub>>) outs(%r_ub, %s_ub : memref<64x128xf16, #tile.space<ub>>, memref<64x128xf16, #tile.space<ub>>) {
    ^bb0(%a: tensor<64x128xf16>, %b: tensor<64x128xf16>):
      %sum = graph.add %a, %b : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
      %joined = graph.relu %sum : tensor<64x128xf16>
      %both = graph.add %joined, %b : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
      %kept = graph.relu %both : tensor<64x128xf16>
      %twice = graph.add %kept, %both : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
      tile.yield %joined, %twice : tensor<64x128xf16>, tensor<64x128xf16>
    }
    tile.copy %r_ub[%c0, %c0] to %r[%c0, %c0] sizes [64, 128] : memref<64x128xf16, #tile.space<ub>> to memref<64x128xf16, #tile.space<gm>>
    tile.copy %s_ub[%c0, %c0] to %s[%c0, %c0] sizes [64, 128] : memref<64x128xf16, #tile.space<ub>> to memref<64x128xf16, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @join
// CHECK:         isa.vaddrelu %r_ub, %x_ub, %y_ub repeat 64
// CHECK-NOT:     isa.vrelu
// CHECK-NEXT:    isa.vadd %[[BOTH:.*]], %r_ub, %y_ub repeat 64
// CHECK-NEXT:    isa.vrelu %[[KEPT:.*]], %[[BOTH]] repeat 64
// CHECK-NEXT:    isa.vadd %s_ub, %[[KEPT]], %[[BOTH]] repeat 64
// CHECK-NOT:     isa.vaddrelu
// CHECK:         isa.copy_ub_to_gm
