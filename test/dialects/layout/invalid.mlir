// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier error of the layout level: `layout.trans_data`'s checks, a storage
// shape that does not match its origin (wrong C1, wrong padding, wrong rank), and the
// storage formats graph ops accept (dialects/layout.py, verify_graph_op).

func.func @wrong_c1(%x: tensor<1x64x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x64x4x4xf16> to tensor<1x5x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: result tensor<1x5x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 64, 4, 4]>> does not match its origin: NC1HWC0 of NCHW [1, 64, 4, 4] in f16 has shape [1, 4, 4, 4, 16] (N, C1, H, W, C0); dim C1 is 5, but C1 = ceil(C / C0) = ceil(64 / 16) = 4
// CHECK: -----

// -----

func.func @wrong_c0(%x: tensor<1x16x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x16x4x4xf16> to tensor<1x1x4x4x8xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: result {{.*}} does not match its origin: NC1HWC0 of NCHW [1, 16, 4, 4] in f16 has shape [1, 1, 4, 4, 16] (N, C1, H, W, C0); dim C0 is 8, but C0 = 32 B / 2 B per f16 element = 16
// CHECK: -----

// -----

func.func @int8_c0_is_32(%x: tensor<1x40x4x4xi8>) {
  %a = layout.trans_data %x : tensor<1x40x4x4xi8> to tensor<1x3x4x4x16xi8, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: result {{.*}} has shape [1, 2, 4, 4, 32] (N, C1, H, W, C0); dim C1 is 3, but C1 = ceil(C / C0) = ceil(40 / 32) = 2
// CHECK: -----

// -----

func.func @fractal_z_n_not_padded(%w: tensor<20x16x1x1xf16>) {
  %a = layout.trans_data %w : tensor<20x16x1x1xf16> to tensor<1x1x20x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [20, 16, 1, 1]>>
  func.return
}
// CHECK: Operation does not verify: result {{.*}} has shape [1, 2, 16, 16] (C1*H*W, N1, N0, C0); dim N1 is 1, but N1 = ceil(N / 16) = ceil(20 / 16) = 2
// CHECK: -----

// -----

func.func @nz_wrong_fractal_rows(%m: tensor<20x30xf16>) {
  %a = layout.trans_data %m : tensor<20x30xf16> to tensor<2x2x10x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [20, 30]>>
  func.return
}
// CHECK: Operation does not verify: result {{.*}} has shape [2, 2, 16, 16] (N1, M1, M0, C0); dim M0 is 10, but M0 = 16
// CHECK: -----

// -----

func.func @storage_rank(%x: tensor<1x20x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x2x16x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: result {{.*}} has shape [1, 2, 4, 4, 16] (N, C1, H, W, C0), but the storage has rank 4
// CHECK: -----

// -----

func.func @element_type(%x: tensor<1x20x4x4xf32>) {
  %a = layout.trans_data %x : tensor<1x20x4x4xf32> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: trans_data changes the storage format, not the element type: f32 to f16
// CHECK: -----

// -----

func.func @different_tensors(%x: tensor<1x20x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x2x4x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 2]>>
  func.return
}
// CHECK: Operation does not verify: source and result hold different tensors: origin shapes [1, 20, 4, 4] and [1, 20, 4, 2]
// CHECK: -----

// -----

func.func @origin_formats_differ(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x1x20x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: source origin format NCHW and result origin format NHWC differ
// CHECK: -----

// -----

func.func @no_conversion(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: source and result have the same type {{.*}}: a trans_data must convert
// CHECK: -----

// -----

// Storage formats on graph ops.

func.func @constant_shape() {
  %w = graph.constant dense<1.000000e+00> : tensor<9x1x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>
  func.return
}
// CHECK: Operation does not verify: tensor<9x1x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>> does not match its origin: FRACTAL_Z of NCHW [16, 20, 3, 3] in f16 has shape [18, 1, 16, 16] (C1*H*W, N1, N0, C0); dim C1*H*W is 9, but C1 * H * W = ceil(20 / 16) * 3 * 3 = 18
// CHECK: -----

// -----

func.func @operand_shape(%x: tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %r = graph.relu %x : tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: operand #0 tensor<1x1x4x4x16xf16, {{.*}} does not match its origin: {{.*}} dim C1 is 1, but C1 = ceil(C / C0) = ceil(20 / 16) = 2
// CHECK: -----

// -----

func.func @unknown_encoding(%x: tensor<4xf32, "sparse">) {
  %r = graph.relu %x : tensor<4xf32, "sparse">
  func.return
}
// CHECK: Operation does not verify: operand #0 tensor<4xf32, "sparse"> has an encoding the graph and layout levels do not know
// CHECK: -----

// -----

func.func @reshape_is_plain_only(%x: tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 1, 1]>>) {
  %s = graph.constant dense<[1, 20]> : tensor<2xi64>
  %r = graph.reshape %x, %s : (tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 1, 1]>>, tensor<2xi64>) -> tensor<1x20xf16>
  func.return
}
// CHECK: Operation does not verify: graph.reshape does not support NC1HWC0 (origin NCHW) for operand #0; it takes plain tensors only (convert with layout.trans_data first)
// CHECK: -----

// -----

func.func @conv_weight_not_fractal_z(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %w: tensor<16x20x3x3xf16>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<16x20x3x3xf16>) -> tensor<1x1x2x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 2, 2]>>
  func.return
}
// CHECK: Operation does not verify: graph.conv2d does not support plain for operand #1; it takes FRACTAL_Z with a rank-4 NCHW origin
// CHECK: -----

// -----

func.func @conv_result_origin(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %w = graph.constant dense<1.000000e+00> : tensor<18x1x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<18x1x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [16, 20, 3, 3]>>) -> tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 16, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: result #0 has type tensor<1x16x4x4xf16>, but the operands and attributes give tensor<1x16x2x2xf16>
// CHECK: -----

// -----

func.func @pool_in_nhwc_origin(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 4, 4, 20]>>) {
  %p = graph.global_avg_pool %x : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 4, 4, 20]>>) -> tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 1, 1, 20]>>
  func.return
}
// CHECK: Operation does not verify: graph.global_avg_pool does not support NC1HWC0 (origin NHWC) for operand #0; it takes NC1HWC0 with a rank-4 NCHW origin
// CHECK: -----

