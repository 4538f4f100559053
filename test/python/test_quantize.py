"""`ge.quantize`: post-training int8 quantization (ge/quantize.py), and its accuracy on a
small CNN trained here on scikit-learn's 8x8 digits.

The CNN (conv 1->8, conv 8->16, max pool, fc 256->64, fc 64->10) trains for 8 epochs with
torch (seeded, one thread: a few seconds) on 1,257 images; the other 540 are held out.
The ONNX model is written by hand from the trained weights. Each calibration method
quantizes it on 200 training images (conv2 and fc1 int8; conv1 and fc2, first and last,
stay float by rule); the held-out top-1 accuracy must be within 1 point of the f32
model's, measured twice: with the QDQ model imported by ge, folded into quant_conv2d /
quant_matmul by quant-fold and run by the reference interpreter (the int8 ops' numpy
semantics, ge.runtime.reference), and compiled by ge.compile onto the int8 Cube path and
run on the AI Core simulator (slow).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import InputError
from ge.ir import make_context
from ge.quantization import (
    QuantizeError,
    activation_range,
    entropy_threshold,
    quantize_bias,
    quantize_weight,
    scale_zero_point,
    select_layers,
)
from ge.runtime.reference import find_function, run_function
from ge.transforms.quant_fold import QuantFoldPass

# --------------------------------------------------------------------------------------
# The pieces
# --------------------------------------------------------------------------------------


def test_scale_zero_point():
    # asymmetric: [-1, 3] over 255 steps; zp = round(-128 + 1 / (4 / 255)) = round(-64.25)
    scale, zp = scale_zero_point(-1.0, 3.0)
    assert scale == np.float32(4 / 255) and zp == -64
    # a non-negative range still includes 0: [0, 2] -> zp = -128
    assert scale_zero_point(0.5, 2.0) == (np.float32(2 / 255), -128)
    assert scale_zero_point(-1.0, 3.0, symmetric=True) == (np.float32(3 / 127), 0)
    assert scale_zero_point(0.0, 0.0) == (1.0, 0)


def test_quantize_weight_per_channel_symmetric():
    w = np.array([[0.5, -1.0], [0.0, 0.0], [0.25, 0.1]], np.float32)
    q, scale = quantize_weight(w, axis=0)
    np.testing.assert_allclose(scale, [1 / 127, 1.0, 0.25 / 127], rtol=1e-6)
    # 0.5 * 127 = 63.5 rounds half to even -> 64; 0.1 / (0.25 / 127) = 50.8 -> 51
    np.testing.assert_array_equal(q, [[64, -127], [0, 0], [127, 51]])
    q1, s1 = quantize_weight(w, axis=1)
    np.testing.assert_allclose(s1, [0.5 / 127, 1 / 127], rtol=1e-6)
    assert q1.dtype == np.int8 and q1[0, 0] == 127 and q1[0, 1] == -127


def test_quantize_bias_rounds_half_to_even():
    np.testing.assert_array_equal(quantize_bias(np.array([2.5, -0.5, 3.5, 1.0]), np.array(1.0)), [2, 0, 4, 1])
    np.testing.assert_array_equal(quantize_bias(np.array([1e12]), np.array(1.0)), [np.iinfo(np.int32).max])


def test_entropy_threshold_clips_outliers():
    """A Gaussian with a few far outliers: the KL threshold cuts them off (min/max would
    spend the int8 range on them); on uniform data nothing is worth clipping."""
    r = np.random.default_rng(0)
    gauss = np.abs(np.concatenate([r.standard_normal(50_000), [60.0, -80.0]]))
    t = entropy_threshold(gauss)
    assert 2.0 < t < 10.0
    uniform = r.random(50_000)
    assert entropy_threshold(uniform) > 0.9
    assert entropy_threshold(np.zeros(10)) == 0.0


def _mxnet_threshold(values: np.ndarray, num_bins: int, num_levels: int) -> float:
    """MXNet's `_get_optimal_threshold` (python/mxnet/contrib/quantization.py) transcribed
    loop for loop, on the one-sided histogram of |x| (TensorRT's form): the reference the
    vectorized `entropy_threshold` must agree with."""
    hist, edges = np.histogram(values, bins=num_bins, range=(0.0, float(values.max())))
    best, best_kl = None, np.inf
    for i in range(num_levels, num_bins + 1):
        sliced = hist[:i].astype(np.float64)
        p = sliced.copy()
        p[-1] += hist[i:].sum()
        is_nonzeros = (p != 0).astype(np.int64)
        merged = sliced.size // num_levels
        quantized = np.zeros(num_levels)
        for j in range(num_levels):
            quantized[j] = sliced[j * merged:(j + 1) * merged].sum()
        quantized[-1] += sliced[num_levels * merged:].sum()
        q = np.zeros(sliced.size)
        for j in range(num_levels):
            start = j * merged
            stop = len(is_nonzeros) if j == num_levels - 1 else start + merged
            norm = is_nonzeros[start:stop].sum()
            if norm != 0:
                q[start:stop] = quantized[j] / norm
        q[p == 0] = 0
        smoothed = []
        for d in (p, q):
            zeros = (d == 0).astype(np.float64)
            n_zeros = zeros.sum()
            eps1 = 1e-4 * n_zeros / (d.size - n_zeros)
            smoothed.append(d + 1e-4 * zeros - eps1 * (1 - zeros))
        ps, qs = (d / d.sum() for d in smoothed)
        kl = float(np.sum(ps * np.log(ps / qs)))
        if kl < best_kl:
            best, best_kl = float(edges[i]), kl
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_entropy_threshold_matches_mxnet_transcription(seed):
    r = np.random.default_rng(seed)
    values = np.abs(np.concatenate([r.standard_normal(20_000), r.standard_normal(200) * 8])).astype(np.float32)
    values[r.random(values.size) < 0.3] = 0.0  # a ReLU's zeros
    assert entropy_threshold(values, num_bins=256, num_levels=16) == _mxnet_threshold(values, 256, 16)


def test_activation_range_methods():
    r = np.random.default_rng(1)
    relu = np.maximum(r.standard_normal(100_000), 0).astype(np.float32)
    relu[0] = 50.0  # one outlier
    lo, hi = activation_range(relu, "minmax")
    assert (lo, hi) == (0.0, 50.0)
    lo, hi = activation_range(relu, "percentile", percentile=99.9)
    assert lo == 0.0 and hi == pytest.approx(np.percentile(relu, 99.9))
    lo, hi = activation_range(relu, "entropy")
    assert lo == 0.0 and 2.0 < hi < 10.0
    signed = r.standard_normal(10_000).astype(np.float32)
    lo, hi = activation_range(signed, "percentile", percentile=99.0)
    assert lo == -hi and hi == pytest.approx(np.percentile(np.abs(signed), 99.0))
    with pytest.raises(QuantizeError, match="unknown calibration method 'kl'"):
        activation_range(signed, "kl")


# --------------------------------------------------------------------------------------
# The digits CNN
# --------------------------------------------------------------------------------------


def _cnn_onnx(state: dict[str, np.ndarray], batch: int | str = "N") -> onnx.ModelProto:
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in state.items()]
    nodes = [
        helper.make_node("Conv", ["x", "0.weight", "0.bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "2.weight", "2.bias"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "6.weight", "6.bias"], ["g1"], name="fc1", transB=1),
        helper.make_node("Relu", ["g1"], ["r3"], name="relu3"),
        helper.make_node("Gemm", ["r3", "8.weight", "8.bias"], ["logits"], name="fc2", transB=1),
    ]
    graph = helper.make_graph(nodes, "digits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def digits():
    """(float ONNX model, images, labels, train indices, held-out indices)."""
    torch = pytest.importorskip("torch")  # the test extra installs it
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    y = data.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))
    train, held_out = perm[:1257], perm[1257:]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        opt = torch.optim.Adam(net.parameters(), 3e-3)
        xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
        order = torch.Generator().manual_seed(0)
        for _ in range(8):
            for idx in torch.randperm(len(train), generator=order).split(32):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
                opt.step()
    finally:
        torch.set_num_threads(threads)
    state = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    return _cnn_onnx(state), x, y, train, held_out


def ge_logits(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The model imported by ge, quant-folded, run by the reference interpreter; and the
    graph ops it ran."""
    module = ge.load_onnx(model, input_shape={"x": x.shape})
    QuantFoldPass().apply(make_context(), module)
    module.verify()
    ops = [op.name for op in module.walk() if op.name.startswith("graph.")]
    return run_function(find_function(module), [x])[0], ops


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(logits.argmax(1) == labels))


