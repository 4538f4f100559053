"""`isa_analysis.instructions` gives each access its byte span from the kernel's memo of
ranges by terms (issue 17: `_span` walked the loop bounds of every access): the same span
as `_span` computes, on the insert-sync lit kernels and on kernels of a compiled model."""

from __future__ import annotations

from pathlib import Path

import pytest

from ge.dialects import isa
from ge.ir import parse_module
from ge.transforms import isa_analysis as ia
from ge.transforms.plan_local_memory import module_target

HERE = Path(__file__).parent
LIT_CASES = [c for c in (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
             if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]


def _spans(module) -> tuple[int, int, int]:
    """(accesses, with a span over loop counters, without a span); asserts each span."""
    target = module_target(module)
    counts = [0, 0, 0]
    for k in module.walk():
        if isinstance(k, isa.KernelOp):
            for ins in ia.instructions(k, target):
                for a in ins.accesses:
                    assert a.span == ia._span(a), (ins.op.name, a)
                    counts[0] += 1
                    counts[1] += a.span is not None and bool(a.offset.terms)
                    counts[2] += a.span is None
    return tuple(counts)


def test_spans_on_the_lit_kernels():
    total = [0, 0, 0]
    for text in LIT_CASES:
        for i, n in enumerate(_spans(parse_module(text))):
            total[i] += n
    assert total[0] > 100 and total[1] > 5, total


def repeated_blocks_isa():
    """test_kernel_dedup's repeated blocks lowered to isa kernels, before insert-sync."""
    import importlib.util

    from ge.frontend.onnx import import_model
    from ge.ir import run_passes

    spec = importlib.util.spec_from_file_location("dedup_models", HERE / "test_kernel_dedup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module = import_model(mod.repeated_blocks().SerializeToString())
    run_passes(module, "graph-optimize," + mod.TILE_PIPELINE + ",to-isa,plan-local-memory")
    return module


@pytest.mark.slow
def test_spans_on_a_compiled_model():
    module = repeated_blocks_isa()
    accesses, _, unspanned = _spans(module)
    # (offsets over block indices: no span; 256 accesses, 30 unspanned since the 910's conv
    # biases are copied in once per kernel, not per tile: to_isa.resident_bias_plans)
    assert accesses > 200 and unspanned > 10
