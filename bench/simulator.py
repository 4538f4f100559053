"""The simulator's speed: loading a model file, one simulated inference, and `ge-run` as a
whole process, next to onnxruntime on the same inputs.

    python bench/simulator.py [--quick] [--models a,b] [--before DIR] [--cache DIR]

The simulator's speed is a user-facing feature: `ge-run` on a model should take seconds.
Each model (seeded random weights calibrated on the inputs, `force_fp16`, ascend910) is
compiled once with `ge.compile` (the .om, .onnx and inputs are cached in `--cache`). In a
fresh process per side: "load" is `ge.load_model` + building the executor (decoding the
kernels), "run" the first simulated inference (numerics, timing and checks of every
distinct kernel), "rerun" a second one (numerics only: the timing and checks are reused),
"timing-only" a `timing_only` run with nothing reused (the simulated instructions per
second); "simulated cycles" the first run's total (the chip's time, not the host's). "Whole process" is `ge-run model.om --inputs in.npz --output out.npz` and, for
onnxruntime, a script that starts, builds the session (ORT_ENABLE_ALL, one intra-op
thread), runs once and writes the outputs: medians of `--repeats` alternating runs. Times
are CPU seconds (user + system) of the process: the machine may be shared, and the wall
time would count the others' work too (the JSON has the wall times as well).

`--before DIR` measures a second checkout (a directory laid out as the `ge` package, put
first on PYTHONPATH) the same way, compiling its own model files, so the table shows
before -> after side by side; both sides also report the simulator's problems.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import markdown, parser

QUICK = ("squeezenet", "resnet50")
MODELS = ("squeezenet", "resnet50", "inception_v1", "encoder_layer")

ORT_SCRIPT = """
import sys, numpy as np, onnxruntime as ort
opts = ort.SessionOptions()
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
opts.intra_op_num_threads = 1
session = ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
with np.load(sys.argv[2]) as d:
    feeds = {k: d[k] for k in d.files}