@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_digits_int8_accuracy_within_one_point(digits, method):
    model, x, y, train, held_out = digits
    f32_logits, _ = ge_logits(model, x[held_out])
    f32_acc = accuracy(f32_logits, y[held_out])
    assert f32_acc > 0.95  # the CNN did learn

    quantized = ge.quantize(model, {"x": x[train[:200]]}, method=method)
    logits, ops = ge_logits(quantized.model, x[held_out])
    assert ops.count("graph.quant_conv2d") == 1 and ops.count("graph.quant_matmul") == 1  # conv2, fc1
    assert ops.count("graph.conv2d") == 1 and ops.count("graph.gemm") == 1  # conv1, fc2: first / last, float
    int8_acc = accuracy(logits, y[held_out])
    assert abs(int8_acc - f32_acc) <= 0.01, f"{method}: int8 {int8_acc:.4f} vs f32 {f32_acc:.4f}"

    report = quantized.report
    assert [r.node for r in report.layers] == ["conv2", "fc1"]
    assert report.kept_float == {"conv1": "first or last layer (kept float by rule)",
                                 "fc2": "first or last layer (kept float by rule)"}
    for r in report.layers:
        assert r.zero_point == 0 and r.scale > 0 and 0 < r.weight_scale_min <= r.weight_scale_max
        assert 0 < r.rel_error < 0.05  # the layer's output, int8 vs f32, on the calibration images
    assert "conv2" in report.table() and report.to_json()["method"] == method

    # onnxruntime runs the same QDQ model with its fused int8 kernels: ge agrees with it.
    session = ort.InferenceSession(quantized.model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x[held_out]})
    assert float(np.abs(logits - expected).max()) <= 0.02 * float(np.abs(expected).max())
    assert np.mean(logits.argmax(1) == expected.argmax(1)) >= 0.99


