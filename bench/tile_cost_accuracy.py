"""How far the tiling cost model's prediction is from the simulated cycles, per kernel.

    python bench/tile_cost_accuracy.py [--quick] [--models a,b] [--json bench/results/tile_cost_accuracy.json]
                                       [--baseline bench/results/tile_cost_accuracy_before.json] [--cold-l2]

Each model (seeded, calibrated weights, `force_fp16`, ascend910; `bert_base`: bench/kernels.py's
BERT-base-sized layer at batch 8; `resnet50_b16`: bench/kernels.py's resnet50 at batch 16) is
compiled once with
`ge.compile`; the `tile` pass's choice per kernel (`KernelReport`: what, plan, modeled
cycles) is recorded while it compiles, then the model runs once on the simulator in
timing-only mode (cycles do not depend on the data). Per kernel: the cost model's cycles
(`tile.cycles`), the simulated cycles of the launch alone (a SuperKernel's sub-kernel with
its own dispatch in place of its barrier, as the model prices it), and their ratio predicted /
simulated; per model and per kind (cube / vector / copy) the median and the worst ratio
(farthest from 1 either way) and the share of kernels within 15%. With `--baseline` (the
JSON of an earlier run, e.g. with an earlier cost model) a before -> after table per model:
the kernels' simulated cycles one after another, the sum of their roofline bounds over
those cycles, and the prediction's median / worst ratio and share within 15%. Cycles are
simulated: one run is exact. The run's L2 keeps what earlier launches left (a kernel reading
what the one before wrote hits it), which the cost model does not know yet; `--cold-l2`
starts every launch cold, as the model assumes.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from _common import markdown, parser

import ge
from ge.dialects.blobs import blob_scope
from ge.lowering import tile as tile_pass
from ge.runtime import simulator
from ge.testing import calibrated_model, random_inputs

MODELS = ("squeezenet", "resnet50", "resnet50_b16", "encoder_layer", "bert_base")
QUICK = ("squeezenet", "encoder_layer")


def _kind(what: str) -> str:
    return what.split(" ", 1)[0] if what else "?"


def measure(name: str) -> dict:
    """Compile `name` recording the tile reports, run it timing-only, pair up the kernels."""
    with tile_pass.recorded_reports() as reports, blob_scope():
        if name in ("bert_base", "resnet50_b16"):  # bench/kernels.py's BERT-base layer at batch 8, resnet50
            # at batch 16 (force_fp16, the 910)
            from kernels import TARGET, build

            model, inputs = build(name)
            options = ge.CompileOptions(soc_version=TARGET, precision_mode="force_fp16", keep_ir_text=False,
                                        input_shape={k: v.shape for k, v in inputs.items()})
        else:
            model = calibrated_model(name)
            inputs, options = random_inputs(model, seed=2), ge.CompileOptions(keep_ir_text=False)
        compiled = ge.compile(model, options)
        compiled.run(inputs, timing_only=True)
    rows = []
    for k in compiled.last_run.kernels:
        r = reports.get(k.kernel)
        if r is None or not r.cycles:
            continue
        # the launch on its own: the model prices a kernel with its dispatch, a SuperKernel's
        # sub-kernel has a barrier in its place (`KernelRun.dispatch`)
        launch = compiled.executor.target.overhead.launch
        simulated = (k.alone or k.cycles) - (k.dispatch or launch) + launch
        rows.append({"kernel": k.kernel, "kind": _kind(r.what), "what": r.what, "plan": r.plan,
                     "blocks": k.blocks, "predicted": round(r.cycles), "simulated": round(simulated),
                     "ratio": r.cycles / simulated, "bound": k.bound})
    return {"model": name, "kernels": rows, **summary(rows)}


def off(ratio: float) -> float:
    """How far a ratio is from 1, either way (2.0 and 0.5 are equally far)."""
    return max(ratio, 1 / ratio) if ratio > 0 else float("inf")


def summary(rows: list[dict]) -> dict:
    if not rows:
        return {"median": None, "worst": None, "within_15": 0.0, "predicted": 0, "simulated": 0}
    ratios = [r["ratio"] for r in rows]
    worst = max(rows, key=lambda r: off(r["ratio"]))
    return {"median": statistics.median(ratios), "worst": worst["ratio"], "worst_kernel": worst["kernel"],
            "within_15": sum(abs(x - 1) <= 0.15 for x in ratios) / len(ratios),
            "predicted": sum(r["predicted"] for r in rows), "simulated": sum(r["simulated"] for r in rows)}


def model_table(results: list[dict]) -> str:
    header = ["model", "kind", "kernels", "predicted", "simulated", "median ratio", "worst ratio", "within 15%"]
    body = []
    for res in results:
        kinds = sorted({r["kind"] for r in res["kernels"]})
        for kind in (None, *kinds):
            rows = [r for r in res["kernels"] if kind is None or r["kind"] == kind]
            s = summary(rows)
            body.append([res["model"], kind or "all", len(rows), f"{s['predicted']:,}", f"{s['simulated']:,}",
                         f"{s['median']:.2f}", f"{s['worst']:.2f}", f"{s['within_15']:.0%}"])
    return markdown(header, body)


def compare_table(before: list[dict], after: list[dict]) -> str:
    """Per model: simulated kernel cycles, bounds / cycles and accuracy, before -> after."""
    old = {r["model"]: r for r in before}
    header = ["model", "kernel cycles", "sum of bounds / cycles", "median predicted / simulated", "worst",
              "within 15%"]
    body = []
    for res in after:
        b = old.get(res["model"])
        if b is None:
            continue
        bound = sum(r["bound"] or 0 for r in res["kernels"])
        body.append([res["model"], f"{b['simulated']:,} -> {res['simulated']:,} ({res['simulated'] / b['simulated'] - 1:+.1%})",
                     f"{bound / b['simulated']:.3f} -> {bound / res['simulated']:.3f}",
                     f"{b['median']:.2f} -> {res['median']:.2f}", f"{b['worst']:.2f} -> {res['worst']:.2f}",
                     f"{b['within_15']:.0%} -> {res['within_15']:.0%}"])
    return markdown(header, body)


def kernel_table(res: dict) -> str:
    header = ["kernel", "what", "blocks", "predicted", "simulated", "predicted / simulated"]
    body = ([r["kernel"], r["what"][:70], r["blocks"], f"{r['predicted']:,}", f"{r['simulated']:,}",
             f"{r['ratio']:.2f}"] for r in res["kernels"])
    return f"{res['model']}, per kernel:\n\n" + markdown(header, body)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "tile_cost_accuracy", QUICK)
    p.add_argument("--baseline", type=Path, help="the JSON of an earlier run: print before -> after")
    p.add_argument("--cold-l2", action="store_true",
                   help="every launch with a cold L2 (the model's assumption), not the L2 the run keeps")
    args = p.parse_args(argv)
    if args.cold_l2:
        simulator.L2_ACROSS_LAUNCHES = False
    names = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    results = []
    for name in names:
        results.append(measure(name))
        s = results[-1]
        print(f"{name}: median {s['median']:.2f}, worst {s['worst']:.2f}, within 15% {s['within_15']:.0%}",
              file=sys.stderr)
    print(model_table(results))
    if args.baseline:
        print()
        print(f"before ({args.baseline.name}) -> after:\n")
        print(compare_table(json.loads(args.baseline.read_text())["models"], results))
    for res in results:
        print()
        print(kernel_table(res))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": results}, indent=1))


if __name__ == "__main__":
    main()
