"""Operator tuning (ge/aoe.py, lowering/op_bank.py; AOE's `--job_type=2`): each Cube
problem's plan chosen by timing the cost model's cheapest few on the simulator, the winners
kept in an op bank that `ge.compile(op_bank_path=...)` / `ge-compile --op-bank-path` read.

The model: test_summed_convs' ResNet-style block at stride 2 and batch 2 (a 3 x 3 conv, the
projection shortcut summed with the block's last 1 x 1 conv, a 1 x 1 conv after): three Cube
problems, each with several plans within the tuner's margin. Numerics against onnxruntime:
0.1% of the output scale, as test_summed_convs (f16 inputs and weights, f32 sums; another
plan only changes the order of the f32 sums), and a 1% change of the input moves the output
by far more than that."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import ge
from ge import aoe
from ge.inspect_model import describe
from ge.lowering import op_bank, tile_cube
from ge.lowering.tile_cube import CubePlan
from ge.testing import onnxruntime_outputs

sys.path.insert(0, str(Path(__file__).parent))
from test_summed_convs import _block

TOLERANCE = 1e-3
OPTIONS = ge.CompileOptions(soc_version="ascend910", precision_mode="force_fp16", keep_ir_text=False)
VARIANTS = 3


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return _block(64, 32, 128, 14, 2, 2)


@pytest.fixture(scope="module")
def inputs(model) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((2, 64, 14, 14)).astype(np.float32)}


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    bank = tmp_path_factory.mktemp("bank")
    return aoe.tune(model, OPTIONS, op_bank_path=bank, variants=VARIANTS), bank


def _kernels(compiled) -> list[dict]:
    """The compiled model's kernels as `ge-compile --mode 1` describes them (kind, plan)."""
    return describe(compiled.model)["kernels"]


def _cube_plans(compiled) -> list[str]:
    return [k["plan"] for k in _kernels(compiled) if k["kind"].startswith("cube")]


def _error(y: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(y - ref).max() / np.abs(ref).max())


# --------------------------------------------------------------------------------------
# The pieces
# --------------------------------------------------------------------------------------


def _plan(tm: int, tn: int, cycles: float, blocks: int = 32, **kw) -> CubePlan:
    return CubePlan(tm, tn, 16, 32, "nm", 2, 2, 2, 2, blocks, cycles, **kw)


def test_distinct_keeps_the_cheapest_of_each_tiling_within_the_margin():
    plans = [_plan(64, 64, 100.0), _plan(64, 64, 101.0, blocks=16), _plan(128, 64, 110.0),
             _plan(64, 64, 112.0, stack=2), _plan(32, 64, 124.0), _plan(16, 64, 126.0)]
    assert op_bank.distinct(plans, variants=6, margin=1.25) == [plans[0], plans[2], plans[3], plans[4]]
    assert op_bank.distinct(plans, variants=2, margin=1.25) == [plans[0], plans[2]]
    assert op_bank.distinct(plans, variants=6, margin=1.05) == [plans[0]]


def test_ranked_is_the_search_s_order(model):
    """`_ranked`'s first is `_cheapest`'s choice; the rest cost no less, in order, and
    keeping more never changes the first."""
    searched = _calls(model, "_search_space")
    assert len(searched) >= 3
    for (p, mach), found in searched[:6]:
        i, cyc = tile_cube._cheapest(p, mach, found)
        ranked = tile_cube._ranked(p, mach, found, 8)
        assert ranked[0] == (cyc, i)
        assert len(ranked) == min(8, len(found))
        assert [c for c, _ in ranked] == sorted(c for c, _ in ranked)
        assert len({j for _, j in ranked}) == len(ranked)


def _calls(model, name: str) -> list[tuple[tuple, object]]:
    """(arguments, result) of every call of `tile_cube.<name>` while `model` compiles."""
    calls, real = [], getattr(tile_cube, name)

    def spy(*args):
        out = real(*args)
        calls.append((args, out))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tile_cube, name, spy)
        ge.compile(model, OPTIONS)
    return calls