@pytest.mark.slow
@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_digits_int8_accuracy_on_the_simulator(digits, method):
    """The same QDQ models compiled by ge.compile (quant-fold -> the int8 Cube kernels,
    precision force_fp16 for the float layers) and run on the AI Core simulator, 60 images
    per run: held-out top-1 within 1 point of the f32 model (onnxruntime), and the same
    predictions as the reference interpreter's int8 run on all but at most 1% of the images."""
    model, x, y, train, held_out = digits
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    f32_acc = accuracy(session.run(None, {"x": x[held_out]})[0], y[held_out])
    quantized = ge.quantize(model, {"x": x[train[:200]]}, method=method)
    compiled = ge.compile(quantized.model, ge.CompileOptions(input_shape={"x": [60, 1, 8, 8]}))
    logits = np.concatenate([compiled.run({"x": x[held_out[i:i + 60]]})["logits"] for i in range(0, len(held_out), 60)])
    int8_acc = accuracy(logits, y[held_out])
    assert abs(int8_acc - f32_acc) <= 0.01, f"{method}: int8 on the simulator {int8_acc:.4f} vs f32 {f32_acc:.4f}"
    reference, _ = ge_logits(quantized.model, x[held_out])
    assert np.mean(logits.argmax(1) == reference.argmax(1)) >= 0.99


