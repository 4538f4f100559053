"""One-value constants of elementwise ops are immediates of their Vector kernel
(fusion_rules.scalar_operands, fuse): a scalar (or a splat that does not widen the result)
in any operand position of Add / Sub / Mul / Div / Max / Min / Pow is copied into the group,
so the kernel reads only the computed tensor (vadds / vmuls / vmaxs / vmins, or one block
written by vdup for a constant on the left of Sub / Div). Checked against onnxruntime on
the simulator, f32 (must_keep_origin_dtype: rtol 1e-6) and f16 (force_fp16: x in [0.1, 4.1]
rounded to f16 and the result rounded again, rtol 3e-3 -- pow 3 triples x's 2^-11 -- and
atol 4e-3, half an f16 ulp at 8, for x - 1.75 near 0), and int32 (exact); the compiled model's kernels
take one input each.
(The int8 path's one-value dequantize scale, where this started, is the same rule.)
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import ge

SHAPE = (2, 3, 8, 8)
# (op, constant first?, constant value or array)
CASES = [(op, first, 1.75) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min") for first in (False, True)]
CASES += [("Pow", False, p) for p in (2.0, 3.0, 0.5, -1.0)]
CASES += [("Add", False, np.full((1, 1, 1, 8), 0.5)), ("Sub", True, np.full((1, 1, 8, 1), 0.25)),
          ("Div", True, np.full((1, 1, 1, 1), 3.0))]


def model(cases, dtype=np.float32) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes, outs, inits = [], [], []
    for i, (op, first, c) in enumerate(cases):
        inits.append(numpy_helper.from_array(np.asarray(c, dtype), f"c{i}"))
        nodes.append(helper.make_node(op, [f"c{i}", "x"] if first else ["x", f"c{i}"], [f"y{i}"], name=f"{op}{i}"))
        outs.append(helper.make_tensor_value_info(f"y{i}", elem, None))
    graph = helper.make_graph(nodes, "scalars", [helper.make_tensor_value_info("x", elem, SHAPE)], outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def compile_and_run(m: onnx.ModelProto, x: np.ndarray, precision: str):
    compiled = ge.compile(m, ge.CompileOptions(input_shape={"x": x.shape}, precision_mode=precision))
    got = compiled.run({"x": x})
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    return compiled, got, want


@pytest.mark.parametrize(("precision", "rtol", "atol"), [("must_keep_origin_dtype", 1e-6, 1e-6),
                                                         ("force_fp16", 3e-3, 4e-3)])
def test_scalar_operands_are_immediates(precision, rtol, atol):
    x = (np.random.default_rng(0).random(SHAPE) * 4 + 0.1).astype(np.float32)
    compiled, got, want = compile_and_run(model(CASES), x, precision)
    for i, (op, first, _) in enumerate(CASES):
        np.testing.assert_allclose(got[f"y{i}"], want[i], rtol=rtol, atol=atol, err_msg=f"{op} first={first}")
    kernels = compiled.model.definition["kernels"]
    computing = [k for k in kernels if k["kind"] == "elementwise"]
    assert len(computing) >= len(CASES)
    if precision == "must_keep_origin_dtype":  # one kernel per node, each reading x only
        assert len(kernels) == len(CASES)
        assert [len(k["ins"]) for k in kernels] == [1] * len(CASES)
    else:  # f16: x converted once; every node's kernel reads that one f16 tensor
        assert sorted(len(k["ins"]) for k in kernels) == [1] * len(kernels)


def test_integer_scalar_operands_are_exact():
    cases = [(op, first, 7) for op in ("Add", "Sub", "Mul", "Max", "Min") for first in (False, True)]
    x = np.random.default_rng(1).integers(-1000, 1000, SHAPE).astype(np.int32)
    compiled, got, want = compile_and_run(model(cases, np.int32), x, "must_keep_origin_dtype")
    for i in range(len(cases)):
        np.testing.assert_array_equal(got[f"y{i}"], want[i])
    assert [len(k["ins"]) for k in compiled.model.definition["kernels"]] == [1] * len(cases)


def test_a_splat_that_widens_the_result_stays_an_input():
    """x [1, 1, 8, 8] + a splat [1, 3, 1, 1]: the constant makes the result 3 channels
    wide, so a one-element stand-in would change its shape: it stays a kernel input."""
    m = model([("Add", False, np.full((1, 3, 1, 1), 0.5))])
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 1
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    x = np.random.default_rng(2).random((1, 1, 8, 8)).astype(np.float32)
    compiled, got, want = compile_and_run(m, x, "must_keep_origin_dtype")
    np.testing.assert_allclose(got["y0"], want[0], rtol=1e-6)
    assert [len(k["ins"]) for k in compiled.model.definition["kernels"]] == [2]
