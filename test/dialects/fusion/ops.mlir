// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

func.func @group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %r, %s = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%x, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>):
    %y = graph.conv2d %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %z = graph.relu %y : tensor<1x4x6x6xf32>
    fusion.yield %y, %z : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  }
  func.return %r, %s : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// CHECK-LABEL: func.func @group
// CHECK-NEXT:    %r, %s = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%x, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>):
// CHECK-NEXT:      %y = graph.conv2d %a, %b
// CHECK-NEXT:      %z = graph.relu %y : tensor<1x4x6x6xf32>
// CHECK-NEXT:      fusion.yield %y, %z : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %s

func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %y = graph.sigmoid %a : tensor<4xf32>
    fusion.yield %y : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @single
// CHECK-NEXT:    %r = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {

// CHECK-GENERIC:      "fusion.group"(%x, %w) <{kind = "cube_epilogue", rules = ["TbeConvElemwiseFusionPass"]}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>):
// CHECK-GENERIC:        "fusion.yield"(%y, %z) : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>)