def test_digits_every_layer_int8(digits):
    """keep_first_last=False quantizes all four layers; asymmetric activations too."""
    model, x, y, train, held_out = digits
    f32_acc = accuracy(ge_logits(model, x[held_out])[0], y[held_out])
    quantized = ge.quantize(model, {"x": x[train[:200]]}, method="minmax", keep_first_last=False, symmetric=False)
    assert [r.node for r in quantized.report.layers] == ["conv1", "conv2", "fc1", "fc2"]
    assert quantized.report.layers[0].zero_point == -128  # the images are in [0, 1]
    logits, ops = ge_logits(quantized.model, x[held_out])
    assert "graph.conv2d" not in ops and "graph.gemm" not in ops
    assert abs(accuracy(logits, y[held_out]) - f32_acc) <= 0.01


def test_skip_list_and_rules(digits, tmp_path):
    model, x, _, train, _ = digits
    chosen, kept = select_layers(model, ["fc1"], keep_first_last=True)
    assert [name for _, name, _ in chosen] == ["conv2"] and kept["fc1"] == "in the skip list"
    with pytest.raises(QuantizeError, match=r"skip list names node.* the model does not have: fc9"):
        ge.quantize(model, {"x": x[:8]}, skip=["fc9"])
    with pytest.raises(InputError, match="no array for model input 'x'"):
        ge.quantize(model, {"images": x[:8]})
    np.savez(tmp_path / "calib.npz", x=x[train[:16]])
    quantized = ge.quantize(model, tmp_path / "calib.npz", method="percentile", skip=["conv2"])
    assert [r.node for r in quantized.report.layers] == ["fc1"]


