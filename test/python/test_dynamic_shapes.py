"""Dynamic shapes (issue 20): image-size and dims gears (`ge.gears`) compiled into one model
file, and the true dynamic-shape mode (`ge.dynamic`) with its kernel cache.

Tolerances: the models run in f32 (`must_keep_origin_dtype`) and must be within 1e-3 of the
output scale (max |onnxruntime|) -- the f32 tolerance of the transformer tests
(test_transformers.py): the only differences are summation order and the vector unit's
exp / erf / tanh.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import zoo
from ge.errors import InputError, ShapeError
from ge.gears import MAX_GEARS, parse_gears
from ge.zoo_dynamic import dynamic_bert

F32 = "must_keep_origin_dtype"
TOLERANCE = 1e-3
BERT_SHAPE = "input_ids:1,-1;token_type_ids:1,-1;attention_mask:1,-1"


def small_cnn() -> onnx.ModelProto:
    """Three strided convs, global average pooling and a classifier: any image size works.
    (Three, not two: ge's global pooling keeps a whole f32 feature map in UB, and 56x56x16
    of a 224x224 image after two strides overflows the 910's 256 KiB.)"""
    rng = np.random.default_rng(0)

    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
                                       name)

    inits = [w("c1.w", (8, 3, 3, 3)), w("c1.b", (8,)), w("c2.w", (16, 8, 3, 3)), w("c2.b", (16,)),
             w("c3.w", (16, 16, 3, 3)), w("c3.b", (16,)),
             w("fc.w", (16, 10)), w("fc.b", (10,))]
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="conv1", strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "c2.w", "c2.b"], ["c2"], name="conv2", strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "c3.w", "c3.b"], ["c3"], name="conv3", strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc"),
    ]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip((o.name for o in session.get_outputs()), session.run(None, inputs)))


def assert_matches(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], where: str) -> None:
    assert sorted(got) == sorted(expected), where
    for name, want in expected.items():
        assert got[name].shape == want.shape, (where, name)
        err = float(np.abs(got[name].astype(np.float64) - want).max() / np.abs(want).max())
        assert err < TOLERANCE, f"{where}: {name} off by {err:.3g} of the output scale"


def image(size: int, seed: int = 0) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32)}


# --------------------------------------------------------------------------------------
# Parsing the gear options (ATC semantics)
# --------------------------------------------------------------------------------------


def test_dynamic_dims_fill_every_minus_one_in_input_order():
    gears = parse_gears("data:1,1,40,-1;label:1,-1;mask:-1,-1", dynamic_dims="20,20,1,1;40,40,2,2")
    assert [g.label for g in gears] == ["dims=20,20,1,1", "dims=40,40,2,2"]
    assert dict(gears[1].shapes) == {"data": (1, 1, 40, 40), "label": (1, 40), "mask": (2, 2)}
    assert gears[0].batch is None and gears[0].prefix == "d20_20_1_1_"


def test_dynamic_image_size_sets_height_and_width_of_every_dynamic_input():
    gears = parse_gears("data:8,3,-1,-1;img_info:8,-1,-1,4", dynamic_image_size="416,416;832,800")
    assert [dict(g.shapes) for g in gears] == [
        {"data": (8, 3, 416, 416), "img_info": (8, 416, 416, 4)},
        {"data": (8, 3, 832, 800), "img_info": (8, 832, 800, 4)},
    ]
    assert gears[1].label == "832x800"


def test_dynamic_batch_size_is_a_gear_kind():
    gears = parse_gears("x:-1,3,8,8", dynamic_batch_size="1,4")
    assert [(g.batch, g.prefix, dict(g.shapes)["x"]) for g in gears] == [(1, "b1_", (1, 3, 8, 8)), (4, "b4_", (4, 3, 8, 8))]


