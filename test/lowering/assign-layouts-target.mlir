// RUN: ge-opt %s -p assign-layouts | filecheck %s
// RUN: not ge-opt %s -p 'assign-layouts{target=ascend910b}' 2>&1 | filecheck %s --check-prefix=CONFLICT

// A module that already names its chip keeps it (the pass reads the target from the
// module); asking for another chip is an error rather than a silent recompile.

// CHECK: builtin.module attributes {ge.target = "ascend310b"} {
// CHECK: layout.trans_data
// CONFLICT: ge-opt: error: a pass failed on {{.*}}: assign-layouts: the module targets 'ascend310b' but the pass was given target=ascend910b

builtin.module attributes {ge.target = "ascend310b"} {
  func.func @pool(%x: tensor<1x16x4x4xf16>) -> tensor<1x16x1x1xf16> {
    %g = graph.global_max_pool %x : (tensor<1x16x4x4xf16>) -> tensor<1x16x1x1xf16>
    func.return %g : tensor<1x16x1x1xf16>
  }
}
