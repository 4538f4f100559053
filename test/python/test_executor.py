"""The executor (runtime/executor.py) on small models compiled by `ge.compile`: input checks,
dynamic-batch gears (model file round trip, gear selection, the no-gear error, shared
weights), and the stream schedule (every dependency respected, cores never
oversubscribed, a second stream lowering the total cycles).

Every test runs at every kernel level: "tile" (the tile interpreter, cycles from the tile
cost model) and "isa" (the simulator). The isa level needs `ge.lowering.to_isa`; until it
exists the isa cases are reported as skipped with that reason (pytest -ra lists them).
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ge
from ge.dialects.blobs import blob_scope
from ge.errors import InputError
from ge.ir import parse_module, run_passes
from ge.runtime import model_file as mf
from ge.runtime.executor import Executor, copy_cycles
from ge.testing import two_branch_model

ISA = "isa"
LEVELS = ["tile", ISA]
F32 = "must_keep_origin_dtype"


def reference(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def x_of(batch: int, k: int = 64, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, k)).astype(np.float32)


@pytest.fixture(scope="module", params=LEVELS)
def compiled(request) -> ge.CompiledModel:
    with blob_scope():
        return ge.compile(two_branch_model(), ge.CompileOptions(kernel_level=request.param, precision_mode=F32,
                                                                super_kernel=False))  # two streams


# --------------------------------------------------------------------------------------
# Running and checking inputs
# --------------------------------------------------------------------------------------


def test_outputs_match_onnxruntime(compiled):
    x = x_of(32)
    got = compiled.run({"x": x})
    (expected,) = reference(two_branch_model(), {"x": x})
    assert list(got) == ["y"] and got["y"].shape == (32, 64) and got["y"].dtype == np.float32
    assert np.abs(got["y"] - expected).max() <= 1e-4 * np.abs(expected).max()


def test_runs_again_with_other_inputs(compiled):
    first = compiled.run({"x": x_of(32, seed=1)})["y"]
    second = compiled.run({"x": x_of(32, seed=2)})["y"]
    (expected,) = reference(two_branch_model(), {"x": x_of(32, seed=2)})
    assert not np.allclose(first, second)
    assert np.abs(second - expected).max() <= 1e-4 * np.abs(expected).max()


@pytest.mark.parametrize(("inputs", "message"), [
    ({}, r"takes inputs 'x'; missing 'x'"),
    ({"x": x_of(32), "z": x_of(32)}, r"unexpected 'z'"),
    ({"x": x_of(32).astype(np.float64)}, r"input 'x' must be float32, got float64"),
    ({"x": x_of(16)}, r"input 'x' must have shape \[32,64\], got \[16, 64\]"),
    ({"x": x_of(32)[None]}, r"input 'x' must have shape \[32,64\], got \[1, 32, 64\]"),
])
def test_input_errors_name_the_input(compiled, inputs, message):
    with pytest.raises(InputError, match=message):
        compiled.run(inputs)


def test_saved_model_runs_the_same(compiled, tmp_path):
    path = tmp_path / "m.om"
    size = compiled.save(path)
    assert path.stat().st_size == size
    loaded = ge.load_model(path)
    assert loaded.report["kernel_level"] == compiled.report["kernel_level"]
    x = x_of(32, seed=5)
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], compiled.run({"x": x})["y"])


# --------------------------------------------------------------------------------------
# Streams: the schedule
# --------------------------------------------------------------------------------------


def byte_dependencies(model: mf.Model, first: int, end: int) -> list[set[int]]:
    """Per task, the earlier launches / copies it must follow, from the bytes they touch
    (computed here from the tensors' offsets, independently of streams and events)."""
    tensors = model.definition["tensors"]

    def spans(ids):
        return [(tensors[i]["offset"], tensors[i]["offset"] + tensors[i]["bytes"]) for i in ids]

    accesses = {}
    for j in range(first, end):
        t = model.tasks[j]
        if t["op"] == "launch":
            accesses[j] = (spans(t["ins"]), spans(t["outs"]))
        elif t["op"] == "copy":
            accesses[j] = (spans([t["src"]]), spans([t["dst"]]))

    def clash(a, b):
        return any(a0 < b1 and b0 < a1 for a0, a1 in a for b0, b1 in b)

    deps = {j: set() for j in accesses}
    for j, (reads, writes) in accesses.items():
        for i, (r_i, w_i) in accesses.items():
            if i < j and (clash(w_i, reads + writes) or clash(r_i, writes)):
                deps[j].add(i)
    return deps


def check_schedule(ex: Executor) -> None:
    report = ex.last_report
    span = {s.task: s for s in report.spans}
    gear = next(g for g in ex.gears if g.batch == report.batch)
    deps = byte_dependencies(ex.model, gear.tasks.start, gear.tasks.stop)
    assert set(span) == set(deps)
    for j, before in deps.items():
        for i in before:
            assert span[j].start >= span[i].end, f"task {j} starts before task {i}, which it depends on, ends"
    by_stream: dict[int, list] = {}
    for s in sorted(report.spans, key=lambda s: s.task):
        by_stream.setdefault(s.stream, []).append(s)
    for spans in by_stream.values():
        for a, b in itertools.pairwise(spans):
            assert b.start >= a.end, "two tasks of one stream overlap"
    for s in report.spans:  # a core runs one kernel at a time
        for t in report.spans:
            if s.task < t.task and set(s.cores) & set(t.cores):
                assert s.end <= t.start or t.end <= s.start, f"tasks {s.task} and {t.task} share a core"
    assert report.total_cycles == max(s.end for s in report.spans) > 0


@pytest.mark.parametrize("level", LEVELS)
def test_two_streams_beat_one(level):
    """Stream concurrency alone (no SuperKernels, which events between streams would cut)."""
    cycles = {}
    for single in (False, True):
        options = ge.CompileOptions(kernel_level=level, precision_mode=F32, enable_single_stream=single,
                                    super_kernel=False)
        model = ge.compile(two_branch_model(), options)
        model.run({"x": x_of(32)})
        check_schedule(model.executor)
        assert model.report["streams"] == (1 if single else 2)
        assert {s.stream for s in model.last_run.spans} == ({0} if single else {0, 1})
        cycles[single] = model.last_run.total_cycles
        kernels = sum(k.cycles for k in model.last_run.kernels)
        if single:  # one stream: the kernels one after another
            assert cycles[single] == pytest.approx(kernels)
    assert cycles[False] < cycles[True], f"two streams {cycles[False]} cycles, one stream {cycles[True]}"


@pytest.mark.parametrize("level", ["tile", pytest.param("isa", marks=pytest.mark.slow)])
def test_schedule_of_a_branchy_light_model_respects_dependencies(level):
    from ge.testing import light_model_path, random_inputs, with_random_weights

    model = with_random_weights(light_model_path("squeezenet"), seed=1)
    compiled = ge.compile(model, ge.CompileOptions(kernel_level=level, precision_mode=F32, super_kernel=False))
    assert compiled.report["streams"] >= 2 and compiled.report["events"] >= 1
    compiled.run(random_inputs(model, seed=2))
    check_schedule(compiled.executor)


def test_timeline_has_a_track_per_stream(compiled):
    compiled.run({"x": x_of(32)}, trace=True)
    trace = compiled.last_run.timeline()
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"stream 0", "stream 1"} <= names
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "launch"]
    assert len(spans) == compiled.report["launches"]
    if compiled.report["kernel_level"] == "isa":  # the simulator's pipes on the cores
        assert any(e["ph"] == "X" and e["cat"] in ("M", "MTE2", "V") for e in trace["traceEvents"])


