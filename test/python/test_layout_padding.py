"""The padding of storage formats stays finite (transforms/layout_utils.py `padding_of`,
`padding_fill`; lowering/assign_layouts.py, transforms/trans_data_elimination.py).

An elementwise op in FRACTAL_NZ / NC1HWC0 computes on the padding too. MatMul -> Div by a
[1, M, N] constant -> MatMul (the fuzzer's f16 seed 1731, also wrong in f32): the divisor's
zero padding made 0 / 0 = NaN in the padded N columns of the quotient, which are the padded
K of the next MatMul, and the Cube's zero-padded weight times NaN is NaN: every output was
NaN. A constant divisor is now padded with 1; an op whose padding cannot be kept finite
that way (a divisor computed at run time) computes on plain tensors.

Numerics: the NPU path (isa level, simulator) against onnxruntime via ge.fuzz.check: f32
max error <= 1e-3 of the output scale; f16 (force_fp16) <= 3e-2 and cosine >= 0.999.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.blobs import attr_array
from ge.fuzz import check
from ge.runtime import layouts
from ge.testing import layout_level
from ge.transforms.layout_utils import CONSTANT, padding_fill, padding_of


def _model(divisor: str, n: int = 4, m: int = 4) -> onnx.ModelProto:
    """x [1, m, 16] @ w1 [16, n] -> Div by `divisor` ("const": a [1, m, n] constant,
    "runtime": z @ w3; "chain": Log(Exp(a) + 2), no Div) -> @ w2 [n, 4]."""
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((16, n)).astype(np.float32)
    w2 = rng.standard_normal((n, 4)).astype(np.float32)
    inits = [helper.make_tensor("w1", TensorProto.FLOAT, w1.shape, w1.ravel()),
             helper.make_tensor("w2", TensorProto.FLOAT, w2.shape, w2.ravel())]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, 16])]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1")]
    if divisor == "const":
        c = (rng.standard_normal((1, m, n)) + 3.0).astype(np.float32)
        inits.append(helper.make_tensor("c", TensorProto.FLOAT, c.shape, c.ravel()))
        nodes.append(helper.make_node("Div", ["a", "c"], ["q"], name="div"))
    elif divisor == "runtime":
        w3 = rng.standard_normal((16, n)).astype(np.float32)
        inits.append(helper.make_tensor("w3", TensorProto.FLOAT, w3.shape, w3.ravel()))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, m, 16]))
        nodes += [helper.make_node("MatMul", ["z", "w3"], ["d"], name="mm3"),
                  helper.make_node("Div", ["a", "d"], ["q"], name="div")]
    else:
        inits.append(helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]))
        nodes += [helper.make_node("Exp", ["a"], ["e"], name="exp"),
                  helper.make_node("Add", ["e", "two"], ["s"], name="add"),
                  helper.make_node("Log", ["s"], ["q"], name="log")]
    nodes.append(helper.make_node("MatMul", ["q", "w2"], ["y"], name="mm2"))
    graph = helper.make_graph(nodes, "pad", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, 4])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {vi.name: rng.standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
            for vi in model.graph.input}


def _layout_function(model: onnx.ModelProto) -> func.FuncOp:
    return next(op for op in layout_level(model).walk() if isinstance(op, func.FuncOp))


def test_a_constant_divisor_is_padded_with_one():
    model = _model("const")
    fn = _layout_function(model)
    div = next(op for op in fn.walk() if isinstance(op, g.DivOp))
    c = div.operands[1]
    enc = lt.layout_of(c.type)
    assert enc is not None and enc.fmt == lt.Format.FRACTAL_NZ and list(enc.shape) == [1, 4, 4]
    data = attr_array(c.owner.value)
    valid = layouts.to_storage(np.ones((1, 4, 4), np.float32), c.type) != 0
    assert valid.sum() == 16 and data.size == 8 * 16  # f32: one 16 x 8 fractal
    assert np.all(data[~valid] == 1.0)
    want = onnx.numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "c"))
    np.testing.assert_array_equal(layouts.to_origin(data, c.type), want)  # the values themselves
    assert lt.layout_of(div.results[0].type).fmt == lt.Format.FRACTAL_NZ


def test_a_runtime_divisor_computes_on_plain_tensors():
    fn = _layout_function(_model("runtime"))
    div = next(op for op in fn.walk() if isinstance(op, g.DivOp))
    assert all(lt.layout_of(v.type) is None for v in (*div.operands, *div.results))


def test_padding_of_follows_the_elementwise_chain():
    """exp(0) = 1, + 2 = 3, log 3: what the padding of each formatted value holds."""
    fn = _layout_function(_model("chain"))
    memo: dict = {}
    found = {}
    for op in fn.walk():
        if isinstance(op, g.ExpOp | g.AddOp | g.LogOp):
            assert lt.layout_of(op.results[0].type).fmt == lt.Format.FRACTAL_NZ
            found[type(op)] = padding_of(op.results[0], memo)
    assert found == {g.ExpOp: 1.0, g.AddOp: 3.0, g.LogOp: pytest.approx(np.log(3.0))}


def test_padding_fill():
    fn = _layout_function(_model("const"))
    div = next(op for op in fn.walk() if isinstance(op, g.DivOp))
    assert padding_fill(div, [0.0, CONSTANT]) == 1.0  # 0 / 1
    assert padding_fill(div, [0.0, 0.0]) is None  # 0 / 0
    assert padding_fill(div, [0.0, 2.0]) == 0.0  # a single element 2 broadcast into the padding
    assert padding_fill(div, [0.0, None]) == 0.0  # 0 / s for s known at run time
    assert padding_fill(div, [CONSTANT, 0.0]) is None


CASES = [("const", 4, 4), ("const", 4, 16), ("const", 16, 4), ("runtime", 4, 4), ("chain", 4, 4)]


@pytest.mark.parametrize("precision", ["f32", "f16"])
@pytest.mark.parametrize("divisor,n,m", CASES, ids=[f"{d}-n{n}-m{m}" for d, n, m in CASES])
def test_padding_stays_finite(divisor, n, m, precision):
    model = _model(divisor, n, m)
    status, detail, _ = check(model, _inputs(model), precision)
    assert status == "pass", detail


def test_max_pool_read_from_plain_input_keeps_pad_lanes_finite():
    """The fuzzer's f16 seed 734: a max pool whose kernel reads its NCHW input (30
    channels) and converts it to NC1HWC0 in UB (TbeTransDataFusionPass). Its copy read the
    channels past 30 as -inf (its out-of-bounds value for a max pool), the pool kept -inf
    in those pad lanes of its output and the next conv's zero weight rows made NaN: every
    output was non-finite. Those channels now read 0."""
    from ge.fuzz import run_seed

    outcome, _ = run_seed(734, "f16")
    assert outcome.status == "pass", outcome.detail


@pytest.mark.parametrize("precision", ["f32", "f16"])
def test_max_pool_from_plain_input_ignores_positions_outside(precision):
    """The same kind of kernel with spatial pads of 1: its copy now fills the rows and
    columns outside the input with 0, not -inf, and the pool still ignores them (the
    `tile.vpool` semantics), so a window of negative values stays negative."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((30, 3, 1, 1)) * 0.5).astype(np.float32)
    w2 = (rng.standard_normal((8, 60, 1, 1)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Concat", ["a", "a"], ["cat"], axis=1),
             helper.make_node("MaxPool", ["cat"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "pool_pad_lanes",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 5, 5])],
                              [onnx.numpy_helper.from_array(w1, "w1"), onnx.numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32) - 3.0  # mostly negative pool windows
    status, detail, _ = check(model, {"x": x}, precision)
    assert status == "pass", detail