@pytest.mark.parametrize("shape, kwargs, message", [
    ("x:1,-1", {"dynamic_dims": "4;8", "dynamic_batch_size": "1,2"}, "cannot be used together"),
    ("x:1,-1", {}, "list the gears to compile"),
    ("x:1,8", {"dynamic_dims": "4;8"}, "needs an input_shape with -1"),
    ("x:1,-1,-1", {"dynamic_dims": "4;8"}, r"gives 1 value\(s\); input_shape has 2 -1 dim\(s\) \(x\[1\], x\[2\]\)"),
    ("x:1,-1", {"dynamic_dims": "4"}, "at least 2"),
    ("x:1,-1", {"dynamic_dims": ";".join(map(str, range(1, MAX_GEARS + 2)))}, "101 gears; at most 100"),
    ("x:1,-1", {"dynamic_dims": "4;a"}, "must be gears separated by ';'"),
    ("x:1,-1", {"dynamic_dims": "4;4"}, "distinct positive"),
    ("x:1,3,-1,8", {"dynamic_image_size": "4,4;8,8"}, "4-D NCHW or NHWC input with -1 as height and width"),
    ("x:1,3,-1,-1", {"dynamic_image_size": "4;8"}, "must give height,width"),
    ("x:1,-1", {"dynamic_batch_size": "1,2"}, "batch \\(first\\) dimension"),
])
def test_gear_option_mistakes_are_one_line_errors(shape, kwargs, message):
    with pytest.raises(ShapeError, match=message) as info:
        parse_gears(shape, **kwargs)
    assert "\n" not in str(info.value)


