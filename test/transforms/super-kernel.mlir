// RUN: ge-opt %s -p super-kernel --split-input-file | filecheck %s
// RUN: ge-opt %s -p 'super-kernel{max-sub-kernels=2}' --split-input-file | filecheck %s --check-prefix=CAP

// Each stream's maximal runs of consecutive launches become SuperKernels, numbered in
// issue order; an event between two launches of a stream ends a run, a copy too, and a
// lone launch stays a plain launch. Launches of another stream may interleave.

func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @main arena 4096 alignment 512 streams 2 events 1 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 3072] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  %a = task.buffer at 1024 : tensor<4xf32>
  %b = task.buffer at 1536 : tensor<4xf32>
  %c = task.buffer at 2048 : tensor<4xf32>
  %d = task.buffer at 2560 : tensor<4xf32>
  %e = task.buffer at 3072 : tensor<4xf32>
  task.launch @k stream 0 block_dim 2 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
  task.launch @k stream 0 block_dim 4 ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>)
  task.launch @k stream 1 block_dim 1 ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>)
  task.launch @k stream 0 block_dim 1 ins(%b : tensor<4xf32>) outs(%c : tensor<4xf32>)
  task.event_record 0 stream 1
  task.event_wait 0 stream 0
  task.launch @k stream 0 block_dim 1 ins(%c : tensor<4xf32>) outs(%d : tensor<4xf32>)
  task.copy %d to %a stream 0 : tensor<4xf32> to tensor<4xf32>
  task.launch @k stream 0 block_dim 1 ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>)
  task.launch @k stream 0 block_dim 1 ins(%b : tensor<4xf32>) outs(%y : tensor<4xf32>)
}

// CHECK:      task.launch @k stream 0 block_dim 2 super_kernel 0 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
// CHECK-NEXT: task.launch @k stream 0 block_dim 4 super_kernel 0 ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>)
// CHECK-NEXT: task.launch @k stream 1 block_dim 1 ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>)
// CHECK-NEXT: task.launch @k stream 0 block_dim 1 super_kernel 0 ins(%b : tensor<4xf32>) outs(%c : tensor<4xf32>)
// CHECK-NEXT: task.event_record 0 stream 1
// CHECK-NEXT: task.event_wait 0 stream 0
// CHECK-NEXT: task.launch @k stream 0 block_dim 1 ins(%c : tensor<4xf32>) outs(%d : tensor<4xf32>)
// CHECK-NEXT: task.copy %d to %a stream 0
// CHECK-NEXT: task.launch @k stream 0 block_dim 1 super_kernel 1 ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>)
// CHECK-NEXT: task.launch @k stream 0 block_dim 1 super_kernel 1 ins(%b : tensor<4xf32>) outs(%y : tensor<4xf32>)

// With at most two sub-kernels, the first run of three splits after two; its third launch
// is left alone.
// CAP:      task.launch @k stream 0 block_dim 2 super_kernel 0
// CAP-NEXT: task.launch @k stream 0 block_dim 4 super_kernel 0
// CAP-NEXT: task.launch @k stream 1 block_dim 1 ins
// CAP-NEXT: task.launch @k stream 0 block_dim 1 ins
// CAP:      task.launch @k stream 0 block_dim 1 super_kernel 1
// CAP-NEXT: task.launch @k stream 0 block_dim 1 super_kernel 1

// -----

// The pass renumbers what an earlier run marked: a stale mark on a lone launch goes.
func.func private @k(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
task.model @again arena 2048 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 512] outputs [512, 512] workspace [1024, 512] {
  %x = task.input 0 "x" at 0 : tensor<4xf32>
  %y = task.output 0 "y" at 512 : tensor<4xf32>
  %a = task.buffer at 1024 : tensor<4xf32>
  task.launch @k stream 0 block_dim 1 super_kernel 7 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
  task.copy %a to %y stream 0 : tensor<4xf32> to tensor<4xf32>
}
// CHECK-LABEL: task.model @again
// CHECK:       task.launch @k stream 0 block_dim 1 ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>)
