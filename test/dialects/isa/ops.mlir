// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

// Every isa op in its custom form, printed back unchanged; the generic form is checked for
// the ops whose properties the custom form spells differently (enums, optional offsets).

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @vector ins(%x: memref<1024xf16, #isa.space<gm>>) outs(%y: memref<1024xf32, #isa.space<gm>>) block_dim 2 {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %blk = isa.block_idx : index
    %off = arith.muli %blk, %c128 : index
    %a, %b = isa.buffer offset 0 slots 2 : memref<256xf16, #isa.space<ub>>
    %f = isa.buffer offset 1024 : memref<256xf32, #isa.space<ub>>
    %m = isa.buffer : memref<256xi8, #isa.space<ub>>
    isa.copy_gm_to_ub %x[%off] to %a sizes [2, 128] window (%c0, %c128, %c0, %c128) pad 0.000000e+00 : f32 : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
    isa.set_flag [MTE2, V, 0]
    isa.wait_flag [MTE2, V, 0]
    isa.vadd %b, %a, %a[%c128] repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.pipe_barrier [V]
    isa.vsub %b, %a, %b repeat 2 mask 64 blk_stride [1, 1, 0] rep_stride [8, 8, 1] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmul %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vdiv %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmax %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmin %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vand %m, %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
    isa.vor %m, %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
    isa.vexp %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vln %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vabs %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vsqrt %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vrsqrt %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vrec %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vrelu %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vtanh %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.verf %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vnot %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
    isa.vadds %b, %a scalar 1.5 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmuls %b, %a scalar -2.0 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmaxs %b, %a scalar 0.0 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vmins %b, %a scalar 6.0 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vdup %b scalar 0.0 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>
    isa.vdup %b scalar 0xFFF0000000000000 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [2, 128] window (%c0, %c128, %c0, %c128) pad 0xFF800000 : f32 : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
    isa.vconv %f, %a repeat 4 mask 64 : memref<256xf32, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vconv %m, %a round "floor" repeat 1 mask 128 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vreduce_sum %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vreduce_max %b, %a repeat 2 rep_stride [16, 8] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vreduce_min %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vbrcb %b, %a repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vcmp %m, %a, %b mode "lt" repeat 2 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.vsel %b, %m, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
    isa.copy_ub_to_ub %a to %b sizes [16, 16] src_strides [1, 16] : memref<256xf16, #isa.space<ub>> to memref<256xf16, #isa.space<ub>>
    isa.set_flag [V, MTE3, 1]
    isa.wait_flag [V, MTE3, 1]
    isa.copy_ub_to_gm %f to %y[%off] sizes [256] : memref<256xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
    isa.pipe_barrier [ALL]
  }
}

// CHECK:      builtin.module attributes {ge.target = "ascend910"} {
// CHECK-NEXT:   isa.kernel @vector ins(%x: memref<1024xf16, #isa.space<gm>>) outs(%y: memref<1024xf32, #isa.space<gm>>) block_dim 2 {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c128 = arith.constant 128 : index
// CHECK-NEXT:     %blk = isa.block_idx : index
// CHECK-NEXT:     %off = arith.muli %blk, %c128 : index
// CHECK-NEXT:     %a, %b = isa.buffer offset 0 slots 2 : memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     %f = isa.buffer offset 1024 : memref<256xf32, #isa.space<ub>>
// CHECK-NEXT:     %m = isa.buffer : memref<256xi8, #isa.space<ub>>
// CHECK-NEXT:     isa.copy_gm_to_ub %x[%off] to %a sizes [2, 128] window (%c0, %c128, %c0, %c128) pad 0.000000e+00 : f32 : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.set_flag [MTE2, V, 0]
// CHECK-NEXT:     isa.wait_flag [MTE2, V, 0]
// CHECK-NEXT:     isa.vadd %b, %a, %a[%c128] repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.pipe_barrier [V]
// CHECK-NEXT:     isa.vsub %b, %a, %b repeat 2 mask 64 blk_stride [1, 1, 0] rep_stride [8, 8, 1] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmul %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vdiv %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmax %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmin %b, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vand %m, %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
// CHECK-NEXT:     isa.vor %m, %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
// CHECK-NEXT:     isa.vexp %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vln %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vabs %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vsqrt %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vrsqrt %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vrec %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vrelu %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vtanh %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.verf %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vnot %m, %m repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>
// CHECK-NEXT:     isa.vadds %b, %a scalar 1.500000e+00 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmuls %b, %a scalar -2.000000e+00 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmaxs %b, %a scalar 0.000000e+00 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vmins %b, %a scalar 6.000000e+00 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vdup %b scalar 0.000000e+00 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vdup %b scalar 0xfff0000000000000 : f64 repeat 2 : memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.copy_gm_to_ub %x to %a sizes [2, 128] window (%c0, %c128, %c0, %c128) pad 0xff800000 : f32 : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vconv %f, %a repeat 4 mask 64 : memref<256xf32, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vconv %m, %a round "floor" repeat 1 mask 128 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vreduce_sum %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vreduce_max %b, %a repeat 2 rep_stride [16, 8] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vreduce_min %b, %a repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vbrcb %b, %a repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vcmp %m, %a, %b mode "lt" repeat 2 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.vsel %b, %m, %a, %b repeat 2 : memref<256xf16, #isa.space<ub>>, memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.copy_ub_to_ub %a to %b sizes [16, 16] src_strides [1, 16] : memref<256xf16, #isa.space<ub>> to memref<256xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.set_flag [V, MTE3, 1]
// CHECK-NEXT:     isa.wait_flag [V, MTE3, 1]
// CHECK-NEXT:     isa.copy_ub_to_gm %f to %y[%off] sizes [256] : memref<256xf32, #isa.space<ub>> to memref<1024xf32, #isa.space<gm>>
// CHECK-NEXT:     isa.pipe_barrier [ALL]
// CHECK-NEXT:   }
// CHECK-NEXT: }

