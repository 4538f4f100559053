// RUN: ge-opt %s -p 'fuse,bufferize,tile' --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'fuse,bufferize,tile{target=ascend910b}' --split-input-file | filecheck %s --check-prefix=B910
// RUN: ge-opt %s -p 'fuse,bufferize,tile{target=ascend310b}' --split-input-file | filecheck %s --check-prefix=B310
// Cube kernels: the chosen tiles for fixed shapes on the 910 (32 AI cores, L0C 256 KB), the
// 910B (24 cube cores, L0C 128 KB, UB 192 KB) and the 310B (one core).

// MatMul + bias + ReLU, weights in FRACTAL_NZ: GM -> L1 (A rows, B fractals) -> L0A / L0B
// (B re-laid from NZ by a permuting copy) -> mmad over the K steps of each L1 chunk -> L0C ->
// UB epilogue -> GM. The cores' reads of the same A rows / B columns hit the L2 after the
// first reader (tile_cube.SHARED_READS), and the slowest core's misses take two fair shares
// of the HBM (tile_cube.MISS_SHARE), so the plans use many cores with small K chunks: on the
// 910 and the 910B 4 M tiles x 6 N tiles of 64 x 64 on 24 cores (N tiles outer, the M tiles
// split over 4 cores), K in 16 L1 chunks: one step of 32 on the 910, 2 steps of 16 on the
// 910B, each chunk unrolled over two single L0 buffers. An ONNX twin (f32 input cast by a
// kernel before it) simulates 2,913 cycles on the 910 with the L2 kept across launches
// (3,472 cold), against 3,173 (3,485) for the plan of one fair share, 2 x 8 tiles of
// 128 x 48 on 16 cores; on the 910B 4,761 (5,732) against 5,298 (5,889).
// The 310B's one core takes 256 x 64 tiles whose epilogue runs in two row slices
// (epi_split=2: UB holds half the f32 tile); simulated 24,648 cycles against 29,555 for
// its 128 x 64 plan.
func.func @matmul(%x: tensor<256x512xf16>) -> tensor<256x384xf16> {
  %w = graph.constant dense<0.5> : tensor<24x32x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [512, 384]>>
  %b = graph.constant dense<1.0> : tensor<384xf16>
  %y = graph.matmul %x, %w : (tensor<256x512xf16>, tensor<24x32x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [512, 384]>>) -> tensor<256x384xf16>
  %a = graph.add %y, %b : (tensor<256x384xf16>, tensor<384xf16>) -> tensor<256x384xf16>
  %r = graph.relu %a : tensor<256x384xf16>
  func.return %r : tensor<256x384xf16>
}
// CHECK:       tile.kernel @k0_y {{.*}} block_dim 24 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=64 n=64 k=32 k_l1=32 order=nm split=4 blocks=24 buffers l1=2 l0=2 l0c=2 ub=2; L1 16384, L0A 8192, L0B 8192, L0C 32768"
// B910:        tile.kernel @k0_y {{.*}} block_dim 24 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=64 n=64 k=16 k_l1=32 order=nm split=4 blocks=24 buffers l1=2 l0=2 l0c=2 ub=2; L1 16384, L0A 4096, L0B 4096, L0C 32768"
// B910:          %[[A1:.*]] = tile.alloc buffers 2 : memref<1x64x32xf16, #tile.space<l1>>
// B910-NEXT:     %[[B1:.*]] = tile.alloc buffers 2 : memref<1x4x2x16x16xf16, #tile.space<l1>>
// B910-NEXT:     %[[A0:.*]] = tile.alloc buffers 1 : memref<64x16xf16, #tile.space<l0a>>
// B910-NEXT:     %[[A0B:.*]] = tile.alloc buffers 1 : memref<64x16xf16, #tile.space<l0a>>
// B910-NEXT:     %[[B0:.*]] = tile.alloc buffers 1 : memref<16x64xf16, #tile.space<l0b>>
// B910-NEXT:     %[[B0B:.*]] = tile.alloc buffers 1 : memref<16x64xf16, #tile.space<l0b>>
// B910-NEXT:     %[[C0:.*]] = tile.alloc buffers 2 : memref<64x64xf32, #tile.space<l0c>>
// B910:          scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %c1 {
// B910-NEXT:       %[[OUTER:.*]] = arith.divui %[[T]], %c4 : index
// B910-NEXT:       %[[PART:.*]] = arith.remui %[[T]], %c4 : index
// B910:            scf.for %[[I:.*]] = %[[PART]] to %{{.*}} step %c1 {
// B910-NEXT:         %[[M:.*]] = arith.muli %[[I]], %c64 : index
// B910-NEXT:         %[[N:.*]] = arith.muli %[[OUTER]], %c64 : index
// B910-NEXT:         scf.for %[[CH:.*]] = %c0 to %c16 step %c1 {
// B910-NEXT:           %[[KC:.*]] = arith.muli %[[CH]], %c32 : index
// B910-NEXT:           tile.copy %{{.*}}[%c0, %[[M]], %[[KC]]] to %[[A1]][%c0, %c0, %c0] sizes [1, 64, 32]
// B910-NEXT:           %[[NB:.*]] = arith.muli %[[OUTER]], %c4 : index
// B910-NEXT:           %[[KB:.*]] = arith.muli %[[CH]], %c2 : index
// B910-NEXT:           tile.copy %{{.*}}[%c0, %[[NB]], %[[KB]], %c0, %c0] to %[[B1]][{{.*}}] sizes [1, 4, 2, 16, 16]
// B910-NOT:            scf.for
// B910:                tile.copy %{{.*}}[%c0, %c0] to %[[A0]][%c0, %c0] sizes [64, 16]
// B910:                tile.copy %{{.*}}[%c0, %c0, %c0, %c0] to %{{.*}} sizes [4, 1, 16, 16] perm [1, 2, 0, 3]
// B910-NEXT:           %[[FIRST:.*]] = arith.cmpi eq, %[[KC]], %c0 : index
// B910-NEXT:           tile.mmad %[[A0]], %[[B0]], %[[C0]] init %[[FIRST]]
// B910:                tile.copy %{{.*}}[%c0, %c16] to %[[A0B]][%c0, %c0] sizes [64, 16]
// B910:                tile.copy %{{.*}}[%c0, %c1, %c0, %c0] to %{{.*}} sizes [4, 1, 16, 16] perm [1, 2, 0, 3]
// B910:                tile.mmad %[[A0B]], %[[B0B]], %[[C0]] init %{{.*}}
// B910-NEXT:         }
// B910:              tile.copy %[[C0]][%c0, %c0] to %{{.*}} sizes [64, 64]
// B910:              tile.vector ins({{.*}}) outs({{.*}}) {
// B910-NEXT:         ^{{.*}}(%[[ACC:.*]]: tensor<64x64xf32>, %[[BIAS:.*]]: tensor<64xf16>):
// B910-NEXT:           %[[H:.*]] = graph.cast %[[ACC]] : tensor<64x64xf32> to tensor<64x64xf16>
// B910-NEXT:           %[[S:.*]] = graph.add %[[H]], %[[BIAS]]
// B910-NEXT:           %[[R:.*]] = graph.relu %[[S]]
// B910-NEXT:           tile.yield %[[R]]
// B310:        tile.kernel @k0_y {{.*}} block_dim 1 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=256 n=64 k=64 k_l1=512 order=mn epi_split=2 blocks=1 buffers l1=2 l0=2 l0c=2 ub=2; L1 655360, L0A 65536, L0B 16384, L0C 131072"

