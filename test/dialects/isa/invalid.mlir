// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

// a local buffer's offset must be a multiple of its memory's alignment (L0A: 512 B)
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 256 : memref<256xf16, #isa.space<l0a>>
  }
}
// CHECK: Operation does not verify: offset 256 of a l0a buffer is not a multiple of its 512-byte alignment
// CHECK: -----

// -----

// a buffer must fit its memory (ascend910 UB: 256 KB)
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a, %b = isa.buffer offset 131072 slots 2 : memref<65536xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: the buffer ends at byte 393216 of ub, past its 262144 bytes on ascend910
// CHECK: -----

// -----

// the target's capacities come from the module's ge.target
builtin.module attributes {ge.target = "ascend910b"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<200000xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: the buffer ends at byte 400000 of ub, past its 196608 bytes on ascend910b
// CHECK: -----

// -----

// GM buffers are kernel arguments
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<16xf16, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: GM buffers are kernel arguments; isa.buffer places local buffers only
// CHECK: -----

// -----

// an unknown target name
builtin.module attributes {ge.target = "ascend999"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: unknown target 'ascend999'; known targets: ascend310b, ascend910, ascend910b
// CHECK: -----

// -----

// event ids are 0..7
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    isa.set_flag [MTE2, V, 8]
  }
}
// CHECK: Operation does not verify: event id 8 is out of range 0..7
// CHECK: -----

// -----

// a flag orders two pipes
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    isa.wait_flag [V, V, 0]
  }
}
// CHECK: Operation does not verify: a flag orders two different pipes; use isa.pipe_barrier [V] within one pipe
// CHECK: -----

// -----

// ALL is only for barriers
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    isa.set_flag [ALL, V, 0]
  }
}
// CHECK: Operation does not verify: set_flag / wait_flag name two pipes; ALL is only for pipe_barrier
// CHECK: -----

// -----

// vector ops take UB operands
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l1>>
    isa.vadd %a, %a, %a repeat 2 : memref<256xf16, #isa.space<l1>>, memref<256xf16, #isa.space<l1>>, memref<256xf16, #isa.space<l1>>
  }
}
// CHECK: Operation does not verify: isa.vadd takes its dst in ub, got l1
// CHECK: -----

// -----

// a DMA per path: copy_gm_to_ub writes UB
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l1>>
    isa.copy_gm_to_ub %x to %a sizes [256] : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<l1>>
  }
}
// CHECK: Operation does not verify: isa.copy_gm_to_ub takes its dst in ub, got l1
// CHECK: -----

// -----

// GM -> L0B (Load2D GM -> B2) writes L0B only: L0A is filled from L1
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    isa.copy_gm_to_l0b %x to %a sizes [256] : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<l0a>>
  }
}
// CHECK: Operation does not verify: isa.copy_gm_to_l0b takes its dst in l0b, got l0a
// CHECK: -----

// -----

// mmad reads A from L0A
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0b>>
    %c = isa.buffer offset 0 : memref<256xf32, #isa.space<l0c>>
    isa.mmad %c, %a, %a m 16 k 16 n 16 : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0b>>, memref<256xf16, #isa.space<l0b>>
  }
}
// CHECK: Operation does not verify: isa.mmad takes its a in l0a, got l0b
// CHECK: -----

// -----

// at most 255 repeats
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a repeat 256 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: repeat 256 is out of range 1..255
// CHECK: -----

// -----

// at least one repeat
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a repeat 0 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: repeat 0 is out of range 1..255
// CHECK: -----

// -----

// a repeat is 256 bytes: at most 128 f16 elements
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a repeat 1 mask 129 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: mask 129 is out of range 1..128 elements of 2 bytes
// CHECK: -----

// -----

// vector operands start on a 32-byte block
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c3 = arith.constant 3 : index
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a[%c3] repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: src offset 3 is not 32-byte aligned (vector operands start on a block)
// CHECK: -----

// -----

// strides: one per operand
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a repeat 1 blk_stride [1] : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: blk_stride needs one non-negative stride per operand (2)
// CHECK: -----

