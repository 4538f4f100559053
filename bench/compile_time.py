"""Compile time, side by side: the whole `ge-compile` process vs TVM Relax building the same
ONNX file, alternating, medians; peak memory of each; ge's per-stage seconds.

    python bench/compile_time.py [--models resnet50,squeezenet] [--repeats 3]
                                 [--tvm-python /path/to/venv/bin/python] [--json PATH]

For each model (the light zoo models with seeded random weights, `encoder_layer`, and
`bert_base`: ge.zoo.bert_encoder at BERT-base size) the ONNX file is written once, then
each repeat runs both sides as fresh processes, ge first on even repeats and TVM first on
odd ones:

- ge: `ge-compile model.onnx -o model.om --report r.json` -- the wall time of the whole
  process (interpreter start, imports, compile, writing the file), its peak resident
  memory (`os.wait4`'s ru_maxrss), and from the report the in-process `compile_seconds`
  per stage (`kernel-copies` is the deduplication of identical kernels, see
  lowering/kernel_dedup.py).
- TVM: a process of `--tvm-python` (a venv with `pip install apache-tvm onnx`; TVM is not
  a ge dependency) that imports the ONNX file into Relax with static input shapes and
  builds it for `llvm` (`tvm.compile`): the build's in-process seconds (import + build),
  the whole process's wall time and peak memory.

The table quotes medians over the repeats; `ge / TVM` is ge's whole process over TVM's
in-process build (the issue's comparison; TVM's process time, with its import of the tvm
package, is in the next column), and `per repeat` the median of that ratio taken within
each repeat (`pair_ratio`). Times depend on the machine and its load: the two sides
alternate so that a load change hits both. A failing compile is shown as `failed` and the
script exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

RESULTS = Path(__file__).parent / "results"
DEFAULT_MODELS = ("squeezenet", "resnet50", "densenet121", "encoder_layer")

TVM_SCRIPT = r"""
import json, sys, time
import onnx
import tvm
from tvm.relax.frontend.onnx import from_onnx
model = onnx.load(sys.argv[1])
inits = {t.name for t in model.graph.initializer}
shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input if i.name not in inits}
start = time.perf_counter()
mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=False)
tvm.compile(mod, target="llvm")
print(json.dumps({"build_seconds": time.perf_counter() - start, "version": tvm.__version__}))
"""


def model_proto(name: str) -> onnx.ModelProto:
    from ge.testing import encoder_layer_model, light_model_path, with_random_weights

    if name == "encoder_layer":
        return encoder_layer_model()
    if name == "bert_base":  # BERT-base: 12 layers, hidden 768, 12 heads, sequence 128
        from ge.zoo import bert_encoder

        return bert_encoder(batch=1, seq=128, hidden=768, heads=12, layers=12, vocab=30522, max_pos=512)
    return with_random_weights(light_model_path(name), seed=1)


def run_process(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak resident MB, exit status, stdout) of one child process run
    under `PEAK_WRAPPER`."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
    return wall, _peak_from_status(proc.stderr), proc.returncode, proc.stdout


def _peak_from_status(stderr: str) -> float:
    """The child's peak RSS printed by `PEAK_WRAPPER` on its last stderr line (MB)."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("peak_rss_kb="):
            return int(line.split("=")[1]) / 1024
    return float("nan")