def test_ge_compile_reports_a_bad_gear_option_in_one_line(tmp_path, capsys):
    from ge.tools.ge_compile import main

    path = tmp_path / "cnn.onnx"
    onnx.save(small_cnn(), path)
    code = main([str(path), "-o", str(tmp_path / "m.om"), "--input-shape", "x:1,3,-1,-1",
                 "--dynamic-image-size", "32,32;48,48", "--dynamic-dims", "32,32;48,48"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0
    assert err.startswith("ge-compile: error:") and "cannot be used together" in err


# --------------------------------------------------------------------------------------
# Gear models: one file, shared weights, one memory plan, the gear picked per run
# --------------------------------------------------------------------------------------


def test_image_size_gears_small(tmp_path):
    """A small CNN with two image-size gears (fast sizes): one file, matches onnxruntime at
    every gear, the gear picked from the input shape; another size is an error listing them."""
    model = small_cnn()
    options = ge.CompileOptions(input_shape="x:1,3,-1,-1", dynamic_image_size="32,32;48,48", precision_mode=F32)
    compiled = ge.compile(model, options)
    assert compiled.gears == ["32x32", "48x48"]
    per_gear = compiled.report["gears"]
    assert [g["shapes"]["x"] for g in per_gear] == [[1, 3, 32, 32], [1, 3, 48, 48]]
    assert all(g["kernels"] > 0 for g in per_gear)
    # one memory plan sized by the largest gear; the weights stored once
    meta = compiled.model.metadata
    assert meta["memory"]["arena"] == max(g["arena"] for g in meta["gears"])
    assert len(compiled.model.weights) < sum(g["memory"]["weights_bytes"] for g in per_gear)
    assert meta["inputs"][0]["shape"] == [1, 3, -1, -1]
    path = tmp_path / "cnn.om"
    compiled.save(path)
    loaded = ge.load_model(path)
    for size in (48, 32):
        inputs = image(size, seed=size)
        assert_matches(loaded.run(inputs), reference(model, inputs), f"{size}x{size}")
        assert loaded.last_run.gear == f"{size}x{size}"
    with pytest.raises(InputError, match=r"no compiled gear for 'x' \[1, 3, 40, 40\]; the model's gears "
                                         r"\(--dynamic-image-size\): 32x32 \(x \[1, 3, 32, 32\]\); 48x48"):
        loaded.run(image(40))


def test_cnn_image_size_gears_224_and_320():
    model = small_cnn()
    options = ge.CompileOptions(input_shape="x:1,3,-1,-1", dynamic_image_size="224,224;320,320", precision_mode=F32)
    compiled = ge.compile(model, options)
    assert compiled.gears == ["224x224", "320x320"]
    peaks = [g["memory"]["activation_peak_bytes"] for g in compiled.report["gears"]]
    assert peaks[1] > peaks[0] and compiled.report["memory"]["activation_peak_bytes"] == peaks[1]
    for size in (224, 320):
        inputs = image(size, seed=size)
        assert_matches(compiled.run(inputs), reference(model, inputs), f"{size}x{size}")


@pytest.mark.slow
def test_bert_dynamic_dims_sequence_gears(tmp_path):
    model = dynamic_bert()
    options = ge.CompileOptions(input_shape=BERT_SHAPE, dynamic_dims="16,16,16;32,32,32;64,64,64;128,128,128",
                                precision_mode=F32)
    compiled = ge.compile(model, options)
    assert compiled.gears == [f"dims={s},{s},{s}" for s in (16, 32, 64, 128)]
    path = tmp_path / "bert.om"
    compiled.save(path)
    loaded = ge.load_model(path)
    assert [io["shape"] for io in loaded.inputs] == [[1, -1]] * 3
    for seq in (64, 16, 128, 32):
        inputs = zoo.bert_inputs(1, seq)
        assert_matches(loaded.run(inputs), reference(model, inputs), f"seq {seq}")
        assert loaded.last_run.gear == f"dims={seq},{seq},{seq}"
    with pytest.raises(InputError, match="no compiled gear for 'input_ids' \\[1, 20\\]"):
        loaded.run(zoo.bert_inputs(1, 20))


@pytest.mark.slow
def test_squeezenet_image_size_gears_224_and_320():
    """A light zoo model (fully convolutional, global pooling) at both sizes, in the default
    f16 (`force_fp16`): within 3% of the output scale with cosine >= 0.999 -- the f16
    tolerance of the transformer tests."""
    from ge.testing import light_model_path, with_random_weights

    model = with_random_weights(light_model_path("squeezenet"), seed=1)
    dims = next(i for i in model.graph.input if i.name == "data_0").type.tensor_type.shape.dim
    for d, name in ((dims[2], "h"), (dims[3], "w")):
        d.ClearField("dim_value")
        d.dim_param = name
    options = ge.CompileOptions(input_shape="data_0:1,3,-1,-1", dynamic_image_size="224,224;320,320")
    compiled = ge.compile(model, options)
    assert compiled.gears == ["224x224", "320x320"]
    for size in (224, 320):
        inputs = {"data_0": image(size, seed=size)["x"]}
        (name, want), = reference(model, inputs).items()
        got = compiled.run(inputs)[name].astype(np.float64)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        cos = float(got.ravel() @ want.ravel() / (np.linalg.norm(got) * np.linalg.norm(want)))
        assert err < 0.03 and cos >= 0.999, (size, err, cos)


# --------------------------------------------------------------------------------------
# The true dynamic-shape mode: kernels per shape signature, cached in memory and on disk
# --------------------------------------------------------------------------------------

BERT_RANGE = "input_ids:[1,1~128];token_type_ids:[1,1~128];attention_mask:[1,1~128]"


def test_input_shape_range_parsing():
    from ge.dynamic import parse_shape_ranges

    assert parse_shape_ranges("input_ids:[1,1~512];x:[-1,3]") == {"input_ids": [(1, 1), (1, 512)],
                                                                 "x": [(1, None), (3, 3)]}
    for spec, message in (("input_ids:1,1~512", "not of the form"), ("x:[1,a]", "must be n, lo~hi or -1"),
                          ("x:[1,9~3]", "lo <= hi"), (";", "names no input")):
        with pytest.raises(ShapeError, match=message):
            parse_shape_ranges(spec)


def small_sequence_model() -> onnx.ModelProto:
    """[1, seq, 16] -> MatMul -> Relu -> [1, seq, 8], seq symbolic."""
    w = numpy_helper.from_array(np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"), helper.make_node("Relu", ["h"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "seq_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 8])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def seq_input(seq: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seq).standard_normal((1, seq, 16)).astype(np.float32)}


