// RUN: ge-opt %s -p check-tile-capacity --split-input-file --verify-diagnostics | filecheck %s

// Must not change anything: double-buffered A and B tiles that fit L0A / L0B (2 x 32 KB
// each of 64 KB) pass, and the module prints unchanged.
builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @fits ins() outs() block_dim 1 kind "cube_epilogue" {
    %a = tile.alloc buffers 2 : memref<128x128xf16, #tile.space<l0a>>
    %b = tile.alloc buffers 2 : memref<128x128xf16, #tile.space<l0b>>
  }
}
// CHECK:      tile.kernel @fits ins() outs() block_dim 1 kind "cube_epilogue" {
// CHECK-NEXT:   %a = tile.alloc buffers 2 : memref<128x128xf16, #tile.space<l0a>>
// CHECK-NEXT:   %b = tile.alloc buffers 2 : memref<128x128xf16, #tile.space<l0b>>
// CHECK-NEXT: }
// CHECK:      -----

// -----

// A hand-written kernel whose double-buffered A tile is 2 x 40 KB: L0A overflows; the
// message names the kernel (its ONNX node), the memory and the bytes needed and available.
builtin.module attributes {ge.target = "ascend910"} {
  tile.kernel @too_big ins() outs() block_dim 1 kind "cube_epilogue" {
    %a = tile.alloc buffers 2 : memref<160x128xf16, #tile.space<l0a>>
  } loc("conv7")
}
// CHECK: kernel @too_big (node conv7): L0A overflow on ascend910: the live buffers need 81920 bytes, L0A holds 65536 bytes
// CHECK: -----

// -----

// UB counts the live values of tile.vector bodies too: two 64 KB buffers plus a 64 KB
// and a 128 KB temporary exceed the 910B's 192 KB.
builtin.module attributes {ge.target = "ascend910b"} {
  tile.kernel @temps ins() outs() block_dim 1 kind "elementwise" {
    %x = tile.alloc buffers 1 : memref<16384xf32, #tile.space<ub>>
    %y = tile.alloc buffers 1 : memref<16384xf32, #tile.space<ub>>
    tile.vector ins(%x : memref<16384xf32, #tile.space<ub>>) outs(%y : memref<16384xf32, #tile.space<ub>>) {
    ^bb0(%t: tensor<16384xf32>):
      %e = graph.exp %t : tensor<16384xf32>
      %c = graph.concat %e, %e {axis = 0 : i64} : (tensor<16384xf32>, tensor<16384xf32>) -> tensor<32768xf32>
      %s = graph.slice %c {starts = array<i64: 0>, ends = array<i64: 16384>, steps = array<i64: 1>} : (tensor<32768xf32>) -> tensor<16384xf32>
      tile.yield %s : tensor<16384xf32>
    }
  }
}
// CHECK: kernel @temps: UB overflow on ascend910b: the live buffers need 327680 bytes, UB holds 196608 bytes