def test_a_bank_round_trips(tmp_path):
    bank = op_bank.OpBank("Ascend910A")
    plan = _plan(112, 128, 1234.5, stack=2, b_direct=True, usage=(("l1", 1024), ("l0a", 512)))
    bank.add("0123456789abcdef01234567", plan, what="a conv", default_cycles=10, tuned_cycles=9)
    path = bank.save(tmp_path)
    assert path == tmp_path / "Ascend910A" / "cube_plans.json"
    again = op_bank.OpBank.load(tmp_path, "Ascend910A")
    assert again.plan("0123456789abcdef01234567", lambda n: [], lambda plan: True) == plan
    assert again.used == {"0123456789abcdef01234567"}
    assert again.entries["0123456789abcdef01234567"]["what"] == "a conv"
    assert op_bank.OpBank.load(tmp_path, "Ascend910B4").entries == {}  # (another chip: no bank yet)


def test_the_digest_is_the_same_in_another_process(model):
    """The bank's names must not depend on the process (no ids, no hash seeds)."""
    keys = [op_bank.digest(key) for _, key in _calls(model, "plan_key")]
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import ge; from ge.lowering import op_bank, tile_cube\n"
              "from test_summed_convs import _block\n"
              "real = tile_cube.plan_key\n"
              "tile_cube.plan_key = lambda p, m: (lambda k: (print(op_bank.digest(k)), k)[1])(real(p, m))\n"
              "ge.compile(_block(64, 32, 128, 14, 2, 2), ge.CompileOptions(soc_version='ascend910', keep_ir_text=False))\n")
    out = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert len(set(keys)) >= 3
    assert set(out.stdout.split()) == set(keys)


# --------------------------------------------------------------------------------------
# A bank steers the plans
# --------------------------------------------------------------------------------------


def test_a_hand_made_bank_gives_its_plans_and_the_same_numbers(model, inputs, tmp_path):
    """Every problem's second-cheapest tiling (`op_bank.distinct`) written into a bank by
    hand: the compile takes each, the kernels carry them, and the output still matches
    onnxruntime."""
    trial = op_bank.Trial(choice=1)
    with op_bank.using(trial):
        ge.compile(model, OPTIONS)
    assert len(trial.alternatives) >= 3
    bank = op_bank.OpBank("Ascend910A")
    for key, alts in trial.alternatives.items():
        assert len(alts) >= 2, "a problem of this model without a second tiling within the margin"
        bank.add(key, alts[1])
    bank.save(tmp_path)
    default = ge.compile(model, OPTIONS)
    steered = ge.compile(model, ge.CompileOptions(**{**vars(OPTIONS), "op_bank_path": str(tmp_path)}))
    assert steered.report["op_bank"] == {"path": str(tmp_path), "plans": len(bank.entries), "used": len(bank.entries)}
    wanted = sorted(alts[1].describe() for alts in trial.alternatives.values())
    assert sorted(set(_cube_plans(steered))) == wanted
    assert sorted(set(_cube_plans(default))) == sorted(alts[0].describe() for alts in trial.alternatives.values())
    ref = onnxruntime_outputs(model, inputs)[0]
    y = next(iter(steered.run(inputs).values()))
    assert _error(y, ref) < TOLERANCE
    noisy = next(iter(steered.run({"x": inputs["x"] * 1.01 + 0.01 * np.abs(inputs["x"]).mean()}).values()))
    assert _error(noisy, ref) > 5 * TOLERANCE


# --------------------------------------------------------------------------------------
# The tuner
# --------------------------------------------------------------------------------------


def test_the_tuner_times_every_problem_and_keeps_the_fastest(model, tuned):
    result, _ = tuned
    assert len(result.problems) >= 3
    assert result.compiles <= 2 * (VARIANTS - 1) + 2  # the cost model's, each half's ranks, the winners
    untuned = ge.compile(model, OPTIONS)
    untuned.run(aoe.timing_inputs(untuned), timing_only=True)
    assert result.default == untuned.last_run.total_cycles  # rank 0 is the cost model's own choice
    cube = [k for k in _kernels(untuned) if k["kind"].startswith("cube")]
    assert sum(len(r.kernels) for r in result.problems) == len(cube)  # every Cube launch timed for its problem
    for r in result.problems:
        assert set(r.simulated) == set(range(min(VARIANTS, len(r.plans))))
        assert r.best == min(r.simulated, key=lambda k: (r.simulated[k], k))
        assert r.plans[0] != r.plans[-1] or len(r.plans) == 1
    assert result.kept == (result.tuned < result.default)


