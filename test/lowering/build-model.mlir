// RUN: ge-opt %s -p build-model --split-input-file --verify-diagnostics | filecheck %s
// RUN: ge-opt %s -p 'build-model{disable-reuse-memory=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOREUSE
// RUN: ge-opt %s -p 'build-model{single-stream=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=SINGLE
// RUN: ge-opt %s -p 'build-model{debug=true}' --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// A chain of four kernels: the third result reuses the first one's bytes (its lifetime has
// ended), the last result is written straight into the outputs region. Regions: weights,
// inputs, outputs, then the workspace, each 512-byte aligned (ascend910's alignment.gm).
func.func @chain(%x: tensor<256xf32> {ge.name = "in"}) -> (tensor<256xf32> {ge.name = "out"}) {
  %a = fusion.group "elementwise" [] ins(%x) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.relu %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  %b = fusion.group "elementwise" [] ins(%a) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.sigmoid %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  %c = fusion.group "elementwise" [] ins(%b) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.tanh %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  %d = fusion.group "elementwise" [] ins(%c) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.neg %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  func.return %d : tensor<256xf32>
}
// CHECK-LABEL: func.func private @k0_a(%{{.*}}: tensor<256xf32>) -> tensor<256xf32> attributes {ge.kind = "elementwise"} {
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    func.return
// CHECK:       func.func private @k3_d
// CHECK:       task.model @chain arena 4096 alignment 512 streams 1 events 0 weights [0, 0] inputs [0, 1024] outputs [1024, 1024] workspace [2048, 2048] {
// CHECK-NEXT:    %in = task.input 0 "in" at 0 : tensor<256xf32>
// CHECK-NEXT:    %out = task.output 0 "out" at 1024 : tensor<256xf32>
// CHECK-NEXT:    %a = task.buffer at [[A:[0-9]+]] : tensor<256xf32>
// CHECK-NEXT:    task.launch @k0_{{.*}} stream 0 block_dim 1 ins(%in : tensor<256xf32>) outs(%a : tensor<256xf32>)
// CHECK-NEXT:    %b = task.buffer at [[B:[0-9]+]] : tensor<256xf32>
// CHECK-NEXT:    task.launch @k1_{{.*}} stream 0 block_dim 1 ins(%a : tensor<256xf32>) outs(%b : tensor<256xf32>)
// CHECK-NEXT:    %c = task.buffer at [[A]] : tensor<256xf32>
// CHECK-NEXT:    task.launch @k2_{{.*}} stream 0 block_dim 1 ins(%b : tensor<256xf32>) outs(%c : tensor<256xf32>)
// CHECK-NEXT:    task.launch @k3_{{.*}} stream 0 block_dim 1 ins(%c : tensor<256xf32>) outs(%out : tensor<256xf32>)
// CHECK-NEXT:  }
// NOREUSE-LABEL: task.model @chain arena 5120 {{.*}} workspace [2048, 3072] {
// NOREUSE:         %a = task.buffer at 2048
// NOREUSE:         %b = task.buffer at 3072
// NOREUSE:         %c = task.buffer at 4096
// SINGLE-LABEL:  task.model @chain arena 4096 alignment 512 streams 1 events 0
// DEBUG: [build-model] @chain: 4 launches, 0 copies; 1 stream(s), 0 event(s) on 0 id(s); workspace 2048 bytes (greedy-by-size), lower bound 2048 (x1.000), no reuse 3072; weights 0, inputs 1024, outputs 1024; arena 4096 bytes

// -----

// Two independent branches from one input: the second takes stream 1, waits for nothing
// it does not read, and the join waits for it with an event. single-stream puts both on
// stream 0 without events.
func.func @branches(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = fusion.group "elementwise" [] ins(%x) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.relu %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  %b = fusion.group "elementwise" [] ins(%x) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>):
    %1 = graph.sigmoid %0 : tensor<256xf32>
    fusion.yield %1 : tensor<256xf32>
  }
  %c = fusion.group "elementwise" [] ins(%a, %b) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%0: tensor<256xf32>, %1: tensor<256xf32>):
    %2 = graph.add %0, %1 : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    fusion.yield %2 : tensor<256xf32>
  }
  func.return %c : tensor<256xf32>
}
// CHECK-LABEL: task.model @branches arena 4096 alignment 512 streams 2 events 1
// CHECK:         task.launch @{{.*}} stream 0 block_dim 1 ins(%x : tensor<256xf32>) outs(%a : tensor<256xf32>)
// CHECK:         task.launch @{{.*}} stream 1 block_dim 1 ins(%x : tensor<256xf32>) outs(%b : tensor<256xf32>)
// CHECK-NEXT:    task.event_record 0 stream 1
// CHECK-NEXT:    task.event_wait 0 stream 0
// CHECK-NEXT:    task.launch @{{.*}} stream 0 block_dim 1 ins(%a, %b : tensor<256xf32>, tensor<256xf32>)
// SINGLE-LABEL:  task.model @branches arena 4096 alignment 512 streams 1 events 0
// SINGLE-NOT:      task.event_record
// SINGLE:          task.launch @{{.*}} stream 0 block_dim 1 ins(%x : tensor<256xf32>) outs(%b : tensor<256xf32>)

// -----

