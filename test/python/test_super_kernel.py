"""SuperKernels (transforms/super_kernel.py, the executor's `_super_kernel`): each stream's
consecutive launches dispatched once, with a full-core barrier between two of them.

The checks: the same bytes out as the plain launches (and onnxruntime's values), one
dispatch and N - 1 barriers exactly (`overhead.launch` vs `overhead.sync_all` of the
target), sub-kernels back to back on the cores the group holds, the marks kept through the
model file and refused when they are not consecutive, several streams kept only where the
makespan estimate finds them faster than one stream of SuperKernels.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import GeError
from ge.lowering.streams import TaskCost, assign_streams, makespan
from ge.runtime import model_file as mf
from ge.targets import load_target

F32 = "must_keep_origin_dtype"


def conv_chain(layers: int = 4, channels: int = 16, size: int = 16, seed: int = 0) -> onnx.ModelProto:
    """Conv + Relu `layers` times; He-scaled weights keep the output dependent on the input."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((channels, channels, 3, 3)) * np.sqrt(2 / (9 * channels))).astype(np.float32)
        b = (0.1 * rng.standard_normal(channels)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [y := "y" if i == layers - 1 else f"r{i}"])]
        x = y
    shape = [1, channels, size, size]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def chain_runs():
    """The chain compiled at the isa level with and without SuperKernels, run on one input."""
    model = conv_chain()
    x = np.random.default_rng(1).standard_normal((1, 16, 16, 16)).astype(np.float32)
    runs = {}
    for on in (True, False):
        compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32, super_kernel=on))
        runs[on] = (compiled, compiled.run({"x": x})["y"], compiled.last_run)
    return model, x, runs


def test_same_outputs_as_plain_launches_and_onnxruntime(chain_runs):
    model, x, runs = chain_runs
    (expected,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.array_equal(runs[True][1], runs[False][1])  # the same kernels on the same bytes
    # f32 throughout (must_keep_origin_dtype): only the summation order differs from onnxruntime
    assert np.abs(runs[True][1] - expected).max() <= 1e-4 * np.abs(expected).max()


def test_one_dispatch_then_barriers(chain_runs):
    _, _, runs = chain_runs
    compiled, _, on = runs[True]
    off = runs[False][2]
    overhead = load_target("ascend910").overhead
    tasks = compiled.executor.model.tasks
    launches = [t for t in tasks if t["op"] == "launch"]
    assert len(launches) >= 4 and {t.get("super_kernel") for t in launches} == {0}
    assert compiled.report["streams"] == 1
    assert [k.dispatch for k in on.kernels] == [overhead.launch] + [overhead.sync_all] * (len(on.kernels) - 1)
    assert [k.dispatch for k in off.kernels] == [overhead.launch] * len(off.kernels)
    saved = (len(on.kernels) - 1) * (overhead.launch - overhead.sync_all)
    assert on.total_cycles == pytest.approx(off.total_cycles - saved)
    spans = sorted((s for s in on.spans if s.kind == "launch"), key=lambda s: s.task)
    for a, b in itertools.pairwise(spans):
        assert b.start == a.end  # back to back: the barrier is inside the next sub-kernel's cycles
    held = set(spans[0].cores)
    assert all(set(s.cores) <= held for s in spans)
    slices = [e for e in on.timeline()["traceEvents"] if e.get("cat") == "launch"]  # --profile's stream track
    assert len(slices) == len(spans) and all(e["args"]["super_kernel"] == 0 for e in slices)


def test_tile_level_counts_the_same_overheads():
    model = conv_chain(layers=3)
    x = np.random.default_rng(2).standard_normal((1, 16, 16, 16)).astype(np.float32)
    totals = {}
    for on in (True, False):
        compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32, kernel_level="tile", super_kernel=on))
        compiled.run({"x": x})
        totals[on] = compiled.last_run.total_cycles
    overhead = load_target("ascend910").overhead
    n = len(compiled.last_run.kernels)
    assert n >= 3
    assert totals[True] == pytest.approx(totals[False] - (n - 1) * (overhead.launch - overhead.sync_all))