def test_dynamic_mode_cache_memory_disk_and_corruption(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    model = small_sequence_model()
    compiled = ge.compile(model, ge.CompileOptions(input_shape_range="x:[1,1~64,16]", precision_mode=F32))
    assert compiled.inputs[0]["shape"] == [1, -1, 16] and compiled.report["mode"] == "dynamic"
    path = tmp_path / "seq.om"
    compiled.save(path)
    first = ge.load_model(path)
    for seq in (5, 12, 5):
        assert_matches(first.run(seq_input(seq)), reference(model, seq_input(seq)), f"seq {seq}")
    assert first.cache_stats.as_dict() == {"memory_hits": 1, "disk_hits": 0, "misses": 2, "compiles": 2,
                                           "corrupt": 0, "hits": 1}
    assert first.last_run.cache == "memory hit"
    entries = sorted((tmp_path / "cache").glob("*/*.om"))
    assert len(entries) == 2 and not list((tmp_path / "cache").glob("*/*.tmp"))
    # a fresh load (empty memory) finds both on disk; a flipped byte is caught and rebuilt
    entry = first.cache.path("x=1x12x16")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    second = ge.load_model(path)
    assert_matches(second.run(seq_input(5)), reference(model, seq_input(5)), "seq 5 from disk")
    assert second.last_run.cache == "disk hit"
    assert_matches(second.run(seq_input(12)), reference(model, seq_input(12)), "seq 12 rebuilt")
    assert second.cache_stats.as_dict() == {"memory_hits": 0, "disk_hits": 1, "misses": 1, "compiles": 1,
                                            "corrupt": 1, "hits": 1}
    assert ge.runtime.model_file.load_model(entry).metadata["cache_signature"] == "x=1x12x16"
    # another option is another cache key: nothing shared
    other = ge.compile(model, ge.CompileOptions(input_shape_range="x:[1,1~64,16]"))
    assert other.key != second.key


def test_dynamic_mode_input_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    model = small_sequence_model()
    compiled = ge.compile(model, ge.CompileOptions(input_shape_range="x:[1,1~64,16]"))
    with pytest.raises(InputError, match=r"input 'x' has shape \[1, 65, 16\], outside its input_shape_range \[1,1~64,16\]"):
        compiled.run(seq_input(65))
    with pytest.raises(InputError, match="missing 'x'"):
        compiled.run({})
    assert compiled.cache_stats.compiles == 0
    with pytest.raises(ShapeError, match="not graph inputs"):
        ge.compile(model, ge.CompileOptions(input_shape_range="y:[1,1~64,16]"))
    with pytest.raises(ShapeError, match="cannot be used with input_shape"):
        ge.compile(model, ge.CompileOptions(input_shape_range="x:[1,1~64,16]", input_shape="x:1,4,16"))
    with pytest.raises(ShapeError, match="input 'token_type_ids' has a dynamic shape; give its range"):
        ge.compile(dynamic_bert(16), ge.CompileOptions(input_shape_range="input_ids:[1,1~16]"))


_SECOND_PROCESS = """
import json, sys
import dataclasses

import numpy as np
import ge
from ge import zoo
model = ge.load_model(sys.argv[1])
out = model.run(zoo.bert_inputs(1, int(sys.argv[2])))
np.savez(sys.argv[3], **out)
print(json.dumps({"stats": model.cache_stats.as_dict(), "cache": model.last_run.cache}))
"""


@pytest.mark.slow
def test_bert_dynamic_mode_7_16_33_16(tmp_path, monkeypatch):
    import json
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    monkeypatch.setenv("GE_CACHE_DIR", str(cache))
    model = dynamic_bert()
    compiled = ge.compile(model, ge.CompileOptions(input_shape_range=BERT_RANGE, precision_mode=F32))
    path = tmp_path / "bert_dynamic.om"
    compiled.save(path)
    loaded = ge.load_model(path)
    compiles = []
    for seq in (7, 16, 33, 16):
        inputs = zoo.bert_inputs(1, seq)
        assert_matches(loaded.run(inputs), reference(model, inputs), f"seq {seq}")
        compiles.append(loaded.cache_stats.compiles)
    assert compiles == [1, 2, 3, 3]  # the second 16 compiled nothing
    assert loaded.cache_stats.as_dict() == {"memory_hits": 1, "disk_hits": 0, "misses": 3, "compiles": 3,
                                            "corrupt": 0, "hits": 1}
    assert loaded.last_run.cache == "memory hit"
    # a second process reuses the on-disk cache
    out = tmp_path / "out.npz"
    result = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(path), "33", str(out)], capture_output=True,
                            text=True, timeout=600, env={**os.environ, "GE_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"stats": {"memory_hits": 0, "disk_hits": 1, "misses": 0, "compiles": 0, "corrupt": 0, "hits": 1},
                      "cache": "disk hit"}
    assert_matches(dict(np.load(out)), reference(model, zoo.bert_inputs(1, 33)), "seq 33 in a second process")
    # a corrupted entry is detected, removed and rebuilt, never used
    entry = loaded.cache.path("input_ids=1x7;token_type_ids=1x7;attention_mask=1x7")
    data = bytearray(entry.read_bytes())
    for i in range(1000, 1016):
        data[i] ^= 0x5A
    entry.write_bytes(bytes(data))
    fresh = ge.load_model(path)
    inputs = zoo.bert_inputs(1, 7)
    assert_matches(fresh.run(inputs), reference(model, inputs), "seq 7 rebuilt")
    assert fresh.cache_stats.corrupt == 1 and fresh.cache_stats.compiles == 1 and fresh.last_run.cache == "compiled"