# Runs a command in a child and prints that child's own peak RSS (ru_maxrss via wait4).
PEAK_WRAPPER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stdout.flush()
print(f"peak_rss_kb={usage.ru_maxrss}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
"""


# ge's packages (the editable install maps ge.lowering to lowering/, ...).
GE_PACKAGES = ("ge", "ge.dialects", "ge.frontend", "ge.transforms", "ge.lowering", "ge.targets", "ge.runtime",
               "ge.tools")


def byte_compile() -> None:
    """ge's modules byte-compiled, as an installed package has them. Why: where bytecode is
    not written (PYTHONDONTWRITEBYTECODE, as on this machine) an edited checkout's stale
    modules are compiled again by every `ge-compile` process, and the table would time
    Python's compiler (tile_cube.py alone takes 0.05 s to compile)."""
    import compileall
    import importlib

    for name in GE_PACKAGES:
        for folder in importlib.import_module(name).__path__:
            compileall.compile_dir(folder, maxlevels=0, quiet=1)


def installed_script(name: str) -> str | None:
    """The console script pip installed beside this interpreter, else the one on PATH. Not
    a version manager's shim (pyenv's is a bash script running `pyenv exec`, 0.1-0.2 s a
    start): TVM's side runs its venv's python directly too."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which(name)


def ge_run(onnx_path: Path, work: Path) -> dict:
    exe = installed_script("ge-compile")
    cmd = [exe] if exe else [sys.executable, "-c", "import sys; from ge.tools.ge_compile import main; sys.exit(main())"]
    report = work / "report.json"
    wall, peak, status, _ = run_process([sys.executable, "-c", PEAK_WRAPPER, *cmd, str(onnx_path),
                                         "-o", str(work / "model.om"), "--report", str(report)])
    if status != 0:
        return {"failed": True, "process_seconds": wall}
    rep = json.loads(report.read_text())
    return {"process_seconds": wall, "peak_mb": peak, "stages": rep["compile_seconds"], "kernels": rep.get("kernels"),
            "distinct_kernels": rep.get("distinct_kernels")}


def tvm_run(python: str, onnx_path: Path) -> dict:
    wall, peak, status, out = run_process([sys.executable, "-c", PEAK_WRAPPER, python, "-c", TVM_SCRIPT,
                                           str(onnx_path)])
    if status != 0:
        return {"failed": True, "process_seconds": wall}
    info = json.loads(out.strip().splitlines()[-1])
    return {"process_seconds": wall, "peak_mb": peak, "build_seconds": info["build_seconds"],
            "version": info["version"]}


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if not r.get("failed") and key in r]
    return statistics.median(values) if values else None


def measure(name: str, repeats: int, tvm_python: str | None, work: Path) -> dict:
    path = work / f"{name}.onnx"
    onnx.save(model_proto(name), str(path), save_as_external_data=False)
    ge_runs: list[dict] = []
    tvm_runs: list[dict] = []
    for r in range(repeats):
        sides = [("ge", lambda: ge_runs.append(ge_run(path, work)))]
        if tvm_python:
            sides.append(("tvm", lambda: tvm_runs.append(tvm_run(tvm_python, path))))
        for _, run in (sides if r % 2 == 0 else sides[::-1]):
            run()
        print(f"  {name} repeat {r}: ge {ge_runs[-1].get('process_seconds', 0):.2f} s"
              + (f", TVM build {tvm_runs[-1].get('build_seconds', float('nan')):.2f} s" if tvm_runs else ""),
              flush=True)
    ok = [g for g in ge_runs if not g.get("failed")]
    stage_names = list(ok[0]["stages"]) if ok else []
    return {
        "model": name, "ge_runs": ge_runs, "tvm_runs": tvm_runs,
        "ge_process_seconds": median(ge_runs, "process_seconds"), "ge_peak_mb": median(ge_runs, "peak_mb"),
        "ge_stages": {s: statistics.median(g["stages"][s] for g in ok) for s in stage_names},
        "kernels": ok[0]["kernels"] if ok else None, "distinct_kernels": ok[0]["distinct_kernels"] if ok else None,
        "tvm_build_seconds": median(tvm_runs, "build_seconds"), "tvm_process_seconds": median(tvm_runs, "process_seconds"),
        "tvm_peak_mb": median(tvm_runs, "peak_mb"), "pair_ratio": pair_ratio(ge_runs, tvm_runs),
        "failed": any(g.get("failed") for g in ge_runs),
    }


def pair_ratio(ge_runs: list[dict], tvm_runs: list[dict]) -> float | None:
    """The median over the repeats of ge's process over TVM's build in the same repeat: the
    two ran one after the other, so a change of the machine's speed between repeats (this
    machine's TVM build ranged 2.4-4.1 s over a day) cancels out of each pair."""
    ratios = [g["process_seconds"] / t["build_seconds"] for g, t in zip(ge_runs, tvm_runs)
              if not g.get("failed") and not t.get("failed")]
    return statistics.median(ratios) if ratios else None


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows: list[dict], repeats: int, tvm_version: str | None) -> str:
    stages = list(dict.fromkeys(s for r in rows for s in r["ge_stages"]))
    head = (f"seconds, median of {repeats} alternating runs per side; ge = whole `ge-compile` process; "
            f"TVM {tvm_version or 'not run'} = Relax ONNX import + tvm.compile(llvm) in process\n\n")
    cols = ["model", "kernels (distinct)", "ge process", "ge peak MB", "TVM build", "TVM process", "TVM peak MB",
            "ge / TVM build", "per repeat", *stages]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        ratio = (r["ge_process_seconds"] / r["tvm_build_seconds"]
                 if r["ge_process_seconds"] and r["tvm_build_seconds"] else None)
        cells = [r["model"], f"{r['kernels']} ({r['distinct_kernels']})",
                 "failed" if r["failed"] else fmt(r["ge_process_seconds"]), fmt(r["ge_peak_mb"], 0),
                 fmt(r["tvm_build_seconds"]), fmt(r["tvm_process_seconds"]), fmt(r["tvm_peak_mb"], 0), fmt(ratio, 1),
                 fmt(r.get("pair_ratio"), 2),
                 *[fmt(r["ge_stages"].get(s), 3) for s in stages]]
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tvm-python", default=os.environ.get("GE_BENCH_TVM_PYTHON"),
                    help="python of a venv with apache-tvm and onnx installed (default: $GE_BENCH_TVM_PYTHON)")
    ap.add_argument("--json", default=str(RESULTS / "compile_time.json"))
    ap.add_argument("--table", default=str(RESULTS / "compile_time.txt"))
    args = ap.parse_args(argv)
    byte_compile()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            rows.append(measure(name, args.repeats, args.tvm_python, Path(tmp)))
    version = next((t["version"] for r in rows for t in r["tvm_runs"] if "version" in t), None)
    text = table(rows, args.repeats, version)
    print(text)
    Path(args.table).write_text(text)
    Path(args.json).write_text(json.dumps({"machine": platform.platform(), "cpus": os.cpu_count(),
                                           "load_average": os.getloadavg(), "repeats": args.repeats,
                                           "tvm_version": version, "models": rows}, indent=1))
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
