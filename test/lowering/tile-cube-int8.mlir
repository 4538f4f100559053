// RUN: ge-opt %s -p 'fuse,bufferize,tile' --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'fuse,bufferize,tile,to-isa' --split-input-file | filecheck %s --check-prefix=ISA
// The int8 Cube path (issue 21) on the 910: a quantized 3x3 stride-2 conv of 40 channels
// (two int8 C0 = 32 blocks, the second padded) into 24 filters, dequantized per channel,
// ReLU, requantized for the next layer -- one cube_epilogue kernel. The feature map is i8
// NC1HWC0 [1, 2, 8, 8, 32], the weights i8 FRACTAL_Z [C1*KH*KW = 18, N1 = 2, 16, 32]; L0A /
// L0B hold i8, L0C and the UB accumulator i32; the output tile is whole i8 C0 = 32 blocks
// (n = 32). K = 2 * 9 * 32 = 576, in one L1 chunk of two K steps of one C1 block (288) each,
// unrolled over two single L0A / L0B buffers. In the epilogue the dequantize is cast + per-channel mul
// + cast (the reference's roundings), the quantize stays one op for the vector lowering.

func.func @conv(%x: tensor<1x2x8x8x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 8, 8]>>) -> tensor<1x1x4x4x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>> {
  %w = graph.constant dense<1> : tensor<18x2x16x32xi8, #layout.fmt<FRACTAL_Z, origin NCHW [24, 40, 3, 3]>>
  %s = graph.constant dense<1.0e-03> : tensor<24xf32>
  %acc = graph.quant_conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, input_offset = 0 : i64} : (tensor<1x2x8x8x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 8, 8]>>, tensor<18x2x16x32xi8, #layout.fmt<FRACTAL_Z, origin NCHW [24, 40, 3, 3]>>) -> tensor<1x3x4x4x8xi32, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>
  %f = graph.dequantize %acc, %s {axis = 1 : i64, offset = 0 : i64} : (tensor<1x3x4x4x8xi32, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>, tensor<24xf32>) -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>
  %r = graph.relu %f : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>
  %q = graph.quantize %r {scale = 2.0e-02 : f32, offset = 0 : i64} : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>> to tensor<1x1x4x4x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>
  func.return %q : tensor<1x1x4x4x32xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 24, 4, 4]>>
}
// CHECK-LABEL: tile.kernel @k0_acc
// CHECK-SAME:    kind "cube_epilogue"
// CHECK-SAME:    tile.plan = "m=16 n=32 k=288 k_l1=576
// CHECK:         %a_l1 = tile.alloc buffers 2 : memref<1x2x9x8x32xi8, #tile.space<l1>>
// CHECK-NEXT:    %b_l1 = tile.alloc buffers 2 : memref<18x32x32xi8, #tile.space<l1>>
// CHECK-NEXT:    %a_l0 = tile.alloc buffers 1 : memref<16x288xi8, #tile.space<l0a>>
// CHECK-NEXT:    %a_l0_1 = tile.alloc buffers 1 : memref<16x288xi8, #tile.space<l0a>>
// CHECK-NEXT:    %b_l0 = tile.alloc buffers 1 : memref<288x32xi8, #tile.space<l0b>>
// CHECK-NEXT:    %b_l0_1 = tile.alloc buffers 1 : memref<288x32xi8, #tile.space<l0b>>
// CHECK-NEXT:    %c_l0 = tile.alloc buffers 2 : memref<16x32xi32, #tile.space<l0c>>
// CHECK-NEXT:    %acc_ub = tile.alloc buffers 2 : memref<1x1x16x32xi32, #tile.space<ub>>
// CHECK:         tile.img2col %a_l1{{.*}} channels = 40 : i64, c0 = 32 : i64} : memref<1x2x9x8x32xi8, #tile.space<l1>> to memref<16x288xi8, #tile.space<l0a>>
// CHECK:         tile.mmad %a_l0, %b_l0, %c_l0 init %{{.*}} : memref<16x288xi8, #tile.space<l0a>>, memref<288x32xi8, #tile.space<l0b>>, memref<16x32xi32, #tile.space<l0c>>
// CHECK:         tile.img2col %a_l1[%c0, %c288{{.*}} channels = 40 : i64, c0 = 32 : i64} : memref<1x2x9x8x32xi8, #tile.space<l1>> to memref<16x288xi8, #tile.space<l0a>>
// CHECK:         tile.mmad %a_l0_1, %b_l0_1, %c_l0 init %{{.*}} : memref<16x288xi8, #tile.space<l0a>>, memref<288x32xi8, #tile.space<l0b>>, memref<16x32xi32, #tile.space<l0c>>
// CHECK:         tile.vector ins(%acc_ub, %s_ub : memref<1x1x16x32xi32, #tile.space<ub>>, memref<32xf32, #tile.space<ub>>) outs(%q_ub : memref<1x1x16x32xi8, #tile.space<ub>>) {
// CHECK-NEXT:    ^bb0(%acc: tensor<1x1x16x1x32xi32>, %s_1: tensor<1x1x1x1x32xf32>):
// CHECK-NEXT:      %{{.*}} = graph.cast %acc : tensor<1x1x16x1x32xi32> to tensor<1x1x16x1x32xf32>
// CHECK-NEXT:      %{{.*}} = graph.mul %{{.*}}, %s_1 : (tensor<1x1x16x1x32xf32>, tensor<1x1x1x1x32xf32>) -> tensor<1x1x16x1x32xf32>
// CHECK-NEXT:      %{{.*}} = graph.cast %{{.*}} : tensor<1x1x16x1x32xf32> to tensor<1x1x16x1x32xf16>
// CHECK-NEXT:      %r = graph.relu %{{.*}} : tensor<1x1x16x1x32xf16>
// CHECK-NEXT:      %q_1 = graph.quantize %r {scale = 2.000000e-02 : f32, offset = 0 : i64} : tensor<1x1x16x1x32xf16> to tensor<1x1x16x1x32xi8>
// CHECK:         tile.copy %q_ub{{.*}} sizes [1, 1, 16, 32] : memref<1x1x16x32xi8, #tile.space<ub>> to memref<1x1x16x32xi8, #tile.space<gm>>

