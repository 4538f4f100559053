"""Simulated cycles against the roofline bound, per kernel and per model.

    python bench/kernels.py [--quick] [--models a,b] [--json bench/results/kernels.json]

Each model (seeded random weights calibrated on the inputs, ATC's default `force_fp16`,
target ascend910) is compiled
to the isa level (... -> tile -> to-isa -> plan-local-memory -> insert-sync) twice -- with
double buffering and with `to-isa{double-buffer=false}` -- and run once on the AI Core
simulator. Per kernel: simulated cycles, the roofline bound the tiler recorded
(`tile.bound`: max of the work at the Cube's / Vector's peak and the GM bytes at HBM
bandwidth, on the cores the kernel uses), the ratio, and the Cube's utilization (busy
cycles over cycles x cores). Per model: the sums (kernels run one after another, the single
stream case) and what double buffering saves. resnet50's per-kernel table is printed in
full. Cycles are simulated, so one run is exact; no timing noise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import onnx

from ge.dialects import isa
from ge.dialects.blobs import blob_scope
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.runtime.simulator import IsaProgram
from ge.testing import (
    LIGHT_MODELS,
    calibrate_weights,
    encoder_layer_model,
    light_model_path,
    random_inputs,
    with_random_weights,
)

MODELS = (*LIGHT_MODELS, "encoder_layer")
QUICK = ("squeezenet", "resnet50", "encoder_layer")
FRONT = "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile"
BACK = "to-isa{{double-buffer={db}}},plan-local-memory,insert-sync"


def model_of(name: str) -> onnx.ModelProto:
    """Seeded weights calibrated on the inputs, so that f16 stays finite in deep nets."""
    model = encoder_layer_model() if name == "encoder_layer" else with_random_weights(light_model_path(name), seed=1)
    return calibrate_weights(model, random_inputs(model, seed=2))


def simulate(model: onnx.ModelProto, double_buffer: bool) -> list[dict]:
    module = import_model(model)
    run_passes(module, FRONT + "," + BACK.format(db=str(double_buffer).lower()))
    kernels = {op.sym_name.data: op for op in module.walk() if isinstance(op, isa.KernelOp)}
    program = IsaProgram(module)
    program.run(random_inputs(model, seed=2))
    if program.sim.report.problems:
        raise SystemExit(f"simulator problems: {program.sim.report.problems[:3]}")
    rows = []
    for stats in program.sim.report.kernels:
        attrs = kernels[stats.name].attributes
        bound = attrs.get("tile.bound")
        kind = attrs.get("ge.kind")
        rows.append({
            "kernel": stats.name, "kind": kind.data if kind is not None else "",
            "cycles": stats.cycles, "bound": bound.value.data if bound is not None else None,
            "cores": stats.cores, "blocks": stats.blocks,
            "cube_utilization": stats.utilization().get("M", 0.0),
        })
    return rows


def measure(name: str) -> dict:
    with blob_scope():
        model = model_of(name)
        double = simulate(model, True)
        single = simulate(model, False)
    cycles = sum(r["cycles"] for r in double)
    bound = sum(r["bound"] or 0 for r in double)
    cube = [r for r in double if r["kind"] == "cube_epilogue"]
    return {
        "model": name, "kernels": len(double), "cycles": cycles, "bound": bound,
        "single_buffer_cycles": sum(r["cycles"] for r in single),
        "cube_kernels": len(cube), "cube_cycles": sum(r["cycles"] for r in cube),
        "cube_bound": sum(r["bound"] or 0 for r in cube),
        "per_kernel": double,
    }


def model_table(rows: list[dict]) -> str:
    lines = ["| model | kernels | cycles | roofline bound | cycles / bound | conv+matmul kernels: cycles / bound "
             "| single-buffered cycles | double buffering saves |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        saved = 1 - r["cycles"] / r["single_buffer_cycles"]
        lines.append(f"| {r['model']} | {r['kernels']} | {r['cycles']:,.0f} | {r['bound']:,.0f} "
                     f"| {r['cycles'] / r['bound']:.2f} | {r['cube_cycles']:,.0f} / {r['cube_bound']:,.0f} "
                     f"| {r['single_buffer_cycles']:,.0f} | {saved:.0%} |")
    return "\n".join(lines)


def kernel_table(row: dict) -> str:
    lines = [f"{row['model']}, per kernel (ascend910, force_fp16):", "",
             "| kernel | kind | blocks / cores | cycles | bound | cycles / bound | Cube utilization |",
             "|---|---|---|---|---|---|---|"]
    for k in row["per_kernel"]:
        ratio = f"{k['cycles'] / k['bound']:.2f}" if k["bound"] else "-"
        lines.append(f"| {k['kernel']} | {k['kind']} | {k['blocks']} / {k['cores']} | {k['cycles']:,.0f} "
                     f"| {k['bound'] or 0:,.0f} | {ratio} | {k['cube_utilization']:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    p.add_argument("--models", help="comma-separated model names")
    p.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "kernels.json")
    args = p.parse_args(argv)
    names = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    rows = []
    for name in names:
        rows.append(measure(name))
        print(f"{name}: {rows[-1]['cycles']:,.0f} cycles", file=sys.stderr)
    print(model_table(rows))
    for r in rows:
        if r["model"] == "resnet50":
            print()
            print(kernel_table(r))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