// CHECK-GENERIC:      "isa.kernel"() <{sym_name = "vector", function_type = (memref<1024xf16, #isa.space<gm>>, memref<1024xf32, #isa.space<gm>>) -> (), num_ins = 1 : i64, block_dim = 2 : i64}> ({
// CHECK-GENERIC:      %a, %b = "isa.buffer"() <{offset = 0 : i64}> : () -> (memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>)
// CHECK-GENERIC:      %f = "isa.buffer"() <{offset = 1024 : i64}> : () -> memref<256xf32, #isa.space<ub>>
// CHECK-GENERIC:      %m = "isa.buffer"() : () -> memref<256xi8, #isa.space<ub>>
// CHECK-GENERIC:      "isa.copy_gm_to_ub"(%x, %off, %a, %c0, %c128, %c0, %c128) <{sizes = array<i64: 2, 128>, pad = 0.000000e+00 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 4>}> : (memref<1024xf16, #isa.space<gm>>, index, memref<256xf16, #isa.space<ub>>, index, index, index, index) -> ()
// CHECK-GENERIC:      "isa.set_flag"() <{src_pipe = #isa<pipe MTE2>, dst_pipe = #isa<pipe V>, event = 0 : i64}> : () -> ()
// CHECK-GENERIC:      "isa.pipe_barrier"() <{pipe = #isa<pipe V>}> : () -> ()
// CHECK-GENERIC:      "isa.vsub"(%b, %a, %b) <{repeat = 2 : i64, mask = 64 : i64, blk_stride = array<i64: 1, 1, 0>, rep_stride = array<i64: 8, 8, 1>, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0>}> : (memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>) -> ()
// CHECK-GENERIC:      "isa.vconv"(%m, %a) <{round = "floor", repeat = 1 : i64, mask = 128 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>}> : (memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>) -> ()
// CHECK-GENERIC:      "isa.set_flag"() <{src_pipe = #isa<pipe V>, dst_pipe = #isa<pipe MTE3>, event = 1 : i64}> : () -> ()
// CHECK-GENERIC:      "isa.pipe_barrier"() <{pipe = #isa<pipe ALL>}> : () -> ()


// -----

builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @cube ins(%a: memref<32x64xf16, #isa.space<gm>>, %fm: memref<1x4x10x10x16xf16, #isa.space<gm>>) outs(%c: memref<32x32xf16, #isa.space<gm>>) block_dim 1 {
    %c0 = arith.constant 0 : index
    %true = arith.constant true
    %al1 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l1>>
    %fl1 = isa.buffer offset 4096 : memref<4x10x10x16xf16, #isa.space<l1>>
    %l1u = isa.buffer offset 0 : memref<2048xf16, #isa.space<ub>>
    %a0 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l0a>>
    %b0 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l0b>>
    %acc = isa.buffer offset 0 : memref<32x32xf32, #isa.space<l0c>>
    isa.copy_gm_to_l1 %a to %al1 sizes [2, 4, 16, 16] src_strides [1024, 16, 64, 1] : memref<32x64xf16, #isa.space<gm>> to memref<2048xf16, #isa.space<l1>>
    isa.copy_gm_to_l1 %fm to %fl1 sizes [6400] : memref<1x4x10x10x16xf16, #isa.space<gm>> to memref<4x10x10x16xf16, #isa.space<l1>>
    isa.copy_l1_to_l0a %al1 to %a0 sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0a>>
    isa.img2col %fl1 to %b0 at (%c0, %c0, %c0, %c0) {sizes = array<i64: 32, 64>, fm = array<i64: 4, 10, 10, 16>, kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 10, 10>, channels = 64 : i64, c0 = 16 : i64} : memref<4x10x10x16xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0b>>
    isa.copy_l1_to_l0b %al1 to %b0 sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0b>>
    isa.copy_gm_to_l0b %a to %b0 sizes [4, 16, 32] src_strides [512, 1, 16] : memref<32x64xf16, #isa.space<gm>> to memref<2048xf16, #isa.space<l0b>>
    isa.copy_l1_to_ub %al1 to %l1u sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<ub>>
    isa.copy_ub_to_l1 %l1u to %al1 sizes [2048] : memref<2048xf16, #isa.space<ub>> to memref<2048xf16, #isa.space<l1>>
    isa.mmad %acc, %a0, %b0 m 32 k 64 n 32 init %true : memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>
    isa.mmad %acc, %a0, %b0[%c0] m 32 k 64 n 32 : memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>
    isa.fixpipe %acc to %c sizes [2, 2, 16, 16] dst_strides [16, 512, 32, 1] relu : memref<32x32xf32, #isa.space<l0c>> to memref<32x32xf16, #isa.space<gm>>
  }
  func.func @main(%xa: memref<32x64xf16>, %xf: memref<1x4x10x10x16xf16>, %out: memref<32x32xf16>) {
    isa.launch @cube ins(%xa, %xf : memref<32x64xf16>, memref<1x4x10x10x16xf16>) outs(%out : memref<32x32xf16>)
    func.return
  }
}

