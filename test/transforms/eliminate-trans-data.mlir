// RUN: ge-opt %s --split-input-file -p eliminate-trans-data | filecheck %s

// eliminate-trans-data (transforms/trans_data_elimination.py): inverse pairs cancel, two
// hops become one, identical siblings merge, conversions of constants are done at compile
// time, and conversions move through elementwise ops to meet their inverse; a conversion
// that a consumer still needs stays.

// A conversion and its inverse cancel.
// CHECK-LABEL: func.func @inverse_pair(%x: tensor<1x20x4x4xf16>) -> tensor<1x20x4x4xf16>
// CHECK-NEXT:    func.return %x : tensor<1x20x4x4xf16>

func.func @inverse_pair(%x: tensor<1x20x4x4xf16>) -> tensor<1x20x4x4xf16> {
  %a = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %b = layout.trans_data %a : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  func.return %b : tensor<1x20x4x4xf16>
}

// -----

// plain -> NC1HWC0 -> FRACTAL_NZ becomes one direct conversion; the NC1HWC0 value is still
// returned, so its conversion stays.
// CHECK-LABEL: func.func @two_hops(
// CHECK-NEXT:    %[[A:.*]] = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    %[[B:.*]] = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20, 4, 4]>>
// CHECK-NEXT:    func.return %[[A]], %[[B]]

func.func @two_hops(%x: tensor<1x20x4x4xf16>) -> (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20, 4, 4]>>) {
  %a = layout.trans_data %x : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %b = layout.trans_data %a : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20, 4, 4]>>
  func.return %a, %b : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x20x1x1x16x16xf16, #layout.fmt<FRACTAL_NZ, origin ND [1, 20, 4, 4]>>
}

// -----

// Identical conversions of one value merge into the first (GE's breadth fusion).
// CHECK-LABEL: func.func @siblings(
// CHECK-NEXT:    %[[A:.*]] = layout.trans_data %x : {{.*}} to tensor<1x20x4x4xf16>
// CHECK-NEXT:    %[[F:.*]] = graph.flatten %[[A]]
// CHECK-NEXT:    %[[N:.*]] = graph.neg %[[A]] : tensor<1x20x4x4xf16>
// CHECK-NEXT:    func.return %[[F]], %[[N]]

