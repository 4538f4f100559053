// RUN: ge-opt %s -p bufferize --split-input-file | filecheck %s

// Two kernels, a weight and a view between them: tensors become GM buffers, each group a
// kernel launched in order; the reshape is a view of the same bytes, its shape no buffer.
// The second kernel's input, the first one's result seen through the view, is marked as
// written in the run (`l2_inputs`: the tiler may cost it as an L2 hit); the model input and
// the weight of the first are not.
func.func @two_kernels(%x: tensor<2x8xf32> {ge.name = "input"}) -> tensor<16xf32> {
  %w = graph.constant dense<1.0> : tensor<8x8xf32>
  %shape = graph.constant dense<[16]> : tensor<1xi64>
  %y = fusion.group "cube_epilogue" ["TbeMatmulElemwiseFusionPass"] ins(%x, %w) : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<2x8xf32>, %b: tensor<8x8xf32>):
    %m = graph.matmul %a, %b : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %r = graph.relu %m : tensor<2x8xf32>
    fusion.yield %r : tensor<2x8xf32>
  } loc("mm1")
  %f = graph.reshape %y, %shape : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<16xf32>
  %s = fusion.group "elementwise" [] ins(%f) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%a: tensor<16xf32>):
    %t = graph.sigmoid %a : tensor<16xf32>
    fusion.yield %t : tensor<16xf32>
  }
  func.return %s : tensor<16xf32>
}
// CHECK:      tile.kernel @k0_mm1 ins(%x: memref<2x8xf32, #tile.space<gm>>, %w: memref<8x8xf32, #tile.space<gm>>) outs(%y: memref<2x8xf32, #tile.space<gm>>) block_dim 1 kind "cube_epilogue" attributes {rules = ["TbeMatmulElemwiseFusionPass"]} {
// CHECK-NEXT:   tile.untiled ins(%x, %w : memref<2x8xf32, #tile.space<gm>>, memref<8x8xf32, #tile.space<gm>>) outs(%y : memref<2x8xf32, #tile.space<gm>>) {
// CHECK-NEXT:   ^{{.*}}(%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<8x8xf32>):
// CHECK-NEXT:     %[[M:.*]] = graph.matmul %[[A]], %[[B]]
// CHECK-NEXT:     %[[R:.*]] = graph.relu %[[M]]
// CHECK-NEXT:     tile.yield %[[R]] : tensor<2x8xf32>
// CHECK:      tile.kernel @k1_t ins(%f: memref<16xf32, #tile.space<gm>>) outs(%s: memref<16xf32, #tile.space<gm>>) block_dim 1 kind "elementwise" attributes {l2_inputs = [0 : i64]} {
// CHECK-LABEL: func.func @two_kernels(%x: memref<2x8xf32, #tile.space<gm>> {ge.name = "input"}) -> memref<16xf32, #tile.space<gm>> {
// CHECK-NEXT:   %[[W:.*]] = tile.const dense<1.000000e+00> : tensor<8x8xf32> -> memref<8x8xf32, #tile.space<gm>>
// CHECK-NEXT:   %[[Y:.*]] = tile.alloc buffers 1 : memref<2x8xf32, #tile.space<gm>>
// CHECK-NEXT:   tile.launch @k0_mm1 ins(%x, %[[W]] : {{.*}}) outs(%[[Y]] : memref<2x8xf32, #tile.space<gm>>)
// CHECK-NEXT:   %[[F:.*]] = tile.view %[[Y]] : memref<2x8xf32, #tile.space<gm>> to memref<16xf32, #tile.space<gm>>
// CHECK-NEXT:   %[[S:.*]] = tile.alloc buffers 1 : memref<16xf32, #tile.space<gm>>
// CHECK-NEXT:   tile.launch @k1_t ins(%[[F]] : memref<16xf32, #tile.space<gm>>) outs(%[[S]] : memref<16xf32, #tile.space<gm>>)
// CHECK-NEXT:   func.return %[[S]] : memref<16xf32, #tile.space<gm>>

// -----

// A group with two results writes two buffers.
func.func @two_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a, %b = fusion.group "elementwise" [] ins(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%v: tensor<4xf32>):
    %r = graph.relu %v : tensor<4xf32>
    %n = graph.neg %r : tensor<4xf32>
    fusion.yield %r, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}
// CHECK:      tile.kernel @k0_r ins(%x: memref<4xf32, #tile.space<gm>>) outs(%a: memref<4xf32, #tile.space<gm>>, %b: memref<4xf32, #tile.space<gm>>)
// CHECK-LABEL: func.func @two_results
// CHECK-NEXT:   %[[A:.*]] = tile.alloc buffers 1 : memref<4xf32, #tile.space<gm>>
// CHECK-NEXT:   %[[B:.*]] = tile.alloc buffers 1 : memref<4xf32, #tile.space<gm>>
// CHECK-NEXT:   tile.launch @k0_r ins(%x : memref<4xf32, #tile.space<gm>>) outs(%[[A]], %[[B]] : {{.*}})
// CHECK-NEXT:   func.return %[[A]], %[[B]]

// -----

// Storage formats keep their storage shape in GM.
func.func @formats(%x: tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>) -> tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>> {
  %r = fusion.group "elementwise" [] ins(%x) : (tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>) -> tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>> {
  ^bb0(%v: tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>):
    %y = graph.relu %v : tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>
    fusion.yield %y : tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>
  }
  func.return %r : tensor<1x1x4x4x16xf16, #layout.fmt<NC1HWC0, origin NCHW [1, 3, 4, 4]>>
}
// CHECK-LABEL: func.func @formats(%x: memref<1x1x4x4x16xf16, #tile.space<gm>>) -> memref<1x1x4x4x16xf16, #tile.space<gm>>
// CHECK:         tile.launch

// -----

// Must not change anything but the types: no groups, no kernels.
func.func @identity(%x: tensor<3xf16>) -> tensor<3xf16> {
  func.return %x : tensor<3xf16>
}
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @identity(%x: memref<3xf16, #tile.space<gm>>) -> memref<3xf16, #tile.space<gm>> {
// CHECK-NEXT:    func.return %x : memref<3xf16, #tile.space<gm>>

