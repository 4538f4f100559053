// RUN: not ge-opt %s 2>&1 | filecheck %s
// RUN: not ge-opt %s --print-op-generic 2>&1 | filecheck %s
// RUN: not ge-opt %s -p canonicalize 2>&1 | filecheck %s

// IR that parses but does not verify: ge-opt exits non-zero with the verifier's message,
// the file name and the offending op (generic form), never a Python traceback, and prints
// no IR on stdout. The same holds whatever the output format or pipeline.

// CHECK-NOT:   Traceback
// CHECK-NOT:   builtin.module
// CHECK:       ge-opt: error: {{.*}}ge-opt-verify-error.mlir does not verify: result #0 has type tensor<1x4x8x8xf32>, but the operands and attributes give tensor<1x4x6x6xf32>
// CHECK-NEXT:  in: %y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NOT:   Traceback
// CHECK-NOT:   builtin.module

func.func @wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}
