// RUN: ge-opt %s -p 'fuse{debug=true}' --split-input-file 2>&1 | filecheck %s
// RUN: echo "SummedConvsFusionPass:off" > %t.switch
// RUN: ge-opt %s -p 'fuse{switch-file="%t.switch"}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s -p 'fuse,bufferize,tile{debug=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=TILE

// SummedConvsFusionPass: the residual Add of two 1 x 1 convs (ResNet's stride-2 projection
// shortcut %p and its block's last conv %e) is one Cube GEMM: both convs, the Add and the
// ReLU in one group, which reads both feature maps and never writes %p.

// CHECK: [fuse] SummedConvsFusionPass: e and p summed as one GEMM
// CHECK: [fuse] TbeConvElemwiseFusionPass: group #1 (cube_epilogue) = e + p + s + y
// CHECK-LABEL: func.func @shortcut
// CHECK:         %y = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass", "SummedConvsFusionPass"] ins(%a, %we, %be, %x, %wp)
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      %e = graph.conv2d
// CHECK-NEXT:      %p = graph.conv2d
// CHECK-NEXT:      %s = graph.add %e, %p
// CHECK-NEXT:      graph.relu %s
// CHECK-NEXT:      fusion.yield

// The tiler's one kernel: K = 16 + 32 channels (one C0 block of %a, two of %x), each map read
// with its conv's stride.
// TILE: [tile] @k0_e block_dim {{[0-9]+}} cube conv 2x1x4x4x16xf16 k1x1 s1 and conv 2x2x8x8x16xf16 k1x1 s2 summed (K concatenated) -> 2x4x4x4x16xf16 + relu: m=16 n=16 k=48 k_l1=48

// Off: the shortcut is a kernel of its own, and the Add reads its output as a residual.
// OFF-LABEL: func.func @shortcut
// OFF:         %p = fusion.group "cube_epilogue" [] ins(%x, %wp)
// OFF:         %y = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%a, %we, %be, %p)
func.func @shortcut(%x: tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, %a: tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>> {
  %we = graph.constant dense<5.000000e-01> : tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>
  %be = graph.constant dense<1.000000e+00> : tensor<64xf16>
  %wp = graph.constant dense<2.500000e-01> : tensor<2x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 1, 1]>>
  %e = graph.conv2d %a, %we, %be {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>, tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>, tensor<64xf16>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %p = graph.conv2d %x, %wp {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, tensor<2x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 1, 1]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %s = graph.add %e, %p : (tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>, tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %y = graph.relu %s : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  func.return %y : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
}

// -----

// Must not fire: a 3 x 3 shortcut is not a K concatenation of the same M; the Add takes it
// as a residual.

// CHECK-NOT: SummedConvsFusionPass
// CHECK-LABEL: func.func @window
// CHECK:         %p = fusion.group "cube_epilogue" [] ins(%x, %wp)
// CHECK:         %y = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%a, %we, %be, %p)
func.func @window(%x: tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, %a: tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>> {
  %we = graph.constant dense<5.000000e-01> : tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>
  %be = graph.constant dense<1.000000e+00> : tensor<64xf16>
  %wp = graph.constant dense<2.500000e-01> : tensor<18x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 3, 3]>>
  %e = graph.conv2d %a, %we, %be {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>, tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>, tensor<64xf16>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %p = graph.conv2d %x, %wp {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, tensor<18x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 3, 3]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %s = graph.add %e, %p : (tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>, tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %y = graph.relu %s : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  func.return %y : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
}

// -----

// Must not fire: two biases (fold-batch-norm leaves one on a sum of two convs; here both
// stay, so the group would not build and says why).

// CHECK: [fuse] SummedConvsFusionPass: p stays a kernel of its own: the group would not build: {{.*}}two convs in one group whose results are not only summed, with one bias
// CHECK-LABEL: func.func @two_biases
// CHECK:         %p = fusion.group "cube_epilogue" [] ins(%x, %wp, %bp)
func.func @two_biases(%x: tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, %a: tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>> {
  %we = graph.constant dense<5.000000e-01> : tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>
  %be = graph.constant dense<1.000000e+00> : tensor<64xf16>
  %wp = graph.constant dense<2.500000e-01> : tensor<2x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 1, 1]>>
  %bp = graph.constant dense<2.000000e+00> : tensor<64xf16>
  %e = graph.conv2d %a, %we, %be {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 16, 4, 4]>>, tensor<1x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 16, 1, 1]>>, tensor<64xf16>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %p = graph.conv2d %x, %wp, %bp {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x8x8x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 32, 8, 8]>>, tensor<2x4x16x16xf16, #layout.fmt<FRACTAL_Z, origin NCHW [64, 32, 1, 1]>>, tensor<64xf16>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %s = graph.add %e, %p : (tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>, tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>) -> tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  %y = graph.relu %s : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
  func.return %y : tensor<2x4x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [2, 64, 4, 4]>>
}
