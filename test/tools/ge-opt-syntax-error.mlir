// RUN: not ge-opt %s 2>&1 | filecheck %s

// A graph op written without its type (the custom form is `graph.relu %x : T`): a parse
// error located in this file, a non-zero exit and no traceback. xDSL reports the position
// of the token where it expected the `:`, which is the start of the next line.

// CHECK-NOT:   Traceback
// CHECK:       ge-opt: error: cannot parse {{.*}}ge-opt-syntax-error.mlir:
// CHECK-NEXT:  {{.*}}ge-opt-syntax-error.mlir:[[# @LINE + 6]]:3
// CHECK:       Expected ':'
// CHECK-NOT:   Traceback

func.func @missing_type(%x: tensor<2x3xf32>) {
  %y = graph.relu %x
  func.return
}