def test_copy_cost_comes_from_the_target():
    from ge import targets

    t = targets.load_target("ascend910")
    per_cycle = t.dma.hbm_total * 1e9 / t.clock_hz
    assert copy_cycles(t, 0) == t.startup.mte2
    assert copy_cycles(t, 4096) == pytest.approx(t.startup.mte2 + 2 * 4096 / per_cycle)


def test_graph_level_kernels_run_too(tmp_path):
    """A model built at the fusion level (func.func kernels) runs on the reference kernels."""
    model = two_branch_model()
    module = ge.load_onnx(model)
    run_passes(module, f"graph-optimize{{precision={F32}}},assign-layouts,eliminate-trans-data,fuse,build-model")
    mf.save_model(tmp_path / "g.om", mf.model_from_module(module))
    ex = Executor(tmp_path / "g.om")
    assert ex.level == "graph"
    x = x_of(32)
    (expected,) = reference(model, {"x": x})
    assert np.abs(ex.run({"x": x})["y"] - expected).max() <= 1e-4 * np.abs(expected).max()
    assert ex.last_report.cycles_source == "none"


# --------------------------------------------------------------------------------------
# Dynamic batch gears
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=LEVELS)
def geared(request, tmp_path_factory) -> tuple[ge.CompiledModel, str]:
    options = ge.CompileOptions(kernel_level=request.param, precision_mode=F32, input_shape="x:-1,64",
                                dynamic_batch_size="1,2,4")
    with blob_scope():
        compiled = ge.compile(two_branch_model("N"), options)
        path = str(tmp_path_factory.mktemp("gears") / "g.om")
        compiled.save(path)
    return compiled, path


