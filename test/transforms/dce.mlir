// RUN: ge-opt %s -p dce | filecheck %s

// xDSL's dce on the graph dialect: graph ops are Pure, so ops and constants whose results
// nobody uses are removed, chains of them included; what reaches func.return stays.

// CHECK-LABEL: func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x : tensor<4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<4xf32>
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<2.0> : tensor<4xf32>
  %m = graph.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = graph.exp %m : tensor<4xf32>
  %s = graph.shape %e : (tensor<4xf32>) -> tensor<1xi64>
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
