// RUN: ge-opt %s -p fuse | filecheck %s
// TbeEltwiseFusionPass: elementwise chains (with broadcasts) become one vector kernel;
// views (reshape) and constants never become kernels.

func.func @gelu_erf(%x: tensor<2x8xf32>) -> tensor<16xf32> {
  %r2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %shape = graph.constant dense<16> : tensor<1xi64>
  %d = graph.div %x, %r2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = graph.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %f = graph.reshape %g, %shape : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<16xf32>
  func.return %f : tensor<16xf32>
}
// CHECK-LABEL: func.func @gelu_erf
// The one-value constants are copied into the group (immediates), not kernel inputs.
// CHECK:         %g = fusion.group "elementwise" ["TbeEltwiseFusionPass"] ins(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %r2_1 = graph.constant dense<1.41421354> : tensor<f32>
// CHECK-NEXT:      graph.div %{{.*}}, %r2_1
// CHECK-NEXT:      graph.erf
// CHECK-NEXT:      %one_1 = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:      graph.add %{{.*}}, %one_1
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      %half_1 = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:      graph.mul %{{.*}}, %half_1
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %f = graph.reshape %g, %shape