def test_the_bank_reproduces_the_tuned_run(model, inputs, tuned):
    result, bank = tuned
    data = json.loads((bank / "Ascend910A" / "cube_plans.json").read_text())
    changed = [r for r in result.problems if r.best]
    assert set(data["plans"]) == {r.key for r in changed}
    for r in changed:
        entry = data["plans"][r.key]
        assert entry["default_cycles"] == round(r.simulated[0]) and entry["tuned_cycles"] == round(r.simulated[r.best])
        assert entry["tuned_cycles"] < entry["default_cycles"]
    compiled = ge.compile(model, ge.CompileOptions(**{**vars(OPTIONS), "op_bank_path": str(bank)}))
    assert compiled.report["op_bank"]["used"] == len(changed)
    compiled.run(aoe.timing_inputs(compiled), timing_only=True)
    assert compiled.last_run.total_cycles == (result.tuned if result.kept else result.default)
    ref = onnxruntime_outputs(model, inputs)[0]
    assert _error(next(iter(compiled.run(inputs).values())), ref) < TOLERANCE


# --------------------------------------------------------------------------------------
# The commands and bad input
# --------------------------------------------------------------------------------------


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True)


def test_ge_aoe_then_ge_compile(model, tmp_path):
    path = tmp_path / "block.onnx"
    onnx.save(model, path)
    bank = tmp_path / "bank"
    out = _tool("ge.tools.ge_aoe", str(path), "--job-type", "2", "--op-bank-path", str(bank), "--variants", "3",
                "-o", str(tmp_path / "tuned.om"), "--report", str(tmp_path / "aoe.json"))
    assert out.returncode == 0, out.stderr
    assert re.search(r"\d+ Cube problems tuned in \d+ compiles: \d+ took another plan", out.stdout)
    assert "the cost model's plans: the model ran" in out.stderr and re.search(r"plan 1 of \d+ problems", out.stderr)
    report = json.loads((tmp_path / "aoe.json").read_text())
    assert len(report["problems"]) >= 3
    entries = len(json.loads((bank / "Ascend910A" / "cube_plans.json").read_text())["plans"])
    assert (tmp_path / "tuned.om").stat().st_size > 0
    out = _tool("ge.tools.ge_compile", str(path), "-o", str(tmp_path / "m.om"), "--op-bank-path", str(bank))
    assert out.returncode == 0, out.stderr
    assert f", {entries} tuned plan(s) from the op bank" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--job-type", "1"], "ge-aoe: error: --job-type 1 (subgraph tuning) is not implemented; ge-aoe runs 2"),
    (["--job-type", "7"], "ge-aoe: error: --job-type 7 is not a job type"),
    (["--variants", "1"], "ge-aoe: error: --variants 1: tuning needs at least 2 plans per problem"),
])
def test_ge_aoe_refuses_bad_arguments(model, tmp_path, args, message):
    path = tmp_path / "block.onnx"
    onnx.save(model, path)
    out = _tool("ge.tools.ge_aoe", str(path), "--op-bank-path", str(tmp_path / "bank"), *args)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1].startswith(message)
    assert "Traceback" not in out.stderr


