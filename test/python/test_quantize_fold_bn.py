"""`ge.quantize` folds Conv -> BatchNormalization into the conv before quantizing
(ge.quantization.fold_batch_norms; AMCT's "BN fold"), so no float BN is left after an int8
conv's dequantize.

The model: conv1 (3 -> 16, 3x3, bias) -> bn1 -> relu -> conv2 (16 -> 8, 3x3, no bias) ->
bn2 -> relu, with BN statistics far from the identity (gamma of both signs, means and
variances per channel, epsilon 1e-3). References are onnxruntime runs: of the unfolded f32
model for the folded one, of the quantized QDQ model for ge's compiled int8 run.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.quantization import fold_batch_norms


def _ort(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def _bn_params(rng, name: str, c: int) -> list:
    gamma = (rng.random(c) + 0.5) * rng.choice([-1.0, 1.0], c)
    beta = rng.standard_normal(c) * 0.5
    mean = rng.standard_normal(c) * 0.8
    var = rng.random(c) * 2.0 + 0.05
    return [numpy_helper.from_array(v.astype(np.float32), f"{name}_{k}")
            for k, v in zip(("scale", "bias", "mean", "var"), (gamma, beta, mean, var))]


def conv_bn_model(shared_conv_output: bool = False, seed: int = 0) -> onnx.ModelProto:
    """conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> relu2. `shared_conv_output`: conv2's
    output is also added to the result (two users: bn2 cannot be folded)."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((8, 16, 3, 3)) * 0.15).astype(np.float32), "w2")]
    inits += _bn_params(rng, "bn1", 16) + _bn_params(rng, "bn2", 8)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"], ["n1"],
                              name="bn1", epsilon=1e-3),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c2", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"], ["n2"],
                              name="bn2", epsilon=1e-3),
             helper.make_node("Relu", ["n2"], ["y" if not shared_conv_output else "r2"], name="relu2")]
    if shared_conv_output:
        nodes.append(helper.make_node("Add", ["r2", "c2"], ["y"], name="add"))
    graph = helper.make_graph(nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 12, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def _x(seed: int, n: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 3, 12, 12)).astype(np.float32)


def test_folded_model_matches_onnxruntime_on_the_unfolded_one():
    model = conv_bn_model()
    folded, which = fold_batch_norms(model)
    assert which == {"bn1": "conv1", "bn2": "conv2"}
    assert _ops(folded) == ["Conv", "Relu", "Conv", "Relu"]
    onnx.checker.check_model(folded)
    # conv2 had no bias: the folded one has (beta - mean * k)
    conv2 = folded.graph.node[2]
    assert len(conv2.input) == 3 and conv2.output[0] == "n2"
    inits = {t.name: numpy_helper.to_array(t) for t in folded.graph.initializer}
    assert inits[conv2.input[1]].dtype == np.float32 and not {"w1", "w2", "bn1_scale"} & set(inits)
    x = _x(1)
    (want,) = _ort(model, x)
    (got,) = _ort(folded, x)
    assert np.abs(want).max() > 1.0 and (want > 0).mean() > 0.2  # the BNs change the values, relu keeps some
    # f32 re-association of the products only: within 1e-5 of the output's magnitude
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


def test_fold_arithmetic_per_channel():
    """One output channel by hand: w' = w * g / sqrt(v + eps), b' = (b - m) * g / sqrt(v + eps) + beta."""
    model = conv_bn_model(seed=3)
    folded, _ = fold_batch_norms(model)
    a = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    f = {t.name: numpy_helper.to_array(t) for t in folded.graph.initializer}
    conv1 = folded.graph.node[0]
    c = 5
    k = a["bn1_scale"][c] / np.sqrt(a["bn1_var"][c] + 1e-3)
    np.testing.assert_allclose(f[conv1.input[1]][c], a["w1"][c] * k, rtol=1e-6)
    np.testing.assert_allclose(f[conv1.input[2]][c], (a["b1"][c] - a["bn1_mean"][c]) * k + a["bn1_bias"][c], rtol=1e-6)


