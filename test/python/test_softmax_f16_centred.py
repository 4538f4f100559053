"""The attention softmax of f16 rows (a mask added to the scores, rows of 128): the row max
is taken on the f16 rows without destroying them (its first block halving goes into the
result's buffer, free until the exponentials), subtracted there in f16 -- half the repeats
of an f32 subtraction after the conversion -- and the exponentials taken on f16; only they
are converted to f32, for their sum. The error against float64 stays the f16 result's own
rounding."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import f16, f32

sys.path.insert(0, str(Path(__file__).parent))
from test_isa_vector import Result, random_args, region


def _masked_softmax(rows: int):
    x, m = f"tensor<{rows}x128xf16>", "tensor<128xf16>"
    return region(f"""
    func.func @f(%x: {x}, %m: {m}) -> {x} {{
      %a = graph.add %x, %m : ({x}, {m}) -> {x}
      %y = graph.softmax %a {{axis = 1 : i64}} : {x}
      func.return %y : {x}
    }}""")


@pytest.mark.parametrize("rows", [64, 128])
def test_max_subtracted_in_f16(rows):
    vop = _masked_softmax(rows)
    rng = np.random.default_rng(5)
    args = random_args(vop, rng)
    args[0] = (rng.standard_normal(args[0].shape) * 3).astype(np.float16)
    res = Result(vop, args)
    res.check()
    a = (args[0].astype(np.float64).reshape(rows, 128) + args[1].astype(np.float64)).astype(np.float16)
    a = a.astype(np.float64)
    want = np.exp(a - a.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    err = np.abs(res.got[0].astype(np.float64).reshape(rows, 128) - want).max()
    assert err < 3e-4  # the f16 result's half ulp near 1 is 2.4e-4
    (sub,) = res.vector_ops("isa.vsub")
    assert sub.buffer("dst").type.element_type == f16 and sub.repeats == rows * 128 // 128
    # the whole-tile f32 instructions: the exponentials' conversion and the sum's first group
    # reduction (a value per block)
    big32 = [op.name for op in res.vector_ops() if op.repeats >= rows and any(
        op.buffer(r).type.element_type == f32 for r in op.BUFFERS)]
    assert sorted(big32) == ["isa.vcgadd", "isa.vconv"]
