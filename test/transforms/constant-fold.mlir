// RUN: ge-opt %s -p constant-fold --split-input-file | filecheck %s

// constant-fold evaluates every graph op whose operands are constants with the reference
// kernels and replaces it by a constant; the constants it consumed go away when nothing
// else uses them.

// A Reshape target computed by Shape -> Gather -> Concat becomes a constant: the shape of
// %x is static, so graph.shape folds although %x is not a constant.

// CHECK-LABEL: func.func @shape_chain(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<[2, -1]> : tensor<2xi64>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %x, %[[T]] : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x12xf32>
func.func @shape_chain(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i = graph.constant dense<0> : tensor<1xi64>
  %n = graph.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m = graph.constant dense<-1> : tensor<1xi64>
  %t = graph.concat %n, %m {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = graph.reshape %x, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}

// -----

// ConstantOfShape becomes a constant; every element is the same, so it stays an inline
// splat however large it is.

// CHECK-LABEL: func.func @constant_of_shape() -> tensor<64x3x7x7xf32> {
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<2.000000e-02> : tensor<64x3x7x7xf32>
// CHECK-NEXT:    func.return %[[W]] : tensor<64x3x7x7xf32>
func.func @constant_of_shape() -> tensor<64x3x7x7xf32> {
  %s = graph.constant dense<[64, 3, 7, 7]> : tensor<4xi64>
  %w = graph.constant_of_shape %s {value = dense<2.000000e-02> : tensor<1xf32>} : (tensor<4xi64>) -> tensor<64x3x7x7xf32>
  func.return %w : tensor<64x3x7x7xf32>
}

// -----

// A weight transpose folds into a new weight blob (the values are checked in the resource
// section), and elementwise arithmetic on small constants into inline values:
// ((a + a) - 0.5) * 0.5 + a.

// CHECK-LABEL: func.func @weights() -> (tensor<5x4xf32>, tensor<3xf32>) {
// CHECK-NEXT:    %[[WT:.*]] = graph.constant dense_resource<[[BLOB:.*]]> : tensor<5x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1.750000e+00, 3.750000e+00, 5.750000e+00]> : tensor<3xf32>
// CHECK-NEXT:    func.return %[[WT]], %[[S]] : tensor<5x4xf32>, tensor<3xf32>
// CHECK:         [[BLOB]]: "0x04000000000000000000a04000002041000070410000803f0000c0400000304100008041000000400000e04000004041000088410000404000000041000050410000904100008040000010410000604100009841"
func.func @weights() -> (tensor<5x4xf32>, tensor<3xf32>) {
  %w = graph.constant dense_resource<w_4x5> : tensor<4x5xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %b = graph.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %c = graph.sub %b, %h : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %d = graph.mul %c, %h : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %s = graph.add %d, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %wt, %s : tensor<5x4xf32>, tensor<3xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_4x5: "0x04000000000000000000803f0000004000004040000080400000a0400000c0400000e040000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841"
    }
  }
#-}

// -----

// Ops with several results fold too.

// CHECK-LABEL: func.func @split() -> (tensor<1xi64>, tensor<2xi64>) {
// CHECK-NEXT:    %[[A:.*]] = graph.constant dense<7> : tensor<1xi64>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[8, 9]> : tensor<2xi64>
// CHECK-NEXT:    func.return %[[A]], %[[B]] : tensor<1xi64>, tensor<2xi64>
func.func @split() -> (tensor<1xi64>, tensor<2xi64>) {
  %c = graph.constant dense<[7, 8, 9]> : tensor<3xi64>
  %a, %b = graph.split %c {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<3xi64>) -> (tensor<1xi64>, tensor<2xi64>)
  func.return %a, %b : tensor<1xi64>, tensor<2xi64>
}

// -----

// Must not fold: an operand that is not a constant; an op marked `ge.no_fold`; a result
// that would grow the model (80,000 distinct elements from 4), while the same expand of a
// splat folds to an inline splat.

// CHECK-LABEL: func.func @not_folded(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<20000x4xf32>, tensor<20000x4xf32>) {
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %[[X:.*]] = graph.add %x, %[[C]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.add %[[C]], %[[C]] {ge.no_fold} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[20000, 4]> : tensor<2xi64>
// CHECK-NEXT:    %[[E:.*]] = graph.expand %[[V]], %[[S]] : (tensor<4xf32>, tensor<2xi64>) -> tensor<20000x4xf32>
// CHECK-NEXT:    %[[F:.*]] = graph.constant dense<5.000000e-01> : tensor<20000x4xf32>
// CHECK-NEXT:    func.return %[[X]], %[[K]], %[[E]], %[[F]]
func.func @not_folded(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<20000x4xf32>, tensor<20000x4xf32>) {
  %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = graph.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %k = graph.add %c, %c {ge.no_fold} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %v = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = graph.constant dense<[20000, 4]> : tensor<2xi64>
  %e = graph.expand %v, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<20000x4xf32>
  %h = graph.constant dense<0.5> : tensor<1xf32>
  %f = graph.expand %h, %s : (tensor<1xf32>, tensor<2xi64>) -> tensor<20000x4xf32>
  func.return %y, %k, %e, %f : tensor<3xf32>, tensor<3xf32>, tensor<20000x4xf32>, tensor<20000x4xf32>
}
