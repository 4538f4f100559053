// RUN: not ge-opt %s -p 'fuse,bufferize,tile' 2>&1 | filecheck %s
// RUN: not ge-opt %s -p 'fuse,bufferize,tile{target=ascend999}' 2>&1 | filecheck %s --check-prefix=TARGET

// A reflect Pad wider than its input has no copy pieces: the error names the kernel, the
// node, the mode and the pads.
func.func @pad(%x: tensor<2x3xf32>) -> tensor<2x9xf32> {
  %p = graph.pad %x {pads = array<i64: 0, 3, 0, 3>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x9xf32> loc("mirror")
  func.return %p : tensor<2x9xf32>
}
// CHECK: ge-opt: error: a pass failed on {{.*}}tile-unsupported.mlir: tile: kernel @k0_mirror (node mirror): cannot tile: pad mode 'reflect' with pads [0, 3, 0, 3] wider than the input [2, 3]
// TARGET: ge-opt: error: a pass failed on {{.*}}tile-unsupported.mlir: tile: unknown target 'ascend999'; known targets: ascend310b, ascend910, ascend910b