def test_bn_on_a_shared_conv_output_is_kept():
    model = conv_bn_model(shared_conv_output=True)
    folded, which = fold_batch_norms(model)
    assert which == {"bn1": "conv1"}
    assert _ops(folded) == ["Conv", "Relu", "Conv", "BatchNormalization", "Relu", "Add"]
    x = _x(2)
    np.testing.assert_allclose(_ort(folded, x)[0], _ort(model, x)[0], rtol=0, atol=1e-5 * float(np.abs(_ort(model, x)[0]).max()))
    quantized = ge.quantize(model, {"x": _x(4, 8)}, keep_first_last=False)
    assert _ops(quantized.model).count("BatchNormalization") == 1
    assert quantized.report.folded_bn == {"bn1": "conv1"}


def test_training_mode_bn_and_fold_bn_false_are_left_alone():
    model = conv_bn_model()
    model.graph.node[1].attribute.append(helper.make_attribute("training_mode", 1))
    assert fold_batch_norms(model)[1] == {"bn2": "conv2"}
    q = ge.quantize(conv_bn_model(), {"x": _x(4, 8)}, keep_first_last=False, fold_bn=False)
    assert _ops(q.model).count("BatchNormalization") == 2 and q.report.folded_bn == {}
    assert "folded into" not in q.report.table()


def test_quantized_folded_model_on_the_simulator():
    """Both convs int8 with their BNs folded: no BatchNormalization in the QDQ model, the
    report says which were folded, and ge.compile's simulator run agrees with onnxruntime's
    run of the same QDQ model within the int8 tolerance of the digits test (max abs error
    <= 2% of the output's magnitude; f16 float layers and epilogues on the NPU)."""
    model = conv_bn_model()
    quantized = ge.quantize(model, {"x": _x(4, 16)}, keep_first_last=False)
    ops = _ops(quantized.model)
    assert "BatchNormalization" not in ops and ops.count("Conv") == 2 and ops.count("QuantizeLinear") == 2
    assert quantized.report.folded_bn == {"bn1": "conv1", "bn2": "conv2"}
    assert [r.node for r in quantized.report.layers] == ["conv1", "conv2"]
    assert "bn2                          folded into conv2" in quantized.report.table()
    assert quantized.report.to_json()["folded_bn"] == {"bn1": "conv1", "bn2": "conv2"}
    x = _x(5)
    (want,) = _ort(quantized.model, x)
    compiled = ge.compile(quantized.model, ge.CompileOptions(input_shape={"x": list(x.shape)}))
    got = compiled.run({"x": x})["y"]
    assert sum(k.work.get("fractals", 0) > 0 for k in compiled.last_run.kernels) == 2
    scale = float(np.abs(want).max())
    assert scale > 1.0
    assert float(np.abs(got - want).max()) <= 0.02 * scale
    # ... and the quantized model stays close to the float one (int8 error, not a wrong fold)
    (f32,) = _ort(model, x)
    assert float(np.sqrt(np.mean((want - f32) ** 2))) <= 0.05 * float(np.sqrt(np.mean(f32**2)))


def test_ge_quantize_tool_folds_unless_told_not_to(tmp_path, capsys):
    from ge.tools import ge_quantize

    onnx.save_model(conv_bn_model(), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", x=_x(4, 8))
    args = [str(tmp_path / "m.onnx"), "--calibration-data", str(tmp_path / "calib.npz"), "--quantize-first-last"]
    assert ge_quantize.main([*args, "-o", str(tmp_path / "q.onnx")]) == 0
    assert "bn1                          folded into conv1" in capsys.readouterr().out
    assert "BatchNormalization" not in _ops(onnx.load(str(tmp_path / "q.onnx")))
    assert ge_quantize.main([*args, "-o", str(tmp_path / "k.onnx"), "--no-fold-bn"]) == 0
    assert "folded into" not in capsys.readouterr().out
    assert _ops(onnx.load(str(tmp_path / "k.onnx"))).count("BatchNormalization") == 2
