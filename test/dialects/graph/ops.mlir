// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

// Round trip of every op of the graph dialect, in custom form (GE_ROUNDTRIP parses the
// generic print back) and in generic form, with every optional attribute and operand used
// at least once. Result types are the ones each op's inference gives, since the verifier
// rejects any other.

// Chunk 1: constants, inline `dense` and `dense_resource` with its resource section. The
// `shape_2x3` blob (i64 [2, 3]) is read back as the constant shape operand of a reshape.

// CHECK:         builtin.module {
// CHECK-GENERIC: "builtin.module"() ({

// CHECK-LABEL: func.func @constants(%x: tensor<6xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "constants", function_type = (tensor<6xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<6xf32>):
func.func @constants(%x: tensor<6xf32>) {
  %i = graph.constant dense<[1, 12]> : tensor<2xi64>
  // CHECK-NEXT: %i = graph.constant dense<[1, 12]> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %i = "graph.constant"() <{value = dense<[1, 12]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %s = graph.constant dense<7> : tensor<i64>
  // CHECK-NEXT: %s = graph.constant dense<7> : tensor<i64>
  // CHECK-GENERIC-NEXT: %s = "graph.constant"() <{value = dense<7> : tensor<i64>}> : () -> tensor<i64>
  %f = graph.constant dense<1.500000e+00> : tensor<2x2xf32>
  // CHECK-NEXT: %f = graph.constant dense<1.500000e+00> : tensor<2x2xf32>
  // CHECK-GENERIC-NEXT: %f = "graph.constant"() <{value = dense<1.500000e+00> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %g = graph.constant dense<[0.000000e+00, -2.500000e-01, 3.000000e+00]> : tensor<3xf16>
  // CHECK-NEXT: %g = graph.constant dense<[0.000000e+00, -2.500000e-01, 3.000000e+00]> : tensor<3xf16>
  // CHECK-GENERIC-NEXT: %g = "graph.constant"() <{value = dense<[0.000000e+00, -2.500000e-01, 3.000000e+00]> : tensor<3xf16>}> : () -> tensor<3xf16>
  %m = graph.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  // CHECK-NEXT: %m = graph.constant dense<{{\[\[}}1, 2], [3, 4{{\]\]}}> : tensor<2x2xi32>
  // CHECK-GENERIC-NEXT: %m = "graph.constant"() <{value = dense<{{\[\[}}1, 2], [3, 4{{\]\]}}> : tensor<2x2xi32>}> : () -> tensor<2x2xi32>
  %b = graph.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: %b = graph.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-GENERIC-NEXT: %b = "graph.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  %u = graph.constant dense<[0, 255]> : tensor<2xui8>
  // CHECK-NEXT: %u = graph.constant dense<[0, 255]> : tensor<2xui8>
  // CHECK-GENERIC-NEXT: %u = "graph.constant"() <{value = dense<[0, 255]> : tensor<2xui8>}> : () -> tensor<2xui8>
  %w = graph.constant dense_resource<conv_w> : tensor<2x2xf32>
  // CHECK-NEXT: %w = graph.constant dense_resource<conv_w> : tensor<2x2xf32>
  // CHECK-GENERIC-NEXT: %w = "graph.constant"() <{value = dense_resource<conv_w> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %shape = graph.constant dense_resource<shape_2x3> : tensor<2xi64>
  // CHECK-NEXT: %shape = graph.constant dense_resource<shape_2x3> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %shape = "graph.constant"() <{value = dense_resource<shape_2x3> : tensor<2xi64>}> : () -> tensor<2xi64>
  %r = graph.reshape %x, %shape : (tensor<6xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  // CHECK-NEXT: %r = graph.reshape %x, %shape : (tensor<6xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %r = "graph.reshape"(%x, %shape) : (tensor<6xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

{-#
  dialect_resources: {
    builtin: {
      conv_w: "0x040000000000803F000000400000404000008040",
      shape_2x3: "0x0800000002000000000000000300000000000000"
    }
  }
#-}

// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  {-#
// CHECK-NEXT:    dialect_resources: {
// CHECK-NEXT:      builtin: {
// CHECK-NEXT:        conv_w: "0x040000000000803F000000400000404000008040",
// CHECK:             shape_2x3: "0x0800000002000000000000000300000000000000"
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  #-}

// CHECK-GENERIC-NEXT:  }) : () -> ()
// CHECK-GENERIC-EMPTY:
// CHECK-GENERIC-NEXT:  {-#
// CHECK-GENERIC-NEXT:    dialect_resources: {
// CHECK-GENERIC-NEXT:      builtin: {
// CHECK-GENERIC-NEXT:        conv_w: "0x040000000000803F000000400000404000008040",
// CHECK-GENERIC:             shape_2x3: "0x0800000002000000000000000300000000000000"
// CHECK-GENERIC-NEXT:      }
// CHECK-GENERIC-NEXT:    }
// CHECK-GENERIC-NEXT:  #-}

// -----

// Chunk 2: every other op, grouped by kind.

// CHECK:         -----
// CHECK-NEXT:    builtin.module {
// CHECK-GENERIC: -----
// CHECK-GENERIC-NEXT: "builtin.module"() ({

// CHECK-LABEL: func.func @unary_float(%x: tensor<2x3xf32>, %h: tensor<4xf16>, %d: tensor<2xf64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "unary_float", function_type = (tensor<2x3xf32>, tensor<4xf16>, tensor<2xf64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3xf32>, %h: tensor<4xf16>, %d: tensor<2xf64>):
func.func @unary_float(%x: tensor<2x3xf32>, %h: tensor<4xf16>, %d: tensor<2xf64>) {
  %sigmoid = graph.sigmoid %x : tensor<2x3xf32>
  // CHECK-NEXT: %sigmoid = graph.sigmoid %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sigmoid = "graph.sigmoid"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tanh = graph.tanh %x : tensor<2x3xf32>
  // CHECK-NEXT: %tanh = graph.tanh %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %tanh = "graph.tanh"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %erf = graph.erf %x : tensor<2x3xf32>
  // CHECK-NEXT: %erf = graph.erf %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %erf = "graph.erf"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sqrt = graph.sqrt %x : tensor<2x3xf32>
  // CHECK-NEXT: %sqrt = graph.sqrt %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sqrt = "graph.sqrt"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %exp = graph.exp %x : tensor<2x3xf32>
  // CHECK-NEXT: %exp = graph.exp %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %exp = "graph.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log = graph.log %x : tensor<2x3xf32>
  // CHECK-NEXT: %log = graph.log %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %log = "graph.log"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sin = graph.sin %x : tensor<2x3xf32>
  // CHECK-NEXT: %sin = graph.sin %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sin = "graph.sin"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cos = graph.cos %x : tensor<2x3xf32>
  // CHECK-NEXT: %cos = graph.cos %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %cos = "graph.cos"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %reciprocal = graph.reciprocal %x : tensor<2x3xf32>
  // CHECK-NEXT: %reciprocal = graph.reciprocal %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %reciprocal = "graph.reciprocal"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %floor = graph.floor %x : tensor<2x3xf32>
  // CHECK-NEXT: %floor = graph.floor %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %floor = "graph.floor"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ceil = graph.ceil %x : tensor<2x3xf32>
  // CHECK-NEXT: %ceil = graph.ceil %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %ceil = "graph.ceil"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %round = graph.round %x : tensor<2x3xf32>
  // CHECK-NEXT: %round = graph.round %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %round = "graph.round"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %softplus = graph.softplus %x : tensor<2x3xf32>
  // CHECK-NEXT: %softplus = graph.softplus %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %softplus = "graph.softplus"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %softsign = graph.softsign %x : tensor<2x3xf32>
  // CHECK-NEXT: %softsign = graph.softsign %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %softsign = "graph.softsign"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %hard_swish = graph.hard_swish %x : tensor<2x3xf32>
  // CHECK-NEXT: %hard_swish = graph.hard_swish %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %hard_swish = "graph.hard_swish"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sigmoid_h = graph.sigmoid %h : tensor<4xf16>
  // CHECK-NEXT: %sigmoid_h = graph.sigmoid %h : tensor<4xf16>
  // CHECK-GENERIC-NEXT: %sigmoid_h = "graph.sigmoid"(%h) : (tensor<4xf16>) -> tensor<4xf16>
  %exp_d = graph.exp %d : tensor<2xf64>
  // CHECK-NEXT: %exp_d = graph.exp %d : tensor<2xf64>
  // CHECK-GENERIC-NEXT: %exp_d = "graph.exp"(%d) : (tensor<2xf64>) -> tensor<2xf64>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @unary_any(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>, %u: tensor<5xui8>, %p: tensor<2x3xi1>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "unary_any", function_type = (tensor<2x3xf32>, tensor<2x3xi32>, tensor<5xui8>, tensor<2x3xi1>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>, %u: tensor<5xui8>, %p: tensor<2x3xi1>):
func.func @unary_any(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>, %u: tensor<5xui8>, %p: tensor<2x3xi1>) {
  %relu = graph.relu %x : tensor<2x3xf32>
  // CHECK-NEXT: %relu = graph.relu %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %relu = "graph.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %relu_i = graph.relu %i : tensor<2x3xi32>
  // CHECK-NEXT: %relu_i = graph.relu %i : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %relu_i = "graph.relu"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %relu_u = graph.relu %u : tensor<5xui8>
  // CHECK-NEXT: %relu_u = graph.relu %u : tensor<5xui8>
  // CHECK-GENERIC-NEXT: %relu_u = "graph.relu"(%u) : (tensor<5xui8>) -> tensor<5xui8>
  %neg = graph.neg %x : tensor<2x3xf32>
  // CHECK-NEXT: %neg = graph.neg %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %neg = "graph.neg"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %neg_i = graph.neg %i : tensor<2x3xi32>
  // CHECK-NEXT: %neg_i = graph.neg %i : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %neg_i = "graph.neg"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %abs = graph.abs %i : tensor<2x3xi32>
  // CHECK-NEXT: %abs = graph.abs %i : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %abs = "graph.abs"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %sign = graph.sign %i : tensor<2x3xi32>
  // CHECK-NEXT: %sign = graph.sign %i : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %sign = "graph.sign"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %identity = graph.identity %x : tensor<2x3xf32>
  // CHECK-NEXT: %identity = graph.identity %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %identity = "graph.identity"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %identity_p = graph.identity %p : tensor<2x3xi1>
  // CHECK-NEXT: %identity_p = graph.identity %p : tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %identity_p = "graph.identity"(%p) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %not = graph.not %p : tensor<2x3xi1>
  // CHECK-NEXT: %not = graph.not %p : tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %not = "graph.not"(%p) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %dropout = graph.dropout %x : tensor<2x3xf32>
  // CHECK-NEXT: %dropout = graph.dropout %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %dropout = "graph.dropout"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %dropout_r = graph.dropout %i {ratio = 5.000000e-01 : f32} : tensor<2x3xi32>
  // CHECK-NEXT: %dropout_r = graph.dropout %i {ratio = 5.000000e-01 : f32} : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %dropout_r = "graph.dropout"(%i) <{ratio = 5.000000e-01 : f32}> : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %clip = graph.clip %x : tensor<2x3xf32>
  // CHECK-NEXT: %clip = graph.clip %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %clip = "graph.clip"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip_min = graph.clip %x {min = 0.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %clip_min = graph.clip %x {min = 0.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %clip_min = "graph.clip"(%x) <{min = 0.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip_max = graph.clip %x {max = 6.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %clip_max = graph.clip %x {max = 6.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %clip_max = "graph.clip"(%x) <{max = 6.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip_both = graph.clip %i {min = -1.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x3xi32>
  // CHECK-NEXT: %clip_both = graph.clip %i {min = -1.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %clip_both = "graph.clip"(%i) <{min = -1.000000e+00 : f32, max = 6.000000e+00 : f32}> : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @unary_attrs(%x: tensor<2x3xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "unary_attrs", function_type = (tensor<2x3xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3xf32>):
func.func @unary_attrs(%x: tensor<2x3xf32>) {
  %leaky_relu = graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %leaky_relu = graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %leaky_relu = "graph.leaky_relu"(%x) <{alpha = 1.000000e-01 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %elu = graph.elu %x {alpha = 1.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %elu = graph.elu %x {alpha = 1.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %elu = "graph.elu"(%x) <{alpha = 1.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %celu = graph.celu %x {alpha = 2.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %celu = graph.celu %x {alpha = 2.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %celu = "graph.celu"(%x) <{alpha = 2.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %selu = graph.selu %x {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %selu = graph.selu %x {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %selu = "graph.selu"(%x) <{alpha = 1.67326319 : f32, gamma = 1.05070102 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %hard_sigmoid = graph.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %hard_sigmoid = graph.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %hard_sigmoid = "graph.hard_sigmoid"(%x) <{alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %thresholded_relu = graph.thresholded_relu %x {alpha = 1.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: %thresholded_relu = graph.thresholded_relu %x {alpha = 1.000000e+00 : f32} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %thresholded_relu = "graph.thresholded_relu"(%x) <{alpha = 1.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu = graph.gelu %x : tensor<2x3xf32>
  // CHECK-NEXT: %gelu = graph.gelu %x : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %gelu = "graph.gelu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu_tanh = graph.gelu %x {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK-NEXT: %gelu_tanh = graph.gelu %x {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %gelu_tanh = "graph.gelu"(%x) <{approximate = "tanh"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu_none = graph.gelu %x {approximate = "none"} : tensor<2x3xf32>
  // CHECK-NEXT: %gelu_none = graph.gelu %x {approximate = "none"} : tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %gelu_none = "graph.gelu"(%x) <{approximate = "none"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @cast(%x: tensor<2xf32>, %i: tensor<2x3xi64>, %p: tensor<3xi1>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "cast", function_type = (tensor<2xf32>, tensor<2x3xi64>, tensor<3xi1>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2xf32>, %i: tensor<2x3xi64>, %p: tensor<3xi1>):
func.func @cast(%x: tensor<2xf32>, %i: tensor<2x3xi64>, %p: tensor<3xi1>) {
  %f16 = graph.cast %x : tensor<2xf32> to tensor<2xf16>
  // CHECK-NEXT: %f16 = graph.cast %x : tensor<2xf32> to tensor<2xf16>
  // CHECK-GENERIC-NEXT: %f16 = "graph.cast"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  %i32 = graph.cast %x : tensor<2xf32> to tensor<2xi32>
  // CHECK-NEXT: %i32 = graph.cast %x : tensor<2xf32> to tensor<2xi32>
  // CHECK-GENERIC-NEXT: %i32 = "graph.cast"(%x) : (tensor<2xf32>) -> tensor<2xi32>
  %u8 = graph.cast %x : tensor<2xf32> to tensor<2xui8>
  // CHECK-NEXT: %u8 = graph.cast %x : tensor<2xf32> to tensor<2xui8>
  // CHECK-GENERIC-NEXT: %u8 = "graph.cast"(%x) : (tensor<2xf32>) -> tensor<2xui8>
  %bool = graph.cast %x : tensor<2xf32> to tensor<2xi1>
  // CHECK-NEXT: %bool = graph.cast %x : tensor<2xf32> to tensor<2xi1>
  // CHECK-GENERIC-NEXT: %bool = "graph.cast"(%x) : (tensor<2xf32>) -> tensor<2xi1>
  %same = graph.cast %x : tensor<2xf32> to tensor<2xf32>
  // CHECK-NEXT: %same = graph.cast %x : tensor<2xf32> to tensor<2xf32>
  // CHECK-GENERIC-NEXT: %same = "graph.cast"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %f64 = graph.cast %i : tensor<2x3xi64> to tensor<2x3xf64>
  // CHECK-NEXT: %f64 = graph.cast %i : tensor<2x3xi64> to tensor<2x3xf64>
  // CHECK-GENERIC-NEXT: %f64 = "graph.cast"(%i) : (tensor<2x3xi64>) -> tensor<2x3xf64>
  %from_bool = graph.cast %p : tensor<3xi1> to tensor<3xf32>
  // CHECK-NEXT: %from_bool = graph.cast %p : tensor<3xi1> to tensor<3xf32>
  // CHECK-GENERIC-NEXT: %from_bool = "graph.cast"(%p) : (tensor<3xi1>) -> tensor<3xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>, %c: tensor<2x1xf32>, %i: tensor<2x3xi32>, %j: tensor<1x3xi32>, %p: tensor<2x3xi1>, %q: tensor<3xi1>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "binary", function_type = (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>, tensor<2x1xf32>, tensor<2x3xi32>, tensor<1x3xi32>, tensor<2x3xi1>, tensor<3xi1>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>, %c: tensor<2x1xf32>, %i: tensor<2x3xi32>, %j: tensor<1x3xi32>, %p: tensor<2x3xi1>, %q: tensor<3xi1>):
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>, %c: tensor<2x1xf32>, %i: tensor<2x3xi32>, %j: tensor<1x3xi32>, %p: tensor<2x3xi1>, %q: tensor<3xi1>) {
  %add = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %add = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %add = "graph.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %add_s = graph.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK-NEXT: %add_s = graph.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK-GENERIC-NEXT: %add_s = "graph.add"(%s, %s) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %sub = graph.sub %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sub = graph.sub %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sub = "graph.sub"(%a, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %mul = graph.mul %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mul = graph.mul %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %mul = "graph.mul"(%c, %b) : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %div = graph.div %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %div = graph.div %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %div = "graph.div"(%i, %j) : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  %mod = graph.mod %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %mod = graph.mod %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  // CHECK-GENERIC-NEXT: %mod = "graph.mod"(%i, %j) : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  %fmod = graph.mod %a, %b {fmod} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %fmod = graph.mod %a, %b {fmod} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %fmod = "graph.mod"(%a, %b) <{fmod}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %pow = graph.pow %a, %j : (tensor<2x3xf32>, tensor<1x3xi32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %pow = graph.pow %a, %j : (tensor<2x3xf32>, tensor<1x3xi32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %pow = "graph.pow"(%a, %j) : (tensor<2x3xf32>, tensor<1x3xi32>) -> tensor<2x3xf32>
  %pow_f = graph.pow %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %pow_f = graph.pow %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %pow_f = "graph.pow"(%a, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %equal = graph.equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %equal = graph.equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %equal = "graph.equal"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %equal_p = graph.equal %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %equal_p = graph.equal %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %equal_p = "graph.equal"(%p, %q) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %less = graph.less %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %less = graph.less %i, %j : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %less = "graph.less"(%i, %j) : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi1>
  %less_or_equal = graph.less_or_equal %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %less_or_equal = graph.less_or_equal %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %less_or_equal = "graph.less_or_equal"(%c, %b) : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %greater = graph.greater %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %greater = graph.greater %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %greater = "graph.greater"(%a, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  %greater_or_equal = graph.greater_or_equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %greater_or_equal = graph.greater_or_equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %greater_or_equal = "graph.greater_or_equal"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %and = graph.and %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %and = graph.and %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %and = "graph.and"(%p, %q) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %or = graph.or %q, %p : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %or = graph.or %q, %p : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %or = "graph.or"(%q, %p) : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %xor = graph.xor %p, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %xor = graph.xor %p, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-GENERIC-NEXT: %xor = "graph.xor"(%p, %p) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @prelu(%x: tensor<1x3x4x4xf32>, %slope: tensor<3x1x1xf32>, %one: tensor<1xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "prelu", function_type = (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>, tensor<1xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<1x3x4x4xf32>, %slope: tensor<3x1x1xf32>, %one: tensor<1xf32>):
func.func @prelu(%x: tensor<1x3x4x4xf32>, %slope: tensor<3x1x1xf32>, %one: tensor<1xf32>) {
  %prelu = graph.prelu %x, %slope : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %prelu = graph.prelu %x, %slope : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %prelu = "graph.prelu"(%x, %slope) : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %prelu_one = graph.prelu %x, %one : (tensor<1x3x4x4xf32>, tensor<1xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %prelu_one = graph.prelu %x, %one : (tensor<1x3x4x4xf32>, tensor<1xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %prelu_one = "graph.prelu"(%x, %one) : (tensor<1x3x4x4xf32>, tensor<1xf32>) -> tensor<1x3x4x4xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %i: tensor<4xi64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "variadic", function_type = (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>, tensor<4xi64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %i: tensor<4xi64>):
func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %i: tensor<4xi64>) {
  %sum_one = graph.sum %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sum_one = graph.sum %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sum_one = "graph.sum"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sum = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %sum = "graph.sum"(%a, %b, %c) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %max = graph.max %b, %c : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %max = graph.max %b, %c : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %max = "graph.max"(%b, %c) : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %min = graph.min %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-NEXT: %min = graph.min %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-GENERIC-NEXT: %min = "graph.min"(%i, %i) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %mean = graph.mean %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mean = graph.mean %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %mean = "graph.mean"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @where(%cond: tensor<2x1xi1>, %a: tensor<2x3xf32>, %s: tensor<f32>, %i: tensor<3xi64>, %j: tensor<2x3xi64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "where", function_type = (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>, tensor<3xi64>, tensor<2x3xi64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%cond: tensor<2x1xi1>, %a: tensor<2x3xf32>, %s: tensor<f32>, %i: tensor<3xi64>, %j: tensor<2x3xi64>):
func.func @where(%cond: tensor<2x1xi1>, %a: tensor<2x3xf32>, %s: tensor<f32>, %i: tensor<3xi64>, %j: tensor<2x3xi64>) {
  %where = graph.where %cond, %a, %s : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %where = graph.where %cond, %a, %s : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %where = "graph.where"(%cond, %a, %s) : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %where_i = graph.where %cond, %i, %j : (tensor<2x1xi1>, tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  // CHECK-NEXT: %where_i = graph.where %cond, %i, %j : (tensor<2x1xi1>, tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  // CHECK-GENERIC-NEXT: %where_i = "graph.where"(%cond, %i, %j) : (tensor<2x1xi1>, tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %xg: tensor<1x4x9x9xf32>, %wg: tensor<6x2x3x3xf32>, %xd: tensor<2x4x5x5xf16>, %wd: tensor<4x1x3x3xf16>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "conv2d", function_type = (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<2x4x5x5xf16>, tensor<4x1x3x3xf16>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %xg: tensor<1x4x9x9xf32>, %wg: tensor<6x2x3x3xf32>, %xd: tensor<2x4x5x5xf16>, %wd: tensor<4x1x3x3xf16>):
func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %xg: tensor<1x4x9x9xf32>, %wg: tensor<6x2x3x3xf32>, %xd: tensor<2x4x5x5xf16>, %wd: tensor<4x1x3x3xf16>) {
  %bias = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK-NEXT: %bias = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK-GENERIC-NEXT: %bias = "graph.conv2d"(%x, %w, %b) <{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %nobias = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  // CHECK-NEXT: %nobias = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  // CHECK-GENERIC-NEXT: %nobias = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %grouped = graph.conv2d %xg, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>
  // CHECK-NEXT: %grouped = graph.conv2d %xg, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>
  // CHECK-GENERIC-NEXT: %grouped = "graph.conv2d"(%xg, %wg) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64}> : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>
  %depthwise = graph.conv2d %xd, %wd {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<2x4x5x5xf16>, tensor<4x1x3x3xf16>) -> tensor<2x4x2x5xf16>
  // CHECK-NEXT: %depthwise = graph.conv2d %xd, %wd {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<2x4x5x5xf16>, tensor<4x1x3x3xf16>) -> tensor<2x4x2x5xf16>
  // CHECK-GENERIC-NEXT: %depthwise = "graph.conv2d"(%xd, %wd) <{strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 1>, group = 4 : i64}> : (tensor<2x4x5x5xf16>, tensor<4x1x3x3xf16>) -> tensor<2x4x2x5xf16>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @pool(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x7x7xf32>, %q: tensor<1x1x5x5xf32>, %z: tensor<2x3x5xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "pool", function_type = (tensor<1x3x8x8xf32>, tensor<1x3x7x7xf32>, tensor<1x1x5x5xf32>, tensor<2x3x5xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x7x7xf32>, %q: tensor<1x1x5x5xf32>, %z: tensor<2x3x5xf32>):
func.func @pool(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x7x7xf32>, %q: tensor<1x1x5x5xf32>, %z: tensor<2x3x5xf32>) {
  %max_ceil = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %max_ceil = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %max_ceil = "graph.max_pool"(%x) <{kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %max_floor = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  // CHECK-NEXT: %max_floor = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  // CHECK-GENERIC-NEXT: %max_floor = "graph.max_pool"(%y) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  %max_up = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %max_up = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %max_up = "graph.max_pool"(%y) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode}> : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %max_drop = graph.max_pool %q {kernel_shape = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  // CHECK-NEXT: %max_drop = graph.max_pool %q {kernel_shape = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  // CHECK-GENERIC-NEXT: %max_drop = "graph.max_pool"(%q) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode}> : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  %max_dil = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
  // CHECK-NEXT: %max_dil = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
  // CHECK-GENERIC-NEXT: %max_dil = "graph.max_pool"(%x) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
  %avg = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %avg = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %avg = "graph.avg_pool"(%x) <{kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %avg_pad = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %avg_pad = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %avg_pad = "graph.avg_pool"(%x) <{kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %avg_ceil = graph.avg_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %avg_ceil = graph.avg_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %avg_ceil = "graph.avg_pool"(%y) <{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode}> : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %gap = graph.global_avg_pool %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  // CHECK-NEXT: %gap = graph.global_avg_pool %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  // CHECK-GENERIC-NEXT: %gap = "graph.global_avg_pool"(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  %gmp = graph.global_max_pool %z : (tensor<2x3x5xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %gmp = graph.global_max_pool %z : (tensor<2x3x5xf32>) -> tensor<2x3x1xf32>
  // CHECK-GENERIC-NEXT: %gmp = "graph.global_max_pool"(%z) : (tensor<2x3x5xf32>) -> tensor<2x3x1xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @norm(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>, %t: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<4xf32>, %h: tensor<2x4xf16>, %hs: tensor<4xf16>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "norm", function_type = (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>, tensor<2x4xf16>, tensor<4xf16>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>, %t: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<4xf32>, %h: tensor<2x4xf16>, %hs: tensor<4xf16>):
func.func @norm(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>, %t: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<4xf32>, %h: tensor<2x4xf16>, %hs: tensor<4xf16>) {
  %batch_norm = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0009765625 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %batch_norm = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0009765625 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %batch_norm = "graph.batch_norm"(%x, %c, %c, %c, %c) <{epsilon = 0.0009765625 : f32}> : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %layer_norm = graph.layer_norm %t, %s, %b {axis = 1 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %layer_norm = graph.layer_norm %t, %s, %b {axis = 1 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %layer_norm = "graph.layer_norm"(%t, %s, %b) <{axis = 1 : i64, epsilon = 0.0009765625 : f32}> : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %layer_norm_all = graph.layer_norm %t, %s {axis = 0 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %layer_norm_all = graph.layer_norm %t, %s {axis = 0 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %layer_norm_all = "graph.layer_norm"(%t, %s) <{axis = 0 : i64, epsilon = 0.0009765625 : f32}> : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %layer_norm_h = graph.layer_norm %h, %hs {axis = 1 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %layer_norm_h = graph.layer_norm %h, %hs {axis = 1 : i64, epsilon = 0.0009765625 : f32} : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  // CHECK-GENERIC-NEXT: %layer_norm_h = "graph.layer_norm"(%h, %hs) <{axis = 1 : i64, epsilon = 0.0009765625 : f32}> : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.250000e-01 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<1x3x4x4xf32>
  // CHECK-NEXT: %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.250000e-01 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<1x3x4x4xf32>
  // CHECK-GENERIC-NEXT: %lrn = "graph.lrn"(%x) <{size = 3 : i64, alpha = 1.250000e-01 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32}> : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %softmax = graph.softmax %t {axis = 2 : i64} : tensor<2x3x4xf32>
  // CHECK-NEXT: %softmax = graph.softmax %t {axis = 2 : i64} : tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %softmax = "graph.softmax"(%t) <{axis = 2 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %log_softmax = graph.log_softmax %t {axis = 0 : i64} : tensor<2x3x4xf32>
  // CHECK-NEXT: %log_softmax = graph.log_softmax %t {axis = 0 : i64} : tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %log_softmax = "graph.log_softmax"(%t) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %v: tensor<3xf32>, %ba: tensor<5x2x3xf32>, %bb: tensor<2x1x2x3xf32>, %bc: tensor<4x3x5xf32>, %i: tensor<2x3xi32>, %j: tensor<3x4xi32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "matmul", function_type = (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<5x2x3xf32>, tensor<2x1x2x3xf32>, tensor<4x3x5xf32>, tensor<2x3xi32>, tensor<3x4xi32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %v: tensor<3xf32>, %ba: tensor<5x2x3xf32>, %bb: tensor<2x1x2x3xf32>, %bc: tensor<4x3x5xf32>, %i: tensor<2x3xi32>, %j: tensor<3x4xi32>):
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %v: tensor<3xf32>, %ba: tensor<5x2x3xf32>, %bb: tensor<2x1x2x3xf32>, %bc: tensor<4x3x5xf32>, %i: tensor<2x3xi32>, %j: tensor<3x4xi32>) {
  %mm = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %mm = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %mm = "graph.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %vm = graph.matmul %v, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %vm = graph.matmul %v, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  // CHECK-GENERIC-NEXT: %vm = "graph.matmul"(%v, %b) : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  %mv = graph.matmul %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  // CHECK-NEXT: %mv = graph.matmul %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  // CHECK-GENERIC-NEXT: %mv = "graph.matmul"(%a, %v) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  %vv = graph.matmul %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  // CHECK-NEXT: %vv = graph.matmul %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  // CHECK-GENERIC-NEXT: %vv = "graph.matmul"(%v, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %bm = graph.matmul %ba, %b : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  // CHECK-NEXT: %bm = graph.matmul %ba, %b : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  // CHECK-GENERIC-NEXT: %bm = "graph.matmul"(%ba, %b) : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  %bv = graph.matmul %ba, %v : (tensor<5x2x3xf32>, tensor<3xf32>) -> tensor<5x2xf32>
  // CHECK-NEXT: %bv = graph.matmul %ba, %v : (tensor<5x2x3xf32>, tensor<3xf32>) -> tensor<5x2xf32>
  // CHECK-GENERIC-NEXT: %bv = "graph.matmul"(%ba, %v) : (tensor<5x2x3xf32>, tensor<3xf32>) -> tensor<5x2xf32>
  %bcast = graph.matmul %bb, %bc : (tensor<2x1x2x3xf32>, tensor<4x3x5xf32>) -> tensor<2x4x2x5xf32>
  // CHECK-NEXT: %bcast = graph.matmul %bb, %bc : (tensor<2x1x2x3xf32>, tensor<4x3x5xf32>) -> tensor<2x4x2x5xf32>
  // CHECK-GENERIC-NEXT: %bcast = "graph.matmul"(%bb, %bc) : (tensor<2x1x2x3xf32>, tensor<4x3x5xf32>) -> tensor<2x4x2x5xf32>
  %mi = graph.matmul %i, %j : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  // CHECK-NEXT: %mi = graph.matmul %i, %j : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  // CHECK-GENERIC-NEXT: %mi = "graph.matmul"(%i, %j) : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @gemm(%a: tensor<2x3xf32>, %at: tensor<3x2xf32>, %b: tensor<3x4xf32>, %bt: tensor<4x3xf32>, %c: tensor<4xf32>, %cm: tensor<2x4xf32>, %cs: tensor<f32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "gemm", function_type = (tensor<2x3xf32>, tensor<3x2xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<f32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<2x3xf32>, %at: tensor<3x2xf32>, %b: tensor<3x4xf32>, %bt: tensor<4x3xf32>, %c: tensor<4xf32>, %cm: tensor<2x4xf32>, %cs: tensor<f32>):
func.func @gemm(%a: tensor<2x3xf32>, %at: tensor<3x2xf32>, %b: tensor<3x4xf32>, %bt: tensor<4x3xf32>, %c: tensor<4xf32>, %cm: tensor<2x4xf32>, %cs: tensor<f32>) {
  %gemm = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gemm = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %gemm = "graph.gemm"(%a, %b, %c) <{alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32}> : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %gemm_ta = graph.gemm %at, %b, %cm {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a} : (tensor<3x2xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gemm_ta = graph.gemm %at, %b, %cm {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a} : (tensor<3x2xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %gemm_ta = "graph.gemm"(%at, %b, %cm) <{alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a}> : (tensor<3x2xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %gemm_tb = graph.gemm %a, %bt, %cs {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_b} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<f32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gemm_tb = graph.gemm %a, %bt, %cs {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_b} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<f32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %gemm_tb = "graph.gemm"(%a, %bt, %cs) <{alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_b}> : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<f32>) -> tensor<2x4xf32>
  %gemm_nc = graph.gemm %at, %bt {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a, trans_b} : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gemm_nc = graph.gemm %at, %bt {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a, trans_b} : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %gemm_nc = "graph.gemm"(%at, %bt) <{alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a, trans_b}> : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "reduce", function_type = (tensor<2x3x4xf32>, tensor<2x3x4xi64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi64>):
func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi64>) {
  %reduce_mean = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %reduce_mean = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %reduce_mean = "graph.reduce_mean"(%x) <{axes = array<i64: 1>}> : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %reduce_sum = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // CHECK-NEXT: %reduce_sum = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // CHECK-GENERIC-NEXT: %reduce_sum = "graph.reduce_sum"(%x) <{axes = array<i64: 0, 2>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %reduce_none = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %reduce_none = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %reduce_none = "graph.reduce_sum"(%x) <{axes = array<i64>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %reduce_max = graph.reduce_max %i {axes = array<i64: 2>} : (tensor<2x3x4xi64>) -> tensor<2x3xi64>
  // CHECK-NEXT: %reduce_max = graph.reduce_max %i {axes = array<i64: 2>} : (tensor<2x3x4xi64>) -> tensor<2x3xi64>
  // CHECK-GENERIC-NEXT: %reduce_max = "graph.reduce_max"(%i) <{axes = array<i64: 2>}> : (tensor<2x3x4xi64>) -> tensor<2x3xi64>
  %reduce_min = graph.reduce_min %x {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-NEXT: %reduce_min = graph.reduce_min %x {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-GENERIC-NEXT: %reduce_min = "graph.reduce_min"(%x) <{axes = array<i64: 0, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<f32>
  %reduce_prod = graph.reduce_prod %x {axes = array<i64: 0>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  // CHECK-NEXT: %reduce_prod = graph.reduce_prod %x {axes = array<i64: 0>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  // CHECK-GENERIC-NEXT: %reduce_prod = "graph.reduce_prod"(%x) <{axes = array<i64: 0>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  %reduce_l2 = graph.reduce_l2 %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  // CHECK-NEXT: %reduce_l2 = graph.reduce_l2 %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  // CHECK-GENERIC-NEXT: %reduce_l2 = "graph.reduce_l2"(%x) <{axes = array<i64: 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %reduce_sum_square = graph.reduce_sum_square %x {axes = array<i64: 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %reduce_sum_square = graph.reduce_sum_square %x {axes = array<i64: 2>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-GENERIC-NEXT: %reduce_sum_square = "graph.reduce_sum_square"(%x) <{axes = array<i64: 2>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %argmax = graph.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  // CHECK-NEXT: %argmax = graph.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  // CHECK-GENERIC-NEXT: %argmax = "graph.argmax"(%x) <{axis = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  %argmax_last = graph.argmax %x {axis = 2 : i64, keepdims, select_last_index} : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
  // CHECK-NEXT: %argmax_last = graph.argmax %x {axis = 2 : i64, keepdims, select_last_index} : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
  // CHECK-GENERIC-NEXT: %argmax_last = "graph.argmax"(%x) <{axis = 2 : i64, keepdims, select_last_index}> : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
  %argmin = graph.argmin %i {axis = 0 : i64, keepdims} : (tensor<2x3x4xi64>) -> tensor<1x3x4xi64>
  // CHECK-NEXT: %argmin = graph.argmin %i {axis = 0 : i64, keepdims} : (tensor<2x3x4xi64>) -> tensor<1x3x4xi64>
  // CHECK-GENERIC-NEXT: %argmin = "graph.argmin"(%i) <{axis = 0 : i64, keepdims}> : (tensor<2x3x4xi64>) -> tensor<1x3x4xi64>
  %argmin_last = graph.argmin %x {axis = 1 : i64, select_last_index} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  // CHECK-NEXT: %argmin_last = graph.argmin %x {axis = 1 : i64, select_last_index} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  // CHECK-GENERIC-NEXT: %argmin_last = "graph.argmin"(%x) <{axis = 1 : i64, select_last_index}> : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @reshape(%x: tensor<2x3x4xf32>, %e: tensor<0x3xf32>, %dyn: tensor<3xi64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "reshape", function_type = (tensor<2x3x4xf32>, tensor<0x3xf32>, tensor<3xi64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3x4xf32>, %e: tensor<0x3xf32>, %dyn: tensor<3xi64>):
func.func @reshape(%x: tensor<2x3x4xf32>, %e: tensor<0x3xf32>, %dyn: tensor<3xi64>) {
  %shape_a = graph.constant dense<[6, 4]> : tensor<2xi64>
  // CHECK-NEXT: %shape_a = graph.constant dense<[6, 4]> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %shape_a = "graph.constant"() <{value = dense<[6, 4]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %reshape = graph.reshape %x, %shape_a : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  // CHECK-NEXT: %reshape = graph.reshape %x, %shape_a : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  // CHECK-GENERIC-NEXT: %reshape = "graph.reshape"(%x, %shape_a) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %shape_b = graph.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK-NEXT: %shape_b = graph.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %shape_b = "graph.constant"() <{value = dense<[0, -1]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %reshape_infer = graph.reshape %x, %shape_b : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  // CHECK-NEXT: %reshape_infer = graph.reshape %x, %shape_b : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  // CHECK-GENERIC-NEXT: %reshape_infer = "graph.reshape"(%x, %shape_b) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  %shape_c = graph.constant dense<-1> : tensor<1xi64>
  // CHECK-NEXT: %shape_c = graph.constant dense<-1> : tensor<1xi64>
  // CHECK-GENERIC-NEXT: %shape_c = "graph.constant"() <{value = dense<-1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %reshape_flat = graph.reshape %x, %shape_c : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  // CHECK-NEXT: %reshape_flat = graph.reshape %x, %shape_c : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  // CHECK-GENERIC-NEXT: %reshape_flat = "graph.reshape"(%x, %shape_c) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  %shape_d = graph.constant dense<[3, 0]> : tensor<2xi64>
  // CHECK-NEXT: %shape_d = graph.constant dense<[3, 0]> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %shape_d = "graph.constant"() <{value = dense<[3, 0]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %reshape_zero = graph.reshape %e, %shape_d {allowzero} : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<3x0xf32>
  // CHECK-NEXT: %reshape_zero = graph.reshape %e, %shape_d {allowzero} : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<3x0xf32>
  // CHECK-GENERIC-NEXT: %reshape_zero = "graph.reshape"(%e, %shape_d) <{allowzero}> : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<3x0xf32>
  %reshape_dyn = graph.reshape %x, %dyn : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<4x3x2xf32>
  // CHECK-NEXT: %reshape_dyn = graph.reshape %x, %dyn : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<4x3x2xf32>
  // CHECK-GENERIC-NEXT: %reshape_dyn = "graph.reshape"(%x, %dyn) : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<4x3x2xf32>
  %flatten = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK-NEXT: %flatten = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK-GENERIC-NEXT: %flatten = "graph.flatten"(%x) <{axis = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %flatten_all = graph.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  // CHECK-NEXT: %flatten_all = graph.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  // CHECK-GENERIC-NEXT: %flatten_all = "graph.flatten"(%x) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %flatten_none = graph.flatten %x {axis = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  // CHECK-NEXT: %flatten_none = graph.flatten %x {axis = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  // CHECK-GENERIC-NEXT: %flatten_none = "graph.flatten"(%x) <{axis = 3 : i64}> : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %idx: tensor<5xi64>, %idx2: tensor<2x2xi32>, %idx0: tensor<i64>, %ones: tensor<2x1x4x1xf32>, %m: tensor<2x3xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "data_movement", function_type = (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<5xi64>, tensor<2x2xi32>, tensor<i64>, tensor<2x1x4x1xf32>, tensor<2x3xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %idx: tensor<5xi64>, %idx2: tensor<2x2xi32>, %idx0: tensor<i64>, %ones: tensor<2x1x4x1xf32>, %m: tensor<2x3xf32>):
func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %idx: tensor<5xi64>, %idx2: tensor<2x2xi32>, %idx0: tensor<i64>, %ones: tensor<2x1x4x1xf32>, %m: tensor<2x3xf32>) {
  %transpose = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %transpose = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-GENERIC-NEXT: %transpose = "graph.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %concat = graph.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  // CHECK-NEXT: %concat = graph.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  // CHECK-GENERIC-NEXT: %concat = "graph.concat"(%x, %y) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %concat_one = graph.concat %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %concat_one = graph.concat %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %concat_one = "graph.concat"(%x) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %concat_three = graph.concat %x, %x, %x {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  // CHECK-NEXT: %concat_three = graph.concat %x, %x, %x {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  // CHECK-GENERIC-NEXT: %concat_three = "graph.concat"(%x, %x, %x) <{axis = 2 : i64}> : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  %lo, %hi = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  // CHECK-NEXT: %lo, %hi = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  // CHECK-GENERIC-NEXT: %lo, %hi = "graph.split"(%x) <{axis = 1 : i64, sizes = array<i64: 1, 2>}> : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %first, %second, %third = graph.split %x {axis = 2 : i64, sizes = array<i64: 2, 0, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x0xf32>, tensor<2x3x2xf32>)
  // CHECK-NEXT: %first, %second, %third = graph.split %x {axis = 2 : i64, sizes = array<i64: 2, 0, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x0xf32>, tensor<2x3x2xf32>)
  // CHECK-GENERIC-NEXT: %first, %second, %third = "graph.split"(%x) <{axis = 2 : i64, sizes = array<i64: 2, 0, 2>}> : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x0xf32>, tensor<2x3x2xf32>)
  %slice = graph.slice %x {starts = array<i64: 0, 1, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK-NEXT: %slice = graph.slice %x {starts = array<i64: 0, 1, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK-GENERIC-NEXT: %slice = "graph.slice"(%x) <{starts = array<i64: 0, 1, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %slice_rev = graph.slice %x {starts = array<i64: 1, 2, 3>, ends = array<i64: -1, -1, 0>, steps = array<i64: -1, -1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // CHECK-NEXT: %slice_rev = graph.slice %x {starts = array<i64: 1, 2, 3>, ends = array<i64: -1, -1, 0>, steps = array<i64: -1, -1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // CHECK-GENERIC-NEXT: %slice_rev = "graph.slice"(%x) <{starts = array<i64: 1, 2, 3>, ends = array<i64: -1, -1, 0>, steps = array<i64: -1, -1, -2>}> : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %slice_empty = graph.slice %x {starts = array<i64: 0, 3, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
  // CHECK-NEXT: %slice_empty = graph.slice %x {starts = array<i64: 0, 3, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
  // CHECK-GENERIC-NEXT: %slice_empty = "graph.slice"(%x) <{starts = array<i64: 0, 3, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>}> : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
  %gather = graph.gather %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK-NEXT: %gather = graph.gather %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK-GENERIC-NEXT: %gather = "graph.gather"(%x, %idx) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %gather_2d = graph.gather %x, %idx2 {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  // CHECK-NEXT: %gather_2d = graph.gather %x, %idx2 {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  // CHECK-GENERIC-NEXT: %gather_2d = "graph.gather"(%x, %idx2) <{axis = 0 : i64}> : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  %gather_scalar = graph.gather %x, %idx0 {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  // CHECK-NEXT: %gather_scalar = graph.gather %x, %idx0 {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %gather_scalar = "graph.gather"(%x, %idx0) <{axis = 2 : i64}> : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  %squeeze = graph.squeeze %ones {axes = array<i64: 1, 3>} : (tensor<2x1x4x1xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %squeeze = graph.squeeze %ones {axes = array<i64: 1, 3>} : (tensor<2x1x4x1xf32>) -> tensor<2x4xf32>
  // CHECK-GENERIC-NEXT: %squeeze = "graph.squeeze"(%ones) <{axes = array<i64: 1, 3>}> : (tensor<2x1x4x1xf32>) -> tensor<2x4xf32>
  %unsqueeze = graph.unsqueeze %m {axes = array<i64: 0, 3>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  // CHECK-NEXT: %unsqueeze = graph.unsqueeze %m {axes = array<i64: 0, 3>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  // CHECK-GENERIC-NEXT: %unsqueeze = "graph.unsqueeze"(%m) <{axes = array<i64: 0, 3>}> : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  %tile = graph.tile %m {repeats = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK-NEXT: %tile = graph.tile %m {repeats = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK-GENERIC-NEXT: %tile = "graph.tile"(%m) <{repeats = array<i64: 2, 1>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %tile_zero = graph.tile %m {repeats = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  // CHECK-NEXT: %tile_zero = graph.tile %m {repeats = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  // CHECK-GENERIC-NEXT: %tile_zero = "graph.tile"(%m) <{repeats = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @expand(%x: tensor<3x1xf32>, %dyn: tensor<2xi64>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "expand", function_type = (tensor<3x1xf32>, tensor<2xi64>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<3x1xf32>, %dyn: tensor<2xi64>):
func.func @expand(%x: tensor<3x1xf32>, %dyn: tensor<2xi64>) {
  %shape = graph.constant dense<[2, 1, 4]> : tensor<3xi64>
  // CHECK-NEXT: %shape = graph.constant dense<[2, 1, 4]> : tensor<3xi64>
  // CHECK-GENERIC-NEXT: %shape = "graph.constant"() <{value = dense<[2, 1, 4]> : tensor<3xi64>}> : () -> tensor<3xi64>
  %expand = graph.expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %expand = graph.expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  // CHECK-GENERIC-NEXT: %expand = "graph.expand"(%x, %shape) : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %expand_dyn = graph.expand %x, %dyn : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x5xf32>
  // CHECK-NEXT: %expand_dyn = graph.expand %x, %dyn : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x5xf32>
  // CHECK-GENERIC-NEXT: %expand_dyn = "graph.expand"(%x, %dyn) : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x5xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @pad(%m: tensor<2x3xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "pad", function_type = (tensor<2x3xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%m: tensor<2x3xf32>):
func.func @pad(%m: tensor<2x3xf32>) {
  %pad = graph.pad %m {pads = array<i64: 1, 0, 1, 2>, mode = "constant", value = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  // CHECK-NEXT: %pad = graph.pad %m {pads = array<i64: 1, 0, 1, 2>, mode = "constant", value = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  // CHECK-GENERIC-NEXT: %pad = "graph.pad"(%m) <{pads = array<i64: 1, 0, 1, 2>, mode = "constant", value = 5.000000e-01 : f32}> : (tensor<2x3xf32>) -> tensor<4x5xf32>
  %pad_zero = graph.pad %m {pads = array<i64: 0, 1, 0, 1>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  // CHECK-NEXT: %pad_zero = graph.pad %m {pads = array<i64: 0, 1, 0, 1>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  // CHECK-GENERIC-NEXT: %pad_zero = "graph.pad"(%m) <{pads = array<i64: 0, 1, 0, 1>, mode = "constant"}> : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %pad_reflect = graph.pad %m {pads = array<i64: 1, 2, 1, 2>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  // CHECK-NEXT: %pad_reflect = graph.pad %m {pads = array<i64: 1, 2, 1, 2>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  // CHECK-GENERIC-NEXT: %pad_reflect = "graph.pad"(%m) <{pads = array<i64: 1, 2, 1, 2>, mode = "reflect"}> : (tensor<2x3xf32>) -> tensor<4x7xf32>
  %pad_edge = graph.pad %m {pads = array<i64: 0, 0, 3, 0>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<5x3xf32>
  // CHECK-NEXT: %pad_edge = graph.pad %m {pads = array<i64: 0, 0, 3, 0>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<5x3xf32>
  // CHECK-GENERIC-NEXT: %pad_edge = "graph.pad"(%m) <{pads = array<i64: 0, 0, 3, 0>, mode = "edge"}> : (tensor<2x3xf32>) -> tensor<5x3xf32>
  %pad_wrap = graph.pad %m {pads = array<i64: 1, 1, 1, 1>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  // CHECK-NEXT: %pad_wrap = graph.pad %m {pads = array<i64: 1, 1, 1, 1>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  // CHECK-GENERIC-NEXT: %pad_wrap = "graph.pad"(%m) <{pads = array<i64: 1, 1, 1, 1>, mode = "wrap"}> : (tensor<2x3xf32>) -> tensor<4x5xf32>
  %pad_crop = graph.pad %m {pads = array<i64: 0, -1, 0, 0>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  // CHECK-NEXT: %pad_crop = graph.pad %m {pads = array<i64: 0, -1, 0, 0>, mode = "constant"} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  // CHECK-GENERIC-NEXT: %pad_crop = "graph.pad"(%m) <{pads = array<i64: 0, -1, 0, 0>, mode = "constant"}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @shape(%x: tensor<2x3x4xf32>, %dyn: tensor<3xi64>, %a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "shape", function_type = (tensor<2x3x4xf32>, tensor<3xi64>, tensor<i32>, tensor<i32>, tensor<i32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<2x3x4xf32>, %dyn: tensor<3xi64>, %a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>):
func.func @shape(%x: tensor<2x3x4xf32>, %dyn: tensor<3xi64>, %a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>) {
  %shape = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  // CHECK-NEXT: %shape = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  // CHECK-GENERIC-NEXT: %shape = "graph.shape"(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %shape_start = graph.shape %x {start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  // CHECK-NEXT: %shape_start = graph.shape %x {start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  // CHECK-GENERIC-NEXT: %shape_start = "graph.shape"(%x) <{start = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2xi64>
  %shape_mid = graph.shape %x {start = 1 : i64, end = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<1xi64>
  // CHECK-NEXT: %shape_mid = graph.shape %x {start = 1 : i64, end = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<1xi64>
  // CHECK-GENERIC-NEXT: %shape_mid = "graph.shape"(%x) <{start = 1 : i64, end = 2 : i64}> : (tensor<2x3x4xf32>) -> tensor<1xi64>
  %shape_none = graph.shape %x {end = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<0xi64>
  // CHECK-NEXT: %shape_none = graph.shape %x {end = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<0xi64>
  // CHECK-GENERIC-NEXT: %shape_none = "graph.shape"(%x) <{end = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<0xi64>
  %dims = graph.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK-NEXT: %dims = graph.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK-GENERIC-NEXT: %dims = "graph.constant"() <{value = dense<[2, 3]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %zeros = graph.constant_of_shape %dims {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
  // CHECK-NEXT: %zeros = graph.constant_of_shape %dims {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
  // CHECK-GENERIC-NEXT: %zeros = "graph.constant_of_shape"(%dims) <{value = dense<0.000000e+00> : tensor<1xf32>}> : (tensor<2xi64>) -> tensor<2x3xf32>
  %dims32 = graph.constant dense<[1, 2, 1]> : tensor<3xi32>
  // CHECK-NEXT: %dims32 = graph.constant dense<[1, 2, 1]> : tensor<3xi32>
  // CHECK-GENERIC-NEXT: %dims32 = "graph.constant"() <{value = dense<[1, 2, 1]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %sevens = graph.constant_of_shape %dims32 {value = dense<7> : tensor<1xi64>} : (tensor<3xi32>) -> tensor<1x2x1xi64>
  // CHECK-NEXT: %sevens = graph.constant_of_shape %dims32 {value = dense<7> : tensor<1xi64>} : (tensor<3xi32>) -> tensor<1x2x1xi64>
  // CHECK-GENERIC-NEXT: %sevens = "graph.constant_of_shape"(%dims32) <{value = dense<7> : tensor<1xi64>}> : (tensor<3xi32>) -> tensor<1x2x1xi64>
  %trues = graph.constant_of_shape %dyn {value = dense<true> : tensor<1xi1>} : (tensor<3xi64>) -> tensor<2x2x2xi1>
  // CHECK-NEXT: %trues = graph.constant_of_shape %dyn {value = dense<true> : tensor<1xi1>} : (tensor<3xi64>) -> tensor<2x2x2xi1>
  // CHECK-GENERIC-NEXT: %trues = "graph.constant_of_shape"(%dyn) <{value = dense<true> : tensor<1xi1>}> : (tensor<3xi64>) -> tensor<2x2x2xi1>
  %start = graph.constant dense<0> : tensor<i64>
  // CHECK-NEXT: %start = graph.constant dense<0> : tensor<i64>
  // CHECK-GENERIC-NEXT: %start = "graph.constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %limit = graph.constant dense<10> : tensor<i64>
  // CHECK-NEXT: %limit = graph.constant dense<10> : tensor<i64>
  // CHECK-GENERIC-NEXT: %limit = "graph.constant"() <{value = dense<10> : tensor<i64>}> : () -> tensor<i64>
  %delta = graph.constant dense<3> : tensor<i64>
  // CHECK-NEXT: %delta = graph.constant dense<3> : tensor<i64>
  // CHECK-GENERIC-NEXT: %delta = "graph.constant"() <{value = dense<3> : tensor<i64>}> : () -> tensor<i64>
  %range = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  // CHECK-NEXT: %range = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  // CHECK-GENERIC-NEXT: %range = "graph.range"(%start, %limit, %delta) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %fstart = graph.constant dense<1.000000e+00> : tensor<f32>
  // CHECK-NEXT: %fstart = graph.constant dense<1.000000e+00> : tensor<f32>
  // CHECK-GENERIC-NEXT: %fstart = "graph.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %flimit = graph.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-NEXT: %flimit = graph.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-GENERIC-NEXT: %flimit = "graph.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %fdelta = graph.constant dense<-2.500000e-01> : tensor<f32>
  // CHECK-NEXT: %fdelta = graph.constant dense<-2.500000e-01> : tensor<f32>
  // CHECK-GENERIC-NEXT: %fdelta = "graph.constant"() <{value = dense<-2.500000e-01> : tensor<f32>}> : () -> tensor<f32>
  %range_down = graph.range %fstart, %flimit, %fdelta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  // CHECK-NEXT: %range_down = graph.range %fstart, %flimit, %fdelta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  // CHECK-GENERIC-NEXT: %range_down = "graph.range"(%fstart, %flimit, %fdelta) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %range_dyn = graph.range %a, %b, %c : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<7xi32>
  // CHECK-NEXT: %range_dyn = graph.range %a, %b, %c : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<7xi32>
  // CHECK-GENERIC-NEXT: %range_dyn = "graph.range"(%a, %b, %c) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<7xi32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-LABEL: func.func @depth_space(%d: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x6xf32>) {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "depth_space", function_type = (tensor<1x8x2x3xf32>, tensor<1x2x4x6xf32>) -> ()}> ({
// CHECK-GENERIC-NEXT: ^bb0(%d: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x6xf32>):
func.func @depth_space(%d: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x6xf32>) {
  %d2s = graph.depth_to_space %d {blocksize = 2 : i64, mode = "DCR"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-NEXT: %d2s = graph.depth_to_space %d {blocksize = 2 : i64, mode = "DCR"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-GENERIC-NEXT: %d2s = "graph.depth_to_space"(%d) <{blocksize = 2 : i64, mode = "DCR"}> : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %d2s_crd = graph.depth_to_space %d {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-NEXT: %d2s_crd = graph.depth_to_space %d {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-GENERIC-NEXT: %d2s_crd = "graph.depth_to_space"(%d) <{blocksize = 2 : i64, mode = "CRD"}> : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %s2d = graph.space_to_depth %s {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  // CHECK-NEXT: %s2d = graph.space_to_depth %s {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  // CHECK-GENERIC-NEXT: %s2d = "graph.space_to_depth"(%s) <{blocksize = 2 : i64}> : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  %s2d_crd = graph.space_to_depth %s {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  // CHECK-NEXT: %s2d_crd = graph.space_to_depth %s {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  // CHECK-GENERIC-NEXT: %s2d_crd = "graph.space_to_depth"(%s) <{blocksize = 2 : i64, mode = "CRD"}> : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  func.return
  // CHECK-NEXT: func.return
  // CHECK-GENERIC-NEXT: "func.return"() : () -> ()
}
// CHECK-NEXT: }
// CHECK-GENERIC-NEXT: }) : () -> ()

// CHECK-NEXT:         }
// CHECK-GENERIC-NEXT: }) : () -> ()
