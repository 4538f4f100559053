// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @bad_kind(%x: tensor<4xf32>) {
  %r = fusion.group "magic" [] ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %y = graph.relu %a : tensor<4xf32>
    fusion.yield %y : tensor<4xf32>
  }
  func.return
}
// CHECK: Operation does not verify: unknown group kind 'magic' (one of cube_epilogue, elementwise, reduce, pool, opaque)
// CHECK: -----

// -----

func.func @args_mismatch(%x: tensor<4xf32>) {
  %r = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2xf32>):
    %y = graph.relu %a : tensor<2xf32>
    fusion.yield %y : tensor<2xf32>
  }
  func.return
}
// CHECK: Operation does not verify: the body's arguments (tensor<2xf32>) must match the inputs (tensor<4xf32>)
// CHECK: -----

// -----

func.func @yield_mismatch(%x: tensor<4xf32>) {
  %r = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<4xf32>):
    %y = graph.relu %a : tensor<4xf32>
    fusion.yield %y : tensor<4xf32>
  }
  func.return
}
// CHECK: Operation does not verify: fusion.yield gives (tensor<4xf32>) but the group returns (tensor<3xf32>)
// CHECK: -----

// -----

func.func @empty(%x: tensor<4xf32>) {
  %r = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    fusion.yield %a : tensor<4xf32>
  }
  func.return
}
// CHECK: Operation does not verify: a group must contain at least one op
// CHECK: -----

// -----

func.func @not_isolated(%x: tensor<4xf32>) {
  %r = fusion.group "elementwise" [] ins() : () -> tensor<4xf32> {
    %y = graph.relu %x : tensor<4xf32>
    fusion.yield %y : tensor<4xf32>
  }
  func.return
}
// CHECK: Operation using value defined out of its IsolatedFromAbove parent: ReluOp