// -----

func.func @elementwise_result_plain(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %r = graph.sigmoid %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %n = graph.neg %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %s = graph.add %r, %n : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf16>
  func.return
}
// CHECK: Operation does not verify: graph.add does not support plain for the result; it takes the format of its operands (NC1HWC0 (origin NCHW))
// CHECK: -----

// -----

func.func @elementwise_channel_broadcast(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %y: tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 4, 4]>>) {
  %s = graph.mul %x, %y : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 4, 4]>>) -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: graph.mul cannot broadcast operand #1 of origin [1, 1, 4, 4] to [1, 20, 4, 4] in NC1HWC0: the channel counts must be equal
// CHECK: -----

// -----

func.func @elementwise_plain_operand(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %y: tensor<4xf16>) {
  %s = graph.add %x, %y : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<4xf16>) -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: graph.add does not support plain for operand #1; it takes a tensor in NC1HWC0 or a single element of lower rank there
// CHECK: -----

// -----

func.func @cast_changes_c0(%x: tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %c = graph.cast %x : tensor<1x3x4x4x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: graph.cast in NC1HWC0 needs one C0 for all operands and the result: operand #0 has f32 (C0 = 8), the result f16 (C0 = 16)
// CHECK: -----

// -----

func.func @concat_unaligned(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) {
  %c = graph.concat %x, %x {axis = 1 : i64} : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x3x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 40, 4, 4]>>
  func.return
}
// CHECK: Operation does not verify: graph.concat along C in NC1HWC0 needs every input but the last to fill whole C0 blocks: input #0 has 20 channels, not a multiple of C0 = 16
// CHECK: -----

// -----

func.func @gemm_in_nc1hwc0(%a: tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 1, 1]>>, %b: tensor<20x10xf16>) {
  %s = graph.shape %a : (tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 1, 1]>>) -> tensor<4xi64>
  %m = graph.matmul %a, %b : (tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 1, 1]>>, tensor<20x10xf16>) -> tensor<1x20x1x10xf16>
  func.return
}
// CHECK: Operation does not verify: graph.matmul does not support NC1HWC0 (origin NCHW) for operand #0; it takes a plain or FRACTAL_NZ tensor there
// CHECK: -----

// -----

func.func @gemm_c_is_plain(%a: tensor<2x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20]>>, %b: tensor<20x10xf16>, %c: tensor<1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 10]>>) {
  %y = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20]>>, tensor<20x10xf16>, tensor<1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 10]>>) -> tensor<1x10xf16>
  func.return
}
// CHECK: Operation does not verify: graph.gemm does not support FRACTAL_NZ (origin ND) for operand #2; it takes a plain tensor there
