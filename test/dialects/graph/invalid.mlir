// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier error of the graph dialect (dialects/graph.py): the common checks
// of every op with inferred result types, then op by op. Each chunk holds exactly one op
// that does not verify; --verify-diagnostics prints its message and the annotated IR.

// Common checks of every op with inferred results (GraphOp.verify_).

func.func @dynamic_operand(%x: tensor<?x3xf32>) {
  %r = graph.relu %x : tensor<?x3xf32>
  func.return
}
// CHECK: Operation does not verify: operands must be statically shaped tensors, got tensor<?x3xf32>
// CHECK: -----

// -----

func.func @scalar_operand(%x: f32) {
  %r = graph.relu %x : f32
  func.return
}
// CHECK: Operation does not verify: operands must be statically shaped tensors, got f32
// CHECK: -----

// -----

func.func @complex_operand(%x: tensor<2xcomplex<f32>>) {
  %r = graph.neg %x : tensor<2xcomplex<f32>>
  func.return
}
// CHECK: Operation does not verify: element type complex<f32> is not supported by the graph level
// CHECK: -----

// -----

func.func @bf16_operand(%x: tensor<2xbf16>) {
  %r = graph.sigmoid %x : tensor<2xbf16>
  func.return
}
// CHECK: Operation does not verify: element type bf16 is not supported by the graph level
// CHECK: -----

// -----

func.func @wrong_result_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: Operation does not verify: result #0 has type tensor<1x4x8x8xf32>, but the operands and attributes give tensor<1x4x6x6xf32>
// CHECK: -----

// -----

func.func @wrong_result_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = graph.less %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: result #0 has type tensor<2x3xf32>, but the operands and attributes give tensor<2x3xi1>
// CHECK: -----

// -----

func.func @wrong_second_result(%x: tensor<2x3xf32>) {
  %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>)
  func.return
}
// CHECK: Operation does not verify: result #1 has type tensor<2x1xf32>, but the operands and attributes give tensor<2x2xf32>
// CHECK: -----

// -----

func.func @result_count(%x: tensor<2x3xf32>) {
  %a, %b, %c = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}
// CHECK: Operation does not verify: expected 2 results, got 3
// CHECK: -----

// -----

func.func @dynamic_result(%x: tensor<2x3xf32>, %s: tensor<2xi64>) {
  %r = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  func.return
}
// CHECK: Operation does not verify: result #0 must be a statically shaped tensor, got tensor<?x2xf32>
// CHECK: -----

// -----

// Constants.

func.func @constant_vector() {
  %c = graph.constant dense<1> : vector<2xi32>
  func.return
}
// CHECK: Operation does not verify: a constant must be a statically shaped tensor, got vector<2xi32>
// CHECK: -----

// -----

func.func @constant_dynamic() {
  %c = graph.constant dense_resource<blob> : tensor<?xf32>
  func.return
}
// CHECK: Operation does not verify: a constant must be a statically shaped tensor, got tensor<?xf32>
// CHECK: -----

// -----

// Elementwise.

func.func @sigmoid_int(%x: tensor<2x3xi32>) {
  %r = graph.sigmoid %x : tensor<2x3xi32>
  func.return
}
// CHECK: Operation does not verify: operand must have a floating-point element type, got i32
// CHECK: -----

// -----