// CHECK:      builtin.module attributes {ge.target = "ascend910"} {
// CHECK-NEXT:   isa.kernel @cube ins(%a: memref<32x64xf16, #isa.space<gm>>, %fm: memref<1x4x10x10x16xf16, #isa.space<gm>>) outs(%c: memref<32x32xf16, #isa.space<gm>>) block_dim 1 {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %true = arith.constant true
// CHECK-NEXT:     %al1 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l1>>
// CHECK-NEXT:     %fl1 = isa.buffer offset 4096 : memref<4x10x10x16xf16, #isa.space<l1>>
// CHECK-NEXT:     %l1u = isa.buffer offset 0 : memref<2048xf16, #isa.space<ub>>
// CHECK-NEXT:     %a0 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l0a>>
// CHECK-NEXT:     %b0 = isa.buffer offset 0 : memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     %acc = isa.buffer offset 0 : memref<32x32xf32, #isa.space<l0c>>
// CHECK-NEXT:     isa.copy_gm_to_l1 %a to %al1 sizes [2, 4, 16, 16] src_strides [1024, 16, 64, 1] : memref<32x64xf16, #isa.space<gm>> to memref<2048xf16, #isa.space<l1>>
// CHECK-NEXT:     isa.copy_gm_to_l1 %fm to %fl1 sizes [6400] : memref<1x4x10x10x16xf16, #isa.space<gm>> to memref<4x10x10x16xf16, #isa.space<l1>>
// CHECK-NEXT:     isa.copy_l1_to_l0a %al1 to %a0 sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0a>>
// CHECK-NEXT:     isa.img2col %fl1 to %b0 at (%c0, %c0, %c0, %c0) {sizes = array<i64: 32, 64>, fm = array<i64: 4, 10, 10, 16>, kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 10, 10>, channels = 64 : i64, c0 = 16 : i64} : memref<4x10x10x16xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     isa.copy_l1_to_l0b %al1 to %b0 sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     isa.copy_gm_to_l0b %a to %b0 sizes [4, 16, 32] src_strides [512, 1, 16] : memref<32x64xf16, #isa.space<gm>> to memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     isa.copy_l1_to_ub %al1 to %l1u sizes [2048] : memref<2048xf16, #isa.space<l1>> to memref<2048xf16, #isa.space<ub>>
// CHECK-NEXT:     isa.copy_ub_to_l1 %l1u to %al1 sizes [2048] : memref<2048xf16, #isa.space<ub>> to memref<2048xf16, #isa.space<l1>>
// CHECK-NEXT:     isa.mmad %acc, %a0, %b0 m 32 k 64 n 32 init %true : memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     isa.mmad %acc, %a0, %b0[%c0] m 32 k 64 n 32 : memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>
// CHECK-NEXT:     isa.fixpipe %acc to %c sizes [2, 2, 16, 16] dst_strides [16, 512, 32, 1] relu : memref<32x32xf32, #isa.space<l0c>> to memref<32x32xf16, #isa.space<gm>>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @main(%xa: memref<32x64xf16>, %xf: memref<1x4x10x10x16xf16>, %out: memref<32x32xf16>) {
// CHECK-NEXT:     isa.launch @cube ins(%xa, %xf : memref<32x64xf16>, memref<1x4x10x10x16xf16>) outs(%out : memref<32x32xf16>)
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// CHECK-GENERIC:      "isa.kernel"() <{sym_name = "cube", function_type = (memref<32x64xf16, #isa.space<gm>>, memref<1x4x10x10x16xf16, #isa.space<gm>>, memref<32x32xf16, #isa.space<gm>>) -> (), num_ins = 2 : i64, block_dim = 1 : i64}> ({
// CHECK-GENERIC:      %al1 = "isa.buffer"() <{offset = 0 : i64}> : () -> memref<2048xf16, #isa.space<l1>>
// CHECK-GENERIC:      %fl1 = "isa.buffer"() <{offset = 4096 : i64}> : () -> memref<4x10x10x16xf16, #isa.space<l1>>
// CHECK-GENERIC:      %l1u = "isa.buffer"() <{offset = 0 : i64}> : () -> memref<2048xf16, #isa.space<ub>>
// CHECK-GENERIC:      %a0 = "isa.buffer"() <{offset = 0 : i64}> : () -> memref<2048xf16, #isa.space<l0a>>
// CHECK-GENERIC:      %b0 = "isa.buffer"() <{offset = 0 : i64}> : () -> memref<2048xf16, #isa.space<l0b>>
// CHECK-GENERIC:      %acc = "isa.buffer"() <{offset = 0 : i64}> : () -> memref<32x32xf32, #isa.space<l0c>>
// CHECK-GENERIC:      "isa.img2col"(%fl1, %b0, %c0, %c0, %c0, %c0) <{sizes = array<i64: 32, 64>, fm = array<i64: 4, 10, 10, 16>, kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 10, 10>, channels = 64 : i64, c0 = 16 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 1, 1, 1>}> : (memref<4x10x10x16xf16, #isa.space<l1>>, memref<2048xf16, #isa.space<l0b>>, index, index, index, index) -> ()
// CHECK-GENERIC:      "isa.mmad"(%acc, %a0, %b0, %true) <{m = 32 : i64, k = 64 : i64, n = 32 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 0, 1>}> : (memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>, i1) -> ()
// CHECK-GENERIC:      "isa.mmad"(%acc, %a0, %b0, %c0) <{m = 32 : i64, k = 64 : i64, n = 32 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 1, 1, 0>}> : (memref<32x32xf32, #isa.space<l0c>>, memref<2048xf16, #isa.space<l0a>>, memref<2048xf16, #isa.space<l0b>>, index) -> ()
// CHECK-GENERIC:      "isa.fixpipe"(%acc, %c) <{sizes = array<i64: 2, 2, 16, 16>, dst_strides = array<i64: 16, 512, 32, 1>, relu, operandSegmentSizes = array<i32: 0, 0, 0, 0, 1, 0, 1, 0, 0>}> : (memref<32x32xf32, #isa.space<l0c>>, memref<32x32xf16, #isa.space<gm>>) -> ()
// CHECK-GENERIC:      "isa.launch"(%xa, %xf, %out) <{callee = @cube, operandSegmentSizes = array<i32: 2, 1>}> : (memref<32x64xf16>, memref<1x4x10x10x16xf16>, memref<32x32xf16>) -> ()


