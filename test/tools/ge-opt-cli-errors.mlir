// RUN: ge-opt %s | filecheck %s --check-prefix=OK
// RUN: not ge-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not ge-opt %s -p 'canonicalize{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not ge-opt %t.does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// Command-line mistakes end with `ge-opt: error:` and a non-zero exit, never a traceback;
// the file itself is valid and round-trips.

// OK:          builtin.module {
// OK-NEXT:       func.func @fine(%x: tensor<2x3xf32>) {
// OK-NEXT:         %r = graph.relu %x : tensor<2x3xf32>

// PASS-NOT:    Traceback
// PASS:        ge-opt: error: Unrecognized passes: ['no-such-pass']
// PASS-NOT:    Traceback

// OPTION-NOT:  Traceback
// OPTION:      ge-opt: error: {{.*}}bogus
// OPTION-NOT:  Traceback

// MISSING-NOT: Traceback
// MISSING:     ge-opt: error: no such file: {{.*}}does-not-exist.mlir
// MISSING-NOT: Traceback

func.func @fine(%x: tensor<2x3xf32>) {
  %r = graph.relu %x : tensor<2x3xf32>
  func.return
}
