// RUN: ge-opt %s -p fuse --split-input-file | filecheck %s
// TbeConvElemwiseFusionPass: conv + per-channel bias/scale + activation + residual add + activation.

func.func @conv_bias_relu_residual(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %b = graph.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = graph.add %c, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %a : tensor<1x4x8x8xf32>
  %s = graph.add %r, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = graph.relu %s : tensor<1x4x8x8xf32>
  func.return %o : tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @conv_bias_relu_residual
// CHECK:         %[[B:.*]] = graph.constant
// CHECK-NEXT:    %o = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%x, %w, %[[B]])
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<1x4x8x8xf32>, %{{.*}}: tensor<4x4x3x3xf32>, %{{.*}}: tensor<4x1x1xf32>):
// CHECK-NEXT:      graph.conv2d
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      graph.add %{{.*}}, %[[X]]
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %o

// -----

// Must not fire: the conv result has a second user, so the relu stays a kernel of its own.
func.func @conv_result_escapes(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %c : tensor<1x4x8x8xf32>
  func.return %c, %r : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @conv_result_escapes
// CHECK-NEXT:    %c = fusion.group "cube_epilogue" [] ins(%x, %w)
// CHECK:         %r = fusion.group "elementwise" [] ins(%c)

// -----

// Must not fire: the residual operand is computed from the conv result outside the group;
// fusing the add would make the group depend on its own output (a cycle).
func.func @residual_cycle(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %c : tensor<1x4x8x8xf32>
  %p = graph.max_pool %r {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %s = graph.add %r, %p : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %s : tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @residual_cycle
// CHECK-NEXT:    %r = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%x, %w)
// CHECK-NOT:       graph.add
// CHECK:         %s = fusion.group "pool" ["TbePoolElemwiseFusionPass"] ins(%r)
// CHECK:           graph.max_pool
// CHECK-NEXT:      graph.add

// -----

// Must not fire: a bias that is not per-channel (varies along W) is not an epilogue.
func.func @not_per_channel(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a = graph.add %c, %b : (tensor<1x4x8x8xf32>, tensor<8xf32>) -> tensor<1x4x8x8xf32>
  func.return %a : tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @not_per_channel
// CHECK:         %c = fusion.group "cube_epilogue" [] ins(%x, %w)
// CHECK:         %a = fusion.group "elementwise" [] ins(%c, %b)

// -----

// int8: a weight split into two int8 parts gives two quant_conv2d whose int32 accumulators
// are added; that add is still accumulation, so the dequantize (the affine stage) and the
// requantize follow it into the second conv's epilogue.
func.func @int8_parts_sum_then_dequantize(%x: tensor<1x32x4x4xi8>) -> tensor<1x2x4x4xi8> {
  %w1 = graph.constant dense<-128> : tensor<2x32x1x1xi8>
  %w2 = graph.constant dense<-127> : tensor<2x32x1x1xi8>
  %s = graph.constant dense<1.250000e-01> : tensor<f32>
  %a1 = graph.quant_conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_offset = 0 : i64} : (tensor<1x32x4x4xi8>, tensor<2x32x1x1xi8>) -> tensor<1x2x4x4xi32>
  %a2 = graph.quant_conv2d %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_offset = 0 : i64} : (tensor<1x32x4x4xi8>, tensor<2x32x1x1xi8>) -> tensor<1x2x4x4xi32>
  %acc = graph.add %a2, %a1 : (tensor<1x2x4x4xi32>, tensor<1x2x4x4xi32>) -> tensor<1x2x4x4xi32>
  %d = graph.dequantize %acc, %s {axis = 1 : i64, offset = 0 : i64} : (tensor<1x2x4x4xi32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %q = graph.quantize %d {scale = 2.000000e+00 : f32, offset = 0 : i64} : tensor<1x2x4x4xf32> to tensor<1x2x4x4xi8>
  func.return %q : tensor<1x2x4x4xi8>
}
// CHECK-LABEL: func.func @int8_parts_sum_then_dequantize
// CHECK:         %a2 = fusion.group "cube_epilogue" [] ins(%x, %w2)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.quant_conv2d
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %q = fusion.group "cube_epilogue" ["TbeConvElemwiseFusionPass"] ins(%x, %w1, %a2, %s)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.quant_conv2d
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.dequantize
// CHECK-NEXT:      graph.quantize
// CHECK-NEXT:      fusion.yield
