// RUN: ge-opt %s -p 'fuse,bufferize,tile' | filecheck %s --check-prefix=FITS
// RUN: not ge-opt %s -p 'fuse,bufferize,tile{target=ascend910b}' 2>&1 | filecheck %s --check-prefix=UB

// A Softmax keeps its 20000-element axis whole in the unified buffer -- input, output and the exp temporary
// take 240000 bytes. That fits the 910's 256 KB UB (single-buffered) but not the 910B's
// 192 KB: a compile error that names the kernel, the memory and the bytes (Ascend's "UB
// overflow"), never a kernel that overwrites itself.
func.func @long_softmax(%x: tensor<4x20000xf32>) -> tensor<4x20000xf32> {
  %s = graph.softmax %x {axis = 1 : i64} : tensor<4x20000xf32> loc("prob")
  func.return %s : tensor<4x20000xf32>
}
// FITS: tile.kernel @k0_prob {{.*}} block_dim 4 kind "reduce" attributes {tile.plan = "tile [1, 20000] x4 on 4 cores, UB 240000 B (buffers 1)"
// FITS:   tile.alloc buffers 1 : memref<1x20000xf32, #tile.space<ub>>
// UB: ge-opt: error: a pass failed on {{.*}}tile-errors.mlir: kernel @k0_prob (node prob): UB overflow on ascend910b: the live buffers need 240000 bytes, UB holds 196608 bytes (smallest tiling)
