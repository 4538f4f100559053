"""Compile time per stage and in total, next to onnxruntime's session creation (and TVM).

    python bench/compile_time.py [--repeats 5] [--quick] [--no-isa] [--models resnet50,...] [--json PATH]

For each light model (seeded random weights) and the transformer encoder layer, ge compiles
the serialized ONNX model in process, one stage at a time (`STAGES`: `import` is
`ge.frontend.onnx.import_model` on the bytes, every other stage is `ge.ir.run_passes` with
that pass, so each stage's time includes the module verification `run_passes` does after
it). The stages after `tile` that lower to the isa level (`to-isa`, `plan-local-memory`,
`insert-sync`) are timed as soon as `ge.lowering.to_isa` exists. Beside it, onnxruntime
creates an `InferenceSession` with ORT_ENABLE_ALL (CPU provider) from the same bytes:
parsing, graph optimization, layout transformation and kernel creation, which is the
closest it has to a compile. When `tvm` is importable, TVM Relax's ONNX import plus
`tvm.compile` for `llvm` is timed as a third side (one run per model: it takes minutes).

Every compile starts from empty memo caches (`PROCESS_CACHES`: the tile stage remembers
cube plans by problem shape, which would make a second compile of the same model in one
process cheaper than any real one). The sides alternate within each repeat (ge first on
even repeats, onnxruntime first on odd ones), one warm-up compile of the encoder layer runs
before anything is timed, and the table quotes medians over the repeats and the ratio of
the medians (ge total / onnxruntime). A model whose compile fails at a stage is shown with
the stages it passed and `failed`, and the script then exits with status 1. Times depend on
the machine and its load: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import onnx
import onnxruntime as ort

from ge.dialects.blobs import blob_scope
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.testing import LIGHT_MODELS, encoder_layer_model, light_model_path, with_random_weights

# The compile pipeline, one entry per timed stage (a `ge-opt` pass name; "import" is the
# ONNX importer). ISA_STAGES slot in before "build-model" once the isa lowering exists.
STAGES = ("import", "graph-optimize", "assign-layouts", "eliminate-trans-data", "fuse", "bufferize", "tile",
          "build-model")
ISA_STAGES = ("to-isa", "plan-local-memory", "insert-sync")
RESULTS = Path(__file__).parent / "results"
# Process-wide memos that would make a repeated compile of the same model faster than a
# fresh `ge-compile` run: cleared before every timed compile (module, attribute).
PROCESS_CACHES = (("ge.lowering.tile_cube", "_PLANS"),)  # cube tile plans by problem shape


def stages() -> tuple[str, ...]:
    """STAGES, with the isa stages before build-model when `ge.lowering.to_isa` is importable."""
    if importlib.util.find_spec("ge.lowering.to_isa") is None:
        return STAGES
    at = STAGES.index("build-model")
    return STAGES[:at] + ISA_STAGES + STAGES[at:]


def models(names: list[str]) -> Iterator[tuple[str, bytes]]:
    """(name, serialized ONNX model) for the chosen light models and the encoder layer."""
    for name in names:
        if name == "encoder_layer":
            yield name, encoder_layer_model().SerializeToString()
        else:
            yield name, with_random_weights(light_model_path(name), seed=1).SerializeToString()


class StageFailed(Exception):
    """A stage raised: the model does not compile through the whole pipeline."""

    def __init__(self, stage: str, error: Exception, times: dict[str, float]):
        self.times = times  # the stages that finished
        super().__init__(f"{stage}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        self.stage = stage


def reset_caches() -> None:
    """Empty PROCESS_CACHES, so that each compile plans from scratch as a new process would."""
    for module, name in PROCESS_CACHES:
        cache = getattr(sys.modules.get(module), name, None)
        if cache is not None:
            cache.clear()


def compile_ge(data: bytes, pipeline: tuple[str, ...]) -> dict[str, float]:
    """Seconds per stage of one in-process compile of the serialized model, from cold caches."""
    reset_caches()
    times: dict[str, float] = {}
    with blob_scope():
        stage = "import"
        try:
            start = time.perf_counter()
            module = import_model(data)
            times["import"] = time.perf_counter() - start
            for stage in pipeline[1:]:
                start = time.perf_counter()
                run_passes(module, stage)
                times[stage] = time.perf_counter() - start
        except Exception as e:  # a failing stage goes into the table
            raise StageFailed(stage, e, times) from e
        del module
    return times


def create_session(data: bytes) -> float:
    """Seconds to create an onnxruntime session with every graph optimization on."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    start = time.perf_counter()
    ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return time.perf_counter() - start


def tvm_available() -> bool:
    return importlib.util.find_spec("tvm") is not None