def test_a_bad_bank_is_named(model, tmp_path):
    path = tmp_path / "block.onnx"
    onnx.save(model, path)
    out = _tool("ge.tools.ge_compile", str(path), "-o", str(tmp_path / "m.om"), "--op-bank-path", str(tmp_path / "no"))
    assert out.returncode == 1 and out.stderr.strip() == f"ge-compile: error: op bank path {tmp_path / 'no'}: no such directory"
    (tmp_path / "bank" / "Ascend910A").mkdir(parents=True)
    (tmp_path / "bank" / "Ascend910A" / "cube_plans.json").write_text("[1, 2")
    out = _tool("ge.tools.ge_compile", str(path), "-o", str(tmp_path / "m.om"), "--op-bank-path", str(tmp_path / "bank"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"ge-compile: error: op bank {tmp_path / 'bank' / 'Ascend910A' / 'cube_plans.json'}: "
                                 "not a bank")
    with pytest.raises(ge.CompileError, match=r"op bank path .*/no: no such directory"):
        ge.compile(model, ge.CompileOptions(op_bank_path=str(tmp_path / "no")))


def test_a_model_without_cube_kernels_has_nothing_to_tune(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    result = aoe.tune(model, OPTIONS, op_bank_path=tmp_path)
    assert (result.problems, result.compiles, result.kept, result.default == result.tuned > 0) == ([], 1, False, True)
    assert json.loads((tmp_path / "Ascend910A" / "cube_plans.json").read_text())["plans"] == {}
    assert result.summary().startswith("0 Cube problems tuned in 1 compiles: 0 took another plan")


def test_a_plan_that_does_not_fit_is_planned_anew(model, tmp_path, caplog):
    """A bank written by another ge may hold a plan whose buffers no longer fit: warned
    about, and the cost model plans that problem."""
    trial = op_bank.Trial()
    with op_bank.using(trial):
        ge.compile(model, OPTIONS)
    bank = op_bank.OpBank("Ascend910A")
    key, alts = next(iter(trial.alternatives.items()))
    bank.add(key, dataclasses.replace(alts[-1], usage=(("l0a", 10**9),)))
    bank.save(tmp_path)
    compiled = ge.compile(model, ge.CompileOptions(**{**vars(OPTIONS), "op_bank_path": str(tmp_path)}))
    assert compiled.report["op_bank"] == {"path": str(tmp_path), "plans": 1, "used": 0}
    assert f"op bank entry {key} (a Cube problem): its buffers exceed the chip's memories" in caplog.text
    assert sorted(_cube_plans(compiled)) == sorted(_cube_plans(ge.compile(model, OPTIONS)))


def test_ge_aoe_stops_at_a_bank_it_cannot_read(model, tmp_path):
    path = tmp_path / "block.onnx"
    onnx.save(model, path)
    (tmp_path / "bank" / "Ascend910A").mkdir(parents=True)
    (tmp_path / "bank" / "Ascend910A" / "cube_plans.json").write_text('{"format": 0, "plans": {}}')
    out = _tool("ge.tools.ge_aoe", str(path), "--op-bank-path", str(tmp_path / "bank"))
    assert out.returncode == 1 and "the model ran" not in out.stderr  # (before any compile)
    assert out.stderr.strip() == (f"ge-aoe: error: op bank {tmp_path / 'bank' / 'Ascend910A' / 'cube_plans.json'}: "
                                  "not a format-1 bank (a dict with 'format' and 'plans')")


def test_neighbours_are_timed_apart(model, monkeypatch):
    """A launch's cycles depend on what the launches before it left in the L2: in each
    timing compile only every other problem (in launch order) takes another plan, the rest
    keep the cost model's (`aoe.INTERLEAVED`)."""
    rounds, real = [], aoe._timed_compile

    def spy(model, options, trial):
        rounds.append(dict(trial.fixed))
        return real(model, options, trial)

    monkeypatch.setattr(aoe, "_timed_compile", spy)
    result = aoe.tune(model, OPTIONS, variants=3)
    order = [r.key for r in sorted(result.problems, key=lambda r: int(r.kernels[0][1:].split("_")[0]))]
    timing = rounds[1:-1] if any(r.best for r in result.problems) else rounds[1:]
    assert rounds[0] == {} and len(rounds) == result.compiles
    assert {k for r in timing for k in r} == {r.key for r in result.problems if len(r.plans) > 1}
    for fixed in timing:
        assert set(fixed.values()) <= {1, 2} and len(set(fixed.values())) == 1
        timed = [key in fixed for key in order]
        assert not any(a and b for a, b in itertools.pairwise(timed))