def test_backend_with_input_shape_range_uses_one_dynamic_model(tmp_path, monkeypatch):
    import ge.backend

    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    model = small_sequence_model()
    rep = ge.backend.prepare(model, device="NPU", input_shape_range="x:[1,1~64,16]")
    for seq in (3, 6, 3):
        (got,) = rep.run([seq_input(seq)["x"]])
        assert_matches({"y": got}, reference(model, seq_input(seq)), f"seq {seq}")
    assert len(set(map(id, rep._compiled.values()))) == 1  # one dynamic model for both signatures
    stats = next(iter(rep._compiled.values())).cache_stats
    assert (stats.compiles, stats.memory_hits, stats.disk_hits) == (2, 1, 0)
    assert len(list((tmp_path / "cache").glob("*/*.om"))) == 2


def test_precheck_of_a_dynamic_model_uses_the_smallest_shapes():
    from ge.precheck import check_support

    report = check_support(small_sequence_model(), ge.CompileOptions(input_shape_range="x:[1,2~64,16]"))
    assert [(n.node, n.status) for n in report.nodes] == [("proj", "supported"), ("act", "supported")]


def test_kernel_cache_concurrent_writers_leave_a_whole_entry(tmp_path):
    """Writers of one entry race (threads here; processes behave alike: each writes its own
    temp file and os.replace swaps whole files): every read sees a complete, valid entry."""
    import threading

    from ge.runtime.kernel_cache import KernelCache

    built = ge.compile(small_sequence_model(), ge.CompileOptions(input_shape="x:1,4,16")).model
    cache = KernelCache("k", tmp_path)
    seen, errors = [], []

    def write():
        for _ in range(10):
            cache.store("x=1x4x16", built)

    def read():
        for _ in range(30):
            model, corrupt = cache.load("x=1x4x16")
            if corrupt:
                errors.append("corrupt")
            elif model is not None:
                seen.append(model.metadata["cache_signature"])

    threads = [threading.Thread(target=write) for _ in range(3)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and set(seen) <= {"x=1x4x16"}
    assert cache.load("x=1x4x16")[0] is not None and not list(tmp_path.glob("k/*.tmp"))


@pytest.mark.slow
def test_torch_compile_dynamic_uses_the_disk_cache(tmp_path, monkeypatch):
    """torch.compile(dynamic=True): each concrete shape compiled once; after a Dynamo reset
    (as in a new process) the same shapes come from the disk cache, nothing compiles."""
    torch = pytest.importorskip("torch")
    from ge.dynamic import MODULE_CACHE_STATS

    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()

    def run_all() -> None:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="ge", dynamic=True)
        for batch in (3, 5):
            x = torch.randn(batch, 4, generator=torch.Generator().manual_seed(batch))
            with torch.no_grad():
                got, want = compiled(x).numpy(), model(x).numpy()
            assert np.abs(got - want).max() <= TOLERANCE * np.abs(want).max()

    before = dataclasses.replace(MODULE_CACHE_STATS)
    run_all()
    assert (MODULE_CACHE_STATS.compiles - before.compiles, MODULE_CACHE_STATS.disk_hits - before.disk_hits) == (2, 0)
    run_all()
    assert (MODULE_CACHE_STATS.compiles - before.compiles, MODULE_CACHE_STATS.disk_hits - before.disk_hits) == (2, 2)
    torch._dynamo.reset()


