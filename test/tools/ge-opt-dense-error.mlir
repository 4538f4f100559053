// RUN: not ge-opt %s 2>&1 | filecheck %s

// A constant whose literal does not fit its type: located parse error, no traceback.

// CHECK-NOT:   Traceback
// CHECK:       ge-opt: error: cannot parse {{.*}}ge-opt-dense-error.mlir:
// CHECK-NEXT:  {{.*}}ge-opt-dense-error.mlir:{{[0-9]+}}:{{[0-9]+}}
// CHECK:       Shape mismatch in dense literal. Expected [2] shape from the type, but got [3] shape.
// CHECK-NOT:   Traceback

func.func @bad_literal() {
  %c = graph.constant dense<[1, 2, 3]> : tensor<2xi64>
  func.return
}