// -----

// A 3x3 conv on NC1HWC0 with FRACTAL_Z weights, bias, ReLU and a residual add: implicit
// GEMM with M = 56x56 output pixels, N = 64 channels, K = C1 x 3 x 3 x C0 = 576. On the 910
// each of 28 blocks takes one M tile of 112 pixels (2 output rows) and all 64 channels, in
// two L1 chunks of 2 C1 blocks (K = 288): the L1 feature map holds the 4 input rows (from
// row 2 * t - 1) of the chunk's C1 blocks, the chunk's weights come in beside it, and
// img2col builds each 112 x 144 A tile from it, the 2 K steps of a chunk unrolled over two
// single L0A (and L0B) buffers (tile_cube.UNROLLED_K); the residual comes in through the
// epilogue in NC1HWC0 tiles. Before the model priced the stores into the L2 (`L2_WRITES`)
// it took the weights' 32-channel N tiles loaded once per block, the 28 M tiles split over
// 16 cores per N tile (order nm, 32 blocks). An ONNX twin, whose input and residual a Relu
// kernel writes first (so they are warm in the L2), keeps that plan either way: 4,018
// cycles with the L2 kept across launches, 4,490 cold.
func.func @conv(%x: tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>) -> tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>> {
  %w = graph.constant dense<0.01> : tensor<36x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 64, 3, 3]>>
  %b = graph.constant dense<0.5> : tensor<64xf16>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>, tensor<36x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 64, 3, 3]>>, tensor<64xf16>) -> tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>
  %r = graph.relu %c : tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>
  %s = graph.add %r, %x : (tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>, tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>) -> tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>
  func.return %s : tensor<1x4x56x56x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 56, 56]>>
}
// CHECK:       tile.kernel @k0_c {{.*}} block_dim 28 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=112 n=64 k=144 k_l1=288 order=mn b_direct blocks=28 buffers l1=2 l0=2 l0c=2 ub=2; L1 28672, L0A 64512, L0B 36864, L0C 57344"
// CHECK:         %[[WG:.*]] = tile.view %w : memref<36x4x16x16xf16, #tile.space<gm>> to memref<36x64x16xf16, #tile.space<gm>>
// CHECK-NEXT:    %[[FM:.*]] = tile.alloc buffers 2 : memref<1x2x4x56x16xf16, #tile.space<l1>>
// CHECK-NEXT:    %[[A0:.*]] = tile.alloc buffers 1 : memref<112x144xf16, #tile.space<l0a>>
// CHECK-NEXT:    %[[A0B:.*]] = tile.alloc buffers 1 : memref<112x144xf16, #tile.space<l0a>>
// CHECK-NEXT:    %[[B0:.*]] = tile.alloc buffers 1 : memref<144x64xf16, #tile.space<l0b>>
// CHECK-NEXT:    %[[B0B:.*]] = tile.alloc buffers 1 : memref<144x64xf16, #tile.space<l0b>>
// CHECK-NOT:     tile.space<l1>
// CHECK:         scf.for %[[T:.*]] = %block to %hi step %c1 {
// CHECK-NEXT:      %[[M:.*]] = arith.muli %[[T]], %c112 : index
// CHECK-NEXT:      scf.for %[[CH:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:        %[[OH:.*]] = arith.divui %[[M]], %c56 : index
// CHECK-NEXT:        %[[IH:.*]] = arith.subi %[[OH]], %c1 : index
// CHECK-NEXT:        %[[C:.*]] = arith.muli %[[CH]], %c32 : index
// CHECK-NEXT:        %[[C1:.*]] = arith.muli %[[CH]], %c2 : index
// CHECK-NEXT:        tile.copy %x[%c0, %[[C1]], %[[IH]], %c0, %c0] to %[[FM]][%c0, %c0, %c0, %c0, %c0] sizes [1, 2, 4, 56, 16] {pad = 0.000000e+00 : f32}
// CHECK-NEXT:        %[[K:.*]] = arith.muli %[[CH]], %c288 : index
// CHECK-NEXT:        tile.img2col %[[FM]][%[[M]], %[[K]], %[[C]], %[[IH]]] to %[[A0]] {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, out_size = array<i64: 56, 56>, channels = 64 : i64, c0 = 16 : i64}
// CHECK-NEXT:        %[[WK:.*]] = arith.muli %[[CH]], %c18 : index
// CHECK-NEXT:        %[[BV:.*]] = tile.view %[[B0]] : memref<144x64xf16, #tile.space<l0b>> to memref<9x16x64xf16, #tile.space<l0b>>
// CHECK-NEXT:        tile.copy %[[WG]][%[[WK]], %c0, %c0] to %[[BV]][%c0, %c0, %c0] sizes [9, 64, 16] perm [0, 2, 1] : memref<36x64x16xf16, #tile.space<gm>> to memref<9x16x64xf16, #tile.space<l0b>>
// CHECK-NEXT:        %first = arith.cmpi eq, %[[K]], %c0 : index
// CHECK-NEXT:        tile.mmad %[[A0]], %[[B0]], %{{.*}} init %first
// CHECK-NEXT:        %[[K2:.*]] = arith.addi %[[K]], %c144 : index
// CHECK-NEXT:        tile.img2col %[[FM]][%[[M]], %[[K2]], %[[C]], %[[IH]]] to %[[A0B]]
// CHECK-NEXT:        %[[WK2:.*]] = arith.divui %[[K2]], %c16 : index
// CHECK-NEXT:        %[[BV2:.*]] = tile.view %[[B0B]]
// CHECK-NEXT:        tile.copy %[[WG]][%[[WK2]], %c0, %c0] to %[[BV2]][%c0, %c0, %c0] sizes [9, 64, 16] perm [0, 2, 1] : memref<36x64x16xf16, #tile.space<gm>> to memref<9x16x64xf16, #tile.space<l0b>>
// CHECK-NEXT:        %first_1 = arith.cmpi eq, %[[K2]], %c0 : index
// CHECK-NEXT:        tile.mmad %[[A0B]], %[[B0B]], %{{.*}} init %first_1
// CHECK-NEXT:      }
// CHECK:           tile.copy %{{.*}} sizes [112, 4, 16] perm [1, 0, 2] : memref<112x4x16xf32, #tile.space<l0c>> to memref<4x112x16xf32, #tile.space<ub>>
// CHECK:           tile.copy %{{.*}} sizes [1, 4, 112, 16] {pad = 0.000000e+00 : f32} : memref<1x4x3136x16xf16, #tile.space<gm>> to memref<1x4x112x16xf16, #tile.space<ub>>
// CHECK:           ^{{.*}}(%{{.*}}: tensor<1x4x112x1x16xf32>, %{{.*}}: tensor<1x4x1x1x16xf16>, %{{.*}}: tensor<1x4x112x1x16xf16>):
// B910:        tile.kernel @k0_c {{.*}} block_dim 20 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=160 n=32 k=96 k_l1=576 order=mn b_direct blocks=20 buffers l1=2 l0=2 l0c=2 ub=2; L1 86016, L0A 61440, L0B 12288, L0C 40960"
// B310:        tile.kernel @k0_c {{.*}} block_dim 1 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=112 n=64 k=144 k_l1=576 order=nm blocks=1 buffers l1=2 l0=2 l0c=2 ub=2; L1 204800, L0A 64512, L0B 36864, L0C 57344"

