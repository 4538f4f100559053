// RUN: ge-opt %s -p 'fuse,bufferize,tile{debug=true}' 2>&1 >/dev/null | filecheck %s

// The debug log: one line per kernel with what it computes, the chosen tiles, loop order,
// buffer counts and block split, the modeled cycles next to the roofline bound (max of
// compute at peak and GM traffic at HBM bandwidth), then the total.
func.func @net(%x: tensor<1x3x32x32xf32>) -> tensor<1x16x16x16xf32> {
  %w = graph.constant dense<0.1> : tensor<16x3x3x3xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32> loc("conv1")
  %r = graph.relu %c : tensor<1x16x16x16xf32> loc("relu1")
  %s = graph.sigmoid %r : tensor<1x16x16x16xf32> loc("sig")
  func.return %s : tensor<1x16x16x16xf32>
}
// CHECK:      [tile] @k0_conv1 block_dim 16 cube conv 1x3x32x32xf32 -> 1x16x16x16xf32 k3x3 s2 g1 + relu: m=16 n=16 k=72 k_l1=72 order=nm split=16 blocks=16 buffers l1=2 l0=2 l0c=2 ub=2; L1 15360, L0A 9216, L0B 9216, L0C 2048 | cycles {{[0-9]+}}, bound {{[0-9]+}} (compute {{[0-9]+}}, gm {{[0-9]+}}) | {{[0-9]+}} candidates
// CHECK-NEXT: [tile] @k1_sig block_dim 32 vector sigmoid over 1x16x16x16xf32: tile [1, 1, 8, 16] x32 on 32 cores, UB 2560 B (buffers 2) | cycles {{[0-9]+}}, bound {{[0-9]+}} (compute {{[0-9]+}}, gm {{[0-9]+}}) | {{[0-9]+}} candidates
// CHECK-NEXT: [tile] 2 kernels on ascend910: {{[0-9]+}} modeled cycles
