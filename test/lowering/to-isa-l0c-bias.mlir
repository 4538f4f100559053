// RUN: ge-opt %s -p to-isa --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'to-isa{l0c-bias=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s -p to-isa,plan-local-memory,insert-sync --split-input-file | filecheck %s --check-prefix=SYNC
// RUN: ge-opt %s -p 'to-isa{resident-bias=false}' --split-input-file | filecheck %s --check-prefix=TILE
// The 910's Cube epilogue (no FixPipe): an epilogue that starts acc + bias (per output
// column), then the cast to f16 and a ReLU, puts the f32 bias into the L0C tile before
// the K loop (broadcast_ub_to_l0c, one per row fractal: count = 2 column fractals, dst_gap
// = the other row fractal), the mmads accumulate onto it (init false), and the read-out
// converts and ReLUs (copy_l0c_to_ub into the f16 result); nothing is left for the
// Vector unit. The bias is copied in and cast to f32 once, at the kernel's start (zero
// padded to whole tiles when the last tile would read past it: not here); every tile
// broadcasts from its columns there (with resident-bias=false: copied and cast per tile,
// before its broadcasts). With
// l0c-bias=false the read-out is f32 and the vector ops do the rest.

builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @bias_relu ins(%a: memref<32x32xf16, #tile.space<gm>>, %b: memref<32x32xf16, #tile.space<gm>>, %bias: memref<32xf16, #tile.space<gm>>) outs(%c: memref<32x32xf16, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %a_l1 = tile.alloc buffers 1 : memref<32x16xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 1 : memref<32x16xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
    %acc_ub = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<ub>>
    %bias_ub = tile.alloc buffers 1 : memref<32xf16, #tile.space<ub>>
    %y_ub = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<ub>>
    scf.for %kc = %c0 to %c2 step %c1 {
      %k = arith.muli %kc, %c16 : index
      tile.copy %a[%c0, %k] to %a_l1[%c0, %c0] sizes [32, 16] : memref<32x32xf16, #tile.space<gm>> to memref<32x16xf16, #tile.space<l1>>
      tile.copy %b[%k, %c0] to %b_l1[%c0, %c0] sizes [16, 32] : memref<32x32xf16, #tile.space<gm>> to memref<16x32xf16, #tile.space<l1>>
      tile.copy %a_l1[%c0, %c0] to %a_l0[%c0, %c0] sizes [32, 16] : memref<32x16xf16, #tile.space<l1>> to memref<32x16xf16, #tile.space<l0a>>
      tile.copy %b_l1[%c0, %c0] to %b_l0[%c0, %c0] sizes [16, 32] : memref<16x32xf16, #tile.space<l1>> to memref<16x32xf16, #tile.space<l0b>>
      %first = arith.cmpi eq, %k, %c0 : index
      tile.mmad %a_l0, %b_l0, %c_l0 init %first : memref<32x16xf16, #tile.space<l0a>>, memref<16x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
    }
    tile.copy %c_l0[%c0, %c0] to %acc_ub[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<l0c>> to memref<32x32xf32, #tile.space<ub>>
    tile.copy %bias[%c0] to %bias_ub[%c0] sizes [32] : memref<32xf16, #tile.space<gm>> to memref<32xf16, #tile.space<ub>>
    tile.vector ins(%acc_ub, %bias_ub : memref<32x32xf32, #tile.space<ub>>, memref<32xf16, #tile.space<ub>>) outs(%y_ub : memref<32x32xf16, #tile.space<ub>>) {
    ^bb0(%acc: tensor<32x32xf32>, %bv: tensor<32xf16>):
      %bf = graph.cast %bv : tensor<32xf16> to tensor<32xf32>
      %s = graph.add %acc, %bf : (tensor<32x32xf32>, tensor<32xf32>) -> tensor<32x32xf32>
      %h = graph.cast %s : tensor<32x32xf32> to tensor<32x32xf16>
      %r = graph.relu %h : tensor<32x32xf16>
      tile.yield %r : tensor<32x32xf16>
    }
    tile.copy %y_ub[%c0, %c0] to %c[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<ub>> to memref<32x32xf16, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @bias_relu
// CHECK:         %[[FALSE:.*]] = arith.constant false
// CHECK:         %[[ALL:.*]] = isa.buffer : memref<32xf16, #isa.space<ub>>
// CHECK:         %[[ALL32:.*]] = isa.buffer : memref<32xf32, #isa.space<ub>>
// CHECK:         %[[C0:.*]] = isa.buffer : memref<1024xf32, #isa.space<l0c>>
// CHECK:         %[[Y:.*]] = isa.buffer : memref<1024xf16, #isa.space<ub>>
// CHECK-NOT:     isa.vdup
// CHECK:         isa.copy_gm_to_ub %bias to %[[ALL]] sizes [32]
// CHECK-NEXT:    isa.vconv %[[ALL32]], %[[ALL]] repeat 1 mask 32 : memref<32xf32, #isa.space<ub>>, memref<32xf16, #isa.space<ub>>
// CHECK-NEXT:    isa.broadcast_ub_to_l0c %[[ALL32]] to %[[C0]] count 2 len 1 src_gap 0 dst_gap 1
// CHECK-NEXT:    isa.broadcast_ub_to_l0c %[[ALL32]] to %[[C0]][%{{.*}}] count 2 len 1 src_gap 0 dst_gap 1
// CHECK-NEXT:    scf.for
// CHECK:           isa.mmad %[[C0]], %{{.*}}, %{{.*}} m 32 k 16 n 32 init %[[FALSE]]
// CHECK:         isa.copy_l0c_to_ub %[[C0]] to %[[Y]] sizes [2, 32, 16] dst_strides [16, 32, 1] relu : memref<1024xf32, #isa.space<l0c>> to memref<1024xf16, #isa.space<ub>>
// CHECK-NEXT:    isa.copy_ub_to_gm %[[Y]] to %c sizes [1024]
// CHECK-NOT:     isa.vadd
// CHECK-NOT:     isa.vrelu
// TILE-LABEL:  isa.kernel @bias_relu
// TILE:          %[[FALSE:.*]] = arith.constant false
// TILE:          %[[C0:.*]] = isa.buffer : memref<1024xf32, #isa.space<l0c>>
// TILE:          %[[BIAS:.*]] = isa.buffer : memref<32xf16, #isa.space<ub>>
// TILE:          %[[Y:.*]] = isa.buffer : memref<1024xf16, #isa.space<ub>>
// TILE:          %[[B32:.*]] = isa.buffer : memref<32xf32, #isa.space<ub>>
// TILE:          isa.copy_gm_to_ub %bias to %[[BIAS]] sizes [32]
// TILE-NEXT:     isa.vconv %[[B32]], %[[BIAS]] repeat 1 mask 32 : memref<32xf32, #isa.space<ub>>, memref<32xf16, #isa.space<ub>>
// TILE-NEXT:     isa.broadcast_ub_to_l0c %[[B32]] to %[[C0]] count 2 len 1 src_gap 0 dst_gap 1
// TILE-NEXT:     isa.broadcast_ub_to_l0c %[[B32]] to %[[C0]][%{{.*}}] count 2 len 1 src_gap 0 dst_gap 1
// TILE-NEXT:     scf.for
// TILE:            isa.mmad %[[C0]], %{{.*}}, %{{.*}} m 32 k 16 n 32 init %[[FALSE]]
// TILE:          isa.copy_l0c_to_ub %[[C0]] to %[[Y]] sizes [2, 32, 16] dst_strides [16, 32, 1] relu
// OFF-LABEL:   isa.kernel @bias_relu
// OFF-NOT:       isa.broadcast_ub_to_l0c
// OFF:           isa.copy_l0c_to_ub %{{.*}} : memref<1024xf32, #isa.space<l0c>> to memref<1024xf32, #isa.space<ub>>
// OFF:           isa.vadd
// OFF:           isa.vconv
// OFF:           isa.vrelu
// SYNC-LABEL:  isa.kernel @bias_relu
// SYNC:          isa.broadcast_ub_to_l0c
// SYNC:          isa.set_flag [V, M, {{[0-9]}}]
// SYNC:          isa.wait_flag [V, M, {{[0-9]}}]
// SYNC:          isa.mmad

// -----

// Not per column: a bias [32, 1] (one value per row) cannot go into L0C by the broadcast,
// so the epilogue stays on the Vector unit as it was (f32 read-out, vadd, vconv).
builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @row_bias ins(%a: memref<32x16xf16, #tile.space<gm>>, %b: memref<16x32xf16, #tile.space<gm>>, %bias: memref<32x1xf32, #tile.space<gm>>) outs(%c: memref<32x32xf16, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %a_l1 = tile.alloc buffers 1 : memref<32x16xf16, #tile.space<l1>>
    %b_l1 = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l1>>
    %a_l0 = tile.alloc buffers 1 : memref<32x16xf16, #tile.space<l0a>>
    %b_l0 = tile.alloc buffers 1 : memref<16x32xf16, #tile.space<l0b>>
    %c_l0 = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<l0c>>
    %acc_ub = tile.alloc buffers 1 : memref<32x32xf32, #tile.space<ub>>
    %bias_ub = tile.alloc buffers 1 : memref<32x1xf32, #tile.space<ub>>
    %y_ub = tile.alloc buffers 1 : memref<32x32xf16, #tile.space<ub>>
    tile.copy %a[%c0, %c0] to %a_l1[%c0, %c0] sizes [32, 16] : memref<32x16xf16, #tile.space<gm>> to memref<32x16xf16, #tile.space<l1>>
    tile.copy %b[%c0, %c0] to %b_l1[%c0, %c0] sizes [16, 32] : memref<16x32xf16, #tile.space<gm>> to memref<16x32xf16, #tile.space<l1>>
    tile.copy %a_l1[%c0, %c0] to %a_l0[%c0, %c0] sizes [32, 16] : memref<32x16xf16, #tile.space<l1>> to memref<32x16xf16, #tile.space<l0a>>
    tile.copy %b_l1[%c0, %c0] to %b_l0[%c0, %c0] sizes [16, 32] : memref<16x32xf16, #tile.space<l1>> to memref<16x32xf16, #tile.space<l0b>>
    tile.mmad %a_l0, %b_l0, %c_l0 init %true : memref<32x16xf16, #tile.space<l0a>>, memref<16x32xf16, #tile.space<l0b>>, memref<32x32xf32, #tile.space<l0c>>
    tile.copy %c_l0[%c0, %c0] to %acc_ub[%c0, %c0] sizes [32, 32] : memref<32x32xf32, #tile.space<l0c>> to memref<32x32xf32, #tile.space<ub>>
    tile.copy %bias[%c0, %c0] to %bias_ub[%c0, %c0] sizes [32, 1] : memref<32x1xf32, #tile.space<gm>> to memref<32x1xf32, #tile.space<ub>>
    tile.vector ins(%acc_ub, %bias_ub : memref<32x32xf32, #tile.space<ub>>, memref<32x1xf32, #tile.space<ub>>) outs(%y_ub : memref<32x32xf16, #tile.space<ub>>) {
    ^bb0(%acc: tensor<32x32xf32>, %bv: tensor<32x1xf32>):
      %s = graph.add %acc, %bv : (tensor<32x32xf32>, tensor<32x1xf32>) -> tensor<32x32xf32>
      %h = graph.cast %s : tensor<32x32xf32> to tensor<32x32xf16>
      tile.yield %h : tensor<32x32xf16>
    }
    tile.copy %y_ub[%c0, %c0] to %c[%c0, %c0] sizes [32, 32] : memref<32x32xf16, #tile.space<ub>> to memref<32x32xf16, #tile.space<gm>>
  }
}
// CHECK-LABEL: isa.kernel @row_bias
// CHECK-NOT:     isa.broadcast_ub_to_l0c
// CHECK:         isa.mmad
// CHECK:         isa.copy_l0c_to_ub %{{.*}} : memref<1024xf32, #isa.space<l0c>> to memref<1024xf32, #isa.space<ub>>
// CHECK:         isa.vadd
// CHECK:         isa.vconv