// -----

// A Gather row: an index read on the scalar unit feeds the offset of the row's move.
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @gather ins(%t: memref<800xf32, #isa.space<gm>>, %i: memref<4xi64, #isa.space<gm>>) outs(%y: memref<64xf32, #isa.space<gm>>) block_dim 1 attributes {isa.data_dependent} {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %iu = isa.buffer offset 0 : memref<4xi64, #isa.space<ub>>
    %ru = isa.buffer offset 64 : memref<16xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %i to %iu sizes [4] : memref<4xi64, #isa.space<gm>> to memref<4xi64, #isa.space<ub>>
    isa.set_flag [MTE2, S, 0]
    isa.wait_flag [MTE2, S, 0]
    %r = isa.load_scalar %iu[%c1] bound 50 : memref<4xi64, #isa.space<ub>>
    %g = isa.load_scalar %i bound 50 : memref<4xi64, #isa.space<gm>>
    %o = arith.muli %r, %c16 : index
    isa.copy_gm_to_ub %t[%o] to %ru sizes [16] : memref<800xf32, #isa.space<gm>> to memref<16xf32, #isa.space<ub>>
  }
}
// CHECK:      isa.kernel @gather {{.*}} attributes {isa.data_dependent} {
// CHECK:        %r = isa.load_scalar %iu[%c1] bound 50 : memref<4xi64, #isa.space<ub>>
// CHECK-NEXT:   %g = isa.load_scalar %i bound 50 : memref<4xi64, #isa.space<gm>>

// CHECK-GENERIC: %{{.*}} = "isa.load_scalar"(%{{.*}}, %{{.*}}) <{bound = 50 : i64}> : (memref<4xi64, #isa.space<ub>>, index) -> index