def test_gears_round_trip_through_the_model_file(geared):
    compiled, path = geared
    loaded = mf.load_model(path)
    meta = loaded.metadata
    assert [g["batch"] for g in meta["gears"]] == [1, 2, 4]
    assert meta["inputs"][0]["shape"] == [-1, 64] and meta["outputs"][0]["shape"] == [-1, 64]
    ranges = [g["tasks"] for g in meta["gears"]]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(loaded.tasks)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    for g in meta["gears"]:
        assert g["inputs"][0]["shape"] == [g["batch"], 64]
        assert all(loaded.definition["tensors"][io["tensor"]]["shape"] == [g["batch"], 64]
                   for io in g["inputs"] + g["outputs"])
    names = [k["name"] for k in loaded.definition["kernels"]]
    assert len(names) == len(set(names)) == 3 * compiled.report["gears"][0]["kernels"]
    kernels = loaded.kernels
    if kernels["format"] == "isa-code":  # identical kernels would share one body
        assert set(kernels["kernels"]) == set(names) and len(kernels["bodies"]) <= len(names)
    else:
        assert all(f"@{n}" in kernels["text"] for n in names)
    assert loaded.definition == compiled.model.definition and loaded.tasks == compiled.model.tasks


def test_gears_share_one_weights_region(geared):
    compiled, _ = geared
    static = ge.compile(two_branch_model(), ge.CompileOptions(kernel_level="tile", precision_mode=F32))
    assert len(compiled.model.weights) == len(static.model.weights) == 4 * 64 * 64 * 4
    w_end = len(compiled.model.weights)
    tensors = compiled.model.definition["tensors"]
    weights = [t for t in tensors if t["kind"] == "weight"]
    assert len(weights) == 3 * 4 and len({t["offset"] for t in weights}) == 4  # each gear points at the same 4
    assert all(t["offset"] + t["bytes"] <= w_end for t in weights)
    assert all(t["offset"] >= w_end for t in tensors if t["kind"] in ("input", "output", "buffer"))
    assert compiled.model.definition["arena"] == max(g["arena"] for g in compiled.model.metadata["gears"])


@pytest.mark.parametrize("batch", [1, 2, 4])
def test_executor_picks_the_gear_of_the_batch(geared, batch):
    _, path = geared
    loaded = ge.load_model(path)
    x = x_of(batch, seed=batch)
    y = loaded.run({"x": x})["y"]
    (expected,) = reference(two_branch_model("N"), {"x": x})
    assert y.shape == (batch, 64)
    assert np.abs(y - expected).max() <= 1e-4 * np.abs(expected).max()
    assert loaded.last_run.batch == batch
    gear = next(g for g in loaded.executor.gears if g.batch == batch)
    assert {s.task for s in loaded.last_run.spans} <= set(gear.tasks)


def test_a_batch_without_gear_lists_the_gears(geared):
    _, path = geared
    with pytest.raises(InputError, match=r"no compiled gear for 'x' batch 3; the model was compiled for batch sizes 1, 2, 4"):
        ge.load_model(path).run({"x": x_of(3)})


@pytest.mark.parametrize(("shape", "sizes", "message"), [
    ("x:-1,64", None, r"gives -1 for 'x'.*dynamic_batch_size"),
    ("x:8,64", "1,2", r"dynamic_batch_size needs an input_shape with -1"),
    ("x:8,-1", "1,2", r"-1 may only stand for the batch"),
    ("x:-1,64", "1,0", r"distinct positive batch sizes"),
    ("x:-1,64", "1,a", r"comma-separated list of integers"),
])
def test_bad_dynamic_batch_options(shape, sizes, message):
    with pytest.raises(ge.ShapeError, match=message):
        ge.compile(two_branch_model("N"), ge.CompileOptions(kernel_level="tile", input_shape=shape,
                                                            dynamic_batch_size=sizes))


def test_a_wait_without_record_is_refused(compiled, tmp_path):
    model = mf.read_model(_bytes(compiled, tmp_path))
    model.tasks.insert(0, {"op": "wait", "event": 0, "stream": 0})
    with pytest.raises(ge.GeError, match=r"task #0 waits for event 0, which no task records"):
        Executor(model)


def _bytes(compiled: ge.CompiledModel, tmp_path) -> bytes:
    path = tmp_path / "m.om"
    compiled.save(path)
    return path.read_bytes()


def test_kernels_partition_holds_only_kernels(compiled):
    if compiled.report["kernel_level"] == "isa":  # kernel code: one body per distinct kernel, no weights
        part = compiled.model.kernels
        assert part["format"] == "isa-code" and part["level"] == "isa"
        assert len(part["kernels"]) == compiled.report["kernels"]
        assert sorted({ref["body"] for ref in part["kernels"].values()}) == list(range(len(part["bodies"])))
        assert max(len(b["args"]) for b in part["bodies"]) <= 4
        return
    text = compiled.model.kernels["text"]
    module = parse_module(text)
    assert compiled.model.kernels["level"] == compiled.report["kernel_level"]
    assert {op.name for op in module.ops} == {f"{compiled.report['kernel_level']}.kernel"}
    assert len(list(module.ops)) == compiled.report["kernels"]
    assert "dense_resource<w" not in text  # the weights live in WEIGHTS only
