// RUN: ge-opt %s -p 'assign-layouts,fuse,bufferize,tile' | filecheck %s

// A custom operator with its own tile kernel (com.example::SwiGLU of the example plugin,
// README "Extending ge"): graph.custom is opaque to fusion (the relu after it stays a kernel
// of its own), and `tile` writes its kernel by calling the plugin's builder: X seen as
// [rows, 2, h], 96 rows split over the 32 vector cores (3 rows a tile), the two halves
// copied into double-buffered UB tiles, one tile.vector of sigmoid and muls, one copy out.

// CHECK-LABEL: tile.kernel @k0_y ins(%x: memref<96x128xf32, #tile.space<gm>>) outs(%y: memref<96x64xf32, #tile.space<gm>>) block_dim 32 kind "opaque"
// CHECK-SAME:    tile.plan = "plugin tile kernel on 32 cores
// CHECK:         %[[XV:.*]] = tile.view %x : memref<96x128xf32, #tile.space<gm>> to memref<96x2x64xf32, #tile.space<gm>>
// CHECK-NEXT:    %[[YV:.*]] = tile.view %y : memref<96x64xf32, #tile.space<gm>> to memref<96x1x64xf32, #tile.space<gm>>
// CHECK:         %[[A:.*]] = tile.alloc buffers 2 : memref<3x1x64xf32, #tile.space<ub>>
// CHECK-NEXT:    %[[G:.*]] = tile.alloc buffers 2 : memref<3x1x64xf32, #tile.space<ub>>
// CHECK-NEXT:    %[[O:.*]] = tile.alloc buffers 2 : memref<3x1x64xf32, #tile.space<ub>>
// CHECK-NEXT:    scf.for %tile = %block to %hi step %c1 {
// CHECK-NEXT:      %[[OFF:.*]] = arith.muli %tile, %c3 : index
// CHECK-NEXT:      tile.copy %[[XV]][%[[OFF]], %c0, %c0] to %[[A]][%c0, %c0, %c0] sizes [3, 1, 64]
// CHECK-NEXT:      tile.copy %[[XV]][%[[OFF]], %c1, %c0] to %[[G]][%c0, %c0, %c0] sizes [3, 1, 64]
// CHECK-NEXT:      tile.vector ins(%[[A]], %[[G]] : {{.*}}) outs(%[[O]] : {{.*}}) {
// CHECK-NEXT:      ^bb0(%[[TA:.*]]: tensor<3x1x64xf32>, %[[TG:.*]]: tensor<3x1x64xf32>):
// CHECK-NEXT:        %[[S:.*]] = graph.sigmoid %[[TA]] : tensor<3x1x64xf32>
// CHECK-NEXT:        %[[M:.*]] = graph.mul %[[TA]], %[[S]]
// CHECK-NEXT:        %[[R:.*]] = graph.mul %[[M]], %[[TG]]
// CHECK-NEXT:        tile.yield %[[R]] : tensor<3x1x64xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      tile.copy %[[O]][%c0, %c0, %c0] to %[[YV]][%[[OFF]], %c0, %c0] sizes [3, 1, 64]
// CHECK-NEXT:    }
// CHECK-LABEL: tile.kernel @k1_r ins(%y: memref<96x64xf32, #tile.space<gm>>) outs(%r: memref<96x64xf32, #tile.space<gm>>) block_dim 32 kind "elementwise"
// CHECK:         graph.relu
// CHECK-LABEL: func.func @main
// CHECK:         tile.launch @k0_y
// CHECK:         tile.launch @k1_r
func.func @main(%x: tensor<96x128xf32>) -> tensor<96x64xf32> {
  %y = graph.custom "SwiGLU"(%x) {domain = "com.example"} : (tensor<96x128xf32>) -> tensor<96x64xf32>
  %r = graph.relu %y : tensor<96x64xf32>
  func.return %r : tensor<96x64xf32>
}
