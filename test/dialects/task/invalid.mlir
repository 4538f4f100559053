// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

task.model @m arena 1024 alignment 0 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
}
// CHECK: Operation does not verify: alignment must be >= 1, got 0
// CHECK: -----

// -----

task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [100, 0] outputs [0, 0] workspace [0, 0] {
}
// CHECK: Operation does not verify: the inputs region starts at 100, not a multiple of the alignment 512
// CHECK: -----

// -----

task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [512, 1024] {
}
// CHECK: Operation does not verify: the workspace region [512, 1536) ends beyond the arena (1024 bytes)
// CHECK: -----

// -----

task.model @m arena 2048 alignment 512 streams 1 events 0 weights [0, 1024] inputs [512, 512] outputs [2048, 0] workspace [2048, 0] {
}
// CHECK: Operation does not verify: the weights region [0, 1024) and the inputs region [512, 1024) overlap
// CHECK: -----

// -----

"task.model"() <{sym_name = "m", arena = 0 : i64, alignment = 512 : i64, streams = 1 : i64, events = 0 : i64, weights = array<i64: 0, 0, 0>, inputs = array<i64: 0, 0>, outputs = array<i64: 0, 0>, workspace = array<i64: 0, 0>}> ({
^bb0:
}) : () -> ()
// CHECK: Operation does not verify: a region is [offset, size], got [0, 0, 0]
// CHECK: -----

// -----

task.model @m arena 2048 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 2048] {
  %a = task.buffer at 100 : tensor<4xf32>
}
// CHECK: Operation does not verify: task.buffer at 100: not a multiple of the alignment 512
// CHECK: -----

// -----

task.model @m arena 2048 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 1024] outputs [1024, 0] workspace [1024, 1024] {
  %a = task.input 0 "x" at 512 : tensor<1x256xf32>
}
// CHECK: Operation does not verify: task.input at 512 (1024 bytes) is not inside the inputs region [0, 1024)
// CHECK: -----

// -----

task.model @m arena 2048 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 1024] outputs [1024, 0] workspace [1024, 1024] {
  %a = task.input 0 "x" at 0 : tensor<4xf32>
  %b = task.input 2 "y" at 512 : tensor<4xf32>
}
// CHECK: Operation does not verify: the model's inputs must be numbered 0..1 once each, got [0, 2]
// CHECK: -----

// -----

func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 0] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  task.launch @k stream 1 block_dim 1 ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>)
}
// CHECK: Operation does not verify: task.launch on stream 1, but the model has 1 stream(s)
// CHECK: -----

// -----

task.model @m arena 0 alignment 512 streams 2 events 1 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
  task.event_record 1 stream 0
}
// CHECK: Operation does not verify: task.event_record of event 1, but the model has 1 event(s)
// CHECK: -----

// -----

task.model @m arena 0 alignment 512 streams 2 events 1 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
  task.event_record 0 stream 0
  task.event_record 0 stream 0
}
// CHECK: Operation does not verify: event 0 is recorded again before anything waits for it
// CHECK: -----

// -----

task.model @m arena 0 alignment 512 streams 2 events 1 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
  task.event_wait 0 stream 1
  task.event_record 0 stream 0
}
// CHECK: Operation does not verify: task.event_wait 0 on stream 1 has no task.event_record 0 before it to wait for
// CHECK: -----

// -----

task.model @m arena 0 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 0] {
  %c = graph.constant dense<1.0> : tensor<4xf32>
}
// CHECK: Operation does not verify: a task.model holds buffers and tasks only, got graph.constant
// CHECK: -----

// -----

task.model @m arena 512 alignment 512 streams 1 events 0 weights [0, 512] inputs [512, 0] outputs [512, 0] workspace [512, 0] {
  %w = task.weight at 0 dense<1.0> : tensor<4xf32> -> tensor<2x4xf32>
}
// CHECK: Operation does not verify: the value's type tensor<4xf32> does not match the buffer tensor<2x4xf32>
// CHECK: -----

// -----

task.model @m arena 512 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 512] {
  %a = task.buffer at 0 : tensor<8xf32>
  %v = task.view %a : tensor<8xf32> to tensor<4xf32>
}
// CHECK: Operation does not verify: a view keeps the bytes: tensor<8xf32> (32 bytes) to tensor<4xf32> (16 bytes)
// CHECK: -----

// -----

task.model @m arena 512 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 0] outputs [0, 0] workspace [0, 512] {
  %a = task.buffer at 0 : tensor<8xf32>
  %v = task.view %a at 20 : tensor<8xf32> to tensor<4xf32>
}
// CHECK: Operation does not verify: a window of 16 bytes at 20 does not fit in tensor<8xf32> (32 bytes)
// CHECK: -----

// -----

func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 0] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  task.launch @k stream 0 block_dim 0 ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>)
}
// CHECK: Operation does not verify: block_dim must be >= 1, got 0
// CHECK: -----

// -----

task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 0] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  task.launch @missing stream 0 block_dim 1 ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>)
}
// CHECK: Operation does not verify: no kernel named @missing (a func.func or a kernel op) in the module
// CHECK: -----

// -----

func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 0] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<2x2xf32>
  task.launch @k stream 0 block_dim 1 ins(%x : tensor<4xf32>) outs(%y : tensor<2x2xf32>)
}
// CHECK: Operation does not verify: the launch passes ins (tensor<4xf32>) outs (tensor<2x2xf32>) but @k takes ins (tensor<4xf32>) outs (tensor<4xf32>)
// CHECK: -----

// -----

task.model @m arena 1024 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 0] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<8xf32>
  task.copy %x to %y stream 0 : tensor<4xf32> to tensor<8xf32>
}
// CHECK: Operation does not verify: a copy moves whole buffers: 16 bytes to a 32-byte destination
// CHECK: -----

// -----

func.func @f() {
  %a = task.buffer at 0 : tensor<4xf32>
  func.return
}
// CHECK: 'task.buffer' expects parent op 'task.model'

// -----

// A SuperKernel's sub-kernels are consecutive tasks of one stream: an event between two
// of them is refused.
func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @m arena 2048 alignment 512 streams 2 events 1 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 512] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  %a = task.buffer at 1024 : tensor<4xf32>
  task.launch @k stream 0 block_dim 1 super_kernel 0 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
  task.event_record 0 stream 0
  task.event_wait 0 stream 1
  task.launch @k stream 0 block_dim 1 super_kernel 0 ins(%a : tensor<4xf32>) outs(%y : tensor<4xf32>)
}
// CHECK: Operation does not verify: task.launch @k of super_kernel 0 does not follow the launch before it of that super_kernel on stream 0: a SuperKernel's sub-kernels are consecutive tasks of one stream
// CHECK: -----

// -----

// ... and so is one spread over two streams.
func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @m arena 2048 alignment 512 streams 2 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 512] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  %a = task.buffer at 1024 : tensor<4xf32>
  task.launch @k stream 0 block_dim 1 super_kernel 3 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
  task.launch @k stream 1 block_dim 1 super_kernel 3 ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>)
}
// CHECK: Operation does not verify: task.launch @k of super_kernel 3 does not follow the launch before it of that super_kernel on stream 0: a SuperKernel's sub-kernels are consecutive tasks of one stream
