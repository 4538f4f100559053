// RUN: ge-opt %s -p graph-optimize | filecheck %s
// RUN: ge-opt %s -p 'graph-optimize{level=0 precision=must_keep_origin_dtype}' | filecheck %s --check-prefix=L0
// RUN: ge-opt %s -p 'graph-optimize{level=1 precision=must_keep_origin_dtype debug=true}' 2>&1 | filecheck %s --check-prefix=L1
// RUN: ge-opt %s -p graph-optimize --print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: not ge-opt %s -p 'graph-optimize{level=4}' 2>&1 | filecheck %s --check-prefix=ERR-LEVEL
// RUN: not ge-opt %s -p 'graph-optimize{precision=fp8}' 2>&1 | filecheck %s --check-prefix=ERR-MODE

// graph-optimize is the default graph pipeline. On a conv + BatchNorm + Identity + ReLU +
// pool + Shape-computed Reshape + Dropout + Softmax graph with a ConstantOfShape weight:

// Level 3 with force_fp16 (the defaults, as ATC for inference): the weight is folded, the
// BatchNorm goes into the conv, Identity / Dropout go away, the reshape target is static,
// and the graph computes in f16 between two boundary casts.
// CHECK:       builtin.module attributes {ge.precision_mode = "force_fp16"} {
// CHECK-LABEL: func.func @net(%x: tensor<1x3x8x8xf32>) -> tensor<1x4xf32> {
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<1x3x8x8xf32> to tensor<1x3x8x8xf16>
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense_resource<{{.*}}> : tensor<4x3x3x3xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[-9.997560e-02, 2.171630e-01, -5.864260e-01, 7.998050e-01]> : tensor<4xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<1x4x8x8xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[C]] : tensor<1x4x8x8xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.global_avg_pool %[[R]] : (tensor<1x4x8x8xf16>) -> tensor<1x4x1x1xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1, 4]> : tensor<2xi64>
// CHECK-NEXT:    %[[F:.*]] = graph.reshape %[[P]], %[[S]] : (tensor<1x4x1x1xf16>, tensor<2xi64>) -> tensor<1x4xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.softmax %[[F]] {axis = 1 : i64} : tensor<1x4xf16>
// CHECK-NEXT:    %[[Y32:.*]] = graph.cast %[[Y]] : tensor<1x4xf16> to tensor<1x4xf32>
// CHECK-NEXT:    func.return %[[Y32]] : tensor<1x4xf32>

// Level 0 changes nothing but the recorded precision mode.
// L0:       builtin.module attributes {ge.precision_mode = "must_keep_origin_dtype"} {
// L0:         graph.constant_of_shape
// L0:         graph.batch_norm
// L0:         graph.identity
// L0:         graph.shape
// L0:         graph.dropout

// Level 1 folds constants and shape arithmetic but keeps the BatchNorm, Identity and
// Dropout; `debug=true` prints the summary on stderr (one line per stage, then the
// histograms before and after).
// L1:       // graph-optimize{level=1 precision="must_keep_origin_dtype" debug=true}: 12 compute ops in
// L1-NEXT:  //   constant-fold {{ *}} 12 -> 8 {{ *}} concat -1, constant -1, constant_of_shape -1, gather -1, shape -1
// L1-NEXT:  //   dce {{ *}} 8 -> 8 {{ *}} no change
// L1-NEXT:  //   precision-mode{mode="must_keep_origin_dtype"} {{ *}} 8 -> 8 {{ *}} no change
// L1-NEXT:  // before (12 compute ops): constant 7, batch_norm 1, concat 1, constant_of_shape 1, conv2d 1, dropout 1, gather 1, global_avg_pool 1, identity 1, relu 1, reshape 1, shape 1, softmax 1
// L1-NEXT:  // after  (8 compute ops): constant 6, batch_norm 1, conv2d 1, dropout 1, global_avg_pool 1, identity 1, relu 1, reshape 1, softmax 1
// L1:       %[[W:.*]] = graph.constant dense<2.000000e-02> : tensor<4x3x3x3xf32>
// L1:       graph.batch_norm
// L1:       %[[T:.*]] = graph.constant dense<[1, -1]> : tensor<2xi64>
// L1-NEXT:  graph.reshape %{{.*}}, %[[T]]
// L1-NEXT:  graph.dropout

// ONNX node names (op locations) survive: the conv that absorbed the BatchNorm and its new
// weights keep the conv's name, the boundary casts take the input's and the producer's.
// LOC:       graph.cast %x {{.*}} loc("x")
// LOC-NEXT:  graph.constant {{.*}} loc("conv1")
// LOC-NEXT:  graph.constant {{.*}} loc("conv1")
// LOC-NEXT:  graph.conv2d {{.*}} loc("conv1")
// LOC:       graph.softmax {{.*}} loc("prob")
// LOC-NEXT:  graph.cast {{.*}} loc("prob")

// ERR-LEVEL: ge-opt: error: graph-optimize: level 4 is not one of 0..3
// ERR-MODE:  ge-opt: error: unknown precision mode 'fp8'; expected one of force_fp16, must_keep_origin_dtype, allow_mix_precision
func.func @net(%x: tensor<1x3x8x8xf32>) -> tensor<1x4xf32> {
  %ws = graph.constant dense<[4, 3, 3, 3]> : tensor<4xi64>
  %w = graph.constant_of_shape %ws {value = dense<2.0e-02> : tensor<1xf32>} : (tensor<4xi64>) -> tensor<4x3x3x3xf32>
  %scale = graph.constant dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>
  %bias = graph.constant dense<[0.0, 0.5, -0.5, 1.0]> : tensor<4xf32>
  %mean = graph.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %var = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> loc("conv1")
  %n = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("bn1")
  %i = graph.identity %n : tensor<1x4x8x8xf32>
  %r = graph.relu %i : tensor<1x4x8x8xf32>
  %p = graph.global_avg_pool %r : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %s = graph.shape %p : (tensor<1x4x1x1xf32>) -> tensor<4xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %b = graph.gather %s, %zero {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m1 = graph.constant dense<-1> : tensor<1xi64>
  %t = graph.concat %b, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %f = graph.reshape %p, %t : (tensor<1x4x1x1xf32>, tensor<2xi64>) -> tensor<1x4xf32>
  %d = graph.dropout %f {ratio = 5.0e-01 : f32} : tensor<1x4xf32>
  %y = graph.softmax %d {axis = 1 : i64} : tensor<1x4xf32> loc("prob")
  func.return %y : tensor<1x4xf32>
}
