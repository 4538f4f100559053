"""One-element constants of a Cube kernel's epilogue are immediates (issue 16: bert_base's
FFN-in GELU x * 0.5 * (1 + erf(x / sqrt 2)) and its attention scores / 8).

`fusion_rules.scalar_operands` puts them inside the cube group as fuse does for Vector
kernels, `tile_cube.build_epilogue` keeps them in the epilogue body and `to-isa` runs their
readers as vmuls / vadds, with no GM input, no copy-in and no vdup per output tile. A
per-channel bias stays an input, even one whose values are all equal. Numerics against onnxruntime at the f16 tolerance (2e-2 of
the output's range: f16 results, f32 accumulation).
"""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge

RNG = np.random.default_rng(0)


def _model(nodes, inputs, output, shape, inits):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _gelu(nodes, x: str, y: str, half_first: bool = False):
    """GELU as torch exports it: x * 0.5 * (1 + erf(x / sqrt 2)) (Div, Erf, Add 1, Mul, Mul 0.5)."""
    n = helper.make_node
    nodes += [n("Div", [x, "sqrt2"], [f"{y}_d"]), n("Erf", [f"{y}_d"], [f"{y}_e"]),
              n("Add", [f"{y}_e", "one"], [f"{y}_e1"]), n("Mul", [x, f"{y}_e1"], [f"{y}_g"]),
              n("Mul", ["half", f"{y}_g"] if half_first else [f"{y}_g", "half"], [y])]
    return {"sqrt2": np.sqrt(2.0), "one": 1.0, "half": 0.5}


def matmul_gelu():
    """bert's FFN in: MatMul + bias + GELU."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"])]
    consts = _gelu(nodes, "a", "y")
    return _model(nodes, [("x", [64, 96])], "y", [64, 160],
                  {"w": RNG.standard_normal((96, 160)) / np.sqrt(96), "b": RNG.standard_normal(160) * 0.1, **consts})


def scores():
    """Batched attention scores: Q K^T / 8."""
    n = helper.make_node
    return _model([n("MatMul", ["q", "k"], ["s"]), n("Div", ["s", "eight"], ["y"])],
                  [("q", [2, 3, 32, 64]), ("k", [2, 3, 64, 32])], "y", [2, 3, 32, 32], {"eight": 8.0})


def conv_gelu():
    """Conv + bias + GELU, its 0.5 on the left (an NC1HWC0 epilogue)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    consts = _gelu(nodes, "c", "y", half_first=True)
    return _model(nodes, [("x", [1, 16, 8, 8])], "y", [1, 32, 8, 8],
                  {"w": RNG.standard_normal((32, 16, 3, 3)) * 0.1, "b": RNG.standard_normal(32) * 0.1, **consts})


def gemm_gelu():
    """Gemm with alpha and C + GELU."""
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["m"], alpha=0.5, transB=1)]
    consts = _gelu(nodes, "m", "y")
    return _model(nodes, [("x", [48, 80])], "y", [48, 64],
                  {"w": RNG.standard_normal((64, 80)) * 0.2, "c": RNG.standard_normal(64) * 0.1, **consts})


# model, the scalar-operand instructions its Cube kernel must hold (at least), its GM operands
# (inputs and output: none for the constants)
GELU = {"vmuls": 2, "vadds": 1}
CASES = {"matmul_gelu": (matmul_gelu, GELU, ["x", "w", "b", "y"]),
         "scores": (scores, {"vmuls": 1}, ["q", "k", "y"]),
         "conv_gelu": (conv_gelu, GELU, ["x", "w", "b", "y"]),
         "gemm_gelu": (gemm_gelu, {"vmuls": 3, "vadds": 1}, ["x", "w", "c", "y"])}  # (alpha: one more vmuls)


def _feeds(model) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def _cube_kernel_text(dump) -> str:
    """The to-isa stage's Cube kernel (the one with an mmad), as text."""
    text = next(dump.glob("*to-isa.mlir")).read_text()
    kernels = re.split(r"(?=^\s*isa\.kernel @)", text, flags=re.M)[1:]
    (cube,) = [k for k in kernels if "isa.mmad" in k]
    return cube


@pytest.mark.parametrize("name", CASES)
def test_immediates_in_cube_epilogues(name, tmp_path):
    build, counts, operands = CASES[name]
    model = build()
    inputs = _feeds(model)
    options = ge.CompileOptions(soc_version="ascend910", precision_mode="force_fp16", dump_ir=str(tmp_path))
    compiled = ge.compile(model, options)
    got = compiled.run(inputs)["y"]
    want = ort.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * float(np.abs(want).max()))
    kernels = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    assert len(kernels) == 1  # the epilogue (and its constants) fused into the Cube kernel
    cube = _cube_kernel_text(tmp_path)
    header = cube.splitlines()[0]
    assert header.count("#isa.space<gm>") == len(operands), header
    for form, n in counts.items():
        assert len(re.findall(rf"\bisa\.{form}\b", cube)) >= n, (form, cube.count(f"isa.{form}"))
    assert "isa.vdup" not in cube


def test_a_splat_bias_stays_an_input():
    """A per-channel bias of equal values is still a GM input of the Cube kernel (the
    immediates are one-element constants only)."""
    from ge.lowering.fusion_rules import scalar_operands

    n = helper.make_node
    model = _model([n("MatMul", ["x", "w"], ["m"]), n("Add", ["m", "b"], ["a"]), n("Mul", ["a", "half"], ["y"])],
                   [("x", [16, 32])], "y", [16, 48], {"w": np.ones((32, 48)) * 0.1, "b": np.full(48, 0.5), "half": 0.5})
    module = ge.load_onnx(model)
    ops = [op for op in module.walk() if op.name in ("graph.matmul", "graph.add", "graph.mul")]
    inner = scalar_operands(ops)
    assert [v.name_hint for v in inner] == ["half"]
    assert [v.name_hint for v in scalar_operands(ops[1:])] == ["b", "half"]  # (without the matmul: both)
