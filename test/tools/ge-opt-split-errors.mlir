// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// With --split-input-file a failing chunk still makes ge-opt exit non-zero with a located
// message (the first chunk verifies, the second does not); with --verify-diagnostics the
// error is printed as a diagnostic and ge-opt exits 0.

// CHECK-NOT:   Traceback
// CHECK:       ge-opt: error: {{.*}}ge-opt-split-errors.mlir does not verify: operand shapes 2x3, 4 do not broadcast
// CHECK-NEXT:  in: %s = "graph.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK-NOT:   Traceback

// DIAG:        func.func @fine
// DIAG:        -----
// DIAG-NEXT:   operand shapes 2x3, 4 do not broadcast
// DIAG:        Operation does not verify: operand shapes 2x3, 4 do not broadcast

func.func @fine(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @broken(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
