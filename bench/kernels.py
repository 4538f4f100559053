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

import json
import sys

import onnx
from _common import markdown, parser

from ge.dialects import isa
from ge.dialects.blobs import blob_scope
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.runtime.simulator import IsaProgram
from ge.testing import LIGHT_MODELS, calibrated_model, random_inputs

MODELS = (*LIGHT_MODELS, "encoder_layer")
QUICK = ("squeezenet", "resnet50", "encoder_layer")
FRONT = "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile"
BACK = "to-isa{{double-buffer={db}}},plan-local-memory,insert-sync"


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
        model = calibrated_model(name)
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
    header = ["model", "kernels", "cycles", "roofline bound", "cycles / bound", "conv+matmul kernels: cycles / bound",
              "single-buffered cycles", "double buffering saves"]
    return markdown(header, ([r["model"], r["kernels"], f"{r['cycles']:,.0f}", f"{r['bound']:,.0f}",
                              f"{r['cycles'] / r['bound']:.2f}", f"{r['cube_cycles']:,.0f} / {r['cube_bound']:,.0f}",
                              f"{r['single_buffer_cycles']:,.0f}", f"{1 - r['cycles'] / r['single_buffer_cycles']:.0%}"]
                             for r in rows))


def kernel_table(row: dict) -> str:
    header = ["kernel", "kind", "blocks / cores", "cycles", "bound", "cycles / bound", "Cube utilization"]
    body = ([k["kernel"], k["kind"], f"{k['blocks']} / {k['cores']}", f"{k['cycles']:,.0f}", f"{k['bound'] or 0:,.0f}",
             f"{k['cycles'] / k['bound']:.2f}" if k["bound"] else "-", f"{k['cube_utilization']:.0%}"]
            for k in row["per_kernel"])
    return f"{row['model']}, per kernel (ascend910, force_fp16):\n\n" + markdown(header, body)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "kernels", QUICK).parse_args(argv)
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
