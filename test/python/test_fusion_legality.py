"""Fusion legality (lowering/fusion_legality.py): `fuse` forms a group only when it builds,
and the bugs the differential fuzzer (ge/fuzz.py) found stay fixed.

Each graph in fuzz_regressions/ is a fuzzer reproducer, shrunk by `python -m ge.fuzz
--shrink`; it must now compile to the isa level and match onnxruntime (f32: max error
<= 1e-3 of the output scale).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import helper
from xdsl.dialects import func

import ge
from ge.backend import is_compatible, npu_refusal
from ge.dialects import graph
from ge.dialects import layout as lt
from ge.fuzz import check
from ge.lowering import fuse
from ge.lowering.fusion_legality import group_tiles
from ge.testing import layout_level, random_inputs

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
BUGS = {
    3: "a ReduceMax fused with the NC1HWC0 conversion of its result did not verify on its tile",
    4: "a MatMul fused with the NC1HWC0 conversion of its result ('layout conversions fused into a matmul kernel')",
    10: "wrong answer: LogSoftmax over 7 channels converted to NC1HWC0 in one kernel summed the padded 8th channel",
    24: "traceback: an abandoned eliminate-trans-data rewrite left a dangling use (KeyError in fuse)",
    42: "wrong answer: Softmax over channels fused with the NC1HWC0 conversion (the padded channel in the sum)",
    91: "wrong answer: LayerNorm over C, H, W fused with the NC1HWC0 conversion (padded channels in the mean)",
    107: "MaxPool + Add of a [1, W] constant fused with both conversions did not verify on its tile (the constant "
         "in NC1HWC0 had no C dim, so its tiles did not name the channel of their C0 lanes)",
    133: "LayerNorm over channels fused with the NC1HWC0 conversion ('a reduced dim is also windowed')",
    167: "an elementwise Div between two conversions ('TransData to a plain tensor, away from the kernel's output')",
    1026: "Mul of a conv result (1 channel) by a [4, 6] constant: the constant in NC1HWC0 had no C dim "
          "('cannot broadcast operand #1 of origin [1, 1] to [1, 8, 1, 1]' on its tile)",
    1731: "wrong answer (NaN): MatMul -> Div by a [1, 4, 4] constant in FRACTAL_NZ -> MatMul: 0 / 0 in the "
          "padding (the padded K of the next MatMul; found with --precision f16, wrong in f32 too)",
}


# Reproducers still refused, with the part of the message that names what is missing.
REFUSED: dict[int, str] = {}


def load_regression(seed: int) -> onnx.ModelProto:
    return onnx.parser.parse_model((REGRESSIONS / f"seed{seed}.onnxtxt").read_text())


def test_every_reproducer_is_listed():
    assert {int(p.stem[4:]) for p in REGRESSIONS.glob("seed*.onnxtxt")} == set(BUGS)


@pytest.mark.parametrize("seed", sorted(BUGS), ids=[f"seed{s}" for s in sorted(BUGS)])
def test_fuzzer_regression(seed):
    model = load_regression(seed)
    onnx.checker.check_model(model, full_check=True)
    status, detail, err = check(model, random_inputs(model, seed))
    if seed in REFUSED:
        assert status == "refusal" and REFUSED[seed] in detail, f"{BUGS[seed]}: {status}: {detail}"
        return
    assert status == "pass", f"{BUGS[seed]}: {status}: {detail}"
    assert err <= 1e-3


# --------------------------------------------------------------------------------------
# group_tiles and the fuse pass
# --------------------------------------------------------------------------------------


def layout_function(model: onnx.ModelProto):
    """The model's function at the layout level (what `fuse` sees)."""
    module = layout_level(model)
    return module, next(op for op in module.walk() if isinstance(op, func.FuncOp))