// -----

// A depthwise conv (32 groups of one channel): GE's extended groups -- 16 groups per GEMM,
// weights rebuilt at compile time as a block-diagonal FRACTAL_Z of [32, 16, 3, 3] -- so
// each C0 block of channels is one GEMM with K = 3 x 3 x 16.
func.func @depthwise(%x: tensor<1x2x28x28x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 28, 28]>>) -> tensor<1x2x14x14x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 14, 14]>> {
  %w = graph.constant dense<0.1> : tensor<9x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [32, 1, 3, 3]>>
  %c = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64} : (tensor<1x2x28x28x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 28, 28]>>, tensor<9x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [32, 1, 3, 3]>>) -> tensor<1x2x14x14x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 14, 14]>>
  func.return %c : tensor<1x2x14x14x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 32, 14, 14]>>
}
// CHECK:       tile.kernel @k0_c ins(%x: memref<1x2x28x28x16xf16, #tile.space<gm>>, %w: memref<9x2x16x16xf16, #tile.space<gm>>) {{.*}} block_dim 14 kind "cube_epilogue" attributes {tile.plan = "m=32 n=16 k=144 k_l1=144 order=mn b_direct blocks=14 buffers l1=2 l0=2 l0c=2 ub=2; L1 16128, L0A 18432, L0B 9216, L0C 4096"
// CHECK:         scf.for %[[T:.*]] = {{.*}} {
// CHECK-NEXT:      %[[G:.*]] = arith.divui %[[T]], %c7 : index
// CHECK:           tile.img2col {{.*}} channels = 16 : i64, c0 = 16 : i64}
// CHECK:           %[[FIRST:.*]] = arith.constant true
// CHECK-NEXT:      tile.mmad %{{.*}}, %{{.*}}, %{{.*}} init %[[FIRST]]
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[W:.*]] = tile.const dense_resource<{{.*}}> : tensor<9x2x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [32, 16, 3, 3]>> -> memref<9x2x16x16xf16, #tile.space<gm>>
// CHECK-NEXT:    tile.launch @k0_c ins(%x, %[[W]] : {{.*}})
// B910:        tile.kernel @k0_c {{.*}} block_dim 14 kind "cube_epilogue" attributes {tile.plan = "m=32 n=16 k=144 k_l1=144 order=mn b_direct blocks=14 buffers l1=2 l0=2 l0c=2 ub=2; L1 16128, L0A 18432, L0B 9216, L0C 4096"
// B310:        tile.kernel @k0_c {{.*}} block_dim 1 kind "cube_epilogue" attributes {tile.plan = "m=112 n=16 k=144 k_l1=144 order=nm blocks=1 buffers l1=2 l0=2 l0c=2 ub=2; L1 39680, L0A 64512, L0B 9216, L0C 14336"