def test_activation_products_stay_float():
    """A MatMul of two activations (attention scores) has no constant weight: kept float."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["y"], name="softmax", axis=-1)]
    graph = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4, 4]) for n in "ab"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    chosen, kept = select_layers(model, [], keep_first_last=False)
    assert chosen == [] and kept == {"scores": "its weight is not a constant"}


def test_ge_quantize_tool(digits, tmp_path, capsys):
    import json

    from ge.tools import ge_compile, ge_quantize

    model, x, _, train, _ = digits
    onnx.save_model(model, str(tmp_path / "digits.onnx"))
    np.savez(tmp_path / "calib.npz", x=x[train[:32]])
    args = [str(tmp_path / "digits.onnx"), "--calibration-data", str(tmp_path / "calib.npz"), "-o", str(tmp_path / "q.onnx")]
    assert ge_quantize.main([*args, "--method", "entropy", "--skip", "fc1", "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "quantization (entropy): 1 layer(s) int8, 3 kept float" in out and "fc1" in out
    written = onnx.load_model(str(tmp_path / "q.onnx"))
    assert [n.op_type for n in written.graph.node].count("QuantizeLinear") == 1
    report = json.loads((tmp_path / "r.json").read_text())
    assert [r["node"] for r in report["layers"]] == ["conv2"] and report["kept_float"]["fc1"] == "in the skip list"

    assert ge_quantize.main([*args, "--skip", "nope"]) == 1
    assert capsys.readouterr().err.strip() == \
        "ge-quantize: error: the skip list names node(s) the model does not have: nope"
    assert ge_compile.main([str(tmp_path / "digits.onnx"), "-o", str(tmp_path / "d.om"), "--quant-method", "entropy"]) == 1
    assert "ge-compile: error: --quant-method, --quant-skip and --quant-no-fold-bn need --calibration-data" \
        in capsys.readouterr().err


def test_ge_compile_with_calibration_data(digits, tmp_path, capsys):
    """ge-compile --calibration-data quantizes, then compiles the QDQ model for the NPU;
    the model file runs and gives the int8 reference interpreter's predictions."""
    from ge.tools import ge_compile

    model, x, _, train, held_out = digits
    onnx.save_model(model, str(tmp_path / "digits.onnx"))
    np.savez(tmp_path / "calib.npz", x=x[train[:64]])
    rc = ge_compile.main([str(tmp_path / "digits.onnx"), "-o", str(tmp_path / "d.om"), "--input-shape", "x:60,1,8,8",
                          "--calibration-data", str(tmp_path / "calib.npz"), "--quant-method", "percentile",
                          "--quant-skip", "fc1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "quantization (percentile): 1 layer(s) int8, 3 kept float" in out and "d.om:" in out
    images = x[held_out[:60]]
    logits = ge.load_model(tmp_path / "d.om").run({"x": images})["logits"]
    reference, ops = ge_logits(ge.quantize(model, {"x": x[train[:64]]}, method="percentile", skip=["fc1"]).model, images)
    assert ops.count("graph.quant_conv2d") == 1 and "graph.quant_matmul" not in ops
    assert np.mean(logits.argmax(1) == reference.argmax(1)) >= 0.98


def test_old_opset_converted_and_names_kept_apart(digits):
    """An opset-11 model is converted to 13 (per-channel DequantizeLinear needs it), and a
    tensor already named like a new scale is not overwritten."""
    model, x, _, train, held_out = digits
    old = onnx.ModelProto()
    old.CopyFrom(model)
    old.opset_import[0].version = 11
    old.graph.initializer.append(numpy_helper.from_array(np.array(7.0, np.float32), "r1_scale"))
    quantized = ge.quantize(old, {"x": x[train[:32]]})
    assert quantized.model.opset_import[0].version == 13
    q = next(n for n in quantized.model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "r1")
    assert q.input[1] == "r1_scale_1"
    session = ort.InferenceSession(quantized.model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x[held_out[:50]]})
    logits, _ = ge_logits(quantized.model, x[held_out[:50]])
    assert np.mean(logits.argmax(1) == expected.argmax(1)) >= 0.98


def test_fixed_batch_model_calibrated_sample_by_sample(digits):
    """A model whose batch is fixed at 1 is calibrated one sample per run: the same scales
    as the dynamic-batch model on the same 7 samples; a sample count that is no multiple of
    a fixed batch is a one-line InputError."""
    model, x, _, train, _ = digits
    state = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    fixed = _cnn_onnx(state, batch=1)
    calib = {"x": x[train[:7]]}
    got = ge.quantize(fixed, calib, method="minmax").report.layers
    want = ge.quantize(model, calib, method="minmax").report.layers
    assert [r.node for r in got] == ["conv2", "fc1"]
    assert [(r.scale, r.zero_point) for r in got] == [(r.scale, r.zero_point) for r in want]
    np.testing.assert_allclose([r.rel_error for r in got], [r.rel_error for r in want], rtol=1e-5)
    with pytest.raises(InputError, match=r"fixed at 4 .* 7 samples, not a multiple of 4"):
        ge.quantize(_cnn_onnx(state, batch=4), calib)


@pytest.mark.slow  # ~15 s: two models compiled, 9 simulator runs each
@pytest.mark.parametrize("symmetric", [True, False])
def test_digits_every_layer_int8_on_the_simulator(digits, symmetric):
    """All four layers int8 on the simulator, conv1 with C_in = 1 (less than int8's C0 = 32)
    and fc2 with N = 10 (less than one 32-wide int8 column block); asymmetric activations
    (zero points folded into the bias, a pad kernel for each padded conv) too. Held-out top-1
    within 1 point of f32 (measured: 98.33% both, as f32) and the reference interpreter's
    predictions on all but at most 1% of the images."""
    model, x, y, train, held_out = digits
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    f32_acc = accuracy(session.run(None, {"x": x[held_out]})[0], y[held_out])
    quantized = ge.quantize(model, {"x": x[train[:200]]}, method="minmax", keep_first_last=False, symmetric=symmetric)
    assert [r.node for r in quantized.report.layers] == ["conv1", "conv2", "fc1", "fc2"]
    compiled = ge.compile(quantized.model, ge.CompileOptions(input_shape={"x": [60, 1, 8, 8]}))
    logits = np.concatenate([compiled.run({"x": x[held_out[i:i + 60]]})["logits"] for i in range(0, len(held_out), 60)])
    assert sum(k.work["fractals"] > 0 for k in compiled.last_run.kernels) == 4
    assert abs(accuracy(logits, y[held_out]) - f32_acc) <= 0.01
    reference, _ = ge_logits(quantized.model, x[held_out])
    assert np.mean(logits.argmax(1) == reference.argmax(1)) >= 0.99