def conv_relu_model(c: int = 4) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", onnx.TensorProto.FLOAT, [c, c, 3, 3], rng.standard_normal(c * c * 9).tolist())
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "conv_relu", [helper.make_tensor_value_info("x", 1, [1, c, 6, 6])],
                          [helper.make_tensor_value_info("y", 1, [1, c, 6, 6])], initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_group_tiles_accepts_a_conv_epilogue():
    _, fn = layout_function(conv_relu_model())
    ops = list(fn.body.block.ops)
    conv = next(o for o in ops if isinstance(o, graph.Conv2dOp))
    relu = next(o for o in ops if isinstance(o, graph.ReluOp))
    assert group_tiles([conv, relu]) is None
    # probing leaves the function untouched: no new uses of its values
    assert all(u.operation.parent is fn.body.block for o in ops for r in o.results for u in r.uses)


def test_group_tiles_names_why_a_group_does_not_build():
    """LogSoftmax over 7 channels with the conversion of its result to NC1HWC0: the
    tile would reduce over the 8 channels of a C0 block."""
    _, fn = layout_function(load_regression(10))
    ops = list(fn.body.block.ops)
    soft = next(o for o in ops if isinstance(o, graph.LogSoftmaxOp))
    conv = next(o for o in ops if isinstance(o, lt.TransDataOp) and o.input is soft.results[0])
    reason = group_tiles([soft, conv])
    assert reason is not None and "pads past the tensor" in reason
    assert group_tiles([soft]) is None


def test_fuse_moves_the_conversion_to_a_group_that_builds():
    _, fn = layout_function(load_regression(10))
    log: list[str] = []
    fuser = fuse.Fuser(fn.body.block, fuse.enabled_rules(None), log)
    fuser.run()
    kernels = [[fuse.op_label(o) for o in g.ops] for g in fuser.groups]
    # not the copy-out of the LogSoftmax (that group would not build): the copy-in of the pool
    assert ["logsoftmax1"] in kernels
    assert ["logsoftmax1_nc1hwc0", "globalaveragepool2", "globalaveragepool2_nchw"] in kernels
    assert any(line.startswith("TbeTransDataFusionPass: logsoftmax1_nc1hwc0 done by the copy-in") for line in log)


def test_fusion_still_forms_buildable_groups():
    """Legality does not cost kernels where the groups build: conv + relu stay one."""
    _, fn = layout_function(conv_relu_model())
    fuser = fuse.Fuser(fn.body.block, fuse.enabled_rules(None), [])
    fuser.run()
    assert any({"conv", "relu"} <= {fuse.op_label(o) for o in g.ops} for g in fuser.groups)


def test_a_group_whose_op_never_builds_stays_whole():
    """When an op does not build even alone, splitting cannot save the compile: the group
    stays as the rule formed it."""
    _, fn = layout_function(conv_relu_model())
    fuser = fuse.Fuser(fn.body.block, fuse.enabled_rules(None), [])
    ops = list(fn.body.block.ops)
    conv = next(o for o in ops if isinstance(o, graph.Conv2dOp))
    relu = next(o for o in ops if isinstance(o, graph.ReluOp))
    fuser.verdicts[(relu,)] = "no lowering (pretend)"
    fuser.verdicts[(conv, relu)] = "no lowering (pretend)"
    cand = fuse.Candidate("TbeConvElemwiseFusionPass", "cube_epilogue", [conv, relu])
    fuser._shrink_until_legal(cand)
    assert cand.ops == [conv, relu]
    fuser.verdicts[(relu,)] = None
    fuser._shrink_until_legal(cand)
    assert cand.ops == [conv]


# --------------------------------------------------------------------------------------
# ge.backend.is_compatible(device="NPU") is the compiler's answer
# --------------------------------------------------------------------------------------


