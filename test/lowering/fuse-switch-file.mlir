// RUN: printf 'TbeEltwiseFusionPass:off\n' > %t.cfg
// RUN: ge-opt %s -p 'fuse{switch-file="%t.cfg" debug=true}' 2>&1 | filecheck %s
// RUN: printf '{"Switch": {"UBFusion": {"ALL": "off", "TbeEltwiseFusionPass": "on"}}}' > %t.json
// RUN: ge-opt %s -p 'fuse{switch-file="%t.json"}' | filecheck %s --check-prefix=JSON
// RUN: printf 'NoSuchFusionPass:off\n' > %t.bad
// RUN: not ge-opt %s -p 'fuse{switch-file="%t.bad"}' 2>&1 | filecheck %s --check-prefix=BAD
// A fusion switch file (ATC's --fusion_switch_file) turns rules off; unknown names are errors.

func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.neg %x : tensor<4xf32>
  %b = graph.exp %a : tensor<4xf32>
  %c = graph.sigmoid %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: [fuse] TbeEltwiseFusionPass: switched off
// CHECK: [fuse] 3 kernels
// CHECK: %a = fusion.group "elementwise" [] ins(%x)
// CHECK: %b = fusion.group "elementwise" [] ins(%a)
// CHECK: %c = fusion.group "elementwise" [] ins(%b)

// JSON: %c = fusion.group "elementwise" ["TbeEltwiseFusionPass"] ins(%x)

// BAD: ge-opt: error: {{.*}}.bad:1: unknown fusion rule 'NoSuchFusionPass'; known rules: TbeConvElemwiseFusionPass, TbeMatmulElemwiseFusionPass,
// BAD-NOT: Traceback
