// RUN: ge-opt %s -p decompose --split-input-file | filecheck %s

// decompose rewrites composite graph ops into the primitive set of the vector lowering
// (transforms/decompose.py lists both). One case per decomposition; the last case holds
// only primitives and must not change.

// Elu: where(x > 0, x, alpha * (exp(x) - 1)), one-element constants of x's rank.

// CHECK-LABEL: func.func @elu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:    %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<1x1xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.exp %x : tensor<2x8xf32>
// CHECK-NEXT:    %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<1x1xf32>
// CHECK-NEXT:    %[[EM1:.*]] = graph.sub %[[E]], %[[ONE]]
// CHECK-NEXT:    %[[POS:.*]] = graph.greater %x, %[[ZERO]] : (tensor<2x8xf32>, tensor<1x1xf32>) -> tensor<2x8xi1>
// CHECK-NEXT:    %[[ALPHA:.*]] = graph.constant dense<2.000000e+00> : tensor<1x1xf32>
// CHECK-NEXT:    %[[NEG:.*]] = graph.mul %[[EM1]], %[[ALPHA]]
// CHECK:         %[[R:.*]] = graph.where %[[POS]], %x, %[[NEG]] : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x8xf32>
// CHECK-NOT:   graph.elu
func.func @elu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = graph.elu %x {alpha = 2.0 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// Selu: gamma * elu(x, alpha); alpha = 1 needs no multiplication inside.

// CHECK-LABEL: func.func @selu(
// CHECK:         %[[W:.*]] = graph.where
// CHECK:         %[[G:.*]] = graph.constant dense<3.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.mul %[[W]], %[[G]]
// CHECK-NEXT:    func.return %[[R]]
func.func @selu(%x: tensor<5xf32>) -> tensor<5xf32> {
  %y = graph.selu %x {alpha = 1.0 : f32, gamma = 3.0 : f32} : tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

// Celu: max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0).

// CHECK-LABEL: func.func @celu(
// CHECK:         %[[INV:.*]] = graph.constant dense<5.000000e-01> : tensor<1xf32>
// CHECK:         %[[XA:.*]] = graph.mul %x, %[[INV]]
// CHECK:         graph.exp %[[XA]]
// CHECK:         %[[MIN:.*]] = graph.min
// CHECK:         %[[MAX:.*]] = graph.max %x,
// CHECK:         %[[R:.*]] = graph.add %[[MAX]], %[[MIN]]
// CHECK-NEXT:    func.return %[[R]]
func.func @celu(%x: tensor<5xf32>) -> tensor<5xf32> {
  %y = graph.celu %x {alpha = 2.0 : f32} : tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

// ThresholdedRelu: where(x > alpha, x, 0).

// CHECK-LABEL: func.func @thresholded_relu(
// CHECK:         %[[A:.*]] = graph.constant dense<1.500000e+00> : tensor<1xf32>
// CHECK:         %[[GT:.*]] = graph.greater %x, %[[A]]
// CHECK:         %[[Z:.*]] = graph.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK:         %[[R:.*]] = graph.where %[[GT]], %x, %[[Z]]
// CHECK-NEXT:    func.return %[[R]]
func.func @thresholded_relu(%x: tensor<5xf32>) -> tensor<5xf32> {
  %y = graph.thresholded_relu %x {alpha = 1.5 : f32} : tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

// PRelu: relu(x) + min(x, 0) * slope (the slope keeps its broadcast shape).

// CHECK-LABEL: func.func @prelu(%x: tensor<2x3x4xf32>, %s: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
// CHECK:         %[[P:.*]] = graph.relu %x : tensor<2x3x4xf32>
// CHECK:         %[[Z:.*]] = graph.constant dense<0.000000e+00> : tensor<1x1x1xf32>
// CHECK:         %[[N:.*]] = graph.min %x, %[[Z]]
// CHECK:         %[[S:.*]] = graph.mul %[[N]], %s : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[R:.*]] = graph.add %[[P]], %[[S]]
// CHECK-NEXT:    func.return %[[R]]
func.func @prelu(%x: tensor<2x3x4xf32>, %s: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %y = graph.prelu %x, %s : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// -----

// Sign: cast(x > 0) - cast(x < 0); a float NaN passes through (x == x is false).

// CHECK-LABEL: func.func @sign(
// CHECK:         %[[GT:.*]] = graph.greater %x,
// CHECK:         %[[P:.*]] = graph.cast %[[GT]] : tensor<4xi1> to tensor<4xf32>
// CHECK:         %[[LT:.*]] = graph.less %x,
// CHECK:         %[[N:.*]] = graph.cast %[[LT]] : tensor<4xi1> to tensor<4xf32>
// CHECK:         %[[S:.*]] = graph.sub %[[P]], %[[N]]
// CHECK:         %[[EQ:.*]] = graph.equal %x, %x
// CHECK:         %[[R:.*]] = graph.where %[[EQ]], %[[S]], %x
// CHECK-NEXT:    func.return %[[R]]
func.func @sign(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.sign %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Integer Mod (Python semantics): r = x - (x / y) * y, plus y where r != 0 and the signs
// of r and y differ.

// CHECK-LABEL: func.func @mod_int(%x: tensor<6xi32>, %y: tensor<6xi32>) -> tensor<6xi32> {
// CHECK:         %[[Q:.*]] = graph.div %x, %y
// CHECK:         %[[QY:.*]] = graph.mul %[[Q]], %y
// CHECK:         %[[REM:.*]] = graph.sub %x, %[[QY]]
// CHECK:         %[[DIFF:.*]] = graph.xor
// CHECK:         %[[NZ:.*]] = graph.not
// CHECK:         %[[FIX:.*]] = graph.and %[[NZ]], %[[DIFF]]
// CHECK-NEXT:    %[[ADD:.*]] = graph.add %[[REM]], %y
// CHECK-NEXT:    %[[R:.*]] = graph.where %[[FIX]], %[[ADD]], %[[REM]]
// CHECK-NEXT:    func.return %[[R]]
func.func @mod_int(%x: tensor<6xi32>, %y: tensor<6xi32>) -> tensor<6xi32> {
  %r = graph.mod %x, %y : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  func.return %r : tensor<6xi32>
}

// -----

// Float fmod: x - trunc(x / y) * y with trunc = where(q < 0, ceil(q), floor(q)); a zero
// keeps x's sign, fmod(x, +-inf) = x for a finite x.

// CHECK-LABEL: func.func @fmod(
// CHECK:         %[[INF:.*]] = graph.constant dense<0x7f800000> : tensor<1xf32>
// CHECK:         %[[Q:.*]] = graph.div %x, %y
// CHECK:         %[[NEG:.*]] = graph.less %[[Q]],
// CHECK:         %[[C:.*]] = graph.ceil %[[Q]]
// CHECK:         %[[F:.*]] = graph.floor %[[Q]]
// CHECK:         %[[T:.*]] = graph.where %[[NEG]], %[[C]], %[[F]]
// CHECK:         %[[TY:.*]] = graph.mul %[[T]], %y
// CHECK:         %[[R:.*]] = graph.sub %x, %[[TY]]
// CHECK:         %[[Z:.*]] = graph.where %{{.*}}, %{{.*}}, %[[R]]
// CHECK:         %[[AY:.*]] = graph.abs %y
// CHECK:         %[[YINF:.*]] = graph.equal %[[AY]], %[[INF]]
// CHECK:         %[[W:.*]] = graph.where %{{.*}}, %x, %[[Z]]
// CHECK-NEXT:    func.return %[[W]]
func.func @fmod(%x: tensor<6xf32>, %y: tensor<6xf32>) -> tensor<6xf32> {
  %r = graph.mod %x, %y {fmod} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// -----

// Pow by the integer 5: repeated squaring, x * (x^2)^2; the exponent constant goes.

// CHECK-LABEL: func.func @pow5(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
// CHECK-NEXT:    %[[X2:.*]] = graph.mul %x, %x
// CHECK-NEXT:    %[[X4:.*]] = graph.mul %[[X2]], %[[X2]]
// CHECK-NEXT:    %[[X5:.*]] = graph.mul %x, %[[X4]]
// CHECK-NEXT:    func.return %[[X5]]
func.func @pow5(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %c = graph.constant dense<5.0> : tensor<f16>
  %y = graph.pow %x, %c : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// -----

// Pow by a tensor: exp(y * ln|x|), negative for a negative base and an odd integer y, NaN
// for a negative base and a fractional y, 1 for y == 0; f16 computes in f32.

// CHECK-LABEL: func.func @pow_tensor(%x: tensor<4xf16>, %y: tensor<4xf16>) -> tensor<4xf16> {
// CHECK:         %[[XW:.*]] = graph.cast %x : tensor<4xf16> to tensor<4xf32>
// CHECK:         %[[YW:.*]] = graph.cast %y : tensor<4xf16> to tensor<4xf32>
// CHECK:         %[[A:.*]] = graph.abs %[[XW]]
// CHECK:         %[[L:.*]] = graph.log %[[A]]
// CHECK:         %[[YL:.*]] = graph.mul %[[YW]], %[[L]]
// CHECK:         %[[M:.*]] = graph.exp %[[YL]]
// CHECK:         graph.floor %[[YW]]
// CHECK:         graph.neg %[[M]]
// CHECK:         %[[NAN:.*]] = graph.constant dense<0x7fc00000> : tensor<1xf32>
// CHECK:         %[[Y0:.*]] = graph.equal %[[YW]],
// CHECK:         %[[R:.*]] = graph.where %[[Y0]],
// CHECK-NEXT:    %[[O:.*]] = graph.cast %[[R]] : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @pow_tensor(%x: tensor<4xf16>, %y: tensor<4xf16>) -> tensor<4xf16> {
  %r = graph.pow %x, %y : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// -----

// Sin: k = round(x / pi), three Cody-Waite steps, the odd polynomial, the sign (-1)^k.

// CHECK-LABEL: func.func @sin(
// CHECK:         %[[INVPI:.*]] = graph.constant dense<0.318309873> : tensor<1xf32>
// CHECK:         %[[XK:.*]] = graph.mul %x, %[[INVPI]]
// CHECK:         %[[K:.*]] = graph.round %[[XK]]
// CHECK:         graph.constant dense<3.140625> : tensor<1xf32>
// CHECK:         graph.constant dense<0.000967502594> : tensor<1xf32>
// CHECK:         graph.constant dense<1.50995803e-07> : tensor<1xf32>
// CHECK:         graph.constant dense<-2.38419879e-08> : tensor<1xf32>
// CHECK:         graph.floor
// CHECK:         %[[SGN:.*]] = graph.add
// CHECK-NEXT:    %[[R:.*]] = graph.mul %{{.*}}, %[[SGN]]
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NOT:   graph.sin
func.func @sin(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.sin %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Cos: m = round(x / pi - 1/2), reduced by (m + 1/2) pi, negated.

// CHECK-LABEL: func.func @cos(
// CHECK:         %[[M:.*]] = graph.round
// CHECK:         %[[H:.*]] = graph.constant dense<5.000000e-01> : tensor<1xf32>
// CHECK:         %[[K:.*]] = graph.add %[[M]], %[[H]]
// CHECK:         graph.mul %[[K]],
// CHECK:         %[[R:.*]] = graph.neg
// CHECK-NEXT:    func.return %[[R]]
func.func @cos(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.cos %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// ReduceSumSquare and ReduceL2: a square, a reduce_sum (and a sqrt); f16 in f32.

// CHECK-LABEL: func.func @reduce_l2(%x: tensor<3x4xf16>) -> (tensor<3x1xf16>, tensor<4xf32>) {
// CHECK:         %[[XW:.*]] = graph.cast %x : tensor<3x4xf16> to tensor<3x4xf32>
// CHECK:         %[[SQ:.*]] = graph.mul %[[XW]], %[[XW]]
// CHECK:         %[[S:.*]] = graph.reduce_sum %[[SQ]] {axes = array<i64: 1>, keepdims} : (tensor<3x4xf32>) -> tensor<3x1xf32>
// CHECK:         %[[RT:.*]] = graph.sqrt %[[S]]
// CHECK:         %[[L2:.*]] = graph.cast %[[RT]] : tensor<3x1xf32> to tensor<3x1xf16>
// CHECK:         %[[Y:.*]] = graph.mul %y, %y
// CHECK:         %[[SS:.*]] = graph.reduce_sum %[[Y]] {axes = array<i64: 0>} : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK:         func.return %[[L2]], %[[SS]]
func.func @reduce_l2(%x: tensor<3x4xf16>) -> (tensor<3x1xf16>, tensor<4xf32>) {
  %a = graph.reduce_l2 %x {axes = array<i64: 1>, keepdims} : (tensor<3x4xf16>) -> tensor<3x1xf16>
  %y = graph.cast %x : tensor<3x4xf16> to tensor<3x4xf32>
  %b = graph.reduce_sum_square %y {axes = array<i64: 0>} : (tensor<3x4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<3x1xf16>, tensor<4xf32>
}

// -----

// ArgMax (last index): max-reduce, compare-equal, select the f32 index iota or -1, max-reduce
// the indices, cast to i64.

// CHECK-LABEL: func.func @argmax(%x: tensor<3x5xf16>) -> tensor<3xi64> {
// CHECK:         %[[M:.*]] = graph.reduce_max %x {axes = array<i64: 1>, keepdims} : (tensor<3x5xf16>) -> tensor<3x1xf16>
// CHECK:         %[[E:.*]] = graph.equal %x, %[[M]] : (tensor<3x5xf16>, tensor<3x1xf16>) -> tensor<3x5xi1>
// CHECK:         %[[IOTA:.*]] = graph.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x5xf32>
// CHECK:         %[[MISS:.*]] = graph.constant dense<-1.000000e+00> : tensor<1x1xf32>
// CHECK:         %[[I:.*]] = graph.where %[[E]], %[[IOTA]], %[[MISS]]
// CHECK:         %[[P:.*]] = graph.reduce_max %[[I]] {axes = array<i64: 1>} : (tensor<3x5xf32>) -> tensor<3xf32>
// CHECK:         %[[R:.*]] = graph.cast %[[P]] : tensor<3xf32> to tensor<3xi64>
// CHECK-NEXT:    func.return %[[R]]
func.func @argmax(%x: tensor<3x5xf16>) -> tensor<3xi64> {
  %y = graph.argmax %x {axis = 1 : i64, select_last_index} : (tensor<3x5xf16>) -> tensor<3xi64>
  func.return %y : tensor<3xi64>
}

// -----

// ArgMin (first index, keepdims): min-reduce, the miss index is the axis length.

// CHECK-LABEL: func.func @argmin(
// CHECK:         graph.reduce_min %x {axes = array<i64: 0>, keepdims}
// CHECK:         graph.constant dense<4.000000e+00> : tensor<1x1xf32>
// CHECK:         %[[P:.*]] = graph.reduce_min %{{.*}} {axes = array<i64: 0>, keepdims} : (tensor<4x2xf32>) -> tensor<1x2xf32>
// CHECK:         graph.cast %[[P]] : tensor<1x2xf32> to tensor<1x2xi64>
func.func @argmin(%x: tensor<4x2xf32>) -> tensor<1x2xi64> {
  %y = graph.argmin %x {axis = 0 : i64, keepdims} : (tensor<4x2xf32>) -> tensor<1x2xi64>
  func.return %y : tensor<1x2xi64>
}

// -----

// LayerNorm over axis 0 (every dim): a reshape to [1, ...] and LayerNorm over axis 1.

// CHECK-LABEL: func.func @layer_norm_axis0(%x: tensor<3x4xf32>, %w: tensor<3x4xf32>) -> tensor<3x4xf32> {
// CHECK:         %[[S:.*]] = graph.constant dense<[1, 3, 4]> : tensor<3xi64>
// CHECK-NEXT:    %[[X1:.*]] = graph.reshape %x, %[[S]] : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<1x3x4xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.layer_norm %[[X1]], %w {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x3x4xf32>, tensor<3x4xf32>) -> tensor<1x3x4xf32>
// CHECK:         %[[R:.*]] = graph.reshape %[[N]], %{{.*}} : (tensor<1x3x4xf32>, tensor<2xi64>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @layer_norm_axis0(%x: tensor<3x4xf32>, %w: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = graph.layer_norm %x, %w {axis = 0 : i64, epsilon = 1.0e-05 : f32} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// Pow of an integer base by a tensor: in f32, rounded where the exponent is whole, then
// cast (truncated) back.

// CHECK-LABEL: func.func @pow_int(%x: tensor<3xi32>, %y: tensor<3xf32>) -> tensor<3xi32> {
// CHECK-NEXT:    %[[XW:.*]] = graph.cast %x : tensor<3xi32> to tensor<3xf32>
// CHECK:         graph.exp
// CHECK:         %[[R:.*]] = graph.round
// CHECK:         %[[W:.*]] = graph.where %{{.*}}, %[[R]],
// CHECK-NEXT:    %[[O:.*]] = graph.cast %[[W]] : tensor<3xf32> to tensor<3xi32>
// CHECK-NEXT:    func.return %[[O]]
func.func @pow_int(%x: tensor<3xi32>, %y: tensor<3xf32>) -> tensor<3xi32> {
  %r = graph.pow %x, %y : (tensor<3xi32>, tensor<3xf32>) -> tensor<3xi32>
  func.return %r : tensor<3xi32>
}

// -----

// A reduction over an empty axis is a constant (the product's identity 1).

// CHECK-LABEL: func.func @empty_prod(%x: tensor<2x0x3xf32>) -> tensor<2x1x3xf32> {
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<1.000000e+00> : tensor<2x1x3xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @empty_prod(%x: tensor<2x0x3xf32>) -> tensor<2x1x3xf32> {
  %r = graph.reduce_prod %x {axes = array<i64: 1>, keepdims} : (tensor<2x0x3xf32>) -> tensor<2x1x3xf32>
  func.return %r : tensor<2x1x3xf32>
}

// -----

// pow by 2 and by 0.5 become a multiplication and a sqrt: by the vector lowering the
// exponent is a kernel input, not a constant it could read.

// CHECK-LABEL: func.func @pow_small_exponents(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:    %[[P:.*]] = graph.mul %x, %x
// CHECK-NEXT:    %[[Q:.*]] = graph.sqrt %[[P]]
// CHECK-NEXT:    func.return %[[Q]]
func.func @pow_small_exponents(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %c2 = graph.constant dense<2.0> : tensor<f32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %p = graph.pow %x, %c2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %q = graph.pow %p, %h : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %q : tensor<2x8xf32>
}

// -----

// Primitives stay as they are: comparisons, where, rounding, reduce_prod,
// LayerNorm over a non-leading axis, HardSigmoid (a fixed instruction sequence).

// CHECK-LABEL: func.func @primitives(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>, %s: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>) {
// CHECK-NEXT:    %[[L:.*]] = graph.less %x, %y
// CHECK-NEXT:    %[[F:.*]] = graph.floor %x
// CHECK-NEXT:    %[[W:.*]] = graph.where %[[L]], %[[F]], %y
// CHECK-NEXT:    %[[HS:.*]] = graph.hard_sigmoid %[[W]]
// CHECK-NEXT:    %[[N:.*]] = graph.layer_norm %[[HS]], %s {axis = 1 : i64
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_prod %[[N]] {axes = array<i64: 1>}
// CHECK-NEXT:    func.return %[[N]], %[[R]], %[[W]]
func.func @primitives(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>, %s: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>) {
  %l = graph.less %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %f = graph.floor %x : tensor<2x8xf32>
  %w = graph.where %l, %f, %y : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %hs = graph.hard_sigmoid %w {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<2x8xf32>
  %n = graph.layer_norm %hs, %s {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r = graph.reduce_prod %n {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2xf32>
  func.return %n, %r, %w : tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>
}