def test_is_compatible_npu_agrees_with_compile():
    ok = conv_relu_model()
    assert is_compatible(ok, device="NPU")
    ge.compile(ok, ge.CompileOptions(precision_mode="must_keep_origin_dtype"))

    # a dynamic batch without an input_shape: the compiler refuses, and so does is_compatible
    dynamic = conv_relu_model()
    dynamic.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    reason = npu_refusal(dynamic)
    assert reason is not None and "input_shape" in reason
    assert not is_compatible(dynamic, device="NPU")
    with pytest.raises(ge.GeError):
        ge.compile(dynamic, ge.CompileOptions(precision_mode="must_keep_origin_dtype"))
    assert is_compatible(dynamic, device="NPU", input_shape={"x": [2, 4, 6, 6]})
    # the CPU answer is about the operators only
    assert is_compatible(dynamic, device="CPU")


# --------------------------------------------------------------------------------------
# Cube kernels the fuzzer's shapes reach
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sa", "sb", "const_b"), [
    ([2, 1, 4, 5], [1, 3, 5, 6], False),
    ([2, 1, 4, 5], [3, 5, 6], True),
    ([3, 4, 5], [2, 1, 5, 6], False),
    ([2, 3, 4, 5], [3, 5, 6], False),
])
def test_batched_matmul_with_partly_broadcast_batch_dims(sa, sb, const_b):
    """Batch dims that broadcast in part (A [2, 1, ...] x B [1, 3, ...]) were refused
    ('batched matmul whose batch dims broadcast partially'); each operand now reads its
    own batch index from the output's."""
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    inputs = [helper.make_tensor_value_info("a", 1, sa)]
    inits = [numpy_helper.from_array(rng.standard_normal(sb).astype(np.float32), "b")] if const_b else []
    if not const_b:
        inputs.append(helper.make_tensor_value_info("b", 1, sb))
    out = [*np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])), sa[-2], sb[-1]]
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "mm", inputs,
                          [helper.make_tensor_value_info("y", 1, out)], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"a": rng.standard_normal(sa).astype(np.float32)}
    if not const_b:
        feeds["b"] = rng.standard_normal(sb).astype(np.float32)
    status, detail, err = check(model, feeds)
    assert status == "pass", detail
    assert err <= 1e-5


@pytest.mark.parametrize(("n", "k", "m", "n_out", "precision"), [
    (48, 16, 32, 24, "f32"), (40, 12, 20, 7, "f32"), (300, 70, 90, 33, "f16"),
])
def test_gemm_trans_a_of_a_fractal_nz_operand(n, k, m, n_out, precision):
    """Gemm(transA) of a MatMul result, which assign-layouts keeps in FRACTAL_NZ, was refused
    ('a transposed FRACTAL_NZ A operand'); the L1 -> L0A copy now transposes its fractals."""
    from onnx import numpy_helper

    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array((rng.standard_normal((k, m)) / np.sqrt(k)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((n, n_out)) / np.sqrt(n)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm"),
             helper.make_node("Gemm", ["a", "w2"], ["y"], name="gemm", transA=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [n, k])],
                          [helper.make_tensor_value_info("y", 1, [m, n_out])], initializer=[w1, w2])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    _, fn = layout_function(model)
    gemm = next(o for o in fn.body.block.ops if isinstance(o, graph.GemmOp))
    assert lt.layout_of(gemm.operands[0].type).fmt == lt.Format.FRACTAL_NZ
    status, detail, err = check(model, {"x": rng.standard_normal((n, k)).astype(np.float32)}, precision)
    assert status == "pass", detail
    assert err <= (1e-5 if precision == "f32" else 3e-3)


