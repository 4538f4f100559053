"""Wall time of one simulated inference per model, next to onnxruntime's CPU inference.

    python bench/simulator.py [--quick] [--repeats N] [--json bench/results/simulator.json]

The simulator's speed is a user-facing feature: `ge-run` on a model should take seconds,
not hours. Each model (seeded random weights calibrated on the inputs, `force_fp16`,
ascend910) is compiled once with `ge.compile`; then one simulated inference
(`CompiledModel.run`: every kernel on the AI Core simulator, functional + timed + hazard
checks) and one onnxruntime CPU inference (ORT_ENABLE_ALL, intra-op threads 1, the same
inputs) alternate `--repeats` times. Medians and the ratio; also the simulated cycles, the
executed instructions per second and the time to load the model file and run it once
(parsing and decoding the kernels happen then).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import onnxruntime as ort
from _common import markdown, parser

import ge
from ge.dialects.blobs import blob_scope
from ge.testing import LIGHT_MODELS, calibrated_model, random_inputs

MODELS = (*LIGHT_MODELS, "encoder_layer")
QUICK = ("squeezenet", "resnet50", "encoder_layer")


def measure(name: str, repeats: int, tmp: Path) -> dict:
    with blob_scope():
        model = calibrated_model(name)
        inputs = random_inputs(model, seed=2)
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False))
        path = tmp / f"{name}.om"
        compiled.save(path)
        start = time.perf_counter()
        loaded = ge.load_model(path)
        loaded.run(inputs)  # the first run also parses and decodes the kernels
        first = time.perf_counter() - start
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        session.run(None, inputs)  # warm-up
        sim, cpu = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            loaded.run(inputs)
            sim.append(time.perf_counter() - start)
            start = time.perf_counter()
            session.run(None, inputs)
            cpu.append(time.perf_counter() - start)
        run = loaded.last_run
        instructions = sum(sum(k.instructions.values()) for k in run.kernels) if hasattr(run, "kernels") else None
    s, c = statistics.median(sim), statistics.median(cpu)
    return {"model": name, "simulate_s": s, "onnxruntime_s": c, "ratio": s / c, "first_run_s": first,
            "cycles": run.total_cycles, "instructions": instructions,
            "instructions_per_s": instructions / s if instructions else None, "repeats": repeats}


def table(rows: list[dict]) -> str:
    header = ["model", "simulated inference s", "onnxruntime CPU", "ratio", "load + first run s", "simulated cycles",
              "instructions / s"]
    return markdown(header, ([r["model"], f"{r['simulate_s']:.2f}", f"{r['onnxruntime_s'] * 1e3:.1f} ms",
                              f"{r['ratio']:,.0f}", f"{r['first_run_s']:.2f}", f"{r['cycles']:,.0f}",
                              f"{r['instructions_per_s']:,.0f}" if r["instructions_per_s"] else "-"] for r in rows))


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "simulator", QUICK)
    p.add_argument("--repeats", type=int, default=3, help="alternating runs of each side (--quick: 2)")
    args = p.parse_args(argv)
    names = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    repeats = 2 if args.quick and args.repeats == 3 else args.repeats
    tmp = Path("build") / "bench"
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        rows.append(measure(name, repeats, tmp))
        print(f"{name}: {rows[-1]['simulate_s']:.2f} s simulated", file=sys.stderr)
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
