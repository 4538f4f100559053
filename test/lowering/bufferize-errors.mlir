// RUN: not ge-opt %s -p bufferize 2>&1 | filecheck %s

// A compute op outside any fusion.group: bufferize needs every compute op in a kernel.
func.func @unfused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: ge-opt: error: a pass failed on {{.*}}bufferize-errors.mlir: bufferize: graph.relu ('r') is not in a fusion.group; run `fuse` first so that every compute op belongs to a kernel
