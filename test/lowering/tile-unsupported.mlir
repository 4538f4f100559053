// RUN: not ge-opt %s -p 'fuse,bufferize,tile' 2>&1 | filecheck %s
// RUN: not ge-opt %s -p 'fuse,bufferize,tile{target=ascend999}' 2>&1 | filecheck %s --check-prefix=TARGET

// A Gather has no tiling at this level yet: the error names the kernel and the op.
func.func @gather(%x: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %g = graph.gather %x, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32> loc("lookup")
  func.return %g : tensor<3x4xf32>
}
// CHECK: ge-opt: error: a pass failed on {{.*}}tile-unsupported.mlir: tile: kernel @k0_lookup (node lookup): cannot tile: graph.gather has no vector tiling
// TARGET: ge-opt: error: a pass failed on {{.*}}tile-unsupported.mlir: tile: unknown target 'ascend999'; known targets: ascend310b, ascend910, ascend910b
