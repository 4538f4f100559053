// RUN: GE_ROUNDTRIP
// RUN: GE_GENERIC_ROUNDTRIP

func.func private @k0_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  func.return %c : tensor<1x4x8x8xf32>
}
func.func private @k1_relu(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %r = graph.relu %x : tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}
task.model @main arena 6656 alignment 512 streams 2 events 1 weights [0, 512] inputs [512, 1024] outputs [1536, 4096] workspace [5632, 1024] {
  %x = task.input 0 "x" at 512 : tensor<1x4x8x8xf32>
  %y = task.output 0 "y" at 1536 : tensor<1x4x8x8xf32>
  %z = task.output 1 "z" at 2560 : tensor<1x256xf32>
  %cat = task.output 2 "cat" at 3584 : tensor<1x8x8x8xf32>
  %w = task.weight at 0 dense<5.000000e-01> : tensor<4x4x1x1xf32>
  %a = task.buffer at 5632 : tensor<1x4x8x8xf32>
  task.launch @k0_conv stream 0 block_dim 1 ins(%x, %w : tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) outs(%a : tensor<1x4x8x8xf32>)
  task.event_record 0 stream 0
  task.event_wait 0 stream 1
  task.launch @k1_relu stream 1 block_dim 2 ins(%a : tensor<1x4x8x8xf32>) outs(%y : tensor<1x4x8x8xf32>)
  %v = task.view %a : tensor<1x4x8x8xf32> to tensor<1x256xf32>
  task.copy %v to %z stream 0 : tensor<1x256xf32> to tensor<1x256xf32>
  %lo = task.view %cat at 0 : tensor<1x8x8x8xf32> to tensor<1x4x8x8xf32>
  %hi = task.view %cat at 1024 : tensor<1x8x8x8xf32> to tensor<1x4x8x8xf32>
  task.copy %x to %lo stream 0 : tensor<1x4x8x8xf32> to tensor<1x4x8x8xf32>
  task.copy %a to %hi stream 0 : tensor<1x4x8x8xf32> to tensor<1x4x8x8xf32>
}

// CHECK:      task.model @main arena 6656 alignment 512 streams 2 events 1 weights [0, 512] inputs [512, 1024] outputs [1536, 4096] workspace [5632, 1024] {
// CHECK-NEXT:   %x = task.input 0 "x" at 512 : tensor<1x4x8x8xf32>
// CHECK-NEXT:   %y = task.output 0 "y" at 1536 : tensor<1x4x8x8xf32>
// CHECK-NEXT:   %z = task.output 1 "z" at 2560 : tensor<1x256xf32>
// CHECK-NEXT:   %cat = task.output 2 "cat" at 3584 : tensor<1x8x8x8xf32>
// CHECK-NEXT:   %w = task.weight at 0 dense<5.000000e-01> : tensor<4x4x1x1xf32>
// CHECK-NEXT:   %a = task.buffer at 5632 : tensor<1x4x8x8xf32>
// CHECK-NEXT:   task.launch @k0_conv stream 0 block_dim 1 ins(%x, %w : tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) outs(%a : tensor<1x4x8x8xf32>)
// CHECK-NEXT:   task.event_record 0 stream 0
// CHECK-NEXT:   task.event_wait 0 stream 1
// CHECK-NEXT:   task.launch @k1_relu stream 1 block_dim 2 ins(%a : tensor<1x4x8x8xf32>) outs(%y : tensor<1x4x8x8xf32>)
// CHECK-NEXT:   %v = task.view %a : tensor<1x4x8x8xf32> to tensor<1x256xf32>
// CHECK-NEXT:   task.copy %v to %z stream 0 : tensor<1x256xf32> to tensor<1x256xf32>
// CHECK-NEXT:   %lo = task.view %cat at 0 : tensor<1x8x8x8xf32> to tensor<1x4x8x8xf32>
// CHECK-NEXT:   %hi = task.view %cat at 1024 : tensor<1x8x8x8xf32> to tensor<1x4x8x8xf32>
// CHECK-NEXT:   task.copy %x to %lo stream 0
// CHECK-NEXT:   task.copy %a to %hi stream 0
// CHECK-NEXT: }

// -----

// Buffers may be memrefs (the tile and isa levels bufferize to GM memrefs); a weight whose
// buffer type differs from its value's type prints it after `->`. A model with no tasks is valid.
task.model @weights_only arena 1024 alignment 512 streams 1 events 0 weights [0, 512] inputs [512, 0] outputs [512, 512] workspace [1024, 0] {
  %w = task.weight at 0 dense<[1.0, 2.0]> : tensor<2xf32> -> memref<2xf32>
  %o = task.output 0 "o" at 512 : memref<2xf32>
}

// CHECK:      task.model @weights_only arena 1024 alignment 512 streams 1 events 0 weights [0, 512] inputs [512, 0] outputs [512, 512] workspace [1024, 0] {
// CHECK-NEXT:   %w = task.weight at 0 dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> -> memref<2xf32>
// CHECK-NEXT:   %o = task.output 0 "o" at 512 : memref<2xf32>
// CHECK-NEXT: }

// -----

task.model @empty arena 0 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
}

// CHECK:      task.model @empty arena 0 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
// CHECK-NEXT: }

// CHECK-GENERIC:      "task.model"() <{sym_name = "main", arena = 6656 : i64, alignment = 512 : i64, streams = 2 : i64, events = 1 : i64, weights = array<i64: 0, 512>, inputs = array<i64: 512, 1024>, outputs = array<i64: 1536, 4096>, workspace = array<i64: 5632, 1024>}> ({
// CHECK-GENERIC-NEXT:   %x = "task.input"() <{index = 0 : i64, name = "x", offset = 512 : i64}> : () -> tensor<1x4x8x8xf32>
// CHECK-GENERIC:        %w = "task.weight"() <{value = dense<5.000000e-01> : tensor<4x4x1x1xf32>, offset = 0 : i64}> : () -> tensor<4x4x1x1xf32>
// CHECK-GENERIC-NEXT:   %a = "task.buffer"() <{offset = 5632 : i64}> : () -> tensor<1x4x8x8xf32>
// CHECK-GENERIC-NEXT:   "task.launch"(%x, %w, %a) <{callee = @k0_conv, stream = 0 : i64, block_dim = 1 : i64, operandSegmentSizes = array<i32: 2, 1>}> : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<1x4x8x8xf32>) -> ()
// CHECK-GENERIC-NEXT:   "task.event_record"() <{event = 0 : i64, stream = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:   "task.event_wait"() <{event = 0 : i64, stream = 1 : i64}> : () -> ()
// CHECK-GENERIC:        %v = "task.view"(%a) : (tensor<1x4x8x8xf32>) -> tensor<1x256xf32>
// CHECK-GENERIC-NEXT:   "task.copy"(%v, %z) <{stream = 0 : i64}> : (tensor<1x256xf32>, tensor<1x256xf32>) -> ()
// CHECK-GENERIC-NEXT:   %lo = "task.view"(%cat) <{offset = 0 : i64}> : (tensor<1x8x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-GENERIC:      "task.model"() <{sym_name = "weights_only"
// CHECK-GENERIC-NEXT:   %w = "task.weight"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, offset = 0 : i64}> : () -> memref<2xf32>