def test_command_line_gears_and_dynamic_mode(tmp_path, monkeypatch, capsys):
    """ge-compile --dynamic-image-size / --input-shape-range; ge-run --gear picks the gear of
    its random inputs; ge-run on a dynamic model prints how it got its kernels (and --profile
    writes it into the timeline): compiled in the first process, a disk hit in the next."""
    import json

    from ge.tools.ge_compile import main as compile_main
    from ge.tools.ge_run import main as run_main

    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    cnn, seq = tmp_path / "cnn.onnx", tmp_path / "seq.onnx"
    onnx.save(small_cnn(), cnn)
    onnx.save(small_sequence_model(), seq)
    assert compile_main([str(cnn), "-o", str(tmp_path / "cnn.om"), "--input-shape", "x:1,3,-1,-1",
                         "--dynamic-image-size", "32,32;48,48"]) == 0
    assert "gears 32x32, 48x48 (kernels " in capsys.readouterr().out
    assert run_main([str(tmp_path / "cnn.om"), "--gear", "48x48"]) == 0
    assert ", gear 48x48" in capsys.readouterr().out
    assert compile_main([str(seq), "-o", str(tmp_path / "seq.om"), "--input-shape-range", "x:[1,1~64,16]"]) == 0
    assert "dynamic shapes x:[1,1~64,16]" in capsys.readouterr().out
    timeline = tmp_path / "t.json"
    for how in ("compiled", "disk hit"):
        assert run_main([str(tmp_path / "seq.om"), "--shape", "x:1,9,16", "--profile", str(timeline)]) == 0
        assert f"kernel cache: {how} (" in capsys.readouterr().out
        assert json.loads(timeline.read_text())["otherData"]["kernel_cache"] == how
    assert run_main([str(tmp_path / "seq.om"), "--shape", "x:1,99,16"]) != 0
    assert "outside its input_shape_range [1,1~64,16]" in capsys.readouterr().err


def test_mode_1_describes_a_dynamic_model_file(tmp_path, monkeypatch):
    """`ge-compile --mode 1` of an input_shape_range model shows its inputs with their ranges
    (it has no kernels of its own: they are compiled per shape at run time)."""
    import subprocess
    import sys

    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    src, om = tmp_path / "seq.onnx", tmp_path / "seq.om"
    onnx.save(small_sequence_model(), src)
    cmd = [sys.executable, "-m", "ge.tools.ge_compile"]
    subprocess.run([*cmd, str(src), "-o", str(om), "--input-shape-range", "x:[1,1~64,16]"], check=True,
                   capture_output=True, text=True)
    out = subprocess.run([*cmd, "--mode", "1", "--om", str(om)], check=True, capture_output=True, text=True)
    info = json.loads(out.stdout)
    assert info["inputs"] == [{"name": "x", "shape": [1, -1, 16], "dtype": "float32", "range": [[1, 1], [1, 64], [16, 16]]}]
    assert info["outputs"] == [{"name": "y"}]
    assert info["kernels"] == [] and "run time" in info["dynamic"]["kernels"]


def test_ge_run_dump_of_a_dynamic_model(tmp_path, monkeypatch, capsys):
    """`ge-run --dump` on an input_shape_range model dumps the kernels compiled for this run's
    shape; the dumped tensors match onnxruntime at that shape, and the run compiles once."""
    from ge.tools.ge_run import main as ge_run_main

    monkeypatch.setenv("GE_CACHE_DIR", str(tmp_path / "cache"))
    model = small_sequence_model()
    src, om, out_dir = tmp_path / "seq.onnx", tmp_path / "seq.om", tmp_path / "dump"
    onnx.save(model, src)
    ge.compile(model, ge.CompileOptions(input_shape_range="x:[1,1~64,16]", precision_mode=F32)).save(om)
    x = seq_input(9)
    np.savez(tmp_path / "in.npz", **x)
    assert ge_run_main([str(om), "--inputs", str(tmp_path / "in.npz"), "--dump", str(out_dir), "--compare", str(src)]) == 0
    out = capsys.readouterr().out
    assert "kernel cache: compiled" in out and "compiles 1)" in out
    manifest = json.loads((out_dir / "manifest.json").read_text())["tensors"]
    assert [e["tensor"] for e in manifest][-1] == "y"
    y = np.load(out_dir / "y.npy")
    assert y.shape == (1, 9, 8)
    np.testing.assert_allclose(y, reference(model, x)["y"], rtol=1e-5, atol=1e-5)