@pytest.mark.parametrize(("x_shape", "w_shape", "group", "stride", "precision"), [
    ([1, 13, 7, 6], [5, 13, 3, 3], 1, 2, "f32"),
    ([2, 16, 5, 5], [32, 8, 3, 3], 2, 1, "f32"),
    ([1, 3, 8, 8], [20, 3, 1, 1], 1, 1, "f16"),
])
def test_conv_with_weights_given_at_run_time(x_shape, w_shape, group, stride, precision):
    """A Conv whose weight is a graph input (the ONNX conformance cases) needs its
    NCHW -> FRACTAL_Z conversion at run time: the KeyError in tile_cube, then 'TransData
    from FRACTAL_Z'; the conversion now joins the conv's copy-in (one C1 block per copy)."""
    rng = np.random.default_rng(2)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1], strides=[stride] * 2,
                            group=group)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", 1, x_shape),
                                           helper.make_tensor_value_info("w", 1, w_shape)],
                          [helper.make_tensor_value_info("y", 1, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model = onnx.shape_inference.infer_shapes(model)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32),
             "w": (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)}
    status, detail, err = check(model, feeds, precision)
    assert status == "pass", detail
    assert err <= (1e-5 if precision == "f32" else 3e-3)
    compiled = ge.compile(model, ge.CompileOptions(precision_mode="must_keep_origin_dtype"))
    assert compiled.report["kernels"] <= 3  # the weight conversion is no kernel of its own


def test_conv_with_run_time_weights_and_extended_groups_is_refused():
    """Groups too narrow for a C0 block are packed into wider GEMMs by rearranging the
    weights at compile time, which run-time weights do not allow: a GeError says so."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=2)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", 1, [1, 6, 5, 5]),
                                           helper.make_tensor_value_info("w", 1, [4, 3, 3, 3])],
                          [helper.make_tensor_value_info("y", 1, [1, 4, 3, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    reason = npu_refusal(model)
    assert reason is not None and "conv" in reason and "compile time" in reason
    assert not is_compatible(model, device="NPU")


def test_a_probe_bug_is_logged_and_counted_a_refusal_is_not(monkeypatch, caplog):
    from ge.errors import GeError
    from ge.lowering import fusion_legality

    _, fn = layout_function(conv_relu_model())
    ops = list(fn.body.block.ops)
    group = [next(o for o in ops if isinstance(o, graph.Conv2dOp)), next(o for o in ops if isinstance(o, graph.ReluOp))]
    bugs = len(fusion_legality.PROBE_BUGS)

    def refuse(*_):
        raise GeError("does not fit")

    monkeypatch.setattr(fusion_legality, "probe_module", refuse)
    with caplog.at_level("WARNING", logger="ge.fusion_legality"):
        assert group_tiles(group) == "does not fit"
    assert len(fusion_legality.PROBE_BUGS) == bugs and not caplog.records

    def crash(*_):
        raise IndexError("list index out of range")

    monkeypatch.setattr(fusion_legality, "probe_module", crash)
    with caplog.at_level("WARNING", logger="ge.fusion_legality"):
        reason = group_tiles(group)
    assert reason == "IndexError in a later stage: list index out of range"
    assert fusion_legality.PROBE_BUGS[bugs:] == [reason]
    assert [r.name for r in caplog.records] == ["ge.fusion_legality"] and "graph.conv2d, graph.relu" in caplog.text


def test_one_probe_per_structure_in_a_fuse_run(monkeypatch):
    """Four identical conv + relu blocks (the first and last also take a layout conversion):
    the two in the middle are one structure, probed once."""
    from ge.lowering import fusion_legality

    c = 4
    rng = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    for i in range(4):
        inits.append(helper.make_tensor(f"w{i}", onnx.TensorProto.FLOAT, [c, c, 3, 3], rng.standard_normal(c * c * 9).tolist()))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    g = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", 1, [1, c, 6, 6])],
                          [helper.make_tensor_value_info(x, 1, [1, c, 6, 6])], initializer=inits)
    _, fn = layout_function(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    probed: list[tuple[str, ...]] = []
    real = fusion_legality._probe
    monkeypatch.setattr(fusion_legality, "_probe", lambda ops, t: probed.append(tuple(o.name for o in ops)) or real(ops, t))
    fuser = fuse.Fuser(fn.body.block, fuse.enabled_rules(None), [])
    fuser.run()
    groups = [[o.name for o in g.ops] for g in fuser.groups]
    assert groups.count(["graph.conv2d", "graph.relu"]) == 2
    assert probed.count(("graph.conv2d", "graph.relu")) == 1
