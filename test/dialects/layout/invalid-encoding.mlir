// RUN: ge-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// `#layout.fmt` encodings that cannot describe a tensor are refused where they are written
// (FormatAttr.parse_parameters / verify in dialects/layout.py): unknown format names, and a
// format whose origin has the wrong format or rank.

func.func @unknown_format(%x: tensor<64x3xf16>) {
  %a = layout.trans_data %x : tensor<64x3xf16> to tensor<1x1x16x16xf16, #layout.fmt<FRACTAL_X, origin ND [64, 3]>>
  func.return
}
// CHECK: unknown storage format 'FRACTAL_X'; expected one of ND, NCHW, NHWC, NC1HWC0, FRACTAL_Z, FRACTAL_NZ
// CHECK: -----

// -----

func.func @storage_format_as_origin(%x: tensor<1x20x2x2xf16>) {
  %a = layout.trans_data %x : tensor<1x20x2x2xf16> to tensor<1x2x2x2x16xf16, #layout.fmt<NC1HWC0, origin NC1HWC0 [1, 20, 2, 2]>>
  func.return
}
// CHECK: unknown origin format 'NC1HWC0'; expected one of ND, NCHW, NHWC
// CHECK: -----

// -----

func.func @fractal_z_rank(%x: tensor<64x3xf16>) {
  %a = layout.trans_data %x : tensor<64x3xf16> to tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 3]>>
  func.return
}
// CHECK: FRACTAL_Z of NCHW [64, 3]: origin format NCHW needs rank 4, got rank 2
// CHECK: -----

// -----

func.func @nc1hwc0_needs_a_channel_dim(%x: tensor<1x20x2x2xf16>) {
  %a = layout.trans_data %x : tensor<1x20x2x2xf16> to tensor<1x2x2x2x16xf16, #layout.fmt<NC1HWC0, origin ND [1, 20, 2, 2]>>
  func.return
}
// CHECK: NC1HWC0 of ND [1, 20, 2, 2]: NC1HWC0 needs an NCHW or NHWC origin to know which dim is C
// CHECK: -----

// -----

func.func @nc1hwc0_rank_5(%x: tensor<1x1x20x2x2xf16>) {
  %a = layout.trans_data %x : tensor<1x1x20x2x2xf16> to tensor<1x2x2x2x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 20, 2, 2]>>
  func.return
}
// CHECK: NC1HWC0 of NCHW [1, 1, 20, 2, 2]: NC1HWC0 needs an origin of rank 1 to 4, got rank 5
// CHECK: -----

// -----

func.func @nz_rank_1(%x: tensor<30xf16>) {
  %a = layout.trans_data %x : tensor<30xf16> to tensor<2x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [30]>>
  func.return
}
// CHECK: FRACTAL_NZ of ND [30]: FRACTAL_NZ needs an origin of rank >= 2, got rank 1
// CHECK: -----

// -----

func.func @negative_dim(%x: tensor<30xf16>) {
  %a = layout.trans_data %x : tensor<30xf16> to tensor<2x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [-1, 30]>>
  func.return
}
// CHECK: Expected integer literal