// -----

// ResNet-50's layer-4 3x3 conv at batch 16 (7 x 7 images, 49 pixels each): images stacked
// along H per M tile (tile_cube.STACK, `_stacked`): image i's rows start 8 i rows after
// image 0's (7 rows + the pad row of zeros between them), so one img2col over the stacked
// map builds the A tile (the output rows between the images computed and dropped) and each
// L0B weight step serves every image. Each image is copied in at its L1 row (from its row
// -1: the top pad) and out from its tile row (0, 56, ...). Four images (224 rows) since
// UB is sized for the f16 tile the 910's converting read-out leaves (`CONVERTED_UB`; with
// an f32 accumulator tile: two). Simulated in resnet50_b16 (k50_n155): 22,506 cycles with
// two images per tile, 20,477 with four; 31,070 with one (an ONNX twin, cold L2: 22,483 with two).
func.func @stacked(%x: tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>>) -> tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>> {
  %w = graph.constant dense<0.01> : tensor<288x32x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [512, 512, 3, 3]>>
  %b = graph.constant dense<0.5> : tensor<512xf16>
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>>, tensor<288x32x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [512, 512, 3, 3]>>, tensor<512xf16>) -> tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>>
  %r = graph.relu %c : tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>>
  func.return %r : tensor<16x32x7x7x16xf16, #layout.fmt<NC1HWC0, origin NCHW [16, 512, 7, 7]>>
}
// CHECK:       tile.kernel @k0_c {{.*}} block_dim 32 kind "cube_epilogue" attributes {{{.*}}tile.plan = "m=224 n=64 k=48 k_l1=288 order=nm split=4 batch_inner stack=4 b_direct blocks=32 buffers l1=2 l0=2 l0c=2 ub=2; L1 29568, L0A 43008, L0B 12288, L0C 114688"
// CHECK:         %[[FM:.*]] = tile.alloc buffers 2 : memref<1x2x33x7x16xf16, #tile.space<l1>>
// CHECK:         %[[OUT:.*]] = tile.alloc buffers 2 : memref<1x4x224x16xf16, #tile.space<ub>>
// CHECK:         scf.for %{{.*}} = %block to %hi step %c1 {
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK:             scf.for %{{.*}} = %c0 to %c16 step %c1 {
// CHECK:               %[[IMG0:.*]] = arith.muli %[[I]], %c4 : index
// CHECK-NEXT:          tile.copy %x[%[[IMG0]], %{{.*}}, %cm1, %c0, %c0] to %[[FM]][%c0, %c0, %c0, %c0, %c0] sizes [1, 2, 8, 7, 16] {pad = 0.000000e+00 : f32}
// CHECK-NEXT:          %[[IMG1:.*]] = arith.addi %[[IMG0]], %c1 : index
// CHECK-NEXT:          tile.copy %x[%[[IMG1]], %{{.*}}, %cm1, %c0, %c0] to %[[FM]][%c0, %c0, %c8, %c0, %c0] sizes [1, 2, 8, 7, 16] {pad = 0.000000e+00 : f32}
// CHECK-NEXT:          %[[IMG2:.*]] = arith.addi %[[IMG0]], %c2 : index
// CHECK-NEXT:          tile.copy %x[%[[IMG2]], %{{.*}}, %cm1, %c0, %c0] to %[[FM]][%c0, %c0, %c16, %c0, %c0] sizes [1, 2, 8, 7, 16] {pad = 0.000000e+00 : f32}
// CHECK-NEXT:          %[[IMG3:.*]] = arith.addi %[[IMG0]], %c3 : index
// CHECK-NEXT:          tile.copy %x[%[[IMG3]], %{{.*}}, %cm1, %c0, %c0] to %[[FM]][%c0, %c0, %c24, %c0, %c0] sizes [1, 2, 9, 7, 16] {pad = 0.000000e+00 : f32}
// CHECK:               tile.img2col %[[FM]][%c0, %{{.*}}, %{{.*}}, %cm1] to %{{.*}} {{{.*}}out_size = array<i64: 31, 7>
// CHECK:           tile.copy %[[OUT]][%c0, %c0, %c0, %c0] to %{{.*}}[%{{.*}}, %{{.*}}, %c0, %c0] sizes [1, 4, 49, 16]
// CHECK:           tile.copy %[[OUT]][%c0, %c0, %c56, %c0] to %{{.*}}[%{{.*}}, %{{.*}}, %c0, %c0] sizes [1, 4, 49, 16]
// CHECK:           tile.copy %[[OUT]][%c0, %c0, %c112, %c0] to %{{.*}}[%{{.*}}, %{{.*}}, %c0, %c0] sizes [1, 4, 49, 16]
// CHECK:           tile.copy %[[OUT]][%c0, %c0, %c168, %c0] to %{{.*}}[%{{.*}}, %{{.*}}, %c0, %c0] sizes [1, 4, 49, 16]
