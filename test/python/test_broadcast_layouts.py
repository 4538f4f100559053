"""Broadcast operands of lower rank on the layout level (dialects/layout.py
`broadcast_rank`, lowering/assign_layouts.py, transforms/trans_data_elimination.py).

ONNX aligns ranks to the right, so a [H, W] tensor broadcasts against an NCHW feature map
of one channel. In NC1HWC0 its origin must still name the channel its C0 lanes hold: a
rank-2 origin has no C dim, and its tiles came out as origin [h, w] against the result's
[1, C1*C0, h, w] (the fuzzer's seed 1026: 'graph.mul cannot broadcast operand #1 of origin
[1, 1] to [1, 8, 1, 1]'). Such an operand is now stored unsqueezed to the result's rank (a
constant at compile time, any other value through a `graph.unsqueeze`), and the verifier
refuses the rank-2 form naming the rank it needs.

Numerics: the NPU path (isa level, simulator) against onnxruntime, f32, max error <= 1e-3
of the output scale (ge.fuzz.check).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.layout import Format
from ge.fuzz import check
from ge.ir import make_context
from ge.testing import layout_level


def _model(first: str, op: str, other_shape: list[int], other_is_input: bool, channels: int = 1) -> onnx.ModelProto:
    """x [1, 3, 6, 8] -> a 1x1 Conv to `channels` channels, or x [1, channels, 6, 8] -> a
    3x3 MaxPool; then `op` with `c` of `other_shape` (a constant or a second input)."""
    rng = np.random.default_rng(7)
    cin = 3 if first == "conv" else channels
    inits, nodes = [], []
    if first == "conv":
        w = rng.standard_normal((channels, 3, 1, 1)).astype(np.float32)
        inits.append(helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel().tolist()))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["f"], name="conv"))
        fshape = [1, channels, 6, 8]
    else:
        nodes.append(helper.make_node("MaxPool", ["x"], ["f"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        fshape = [1, channels, 6, 8]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 6, 8])]
    if other_is_input:
        inputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, other_shape))
    else:
        c = (rng.standard_normal(other_shape) + 2.0).astype(np.float32)  # away from 0 (a Div)
        inits.append(helper.make_tensor("c", TensorProto.FLOAT, c.shape, c.ravel().tolist()))
    nodes.append(helper.make_node(op, ["f", "c"], ["y"], name="bcast"))
    graph = helper.make_graph(nodes, "bcast", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, fshape)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    out = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = (rng.standard_normal(shape) + (2.0 if vi.name == "c" else 0.0)).astype(np.float32)
    return out


def _layout_function(model: onnx.ModelProto) -> func.FuncOp:
    """The model's function as `fuse` sees it (after eliminate-trans-data)."""
    return next(op for op in layout_level(model).walk() if isinstance(op, func.FuncOp))


# --------------------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------------------


def test_broadcast_rank():
    nc = Format.NC1HWC0
    assert lt.broadcast_rank(nc, Format.NCHW, 2, 4) == 4  # [H, W]: no C dim
    assert lt.broadcast_rank(nc, Format.NCHW, 1, 4) == 4  # [W]
    assert lt.broadcast_rank(nc, Format.NCHW, 1, 3) == 3
    assert lt.broadcast_rank(nc, Format.NCHW, 3, 4) == 3  # [C, H, W] keeps its C
    assert lt.broadcast_rank(nc, Format.NCHW, 2, 2) == 2  # the result has no C dim either
    assert lt.broadcast_rank(nc, Format.NHWC, 2, 4) == 2  # [W, C]: C is the last dim
    assert lt.broadcast_rank(Format.FRACTAL_NZ, Format.ND, 2, 4) == 2


_RANK2_OPERAND = """
func.func @f(%a: tensor<1x1x4x6x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 4, 6]>>,
             %b: tensor<1x1x4x6x8xf32, #layout.fmt<NC1HWC0, origin NCHW [{b}]>>) {{
  %y = graph.mul %a, %b : (tensor<1x1x4x6x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 4, 6]>>, tensor<1x1x4x6x8xf32, #layout.fmt<NC1HWC0, origin NCHW [{b}]>>) -> tensor<1x1x4x6x8xf32, #layout.fmt<NC1HWC0, origin NCHW [1, 1, 4, 6]>>
  func.return
}}
"""


def _mul(b: str) -> g.MulOp:
    module = Parser(make_context(), _RANK2_OPERAND.format(b=b)).parse_module()
    return next(op for op in module.walk() if isinstance(op, g.MulOp))


def test_verifier_refuses_an_nc1hwc0_operand_without_a_c_dim():
    with pytest.raises(VerifyException, match=r"origin \[4, 6\] \(no C dim\).*needs an origin of rank 4"):
        _mul("4, 6").verify_()
    _mul("1, 1, 4, 6").verify_()
    _mul("1, 4, 6").verify_()  # rank 3 has its C


# --------------------------------------------------------------------------------------
# What the layout passes make of it
# --------------------------------------------------------------------------------------


def test_a_constant_is_stored_unsqueezed():
    fn = _layout_function(_model("conv", "Mul", [6, 8], other_is_input=False))
    mul = next(op for op in fn.walk() if isinstance(op, g.MulOp))
    enc = lt.layout_of(mul.operands[1].type)
    assert isinstance(mul.operands[1].owner, g.ConstantOp)
    assert enc is not None and enc.fmt == Format.NC1HWC0 and list(enc.shape) == [1, 1, 6, 8]
    assert lt.layout_of(mul.results[0].type).fmt == Format.NC1HWC0
    assert not any(isinstance(op, g.UnsqueezeOp) for op in fn.walk())


def test_an_input_is_unsqueezed_then_converted():
    fn = _layout_function(_model("conv", "Mul", [6, 8], other_is_input=True))
    mul = next(op for op in fn.walk() if isinstance(op, g.MulOp))
    conv = mul.operands[1].owner
    assert isinstance(conv, lt.TransDataOp) and list(lt.layout_of(conv.output.type).shape) == [1, 1, 6, 8]
    unsq = conv.input.owner
    assert isinstance(unsq, g.UnsqueezeOp) and list(g.get_ints(unsq.properties, "axes")) == [0, 1]
    assert unsq.input.type.get_shape() == (6, 8)


# --------------------------------------------------------------------------------------
# Through the NPU path, against onnxruntime
# --------------------------------------------------------------------------------------

CASES = [
    ("conv", "Mul", [6, 8], False, 1),  # the seed-1026 shape
    ("conv", "Add", [8], False, 1),
    ("conv", "Div", [1, 8], False, 1),
    ("conv", "Sub", [6, 1], False, 1),
    ("conv", "Mul", [6, 8], True, 1),  # a second input: unsqueezed on the device
    ("conv", "Add", [8], False, 5),  # 5 channels: [W] broadcasts along C
    ("pool", "Add", [6, 8], False, 1),  # seed 107's shape
    ("pool", "Mul", [1, 8], True, 1),
    ("pool", "Add", [6, 8], False, 3),  # 3 channels: computed on plain tensors
]


@pytest.mark.parametrize("first,op,shape,is_input,channels", CASES,
                         ids=[f"{f}-{o}-{'x'.join(map(str, s))}{'-input' if i else ''}-c{c}" for f, o, s, i, c in CASES])
def test_lower_rank_broadcast_matches_onnxruntime(first, op, shape, is_input, channels):
    model = _model(first, op, shape, is_input, channels)
    status, detail, err = check(model, _inputs(model))
    assert status == "pass", detail
    assert err <= 1e-3
