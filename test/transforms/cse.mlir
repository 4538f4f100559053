// RUN: ge-opt %s -p cse --split-input-file | filecheck %s

// xDSL's cse on the graph dialect (graph ops are Pure): identical ops on the same operands
// with the same properties are merged, identical constants too; ops that differ only in a
// property (axis, perm, epsilon) or a discardable attribute are not.

// CHECK-LABEL: func.func @merged(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %x, %[[C]]
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]]
// CHECK-NEXT:    func.return %[[R]], %[[R]]
func.func @merged(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %c1 = graph.constant dense<1.0> : tensor<3xf32>
  %c2 = graph.constant dense<1.0> : tensor<3xf32>
  %a1 = graph.add %x, %c1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %a2 = graph.add %x, %c2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r1 = graph.relu %a1 : tensor<2x3xf32>
  %r2 = graph.relu %a2 : tensor<2x3xf32>
  func.return %r1, %r2 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @kept(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
// CHECK-NEXT:    %[[S0:.*]] = graph.softmax %x {axis = 0 : i64}
// CHECK-NEXT:    %[[S1:.*]] = graph.softmax %x {axis = 1 : i64}
// CHECK-NEXT:    %[[T0:.*]] = graph.transpose %x {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[T1:.*]] = graph.transpose %x {perm = array<i64: 0, 1>}
// CHECK-NEXT:    %[[N0:.*]] = graph.relu %x : tensor<2x2xf32>
// CHECK-NEXT:    %[[N1:.*]] = graph.relu %x {ge.no_fold} : tensor<2x2xf32>
// CHECK-NEXT:    func.return %[[S0]], %[[S1]], %[[T0]], %[[T1]], %[[N0]], %[[N1]]
func.func @kept(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %s0 = graph.softmax %x {axis = 0 : i64} : tensor<2x2xf32>
  %s1 = graph.softmax %x {axis = 1 : i64} : tensor<2x2xf32>
  %t0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %t1 = graph.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %n0 = graph.relu %x : tensor<2x2xf32>
  %n1 = graph.relu %x {ge.no_fold} : tensor<2x2xf32>
  func.return %s0, %s1, %t0, %t1, %n0, %n1 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
