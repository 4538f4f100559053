// RUN: not ge-opt %s 2>&1 | filecheck %s
// RUN: not ge-opt %s --print-op-generic -p canonicalize 2>&1 | filecheck %s

// Malformed IR (an op the graph dialect does not define): ge-opt exits non-zero with a
// message that names the file and points at the line and column, never a Python traceback,
// and prints no IR.

// CHECK-NOT:   Traceback
// CHECK-NOT:   builtin.module
// CHECK:       ge-opt: error: cannot parse {{.*}}ge-opt-parse-error.mlir:
// CHECK-NEXT:  {{.*}}ge-opt-parse-error.mlir:[[# @LINE + 6]]:{{[0-9]+}}
// CHECK-NEXT:  %y = graph.bogus %x : tensor<2x3xf32>
// CHECK:       Operation graph.bogus is not registered
// CHECK-NOT:   Traceback
// CHECK-NOT:   builtin.module
func.func @unknown_op(%x: tensor<2x3xf32>) {
  %y = graph.bogus %x : tensor<2x3xf32>
  func.return
}