// -----

// a static access outside the buffer
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vexp %a, %a repeat 3 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: dst elements [0, 384) are outside its 256 elements
// CHECK: -----

// -----

// binary ops take one element type
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    %f = isa.buffer offset 512 : memref<256xf32, #isa.space<ub>>
    isa.vadd %a, %a, %f repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf32, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: isa.vadd takes one element type, got f16, f32
// CHECK: -----

// -----

// moves keep the element type
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %f = isa.buffer offset 0 : memref<256xf32, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %f sizes [256] : memref<1024xf16, #isa.space<gm>> to memref<256xf32, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: isa.copy_gm_to_ub keeps the element type: f16 to f32
// CHECK: -----

// -----

// strides need one entry per dim
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [2, 128] src_strides [1] : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: src_strides needs one stride per dim of sizes [2, 128]
// CHECK: -----

// -----

// a window is a (lo, hi) pair per dim
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c0 = arith.constant 0 : index
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [2, 128] window (%c0, %c0) : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: a window needs a (lo, hi) pair per dim: 4 values, got 2
// CHECK: -----

// -----

// pad needs a window
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.copy_gm_to_ub %x to %a sizes [256] pad 0.0 : f32 : memref<1024xf16, #isa.space<gm>> to memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: pad fills the positions outside a window; it needs a window
// CHECK: -----

// -----

// fixpipe reads the f32 / i32 accumulator
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c = isa.buffer offset 0 : memref<256xf16, #isa.space<l0c>>
    isa.fixpipe %c to %x sizes [256] : memref<256xf16, #isa.space<l0c>> to memref<1024xf16, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: fixpipe reads the f32 or i32 accumulator, got f16
// CHECK: -----

// -----

// FixPipe's vector quant modes (VDEQF16 / VREQ8) read a per-channel scale vector
builtin.module attributes {ge.target = "ascend910b"} {
  isa.kernel @k ins(%x: memref<512xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c = isa.buffer offset 0 : memref<512xi32, #isa.space<l0c>>
    isa.fixpipe %c to %x sizes [512] quant_pre "VDEQF16" : memref<512xi32, #isa.space<l0c>> to memref<512xf16, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: VDEQF16 takes a scale vector with scale_strides (V* modes: a per-channel vector; the others: a scalar)
// CHECK: -----

// -----

// REQ8 writes int8 and needs the requantize scale
builtin.module attributes {ge.target = "ascend910b"} {
  isa.kernel @k ins(%x: memref<512xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c = isa.buffer offset 0 : memref<512xi32, #isa.space<l0c>>
    isa.fixpipe %c to %x sizes [512] quant_pre "REQ8" deq 1.0e-03 : f32 : memref<512xi32, #isa.space<l0c>> to memref<512xf16, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: REQ8 writes i8, got f16
// CHECK: -----

// -----

// mmad works on whole fractals
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    %b = isa.buffer offset 0 : memref<256xf16, #isa.space<l0b>>
    %c = isa.buffer offset 0 : memref<256xf32, #isa.space<l0c>>
    isa.mmad %c, %a, %b m 8 k 32 n 16 : memref<256xf32, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
  }
}
// CHECK: Operation does not verify: m, k, n = 8, 32, 16 must be positive multiples of the fractal 16x16x16
// CHECK: -----

// -----

// mmad accumulates f16 in f32
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    %b = isa.buffer offset 0 : memref<256xf16, #isa.space<l0b>>
    %c = isa.buffer offset 0 : memref<256xf16, #isa.space<l0c>>
    isa.mmad %c, %a, %b m 16 k 16 n 16 : memref<256xf16, #isa.space<l0c>>, memref<256xf16, #isa.space<l0a>>, memref<256xf16, #isa.space<l0b>>
  }
}
// CHECK: Operation does not verify: C must accumulate in f32 for f16 inputs, got f16
// CHECK: -----

// -----

