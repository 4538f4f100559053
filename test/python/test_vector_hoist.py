"""A Cube epilogue's one-element constants (BERT's erf GELU as torch exports it: x / sqrt(2),
+ 1, * 0.5, each constant a one-element input) are spread over a block at the start of the
region, and a divisor's reciprocal is taken in place beside the region's first step: the
vrec is not a dependent step of its own before its vmul."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from test_isa_vector import Result, random_args, region

A, B, C, Y = "tensor<128x64xf32>", "tensor<64xf16>", "tensor<f16>", "tensor<128x64xf16>"


def _gelu_epilogue():
    return region(f"""
    func.func @f(%acc: {A}, %b: {B}, %s: {C}, %one: {C}, %half: {C}) -> {Y} {{
      %x16 = graph.cast %acc : {A} to {Y}
      %x = graph.add %x16, %b : ({Y}, {B}) -> {Y}
      %d = graph.div %x, %s : ({Y}, {C}) -> {Y}
      %e = graph.erf %d : {Y}
      %p = graph.add %e, %one : ({Y}, {C}) -> {Y}
      %m = graph.mul %x, %p : ({Y}, {Y}) -> {Y}
      %g = graph.mul %m, %half : ({Y}, {C}) -> {Y}
      func.return %g : {Y}
    }}""")


def _steps(res: Result) -> list[list[str]]:
    """The Vector instructions between pipe barriers (each list: one dependent step)."""
    steps: list[list[str]] = [[]]
    for op in res.kernel.walk():
        if op.name == "isa.pipe_barrier":
            steps.append([])
        elif op.name.startswith("isa.v") or op.name == "isa.copy_ub_to_ub":
            steps[-1].append(op.name)
    return [s for s in steps if s]


def test_gelu_constants_hoisted():
    vop = _gelu_epilogue()
    args = random_args(vop, np.random.default_rng(3))
    args[2][...], args[3][...], args[4][...] = np.float16(np.sqrt(2)), 1, 0.5
    res = Result(vop, args)
    res.check()
    assert res.errors()[0] < 1e-3
    steps = _steps(res)
    (rec,) = [s for s in steps if "isa.vrec" in s]
    assert len(rec) > 1  # the reciprocal shares a step
    # the constants' block copies come before the first computing instruction
    names = [n for s in steps for n in s]
    assert names[:3] == ["isa.copy_ub_to_ub"] * 3
    assert len(res.vector_ops("isa.vrec")) == 1 and len(res.vector_ops("isa.vdiv")) == 0


def test_divisor_read_by_another_op_keeps_its_value():
    # the constant is also added: its block must keep c, the reciprocal goes elsewhere
    vop = region(f"""
    func.func @f(%acc: {A}, %s: {C}) -> {Y} {{
      %x = graph.cast %acc : {A} to {Y}
      %d = graph.div %x, %s : ({Y}, {C}) -> {Y}
      %e = graph.add %d, %s : ({Y}, {C}) -> {Y}
      func.return %e : {Y}
    }}""")
    args = random_args(vop, np.random.default_rng(4))
    args[1][...] = 3
    res = Result(vop, args)
    res.check()
    assert res.errors()[0] < 1e-3