def compile_tvm(data: bytes) -> float:
    """Seconds for TVM Relax: ONNX import (static input shapes) + build for `llvm`."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    model = onnx.load_from_string(data)
    initializers = {t.name for t in model.graph.initializer}
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in model.graph.input if i.name not in initializers}
    start = time.perf_counter()
    mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=False)
    build = getattr(tvm, "compile", None) or relax.build  # tvm.compile from 0.20 on
    build(mod, target="llvm")
    return time.perf_counter() - start


def measure(name: str, data: bytes, repeats: int, pipeline: tuple[str, ...], with_tvm: bool) -> dict:
    """Alternate ge and onnxruntime `repeats` times on one model; medians and the ratio."""
    ge_runs: list[dict[str, float]] = []
    ort_runs: list[float] = []
    for r in range(repeats):
        if r % 2 == 1:
            ort_runs.append(create_session(data))
        try:
            ge_runs.append(compile_ge(data, pipeline))
        except StageFailed as e:
            print(f"{name}: ge failed at {e}", flush=True)
            return {"model": name, "repeats": 1, "error": str(e), "failed_stage": e.stage, "stages": e.times,
                    "ort_session": statistics.median(ort_runs or [create_session(data)])}
        if r % 2 == 0:
            ort_runs.append(create_session(data))
    stage_medians = {s: statistics.median(run[s] for run in ge_runs) for s in pipeline}
    totals = [sum(run.values()) for run in ge_runs]
    row = {
        "model": name,
        "repeats": repeats,
        "stages": stage_medians,
        "ge_total": statistics.median(totals),
        "ge_totals": totals,
        "ort_session": statistics.median(ort_runs),
        "ort_sessions": ort_runs,
    }
    row["ratio"] = row["ge_total"] / row["ort_session"]
    if with_tvm:
        row["tvm_build"] = compile_tvm(data)
    return row


def table(rows: list[dict], pipeline: tuple[str, ...], with_tvm: bool) -> str:
    head = ["model", *pipeline, "ge total", "ort session", "ge / ort"] + (["tvm relax"] if with_tvm else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "error" in r:
            failed = pipeline.index(r["failed_stage"])
            cells = [r["model"], *(f"{r['stages'][s]:.3f}" for s in pipeline[:failed]), "failed", *[""] * (len(pipeline) - failed - 1), "-",
                     f"{r['ort_session']:.3f}", "-"]
        else:
            cells = [r["model"], *(f"{r['stages'][s]:.3f}" for s in pipeline), f"{r['ge_total']:.3f}",
                     f"{r['ort_session']:.3f}", f"{r['ratio']:.1f}"]
        if with_tvm:
            cells.append(f"{r['tvm_build']:.1f}" if "tvm_build" in r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="compiles per side and model (default 5)")
    parser.add_argument("--quick", action="store_true", help="3 repeats (what bench/run_all.py runs)")
    parser.add_argument("--models", default=",".join([*LIGHT_MODELS, "encoder_layer"]),
                        help="comma-separated model names (light models and encoder_layer)")
    parser.add_argument("--no-tvm", action="store_true", help="skip TVM even when it is installed")
    parser.add_argument("--no-isa", action="store_true", help="stop at the tile level even when to-isa exists")
    parser.add_argument("--json", type=Path, default=RESULTS / "compile_time.json")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    pipeline = STAGES if args.no_isa else stages()
    with_tvm = tvm_available() and not args.no_tvm
    print(f"seconds, median of {repeats} alternating runs per side; stages: {', '.join(pipeline)}; "
          f"TVM: {'on' if with_tvm else 'not installed' if not tvm_available() else 'off'}", flush=True)
    warm = encoder_layer_model().SerializeToString()  # warm-up: lazy imports, caches
    try:
        compile_ge(warm, pipeline)
    except StageFailed:
        pass  # the measured runs report it
    create_session(warm)
    rows = []
    for name, data in models(args.models.split(",")):
        rows.append(measure(name, data, repeats, pipeline, with_tvm))
        r = rows[-1]
        if "error" not in r:
            print(f"{name}: ge {r['ge_total']:.3f} s, onnxruntime {r['ort_session']:.3f} s", flush=True)
    print()
    print(table(rows, pipeline, with_tvm))
    done = [r for r in rows if "error" not in r]
    total_ge, total_ort = sum(r["ge_total"] for r in done), sum(r["ort_session"] for r in done)
    if done:
        print(f"\n{len(done)} models: ge {total_ge:.2f} s, onnxruntime {total_ort:.2f} s (x{total_ge / total_ort:.1f})")
    result = {
        "stages": list(pipeline), "repeats": repeats, "onnxruntime": ort.__version__,
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    if len(done) < len(rows):
        sys.exit(f"ge failed on {len(rows) - len(done)} model(s); see the table")


if __name__ == "__main__":
    main()