// img2col writes whole fractals
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %c0 = arith.constant 0 : index
    %f = isa.buffer offset 0 : memref<1x4x4x16xf16, #isa.space<l1>>
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<l0a>>
    isa.img2col %f to %a at (%c0, %c0, %c0, %c0) {sizes = array<i64: 8, 32>, fm = array<i64: 1, 4, 4, 16>, kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, out_size = array<i64: 4, 4>, channels = 16 : i64, c0 = 16 : i64} : memref<1x4x4x16xf16, #isa.space<l1>> to memref<256xf16, #isa.space<l0a>>
  }
}
// CHECK: Operation does not verify: sizes 8x32 must be whole 16x16 fractals
// CHECK: -----

// -----

// vcmp writes an i8 (or i1) mask
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vcmp %a, %a, %a mode "lt" repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: vcmp writes an i8 (or i1) mask, got f16
// CHECK: -----

// -----

// vcmp modes
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    %m = isa.buffer offset 512 : memref<256xi8, #isa.space<ub>>
    isa.vcmp %m, %a, %a mode "lte" repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: mode must be one of eq, ne, lt, le, gt, ge, got 'lte'
// CHECK: -----

// -----

// vsel takes an i8 (or i1) mask
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vsel %a, %a, %a, %a repeat 1 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: vsel takes an i8 (or i1) mask, got f16
// CHECK: -----

// -----

// vconv rounding modes
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    %m = isa.buffer offset 512 : memref<256xi8, #isa.space<ub>>
    isa.vconv %m, %a round "up" repeat 1 : memref<256xi8, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: round must be one of rint, floor, ceil, round, trunc, got 'up'
// CHECK: -----

// -----

// vbrcb writes whole blocks
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<1024xf16, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xf16, #isa.space<ub>>
    isa.vbrcb %a, %a repeat 1 mask 16 : memref<256xf16, #isa.space<ub>>, memref<256xf16, #isa.space<ub>>
  }
}
// CHECK: Operation does not verify: vbrcb writes whole blocks; it takes no mask
// CHECK: -----

// -----

// kernel arguments live in GM
builtin.module {
  isa.kernel @k ins(%x: memref<16xf16, #isa.space<ub>>) outs() block_dim 1 {
  }
}
// CHECK: Operation does not verify: kernel argument #0 must be a buffer in #isa.space<gm>, got memref<16xf16, #isa.space<ub>>
// CHECK: -----

// -----

// block_dim >= 1
builtin.module {
  isa.kernel @k ins() outs() block_dim 0 {
  }
}
// CHECK: Operation does not verify: block_dim must be >= 1, got 0
// CHECK: -----

// -----

// a launch passes the kernel's buffer types
builtin.module {
  isa.kernel @k ins(%x: memref<16xf16, #isa.space<gm>>) outs() block_dim 1 {
  }
  func.func @main(%a: memref<8xf16>) {
    isa.launch @k ins(%a : memref<8xf16>)
    func.return
  }
}
// CHECK: Operation does not verify: the launch's buffers do not match the arguments of @k
// CHECK: -----

// -----

// load_scalar reads an integer index
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<4xf32, #isa.space<gm>>) outs() block_dim 1 {
    %r = isa.load_scalar %x bound 4 : memref<4xf32, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: load_scalar reads an integer, got f32
// CHECK: -----

// -----

// the scalar unit reads UB and GM only
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<4xi64, #isa.space<gm>>) outs() block_dim 1 {
    %a = isa.buffer offset 0 : memref<256xi64, #isa.space<l1>>
    %r = isa.load_scalar %a bound 4 : memref<256xi64, #isa.space<l1>>
  }
}
// CHECK: Operation does not verify: isa.load_scalar takes its src in ub or gm, got l1
// CHECK: -----

// -----

// an index outside its buffer
builtin.module attributes {ge.target = "ascend910"} {
  isa.kernel @k ins(%x: memref<4xi64, #isa.space<gm>>) outs() block_dim 1 {
    %c4 = arith.constant 4 : index
    %r = isa.load_scalar %x[%c4] bound 4 : memref<4xi64, #isa.space<gm>>
  }
}
// CHECK: Operation does not verify: src elements [4, 5) are outside its 4 elements