def test_marks_survive_the_model_file_and_bad_ones_are_refused(chain_runs, tmp_path):
    _, x, runs = chain_runs
    compiled = runs[True][0]
    path = tmp_path / "chain.om"
    compiled.save(path)
    loaded = ge.load_model(path)
    assert [t.get("super_kernel") for t in loaded.executor.model.tasks if t["op"] == "launch"] == \
        [t.get("super_kernel") for t in compiled.executor.model.tasks if t["op"] == "launch"]
    assert np.array_equal(loaded.run({"x": x})["y"], runs[True][1])
    from ge.inspect_model import describe_file

    (group,) = describe_file(str(path))["streams"]["super_kernels"]  # what --mode 1 shows
    launches = [j for j, t in enumerate(compiled.executor.model.tasks) if t["op"] == "launch"]
    assert group == {"super_kernel": 0, "stream": 0, "tasks": launches}
    model = mf.load_model(path)
    launches = [t for t in model.tasks if t["op"] == "launch"]
    launches[1]["super_kernel"] = 5  # a group of one launch between two halves of group 0
    bad = tmp_path / "bad.om"
    mf.save_model(bad, model)
    with pytest.raises(GeError, match=r"task #\d+ \(launch\) is a sub-kernel of super_kernel 0 but does not follow"):
        mf.load_model(bad)


def test_makespan_weighs_concurrent_branches_against_super_kernels():
    """A diamond: task 0, then tasks 1 and 2 (16 cores each, side by side on two streams),
    then task 3. On two streams the events cut the SuperKernels: every task pays a dispatch;
    on one stream all four make one SuperKernel but run one after another."""
    preds = [[], [0], [0], [1, 2]]
    several, one = assign_streams(preds), assign_streams(preds, single_stream=True)
    assert several.num_streams == 2 and one.num_streams == 1

    def costs(branch: float) -> list[TaskCost]:
        return [TaskCost(100, 32), TaskCost(branch, 16), TaskCost(branch, 16), TaskCost(100, 32)]

    def estimate(schedule, branch, super_kernels=True):
        return makespan(schedule, costs(branch), {"cube": 32}, 1000, 140, super_kernels)

    # short branches: 1100, both branches to 3100 side by side, 4200 -- against one dispatch
    # and three barriers: 1000 + 100 + 2 x (140 + 1000) + 140 + 100
    assert estimate(several, 1000) == 4200 and estimate(one, 1000) == 3620
    # long branches: side by side wins (1100 + 6000 + 1100 against 1100 + 2 x 5140 + 240)
    assert estimate(several, 5000) == 8200 and estimate(one, 5000) == 11620
    assert estimate(one, 1000, super_kernels=False) == 4 * 1000 + 2 * 100 + 2 * 1000  # a dispatch each


@pytest.mark.parametrize("k, streams", [(64, 1), (512, 2)])
def test_streams_kept_only_where_they_pay(k, streams):
    """Two branches of 16-core MatMuls: small ones run fastest as one SuperKernel on one
    stream, large ones side by side on two streams (the SuperKernels cut at the events);
    build-model's estimate picks the faster, every dependency holds either way."""
    from ge.testing import two_branch_model

    model = two_branch_model(batch=32, k=k)
    x = np.random.default_rng(3).standard_normal((32, k)).astype(np.float32)
    totals = {}
    for single in (False, True):
        compiled = ge.compile(model, ge.CompileOptions(precision_mode=F32, enable_single_stream=single))
        compiled.run({"x": x})
        totals[single] = compiled.last_run.total_cycles
        if not single:
            chosen = compiled
    assert chosen.report["streams"] == streams
    assert totals[False] <= totals[True]
    report, tasks = chosen.last_run, chosen.executor.model.tasks
    for j, t in enumerate(tasks):  # a sub-kernel's predecessor on its stream is a launch of its group
        group = t.get("super_kernel")
        before = [u for u in tasks[:j] if u["stream"] == t["stream"]]
        if group is not None and any(u.get("super_kernel") == group for u in before):
            assert before[-1].get("super_kernel") == group
    for s in report.spans:  # a core runs one kernel at a time
        for t in report.spans:
            if s.task < t.task and set(s.cores) & set(t.cores):
                assert s.end <= t.start or t.end <= s.start
    assert json.dumps(report.timeline())  # the trace still serializes