// The isa: int8 mmads (16 x 288 x 32: 1 x 9 x 2 fractals of 16x32x16, one per K step) into an i32 L0C, the
// accumulator read out by the Vector unit (no FixPipe on the 910) into an i32 UB tile, then
// vconv i32 -> f32, vmul by the per-channel scale, vconv -> f16, ReLU, and the quantize
// (offset 0): vdiv by the scale in f32, one saturating vconv f32 -> i8 in rint.
// ISA-LABEL: isa.kernel @k0_acc
// ISA:         isa.buffer : memref<4608xi8, #isa.space<l0a>>
// ISA-NEXT:    isa.buffer : memref<4608xi8, #isa.space<l0a>>
// ISA-NEXT:    isa.buffer : memref<9216xi8, #isa.space<l0b>>
// ISA-NEXT:    isa.buffer : memref<9216xi8, #isa.space<l0b>>
// ISA:         isa.buffer slots 2 : memref<512xi32, #isa.space<l0c>>
// ISA:         isa.img2col {{.*}} c0 = 32 : i64} : memref<4608xi8, #isa.space<l1>> to memref<4608xi8, #isa.space<l0a>>
// ISA:         isa.mmad %c_l0, %a_l0, %b_l0 m 16 k 288 n 32 init %{{.*}} : memref<512xi32, #isa.space<l0c>>, memref<4608xi8, #isa.space<l0a>>, memref<9216xi8, #isa.space<l0b>>
// ISA:         isa.copy_l0c_to_ub %c_l0 to %acc_ub sizes [2, 16, 16] dst_strides [16, 32, 1] : memref<512xi32, #isa.space<l0c>> to memref<512xi32, #isa.space<ub>>
// ISA:         isa.vconv %[[F:.*]], %acc_ub repeat 8 : memref<512xf32, #isa.space<ub>>, memref<512xi32, #isa.space<ub>>
// ISA-NEXT:    isa.vmul %[[F]], %[[F]], %s_ub repeat 16 mask 32 blk_stride [1, 1, 1] rep_stride [4, 4, 0]
// ISA:         isa.vdiv %[[Q:.*]], %[[Q]], %{{.*}} repeat 8 mask 64 blk_stride [1, 1, 0] rep_stride [8, 8, 0] : memref<512xf32, #isa.space<ub>>
// ISA-NEXT:    isa.vconv %q_ub, %[[Q]] round "rint" repeat 8 : memref<512xi8, #isa.space<ub>>, memref<512xf32, #isa.space<ub>>

