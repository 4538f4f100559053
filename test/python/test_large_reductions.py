"""Reductions whose reduced extent is far beyond UB (256 KiB on the 910): the Vector tiler
visits the reduced extent in chunks and accumulates (lowering/tile_vector.py, `Chunk`),
as a TBE reduce kernel does, instead of stopping with a UB overflow.

Each model is one ONNX node, compiled by `ge.compile` to the isa level, run on the
simulator and compared with onnxruntime. Tolerances:
- f32 (`must_keep_origin_dtype`): 1e-4 of the output scale -- the chunks change the
  summation order (partial sums per chunk, then the chunks in turn), so the result differs
  from onnxruntime's by f32 rounding that grows with the extent (about 1e-6 here).
- f16 (`force_fp16`, ATC's default): 3e-2 of the output scale, the light models' f16
  tolerance (test_tile_models.py): every chunk's partial is rounded to f16 once.

Softmax, LogSoftmax and LayerNormalization keep their whole row in UB (a two-pass chunked
row is not implemented): a row beyond UB is refused with an error naming the node and
saying so, never a traceback.
"""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import ge
from ge.compiler import CompileError

F32_TOL = 1e-4
F16_TOL = 3e-2


def _model(op: str, shape: list[int], **attrs):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(op, ["x"], ["y"], name="big", **attrs)
    graph = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _chain(shape: list[int], nodes: list[tuple[str, dict]]):
    """x -> nodes[0] -> nodes[1] ... -> y (one input each), named n0, n1, ..."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    names = ["x", *[f"n{i}" for i in range(len(nodes) - 1)], "y"]
    made = [helper.make_node(op, [names[i]], [names[i + 1]], name=f"n{i}", **attrs) for i, (op, attrs) in enumerate(nodes)]
    graph = helper.make_graph(made, "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, shape, precision: str, positive: bool = False, dump=None) -> str:
    """Compile, run on the simulator, compare with onnxruntime; returns the plans the
    tile stage chose (its kernels' `tile.plan` attributes) when `dump` is a directory."""
    rng = np.random.default_rng(len(shape) + sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    if positive:  # a product: +-1 and a few 2s and halves, so it is exact in any order and stays finite
        x = np.where(x < 0, -1.0, 1.0).astype(np.float32)
        x.reshape(-1)[rng.choice(x.size, 90, replace=False)] = [2.0] * 50 + [0.5] * 40
    cm = ge.compile(model, ge.CompileOptions(precision_mode=precision, dump_ir=str(dump) if dump else None))
    got = cm.run({"x": x})["y"]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape
    scale = max(float(np.max(np.abs(want))), 1e-6)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    tol = F32_TOL if precision == "must_keep_origin_dtype" else F16_TOL
    assert err <= tol, f"error {err:.3g} of the output scale > {tol}"
    if dump is None:
        return ""
    (tile,) = dump.glob("*_tile.mlir")
    return "\n".join(re.findall(r'tile.plan = "([^"]*)"', tile.read_text()))


CASES = {
    # the first failing shape (a GlobalAveragePool of a 56x56 plane of one C0 group)
    "gap_16x56x56": ("GlobalAveragePool", [1, 16, 56, 56], {}),
    "gap_64x112x112": ("GlobalAveragePool", [1, 64, 112, 112], {}),
    "gmp_32x100x100": ("GlobalMaxPool", [1, 32, 100, 100], {}),
    "sum_200k": ("ReduceSum", [200000], {"keepdims": 0}),
    "mean_4x70000": ("ReduceMean", [4, 70000], {"axes": [1]}),
    "max_8x50000": ("ReduceMax", [8, 50000], {"axes": [1], "keepdims": 0}),
    "min_3x90001": ("ReduceMin", [3, 90001], {"axes": [1]}),
    "sum_outer_120000x2": ("ReduceSum", [120000, 2], {"axes": [0], "keepdims": 0}),
    "prod_100000": ("ReduceProd", [100000], {"keepdims": 1}),
    "mean_middle_4x60000x3": ("ReduceMean", [4, 60000, 3], {"axes": [1], "keepdims": 1}),
    "sum_two_axes_300x400x2": ("ReduceSum", [300, 400, 2], {"axes": [0, 1], "keepdims": 0}),
}


def _case(name):
    op, shape, attrs = CASES[name]
    attrs = dict(attrs)
    if op == "ReduceSum" and "axes" in attrs:  # ReduceSum takes its axes as an input since opset 13
        axes = attrs.pop("axes")
        model = _model(op, shape, **attrs)
        model.graph.node[0].input.append("axes")
        model.graph.initializer.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
        return model, shape, op
    return _model(op, shape, **attrs), shape, op


@pytest.mark.parametrize("name", sorted(CASES))
def test_large_reduction_f32(name, tmp_path):
    model, shape, op = _case(name)
    plans = _check(model, shape, "must_keep_origin_dtype", positive=op == "ReduceProd", dump=tmp_path)
    if name != "gap_16x56x56":  # (in f32 its 8-channel C0 groups fit whole; f16 is the regression below)
        assert "reduced in chunks of" in plans, plans


def test_first_failing_shape_regression(tmp_path):
    """The reproducer: GlobalAveragePool over [1, 16, 56, 56] in f16 (ATC's default) needed
    301216 bytes of UB (the plane plus the lowering's f32 work copy) and failed in
    plan-local-memory; now the 56 rows go in chunks."""
    model, shape, _ = _case("gap_16x56x56")
    plans = _check(model, shape, "force_fp16", dump=tmp_path)
    chunked = [p for p in plans.splitlines() if "reduced in chunks of" in p]
    assert len(chunked) == 1, plans
    assert int(re.search(r"chunks of (\d+)", chunked[0]).group(1)) < 56


def test_small_reduction_keeps_whole_extent(tmp_path):
    """A reduction that fits keeps its one-pass plan (no chunk loop)."""
    plans = _check(_model("ReduceMax", [8, 1000], axes=[1]), [8, 1000], "must_keep_origin_dtype", dump=tmp_path)
    assert "chunks" not in plans, plans


FUSED = {
    # elementwise before and after the reduction in one kernel (ReduceL2 = sqrt(sum(x * x)))
    "l2": ([3, 80000], [("ReduceL2", {"axes": [1]})]),
    "sum_square": ([90000], [("ReduceSumSquare", {"keepdims": 0})]),
    "abs_max_relu": ([2, 150000], [("Abs", {}), ("ReduceMax", {"axes": [1]}), ("Neg", {}), ("Relu", {})]),
    "exp_mean_log": ([131072], [("Exp", {}), ("ReduceMean", {"keepdims": 1}), ("Log", {})]),
}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_large_reduction_fused_with_elementwise(name, tmp_path):
    shape, nodes = FUSED[name]
    plans = _check(_chain(shape, nodes), shape, "must_keep_origin_dtype", dump=tmp_path)
    assert "reduced in chunks of" in plans, plans


@pytest.mark.parametrize("op, attrs, what", [
    ("Softmax", {"axis": 1}, "graph.softmax"),
    ("LogSoftmax", {"axis": 1}, "graph.log_softmax"),
    ("LayerNormalization", {"axis": 1}, "graph.layer_norm"),
])
def test_row_beyond_ub_is_refused_by_name(op, attrs, what):
    """A normalization row of 100000 f32 elements: a one-line error naming the node and
    what is missing (a chunked, two-pass row), not a traceback or a UB overflow later."""
    model = _model(op, [2, 100000], **attrs)
    if op == "LayerNormalization":
        for name in ("scale", "bias"):
            model.graph.node[0].input.append(name)
            model.graph.initializer.append(helper.make_tensor(name, TensorProto.FLOAT, [100000], [1.0] * 100000))
    with pytest.raises(CompileError) as info:
        ge.compile(model, ge.CompileOptions(precision_mode="must_keep_origin_dtype"))
    msg = str(info.value)
    assert "\n" not in msg
    assert "tile failed" in msg and "(node big)" in msg and what in msg, msg
    assert "chunked (two-pass)" in msg and "not implemented" in msg, msg


@pytest.mark.parametrize("name", ["gap_64x112x112", "gmp_32x100x100", "max_8x50000", "mean_4x70000"])
def test_large_reduction_f16(name, tmp_path):
    model, shape, _ = _case(name)
    assert "reduced in chunks of" in _check(model, shape, "force_fp16", dump=tmp_path)
