"""Simulated cycles against the roofline bound, per kernel and per model, with and without
double buffering and multiple streams.

    python bench/kernels.py [--quick] [--models a,b] [--json bench/results/kernels.json]

Each model (seeded random weights calibrated on the inputs, ATC's default `force_fp16`,
target ascend910) is compiled with `ge.compile` three ways and run once on the executor
(every kernel on the AI Core simulator): as shipped (double buffering, streams), with
`enable_single_stream`, and with `double_buffer=False` (`to-isa{double-buffer=false}`).
Per kernel (as shipped): simulated cycles, the roofline bound the tiler recorded
(`tile.bound`: max of the work at the Cube's / Vector's peak and the GM bytes at HBM
bandwidth, on the cores the kernel uses), the ratio, and the Cube's utilization (busy
cycles over cycles x cores). Per model: the kernels' cycles one after another, the run's
total with streams sharing the cores, single stream, and single-buffered. resnet50's
per-kernel table is printed in full. Cycles are simulated: one run is exact, no noise.
"""

from __future__ import annotations

import json
import sys

from _common import markdown, parser

import ge
from ge.dialects.blobs import blob_scope
from ge.testing import LIGHT_MODELS, calibrated_model, random_inputs

MODELS = (*LIGHT_MODELS, "encoder_layer")
QUICK = ("squeezenet", "resnet50", "encoder_layer")
VARIANTS = {"shipped": {}, "single_stream": {"enable_single_stream": True}, "single_buffer": {"double_buffer": False}}


def simulate(model, inputs, **options):
    """The executor's report of one run of the model compiled with `options`."""
    compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False, **options))
    compiled.run(inputs)
    run = compiled.last_run
    if run.problems:
        raise SystemExit(f"simulator problems: {run.problems[:3]}")
    return run


def measure(name: str) -> dict:
    with blob_scope():
        model = calibrated_model(name)
        inputs = random_inputs(model, seed=2)
        runs = {v: simulate(model, inputs, **opts) for v, opts in VARIANTS.items()}
    shipped = runs["shipped"]
    per_kernel = [{
        "kernel": k.kernel, "node": k.node, "cycles": k.cycles, "bound": k.bound, "cores": k.cores,
        "blocks": k.blocks, "stream": k.stream,
        "cube_utilization": k.pipe_busy.get("M", 0.0) / (k.cycles * k.cores) if k.cycles else 0.0,
    } for k in shipped.kernels]
    cube = [k for k in per_kernel if k["cube_utilization"] > 0]
    return {
        "model": name, "kernels": len(per_kernel), "streams": shipped.streams,
        "kernel_cycles": sum(k["cycles"] for k in per_kernel), "bound": sum(k["bound"] or 0 for k in per_kernel),
        "total": shipped.total_cycles, "single_stream_total": runs["single_stream"].total_cycles,
        "single_buffer_total": runs["single_buffer"].total_cycles,
        "cube_kernels": len(cube), "cube_cycles": sum(k["cycles"] for k in cube),
        "cube_bound": sum(k["bound"] or 0 for k in cube), "per_kernel": per_kernel,
    }


def model_table(rows: list[dict]) -> str:
    header = ["model", "kernels", "kernel cycles", "roofline bound", "cycles / bound", "Cube kernels: cycles / bound",
              "run, streams", "run, single stream", "run, single-buffered"]
    return markdown(header, ([r["model"], r["kernels"], f"{r['kernel_cycles']:,.0f}", f"{r['bound']:,.0f}",
                              f"{r['kernel_cycles'] / r['bound']:.2f}",
                              f"{r['cube_cycles']:,.0f} / {r['cube_bound']:,.0f}",
                              f"{r['total']:,.0f} ({r['streams']} streams)", f"{r['single_stream_total']:,.0f}",
                              f"{r['single_buffer_total']:,.0f} (+{r['single_buffer_total'] / r['total'] - 1:.0%})"]
                             for r in rows))


def kernel_table(row: dict) -> str:
    header = ["kernel", "nodes", "blocks / cores", "cycles", "bound", "cycles / bound", "Cube utilization"]
    body = ([k["kernel"], k["node"], f"{k['blocks']} / {k['cores']}", f"{k['cycles']:,.0f}", f"{k['bound'] or 0:,.0f}",
             f"{k['cycles'] / k['bound']:.2f}" if k["bound"] else "-", f"{k['cube_utilization']:.0%}"]
            for k in row["per_kernel"])
    return f"{row['model']}, per kernel (ascend910, force_fp16):\n\n" + markdown(header, body)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "kernels", QUICK).parse_args(argv)
    names = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    rows = []
    for name in names:
        rows.append(measure(name))
        print(f"{name}: {rows[-1]['total']:,.0f} cycles", file=sys.stderr)
    print(model_table(rows))
    for r in rows:
        if r["model"] == "resnet50":
            print()
            print(kernel_table(r))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
