"""Rows narrower than a repeat against a row every row reads (a Cube epilogue's bias on
[128, 64] f16 tiles, BERT's FFN-in): the row is repeated in a temporary so that whole
repeats cover several rows -- half the repeats of one half-empty repeat per row."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ge import targets

sys.path.insert(0, str(Path(__file__).parent))
from test_isa_vector import TARGET, Result, random_args, region


def _add(rows: int, width: int, bias_shape: str) -> object:
    x, y = f"tensor<{rows}x{width}xf16>", f"tensor<{rows}x{width}xf16>"
    return region(f"""
    func.func @f(%x: {x}, %b: {bias_shape}) -> {y} {{
      %y = graph.add %x, %b : ({x}, {bias_shape}) -> {y}
      func.return %y : {y}
    }}""")


@pytest.mark.parametrize("rows,width,reps", [(128, 64, 64), (256, 64, 128)])
def test_bias_rows_take_full_repeats(rows, width, reps):
    vop = _add(rows, width, f"tensor<{width}xf16>")
    res = Result(vop, random_args(vop, np.random.default_rng(1)))
    res.check()
    assert res.errors()[0] == 0.0
    (add,) = res.vector_ops("isa.vadd")
    assert add.repeats == reps and add.mask_of(targets.load_target(TARGET)) == 128  # full repeats of 128 f16
    # one copy repeats the bias row over a repeat's worth of rows
    copies = [op for op in res.kernel.walk() if op.name == "isa.copy_ub_to_ub"]
    assert len(copies) == 1


@pytest.mark.parametrize("rows", [127, 64])
def test_rows_that_do_not_pay_keep_the_row_layout(rows):
    # 127 rows of 64 do not pair up; 64 rows save 32 repeats, less than the copy's start-up:
    # one (half-empty) repeat per row, no copy
    vop = _add(rows, 64, "tensor<64xf16>")
    res = Result(vop, random_args(vop, np.random.default_rng(2)))
    res.check()
    assert sum(op.repeats for op in res.vector_ops("isa.vadd")) == rows
    assert not [op for op in res.kernel.walk() if op.name == "isa.copy_ub_to_ub"]
