// RUN: rm -rf %t && mkdir -p %t/empty %t/bad/Ascend910A %t/old/Ascend910A
// RUN: ge-opt %s -p 'assign-layouts,eliminate-trans-data,fuse,bufferize,tile' | filecheck %s
// RUN: ge-opt %s -p 'assign-layouts,eliminate-trans-data,fuse,bufferize,tile{op_bank="%t/empty"}' | filecheck %s
// RUN: not ge-opt %s -p 'assign-layouts,eliminate-trans-data,fuse,bufferize,tile{op_bank="%t/none"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: echo '{"plans": [' > %t/bad/Ascend910A/cube_plans.json
// RUN: not ge-opt %s -p 'assign-layouts,eliminate-trans-data,fuse,bufferize,tile{op_bank="%t/bad"}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: echo '{"format": 1, "plans": {"0123456789abcdef01234567": {"plan": {"tm": 64, "colour": 1}}}}' > %t/old/Ascend910A/cube_plans.json
// RUN: not ge-opt %s -p 'assign-layouts,eliminate-trans-data,fuse,bufferize,tile{op_bank="%t/old"}' 2>&1 | filecheck %s --check-prefix=FIELD

// The tile pass reads operator tuning's repository (ge-aoe writes it; lowering/op_bank.py):
// a Cube problem found there takes its tuned plan, every other one the cost model's. An
// empty bank (a directory without a bank for the chip) changes nothing; a missing directory,
// a file that is not a bank or a plan this ge cannot take is an error naming the bank.
func.func @conv(%x: tensor<1x64x28x28xf16>) -> tensor<1x64x28x28xf16> {
  %w = graph.constant dense<0.01> : tensor<64x64x1x1xf16>
  %y = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x28x28xf16>, tensor<64x64x1x1xf16>) -> tensor<1x64x28x28xf16> loc("conv")
  func.return %y : tensor<1x64x28x28xf16>
}
// CHECK: tile.kernel @k0_conv {{.*}} kind "cube_epilogue" attributes {{.*}}tile.plan = "m=112 n=16 k=32 k_l1=32
// MISSING: ge-opt: error: a pass failed on {{.*}}: tile: op bank path {{.*}}/none: no such directory
// BAD: ge-opt: error: a pass failed on {{.*}}: tile: op bank {{.*}}/bad/Ascend910A/cube_plans.json: not a bank
// FIELD: ge-opt: error: a pass failed on {{.*}}: tile: op bank {{.*}}/old/Ascend910A/cube_plans.json: entry 0123456789abcdef01234567: a plan ge cannot take