// Weights get their own region (a constant that only gives a reshape its shape is not one);
// a view costs no memory: the output is the kernel's result seen with the output's shape,
// written in place. Outputs that are a graph input, or a tensor an earlier output already
// shows, are copied.
func.func @views_and_copies(%x: tensor<2x128xf32>) -> (tensor<256xf32>, tensor<2x128xf32>, tensor<256xf32>) {
  %w = graph.constant dense<2.0> : tensor<2x128xf32>
  %shape = graph.constant dense<[256]> : tensor<1xi64>
  %m = fusion.group "elementwise" [] ins(%x, %w) : (tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<2x128xf32> {
  ^bb0(%0: tensor<2x128xf32>, %1: tensor<2x128xf32>):
    %2 = graph.mul %0, %1 : (tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<2x128xf32>
    fusion.yield %2 : tensor<2x128xf32>
  }
  %flat = graph.reshape %m, %shape : (tensor<2x128xf32>, tensor<1xi64>) -> tensor<256xf32>
  func.return %flat, %x, %flat : tensor<256xf32>, tensor<2x128xf32>, tensor<256xf32>
}
// CHECK-LABEL: task.model @views_and_copies arena 5120 alignment 512 streams 2 events 0 weights [0, 1024] inputs [1024, 1024] outputs [2048, 3072] workspace [5120, 0] {
// CHECK-NEXT:    %x = task.input 0 "x" at 1024 : tensor<2x128xf32>
// CHECK-NEXT:    %output0 = task.output 0 "output0" at 2048 : tensor<256xf32>
// CHECK-NEXT:    %output1 = task.output 1 "output1" at 3072 : tensor<2x128xf32>
// CHECK-NEXT:    %output2 = task.output 2 "output2" at 4096 : tensor<256xf32>
// CHECK-NEXT:    %w = task.weight at 0 dense<2.000000e+00> : tensor<2x128xf32>
// CHECK-NOT:     task.weight
// CHECK-NEXT:    %[[V:.*]] = task.view %output0 : tensor<256xf32> to tensor<2x128xf32>
// CHECK-NEXT:    task.launch @{{.*}} stream 0 block_dim 1 ins(%x, %w : tensor<2x128xf32>, tensor<2x128xf32>) outs(%[[V]] : tensor<2x128xf32>)
// CHECK-NEXT:    task.copy %x to %output1 stream 1 : tensor<2x128xf32> to tensor<2x128xf32>
// CHECK-NEXT:    task.copy %output0 to %output2 stream 0 : tensor<256xf32> to tensor<256xf32>
// CHECK-NEXT:  }

// -----

// A concat whose inputs are consecutive slabs of its result is a copy per input into a
// window of the result, each free to start when its own input is ready (here, the
// pass-through input on a second stream while the first kernel runs).
func.func @concat(%x: tensor<1x128xf32>) -> tensor<1x256xf32> {
  %a = fusion.group "elementwise" [] ins(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32> {
  ^bb0(%0: tensor<1x128xf32>):
    %1 = graph.relu %0 : tensor<1x128xf32>
    fusion.yield %1 : tensor<1x128xf32>
  }
  %c = fusion.group "opaque" [] ins(%a, %x) : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x256xf32> {
  ^bb0(%0: tensor<1x128xf32>, %1: tensor<1x128xf32>):
    %2 = graph.concat %0, %1 {axis = 1 : i64} : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x256xf32>
    fusion.yield %2 : tensor<1x256xf32>
  }
  func.return %c : tensor<1x256xf32>
}
// CHECK-LABEL: task.model @concat
// CHECK-SAME:    streams 2
// CHECK:         %[[LO:.*]] = task.view %[[C:.*]] at 0 : tensor<1x256xf32> to tensor<1x128xf32>
// CHECK-NEXT:    task.copy %a to %[[LO]] stream 0 : tensor<1x128xf32> to tensor<1x128xf32>
// CHECK-NEXT:    %[[HI:.*]] = task.view %[[C]] at 512 : tensor<1x256xf32> to tensor<1x128xf32>
// CHECK-NEXT:    task.copy %x to %[[HI]] stream 1 : tensor<1x128xf32> to tensor<1x128xf32>
// CHECK-NOT:     fusion.group
// CHECK-NOT:     graph.concat

// -----

// Must not split: along axis 1 of a 2x... tensor the inputs interleave in the result.
func.func @concat_interleaved(%x: tensor<2x128xf32>, %y: tensor<2x128xf32>) -> tensor<2x256xf32> {
  %c = fusion.group "opaque" [] ins(%x, %y) : (tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<2x256xf32> {
  ^bb0(%0: tensor<2x128xf32>, %1: tensor<2x128xf32>):
    %2 = graph.concat %0, %1 {axis = 1 : i64} : (tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<2x256xf32>
    fusion.yield %2 : tensor<2x256xf32>
  }
  func.return %c : tensor<2x256xf32>
}
// CHECK-LABEL: func.func private @k0_c(%{{.*}}: tensor<2x128xf32>, %{{.*}}: tensor<2x128xf32>) -> tensor<2x256xf32> attributes {ge.kind = "opaque"} {
// CHECK-NEXT:    graph.concat
// CHECK:       task.model @concat_interleaved
// CHECK:         task.launch @k0_c stream 0 block_dim 1 ins(%x, %y : tensor<2x128xf32>, tensor<2x128xf32>)

// -----

// Every compute op must be inside a kernel.
func.func @not_fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: build-model: graph.relu ('r') is not a kernel launch, a view or a constant; run `fuse` first so that every compute op belongs to a kernel