func.func @not_float(%x: tensor<4xf32>) {
  %r = graph.not %x : tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: operand must be a tensor of i1, got tensor<4xf32>
// CHECK: -----

// -----

func.func @cast_shape(%x: tensor<2xf32>) {
  %r = graph.cast %x : tensor<2xf32> to tensor<3xf16>
  func.return
}
// CHECK: Operation does not verify: cast must keep the shape: tensor<2xf32> to tensor<3xf16>
// CHECK: -----

// -----

func.func @cast_dynamic(%x: tensor<2xf32>) {
  %r = graph.cast %x : tensor<2xf32> to tensor<?xf16>
  func.return
}
// CHECK: Operation does not verify: result #0 must be a statically shaped tensor, got tensor<?xf16>
// CHECK: -----

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  %r = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: operand shapes 2x3, 4 do not broadcast
// CHECK: -----

// -----

func.func @no_broadcast_scalar(%a: tensor<f32>, %b: tensor<2x5xf32>, %c: tensor<3x1xf32>) {
  %r = graph.sum %a, %b, %c : (tensor<f32>, tensor<2x5xf32>, tensor<3x1xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK: Operation does not verify: operand shapes scalar, 2x5, 3x1 do not broadcast
// CHECK: -----

// -----

func.func @mixed_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  %r = graph.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: operands must have one element type, got f32, i32
// CHECK: -----

// -----

func.func @logic_not_i1(%a: tensor<2xi32>, %b: tensor<2xi32>) {
  %r = graph.and %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  func.return
}
// CHECK: Operation does not verify: operands must be tensors of i1, got i32
// CHECK: -----

// -----

func.func @prelu_slope(%x: tensor<3xf32>, %s: tensor<2x3xf32>) {
  %r = graph.prelu %x, %s : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: Operation does not verify: slope tensor<2x3xf32> does not broadcast to the input tensor<3xf32>
// CHECK: -----

// -----

func.func @variadic_empty() {
  %r = graph.max : () -> tensor<2xf32>
  func.return
}
// CHECK: Operation does not verify: graph.max needs at least one input
// CHECK: -----

// -----

func.func @where_condition(%c: tensor<2xf32>, %a: tensor<2xf32>, %b: tensor<2xf32>) {
  %r = graph.where %c, %a, %b : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: Operation does not verify: condition must be a tensor of i1, got tensor<2xf32>
// CHECK: -----

// -----

// Neural-network ops.

func.func @conv_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank 4, got tensor<3x8x8xf32>
// CHECK: -----

// -----

func.func @conv_int(%x: tensor<1x3x8x8xi8>, %w: tensor<4x3x3x3xi8>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xi8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi8>
  func.return
}
// CHECK: Operation does not verify: input must have a floating-point element type, got i8
// CHECK: -----

// -----

func.func @conv_window_props(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 2 strides, 2 dilations and 4 pads, got strides=[1] dilations=[1, 1] pads=[0, 0, 0, 0]
// CHECK: -----

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: strides and dilations must be >= 1 and pads >= 0
// CHECK: -----

// -----

func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: weight tensor<6x4x3x3xf32> does not match input tensor<1x4x8x8xf32> with group 2 (need weight dim 1 = channels / group = 2, channels and filters divisible by group)
// CHECK: -----

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %y = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: bias must have shape [4], got tensor<3xf32>
// CHECK: -----

// -----

func.func @conv_window_too_big(%x: tensor<1x3x3x3xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return
}
// CHECK: Operation does not verify: window of extent 5 does not fit input of size 3 with pads 0,0
// CHECK: -----

// -----

func.func @pool_kernel(%x: tensor<1x3x8x8xf32>) {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: kernel_shape must be two positive sizes, got [3]
// CHECK: -----

// -----

func.func @pool_pads(%x: tensor<1x3x8x8xf32>) {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 3, 3>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x9xf32>
  func.return
}
// CHECK: Operation does not verify: pads [0, 0, 3, 3] must be smaller than the window [3, 3]
// CHECK: -----

// -----

func.func @pool_rank(%x: tensor<3x6x6xf32>) {
  %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<3x6x6xf32>) -> tensor<3x3x3xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank 4, got tensor<3x6x6xf32>
// CHECK: -----

// -----

func.func @global_pool_rank(%x: tensor<2x3xf32>) {
  %y = graph.global_avg_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank >= 3, got tensor<2x3xf32>
// CHECK: -----

// -----

func.func @batch_norm_param(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>, %v: tensor<4xf32>) {
  %y = graph.batch_norm %x, %c, %c, %c, %v {epsilon = 0.0009765625 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x3x4x4xf32>
  func.return
}
// CHECK: Operation does not verify: var must have shape [3] (the channel count), got tensor<4xf32>
// CHECK: -----

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %c: tensor<3xf32>) {
  %y = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0009765625 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank >= 2, got tensor<3xf32>
// CHECK: -----

// -----

func.func @layer_norm_axis(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) {
  %y = graph.layer_norm %x, %s {axis = 3 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: Operation does not verify: axis 3 is out of range for rank 3 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>) {
  %y = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: Operation does not verify: scale tensor<3x4xf32> does not broadcast to the normalized shape [4]
// CHECK: -----

// -----

func.func @layer_norm_bias(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<2x4xf32>) {
  %y = graph.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: Operation does not verify: bias tensor<2x4xf32> does not broadcast to the normalized shape [4]
// CHECK: -----

// -----

func.func @lrn_rank(%x: tensor<4x5xf32>) {
  %y = graph.lrn %x {size = 3 : i64, alpha = 1.250000e-01 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : tensor<4x5xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank >= 3, got tensor<4x5xf32>
// CHECK: -----

// -----

func.func @lrn_size(%x: tensor<1x3x4x4xf32>) {
  %y = graph.lrn %x {size = 0 : i64, alpha = 1.250000e-01 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : tensor<1x3x4x4xf32>
  func.return
}
// CHECK: Operation does not verify: size must be >= 1
// CHECK: -----

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  %y = graph.softmax %x {axis = -1 : i64} : tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: axis -1 is out of range for rank 2 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @log_softmax_int(%x: tensor<2x3xi64>) {
  %y = graph.log_softmax %x {axis = 1 : i64} : tensor<2x3xi64>
  func.return
}
// CHECK: Operation does not verify: input must have a floating-point element type, got i64
// CHECK: -----

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %y = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK: Operation does not verify: contraction dims differ: tensor<2x3xf32> x tensor<4x5xf32> (3 vs 4)
// CHECK: -----

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  %y = graph.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: Operation does not verify: matmul operands must have rank >= 1
// CHECK: -----

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<5x3x4xf32>) {
  %y = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<5x3x4xf32>) -> tensor<2x2x4xf32>
  func.return
}
// CHECK: Operation does not verify: batch dims of tensor<2x2x3xf32> and tensor<5x3x4xf32> do not broadcast
// CHECK: -----

// -----

func.func @gemm_rank(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  %y = graph.gemm %a, %b {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  func.return
}
// CHECK: Operation does not verify: A must have rank 2, got tensor<3xf32>
// CHECK: -----

// -----

func.func @gemm_contraction(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %y = graph.gemm %a, %b {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_b} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: contraction dims differ: 3 vs 4
// CHECK: -----

// -----

func.func @gemm_c(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3x1x4xf32>) {
  %y = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3x1x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: Operation does not verify: C tensor<3x1x4xf32> does not broadcast to [2, 4]
// CHECK: -----

// -----

func.func @gemm_c_incompatible(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  %y = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: Operation does not verify: C tensor<3xf32> does not broadcast to [2, 4]
// CHECK: -----

// -----

// Reductions.

func.func @reduce_axis(%x: tensor<2x3x4xf32>) {
  %y = graph.reduce_sum %x {axes = array<i64: 0, 5>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  func.return
}
// CHECK: Operation does not verify: axis 5 is out of range for rank 3 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @reduce_duplicate(%x: tensor<2x3x4xf32>) {
  %y = graph.reduce_mean %x {axes = array<i64: 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: Operation does not verify: axes [1, 1] contain duplicates
// CHECK: -----

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) {
  %y = graph.argmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  func.return
}
// CHECK: Operation does not verify: axis 2 is out of range for rank 2 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @argmin_result(%x: tensor<2x3xf32>) {
  %y = graph.argmin %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi32>
  func.return
}
// CHECK: Operation does not verify: result #0 has type tensor<2xi32>, but the operands and attributes give tensor<2xi64>
// CHECK: -----

// -----

// Shape and data movement.

func.func @reshape_count(%x: tensor<2x3xf32>) {
  %s = graph.constant dense<[4, 2]> : tensor<2xi64>
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return
}
// CHECK: Operation does not verify: cannot reshape [2, 3] (6 elements) to [4, 2]
// CHECK: -----

// -----

func.func @reshape_infer_indivisible(%x: tensor<2x3xf32>) {
  %s = graph.constant dense<[-1, 4]> : tensor<2xi64>
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  func.return
}
// CHECK: Operation does not verify: cannot reshape [2, 3] to [-1, 4]
// CHECK: -----

// -----

func.func @reshape_two_minus_one(%x: tensor<2x3xf32>) {
  %s = graph.constant dense<[-1, -1]> : tensor<2xi64>
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: invalid reshape target [-1, -1]
// CHECK: -----

// -----

func.func @reshape_blob_shape(%x: tensor<6xf32>) {
  %s = graph.constant dense_resource<shape_2x3> : tensor<2xi64>
  %y = graph.reshape %x, %s : (tensor<6xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  func.return
}

// The shape operand's value is read from the dense_resource blob (i64 [2, 3]).
{-#
  dialect_resources: {
    builtin: {
      shape_2x3: "0x0800000002000000000000000300000000000000"
    }
  }
#-}
// CHECK: Operation does not verify: result #0 has type tensor<3x2xf32>, but the operands and attributes give tensor<2x3xf32>
// CHECK: -----

// -----

func.func @reshape_shape_type(%x: tensor<2x3xf32>, %s: tensor<2xi32>) {
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: Operation does not verify: shape must be a 1-D tensor of i64, got tensor<2xi32>
// CHECK: -----

// -----

func.func @reshape_dynamic_count(%x: tensor<2x3xf32>, %s: tensor<2xi64>) {
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return
}
// CHECK: Operation does not verify: cannot reshape tensor<2x3xf32> to tensor<4x2xf32>
// CHECK: -----

// -----

func.func @reshape_dynamic_rank(%x: tensor<2x3xf32>, %s: tensor<3xi64>) {
  %y = graph.reshape %x, %s : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<6xf32>
  func.return
}
// CHECK: Operation does not verify: shape operand tensor<3xi64> does not match the result rank of tensor<6xf32>
// CHECK: -----

// -----

func.func @flatten_axis(%x: tensor<2x3x4xf32>) {
  %y = graph.flatten %x {axis = 4 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  func.return
}
// CHECK: Operation does not verify: axis 4 is out of range for rank 3
// CHECK: -----

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  %y = graph.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}
// CHECK: Operation does not verify: perm [0, 0, 1] is not a permutation of 0..2
// CHECK: -----

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: Operation does not verify: inputs tensor<2x3xf32> and tensor<3x3xf32> differ outside the concat axis 1
// CHECK: -----

// -----

func.func @concat_empty() {
  %y = graph.concat {axis = 0 : i64} : () -> tensor<2xf32>
  func.return
}
// CHECK: Operation does not verify: graph.concat needs at least one input
// CHECK: -----

// -----

func.func @concat_axis(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %y = graph.concat %a, %b {axis = 7 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: axis 7 is out of range for rank 2 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @split_sizes(%x: tensor<2x5xf32>) {
  %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}
// CHECK: Operation does not verify: sizes [2, 2] do not add up to dim 1 of tensor<2x5xf32>
// CHECK: -----

// -----

func.func @slice_not_normalized(%x: tensor<2x3xf32>) {
  %y = graph.slice %x {starts = array<i64: 0, -1>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}
// CHECK: Operation does not verify: slice [-1:3:1] is not normalized for a dim of size 3
// CHECK: -----

// -----

func.func @slice_end(%x: tensor<2x3xf32>) {
  %y = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: slice [0:5:1] is not normalized for a dim of size 2
// CHECK: -----

// -----

func.func @slice_step(%x: tensor<2x3xf32>) {
  %y = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: steps must be non-zero
// CHECK: -----

// -----

func.func @slice_entries(%x: tensor<2x3xf32>) {
  %y = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: starts, ends and steps need one entry per dim (2)
// CHECK: -----

// -----

func.func @gather_indices(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  %y = graph.gather %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: indices must be an integer tensor, got tensor<2xf32>
// CHECK: -----

// -----

func.func @squeeze_not_one(%x: tensor<2x1x3xf32>) {
  %y = graph.squeeze %x {axes = array<i64: 0, 1>} : (tensor<2x1x3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: Operation does not verify: cannot squeeze axes [0, 1] of tensor<2x1x3xf32>: not all of size 1
// CHECK: -----

// -----

func.func @unsqueeze_axis(%x: tensor<2x3xf32>) {
  %y = graph.unsqueeze %x {axes = array<i64: 4>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return
}
// CHECK: Operation does not verify: axis 4 is out of range for rank 3 (normalized axes are 0..rank-1)
// CHECK: -----

// -----

func.func @unsqueeze_duplicate(%x: tensor<2x3xf32>) {
  %y = graph.unsqueeze %x {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<1x1x2x3xf32>
  func.return
}
// CHECK: Operation does not verify: axes [0, 0] contain duplicates
// CHECK: -----

// -----

func.func @expand_incompatible(%x: tensor<3x2xf32>) {
  %s = graph.constant dense<[4]> : tensor<1xi64>
  %y = graph.expand %x, %s : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<3x4xf32>
  func.return
}
// CHECK: Operation does not verify: operand shapes 3x2, 4 do not broadcast
// CHECK: -----

// -----

func.func @expand_shape_type(%x: tensor<3x1xf32>, %s: tensor<2x2xi64>) {
  %y = graph.expand %x, %s : (tensor<3x1xf32>, tensor<2x2xi64>) -> tensor<3x4xf32>
  func.return
}
// CHECK: Operation does not verify: shape must be a 1-D tensor of i64, got tensor<2x2xi64>
// CHECK: -----

// -----

func.func @expand_dynamic(%x: tensor<3x4xf32>, %s: tensor<1xi64>) {
  %y = graph.expand %x, %s : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: cannot expand tensor<3x4xf32> to tensor<4xf32>
// CHECK: -----

// -----

func.func @tile_repeats(%x: tensor<2x3xf32>) {
  %y = graph.tile %x {repeats = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: repeats [2] need one non-negative entry per dim of tensor<2x3xf32>
// CHECK: -----

// -----

func.func @pad_length(%x: tensor<2x3xf32>) {
  %y = graph.pad %x {pads = array<i64: 1, 1>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: pads needs 4 entries for tensor<2x3xf32>, got 2
// CHECK: -----

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  %y = graph.pad %x {pads = array<i64: 1, 1, 1, 1>, mode = "symmetric"} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  func.return
}
// CHECK: Operation does not verify: unknown pad mode 'symmetric' (constant, reflect, edge, wrap)
// CHECK: -----

// -----

func.func @pad_crop(%x: tensor<2x3xf32>) {
  %y = graph.pad %x {pads = array<i64: 0, -2, 0, -2>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}
// CHECK: Operation does not verify: pads [0, -2, 0, -2] remove more than tensor<2x3xf32> holds
// CHECK: -----

// -----

func.func @shape_range(%x: tensor<2x3x4xf32>) {
  %y = graph.shape %x {start = 2 : i64, end = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<1xi64>
  func.return
}
// CHECK: Operation does not verify: start 2 / end 1 out of range for rank 3
// CHECK: -----

// -----

func.func @shape_end(%x: tensor<2x3x4xf32>) {
  %y = graph.shape %x {end = 4 : i64} : (tensor<2x3x4xf32>) -> tensor<4xi64>
  func.return
}
// CHECK: Operation does not verify: start 0 / end 4 out of range for rank 3
// CHECK: -----

// -----

func.func @constant_of_shape_type(%s: tensor<2xf32>) {
  %y = graph.constant_of_shape %s {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: shape must be a 1-D integer tensor, got tensor<2xf32>
// CHECK: -----

// -----

func.func @constant_of_shape_value(%s: tensor<2xi64>) {
  %y = graph.constant_of_shape %s {value = dense<0.000000e+00> : tensor<2xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: value must hold exactly one element
// CHECK: -----

// -----

func.func @constant_of_shape_negative() {
  %s = graph.constant dense<[2, -1]> : tensor<2xi64>
  %y = graph.constant_of_shape %s {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: shape [2, -1] has a negative dim
// CHECK: -----

// -----

func.func @constant_of_shape_element_type(%s: tensor<2xi64>) {
  %y = graph.constant_of_shape %s {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf16>
  func.return
}
// CHECK: Operation does not verify: value dense<0.000000e+00> : tensor<1xf32> and result tensor<2x3xf16> differ in element type
// CHECK: -----

// -----

func.func @constant_of_shape_rank(%s: tensor<3xi64>) {
  %y = graph.constant_of_shape %s {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<3xi64>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: shape operand tensor<3xi64> does not match the result rank of tensor<2x3xf32>
// CHECK: -----

// -----

func.func @range_not_scalar(%a: tensor<1xi64>, %b: tensor<1xi64>, %c: tensor<1xi64>) {
  %y = graph.range %a, %b, %c : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  func.return
}
// CHECK: Operation does not verify: start, limit and delta must be scalars (rank 0)
// CHECK: -----

// -----

func.func @range_delta() {
  %a = graph.constant dense<0> : tensor<i64>
  %b = graph.constant dense<4> : tensor<i64>
  %c = graph.constant dense<0> : tensor<i64>
  %y = graph.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  func.return
}
// CHECK: Operation does not verify: delta must be non-zero
// CHECK: -----

// -----

func.func @range_length() {
  %a = graph.constant dense<0> : tensor<i64>
  %b = graph.constant dense<10> : tensor<i64>
  %c = graph.constant dense<3> : tensor<i64>
  %y = graph.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  func.return
}
// CHECK: Operation does not verify: result #0 has type tensor<3xi64>, but the operands and attributes give tensor<4xi64>
// CHECK: -----

// -----

func.func @depth_to_space_channels(%x: tensor<1x6x2x2xf32>) {
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "DCR"} : (tensor<1x6x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK: Operation does not verify: channels 6 are not divisible by blocksize^2 = 4
// CHECK: -----

// -----

func.func @depth_to_space_mode(%x: tensor<1x8x2x2xf32>) {
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "RCD"} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
  func.return
}
// CHECK: Operation does not verify: mode must be DCR or CRD
// CHECK: -----

// -----

func.func @space_to_depth_spatial(%x: tensor<1x2x5x4xf32>) {
  %y = graph.space_to_depth %x {blocksize = 2 : i64} : (tensor<1x2x5x4xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK: Operation does not verify: spatial dims 5x4 are not divisible by blocksize 2
// CHECK: -----

// -----

func.func @space_to_depth_mode(%x: tensor<1x2x4x4xf32>) {
  %y = graph.space_to_depth %x {blocksize = 2 : i64, mode = "XYZ"} : (tensor<1x2x4x4xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK: Operation does not verify: mode must be DCR or CRD
// CHECK: -----

// -----

func.func @space_to_depth_rank(%x: tensor<2x5x4xf32>) {
  %y = graph.space_to_depth %x {blocksize = 2 : i64} : (tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return
}
// CHECK: Operation does not verify: input must have rank 4, got tensor<2x5x4xf32>
// CHECK: -----

// -----

// Checks xDSL's IRDL makes before the op's own verifier runs: a missing required
// property (so the `missing attribute` errors of graph.py's get_* helpers only guard
// Python builders), and the tied operand/result type of unary ops.

func.func @missing_property(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: property 'group' expected in operation 'graph.conv2d'
// CHECK: -----

// -----

func.func @unary_tied_type(%x: tensor<2x3xf32>) {
  %y = "graph.relu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: Operation does not verify: result 'output' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<2x3xf32> expected from variable 'T', but got tensor<3x2xf32>

// -----

func.func @cast_bf16(%x: tensor<2xf32>) {
  %r = graph.cast %x : tensor<2xf32> to tensor<2xbf16>
  func.return
}
// CHECK: Operation does not verify: element type bf16 is not supported by the graph level
// CHECK: -----

// -----

func.func @constant_bf16() {
  %c = graph.constant dense<1.000000e+00> : tensor<2xbf16>
  func.return
}
// CHECK: Operation does not verify: element type bf16 is not supported by the graph level
// CHECK: -----

// -----

func.func @split_negative(%x: tensor<4xf32>) {
  %a, %b = graph.split %x {axis = 0 : i64, sizes = array<i64: 5, -1>} : (tensor<4xf32>) -> (tensor<5xf32>, tensor<1xf32>)
  func.return
}
// CHECK: Operation does not verify: sizes [5, -1] must be non-negative