// -----

// quant_matmul + i32 bias + per-column dequantize: A i8 ND rows, B i8 FRACTAL_NZ
// [N1 = 2, K1 = 6, 16, C0 = 32] (K = 96 = 6 x 16 rows, N = 48 padded to 64); the L1 -> L0B
// copy re-lays B's fractals; mmad 16 x 96 x 32 (1 x 3 x 2 int8 fractals) into i32; the epilogue
// adds the bias in i32, then converts and scales in f32.
func.func @matmul(%x: tensor<64x96xi8>) -> tensor<64x48xf32> {
  %w = graph.constant dense<1> : tensor<2x6x16x32xi8, #layout.fmt<FRACTAL_NZ, origin ND [96, 48]>>
  %b = graph.constant dense<7> : tensor<48xi32>
  %s = graph.constant dense<1.0e-03> : tensor<48xf32>
  %acc = graph.quant_matmul %x, %w, %b {lhs_offset = 0 : i64} : (tensor<64x96xi8>, tensor<2x6x16x32xi8, #layout.fmt<FRACTAL_NZ, origin ND [96, 48]>>, tensor<48xi32>) -> tensor<64x48xi32>
  %y = graph.dequantize %acc, %s {axis = 1 : i64, offset = 0 : i64} : (tensor<64x48xi32>, tensor<48xf32>) -> tensor<64x48xf32>
  func.return %y : tensor<64x48xf32>
}
// CHECK-LABEL: tile.kernel @k0_acc
// CHECK-SAME:    kind "cube_epilogue"
// CHECK:         %b_l1 = tile.alloc buffers 2 : memref<1x1x6x16x32xi8, #tile.space<l1>>
// CHECK-NEXT:    %a_l0 = tile.alloc buffers 2 : memref<16x96xi8, #tile.space<l0a>>
// CHECK-NEXT:    %b_l0 = tile.alloc buffers 2 : memref<96x32xi8, #tile.space<l0b>>
// CHECK-NEXT:    %c_l0 = tile.alloc buffers 2 : memref<16x32xi32, #tile.space<l0c>>
// CHECK-NEXT:    %acc_ub = tile.alloc buffers 2 : memref<1x16x32xi32, #tile.space<ub>>
// CHECK-NEXT:    %b_ub = tile.alloc buffers 2 : memref<1x1x32xi32, #tile.space<ub>>
// CHECK:         tile.copy %{{.*}} sizes [1, 6, 16, 32] perm [1, 2, 0, 3] : memref<1x6x16x32xi8, #tile.space<l1>> to memref<6x16x1x32xi8, #tile.space<l0b>>
// CHECK:         tile.mmad %a_l0, %b_l0, %c_l0 init %{{.*}} : memref<16x96xi8, #tile.space<l0a>>, memref<96x32xi8, #tile.space<l0b>>, memref<16x32xi32, #tile.space<l0c>>
// CHECK:         %{{.*}} = graph.add %acc, %b_1 : (tensor<16x32xi32>, tensor<32xi32>) -> tensor<16x32xi32>
// CHECK-NEXT:    %{{.*}} = graph.cast %{{.*}} : tensor<16x32xi32> to tensor<16x32xf32>
// CHECK-NEXT:    %{{.*}} = graph.mul %{{.*}}, %s_1 : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
// ISA-LABEL: isa.kernel @k0_acc
// ISA:         isa.mmad %c_l0, %a_l0, %b_l0 m 16 k 96 n 32 init %{{.*}} : memref<512xi32, #isa.space<l0c>>, memref<1536xi8, #isa.space<l0a>>, memref<3072xi8, #isa.space<l0b>>
// ISA:         isa.copy_l0c_to_ub %c_l0 to %acc_ub sizes [2, 16, 16] dst_strides [16, 32, 1] : memref<512xi32, #isa.space<l0c>> to memref<512xi32, #isa.space<ub>>