func.func @siblings(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> (tensor<1x320xf16>, tensor<1x20x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  %f = graph.flatten %a {axis = 1 : i64} : (tensor<1x20x4x4xf16>) -> tensor<1x320xf16>
  %b = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  %n = graph.neg %b : tensor<1x20x4x4xf16>
  func.return %f, %n : tensor<1x320xf16>, tensor<1x20x4x4xf16>
}

// -----

// A conversion of a constant is done at compile time.
// CHECK-LABEL: func.func @fold_constant()
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense_resource<{{.*}}> : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
// CHECK-NEXT:    func.return %[[C]]

func.func @fold_constant() -> tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>> {
  %c = graph.constant dense<2.000000e+00> : tensor<20x1x1xf16>
  %a = layout.trans_data %c : tensor<20x1x1xf16> to tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
  func.return %a : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
}

// -----

// ... and so is a conversion of a value computed from constants only (the raw import's
// Unsqueeze of a per-channel scale); the ops that computed it go away.
// CHECK-LABEL: func.func @fold_constant_subgraph()
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense_resource<{{.*}}> : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
// CHECK-NEXT:    func.return %[[C]]

func.func @fold_constant_subgraph() -> tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>> {
  %c = graph.constant dense<2.000000e+00> : tensor<20xf16>
  %u = graph.unsqueeze %c {axes = array<i64: 1, 2>} : (tensor<20xf16>) -> tensor<20x1x1xf16>
  %a = layout.trans_data %u : tensor<20x1x1xf16> to tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
  func.return %a : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
}

// -----

// A chain of elementwise ops between a conversion and its inverse computes in NC1HWC0
// instead: the per-channel constant is converted at compile time, the single-element
// operand needs no conversion, and both trans_data go.
// CHECK-LABEL: func.func @push_through_elementwise(
// CHECK-NOT:     layout.trans_data
// CHECK:         %[[R:.*]] = graph.relu %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense_resource<{{.*}}> : tensor<1x2x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [20, 1, 1]>>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[R]], %[[C]] : {{.*}} -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    %[[S:.*]] = graph.sub %[[M]], %one : (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1xf16>) -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    func.return %[[S]]

func.func @push_through_elementwise(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> {
  %c = graph.constant dense<3.000000e+00> : tensor<20x1x1xf16>
  %one = graph.constant dense<1.000000e+00> : tensor<1xf16>
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  %r = graph.relu %a : tensor<1x20x4x4xf16>
  %m = graph.mul %r, %c : (tensor<1x20x4x4xf16>, tensor<20x1x1xf16>) -> tensor<1x20x4x4xf16>
  %s = graph.sub %m, %one : (tensor<1x20x4x4xf16>, tensor<1xf16>) -> tensor<1x20x4x4xf16>
  %b = layout.trans_data %s : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  func.return %b : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
}

// -----

// The ReLU moves to NC1HWC0 (its result was converted back), but the flatten still needs
// the plain tensor, so that conversion stays; the plain ReLU result that is returned gets
// one conversion of the new result.
// CHECK-LABEL: func.func @multi_consumer(
// CHECK-NEXT:    %[[A:.*]] = layout.trans_data %x : {{.*}} to tensor<1x20x4x4xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
// CHECK-NEXT:    %[[RP:.*]] = layout.trans_data %[[R]] : {{.*}} to tensor<1x20x4x4xf16>
// CHECK-NEXT:    %[[F:.*]] = graph.flatten %[[A]]
// CHECK-NEXT:    func.return %[[R]], %[[F]], %[[RP]]

func.func @multi_consumer(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>) -> (tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x320xf16>, tensor<1x20x4x4xf16>) {
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  %r = graph.relu %a : tensor<1x20x4x4xf16>
  %b = layout.trans_data %r : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %f = graph.flatten %a {axis = 1 : i64} : (tensor<1x20x4x4xf16>) -> tensor<1x320xf16>
  func.return %b, %f, %r : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x320xf16>, tensor<1x20x4x4xf16>
}

// -----

// Must not fire: a conversion the flatten needs, an add whose other operand is a plain
// activation (it would need a conversion of its own), and an NHWC-origin conversion with
// nothing to cancel against.
// CHECK-LABEL: func.func @must_not_fire(
// CHECK-NEXT:    %a = layout.trans_data %x
// CHECK-NEXT:    %f = graph.flatten %a
// CHECK-NEXT:    %s = graph.add %a, %y : (tensor<1x20x4x4xf16>, tensor<1x20x4x4xf16>) -> tensor<1x20x4x4xf16>
// CHECK-NEXT:    %b = layout.trans_data %s
// CHECK-NEXT:    %h = graph.relu %y : tensor<1x20x4x4xf16>
// CHECK-NEXT:    %t = graph.transpose %h
// CHECK-NEXT:    %n = layout.trans_data %t
// CHECK-NEXT:    func.return %f, %b, %n

func.func @must_not_fire(%x: tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, %y: tensor<1x20x4x4xf16>) -> (tensor<1x320xf16>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 4, 4, 20]>>) {
  %a = layout.trans_data %x : tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>> to tensor<1x20x4x4xf16>
  %f = graph.flatten %a {axis = 1 : i64} : (tensor<1x20x4x4xf16>) -> tensor<1x320xf16>
  %s = graph.add %a, %y : (tensor<1x20x4x4xf16>, tensor<1x20x4x4xf16>) -> tensor<1x20x4x4xf16>
  %b = layout.trans_data %s : tensor<1x20x4x4xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>
  %h = graph.relu %y : tensor<1x20x4x4xf16>
  %t = graph.transpose %h {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x20x4x4xf16>) -> tensor<1x4x4x20xf16>
  %n = layout.trans_data %t : tensor<1x4x4x20xf16> to tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 4, 4, 20]>>
  func.return %f, %b, %n : tensor<1x320xf16>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 20, 4, 4]>>, tensor<1x2x4x4x16xf16, #layout.fmt<NC1HWC0, origin NHWC [1, 4, 4, 20]>>
}