outs = session.run(None, feeds)
np.savez(sys.argv[3], **{o.name: v for o, v in zip(session.get_outputs(), outs)})
"""


# --------------------------------------------------------------------------------------
# The worker: runs in a fresh process with the side's `ge` first on the path
# --------------------------------------------------------------------------------------


def prepare(name: str, cache: Path) -> None:
    """Compile `name` into cache/<name>.om (with its .onnx and inputs) unless there."""
    import numpy as np
    import onnx

    import ge
    from ge.dialects.blobs import blob_scope
    from ge.testing import calibrated_model, random_inputs

    om = cache / f"{name}.om"
    if om.exists():
        return
    with blob_scope():
        model = calibrated_model(name)
        onnx.save(model, cache / f"{name}.onnx")
        np.savez(cache / f"{name}_in.npz", **random_inputs(model, seed=2))
        ge.compile(model, ge.CompileOptions(keep_ir_text=False)).save(om)


def worker(name: str, cache: Path) -> dict:
    """Load, run, rerun and time-only run one model in this process: CPU seconds of each
    step (this process's user + system time: on a shared machine the wall time also counts
    the other processes), the wall seconds under `wall`."""
    import numpy as np

    out: dict = {"wall": {}}
    clock = [time.process_time(), time.perf_counter()]

    def step(key: str) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        out[key], out["wall"][key] = cpu - clock[0], wall - clock[1]
        clock[:] = [cpu, wall]

    import ge

    step("import_s")
    model = ge.load_model(cache / f"{name}.om")
    executor = model.executor
    step("load_s")
    with np.load(cache / f"{name}_in.npz") as d:
        inputs = {k: d[k] for k in d.files}
    kwargs = {"allow_hazards": True} if "allow_hazards" in model.run.__code__.co_varnames else {}
    clock[:] = [time.process_time(), time.perf_counter()]
    model.run(inputs, **kwargs)
    step("run_s")
    report = executor.last_report
    model.run(inputs, **kwargs)
    step("rerun_s")
    out["timing_only_s"] = None
    if hasattr(executor, "analyses"):
        executor.analyses.clear()
        model.run(inputs, timing_only=True, **kwargs)
        step("timing_only_s")
    kernels = model.model.kernels
    out.update(instructions=sum(sum(k.instructions.values()) for k in report.kernels), cycles=report.total_cycles,
               problems=len(report.problems), kernels=len(model.model.definition["kernels"]),
               bodies=len(kernels["bodies"]) if "bodies" in kernels else None)
    return out


# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------


def _env(pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:  # that checkout's ge first; no current directory on the path (it may hold another ge)
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, str(Path(__file__).resolve().parent)])
        env["PYTHONSAFEPATH"] = "1"
    return env


def _timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of a child process."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def side(name: str, cache: Path, pythonpath: str | None, repeats: int) -> dict:
    env = _env(pythonpath)
    me = [sys.executable, str(Path(__file__).resolve())]
    subprocess.run([*me, "--prepare", name, "--cache", str(cache)], env=env, check=True)
    out = subprocess.run([*me, "--worker", name, "--cache", str(cache)], env=env, check=True, capture_output=True,
                         text=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    ge_run = [sys.executable, "-m", "ge.tools.ge_run", str(cache / f"{name}.om"), "--inputs",
              str(cache / f"{name}_in.npz"), "--output", str(cache / f"{name}_out.npz"), "--top", "0"]
    help_text = subprocess.run([*ge_run[:4], "--help"], env=env, capture_output=True, text=True).stdout
    if "--allow-hazards" in help_text:
        ge_run.append("--allow-hazards")
    ort = [sys.executable, "-c", ORT_SCRIPT, str(cache / f"{name}.onnx"), str(cache / f"{name}_in.npz"),
           str(cache / f"{name}_ort.npz")]
    whole, ort_whole = [], []
    for _ in range(repeats):
        whole.append(_timed(ge_run, env))
        ort_whole.append(_timed(ort, _env(None)))
    row.update(whole_s=statistics.median(c for c, _ in whole), ort_whole_s=statistics.median(c for c, _ in ort_whole))
    row["wall"].update(whole_s=statistics.median(w for _, w in whole), ort_whole_s=statistics.median(w for _, w in ort_whole))
    row["ratio"] = row["whole_s"] / row["ort_whole_s"]
    row["instructions_per_s"] = row["instructions"] / row["timing_only_s"] if row["timing_only_s"] else None
    return row


def _fmt(before: dict | None, after: dict, key: str, fmt: str) -> str:
    value = after.get(key)
    now = "-" if value is None else format(value, fmt)
    if before is None:
        return now
    old = before.get(key)
    return f"{'-' if old is None else format(old, fmt)} -> {now}"


def table(rows: list[dict]) -> str:
    header = ["model", "load s", "run s", "rerun s", "ge-run whole process s", "onnxruntime whole process s",
              "ratio", "timing-only instructions / s", "simulated cycles", "kernels / bodies", "problems"]
    out = []
    for r in rows:
        b, a = r.get("before"), r["after"]
        out.append([r["model"], _fmt(b, a, "load_s", ".2f"), _fmt(b, a, "run_s", ".2f"), _fmt(b, a, "rerun_s", ".2f"),
                    _fmt(b, a, "whole_s", ".2f"), _fmt(b, a, "ort_whole_s", ".2f"), _fmt(b, a, "ratio", ".1f"),
                    _fmt(b, a, "instructions_per_s", ",.0f"), _fmt(b, a, "cycles", ",.0f"),
                    f"{a['kernels']} / {a['bodies'] or a['kernels']}",
                    _fmt(b, a, "problems", "d")])
    return markdown(header, out)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "simulator", QUICK)
    p.add_argument("--repeats", type=int, default=3, help="alternating whole-process runs of each side (--quick: 1)")
    p.add_argument("--before", metavar="DIR", help="another checkout laid out as the ge package, measured first")
    p.add_argument("--cache", type=Path, default=Path("build") / "bench" / "simulator",
                   help="where the compiled models, inputs and outputs are kept")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--prepare", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.prepare or args.worker:
        args.cache.mkdir(parents=True, exist_ok=True)
        if args.prepare:
            prepare(args.prepare, args.cache)
        else:
            print(json.dumps(worker(args.worker, args.cache)))
        return
    names = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    repeats = 1 if args.quick and args.repeats == 3 else args.repeats
    rows = []
    for name in names:
        row = {"model": name}
        if args.before:
            row["before"] = side(name, args.cache / "before", args.before, repeats)
        row["after"] = side(name, args.cache / "after", None, repeats)
        rows.append(row)
        print(f"{name}: ge-run {row['after']['whole_s']:.2f} s, onnxruntime {row['after']['ort_whole_s']:.2f} s",
              file=sys.stderr)
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
