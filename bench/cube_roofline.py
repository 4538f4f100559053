"""The Cube kernels against their roofline: resnet50 at batch 1 and 16, squeezenet, bert_base.

    python bench/cube_roofline.py [--quick] [--models resnet50:16,squeezenet:1]
                                  [--json bench/results/cube_roofline.json] [--baseline old.json]

Each model (seeded, calibrated weights, ATC's default `force_fp16`, ascend910; a batch
other than 1 through `input_shape`, with the classifier's Reshape to [1, 2048] made [-1,
2048]; `bert_base`: bench/kernels.py's BERT-base-sized encoder layer at seq 128, batch 8) is
compiled once with `ge.compile` and run once on the simulator. Per model: the
kernels' simulated cycles one after another, the sum of their roofline bounds
(`tile.bound`) and the efficiency bound / cycles, for all kernels and for the Cube ones.
Per Cube kernel of each model: cycles, bound, the cost model's cycles, and the busy
share of the Cube (M), Vector (V), MTE1 and MTE2 pipes (busy cycles over cycles x
cores). With `--baseline` (the JSON of an earlier run) a before -> after table. Cycles
are simulated: one run is exact.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _common import markdown, parser
from onnx import numpy_helper

import ge
from ge.dialects.blobs import blob_scope
from ge.testing import calibrated_model, random_inputs

MODELS = ("squeezenet:1", "resnet50:1", "resnet50:16", "bert_base")
QUICK = ("squeezenet:1",)
PIPES = ("M", "V", "MTE1", "MTE2")


def batched(model, batch: int):
    """The model with its first input's batch set to `batch` (compile option) and Reshapes
    to a constant [1, ...] made [-1, ...]."""
    if batch == 1:
        return model, {}
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Reshape" and node.input[1] in inits:
            shape = numpy_helper.to_array(inits[node.input[1]]).copy()
            if shape[0] == 1:
                shape[0] = -1
                inits[node.input[1]].CopyFrom(numpy_helper.from_array(shape, node.input[1]))
    inp = model.graph.input[0]
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return model, {"input_shape": {inp.name: [batch, *dims[1:]]}}


def measure(spec: str) -> dict:
    name, _, batch = spec.partition(":")
    batch = int(batch or 1)
    with blob_scope():
        if name == "bert_base":  # bench/kernels.py's BERT-base-sized layer (its batch is 8)
            from kernels import build

            model, inputs = build(name)
            batch = inputs["x"].shape[0]
            options = {"input_shape": {k: list(v.shape) for k, v in inputs.items()}}
        else:
            model, options = batched(calibrated_model(name), batch)
            inputs = {k: np.concatenate([v] * batch) for k, v in random_inputs(model, seed=2).items()}
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False, **options))
        compiled.run(inputs)
    run = compiled.last_run
    if run.problems:
        raise SystemExit(f"simulator problems: {run.problems[:3]}")
    modeled = {k.name: float(k.modeled or 0) for k in compiled.executor.kernels}
    kernels = [{
        "kernel": k.kernel, "cycles": k.cycles, "bound": k.bound or 0.0, "modeled": modeled.get(k.kernel, 0.0),
        "cores": k.cores, "cube": bool(k.instructions.get("M")),
        "busy": {p: k.pipe_busy.get(p, 0.0) / (k.cycles * k.cores) if k.cycles else 0.0 for p in PIPES},
    } for k in run.kernels]
    cube = [k for k in kernels if k["cube"]]
    return {"model": name, "batch": batch, "kernels": kernels,
            "cycles": sum(k["cycles"] for k in kernels), "bound": sum(k["bound"] for k in kernels),
            "cube_cycles": sum(k["cycles"] for k in cube), "cube_bound": sum(k["bound"] for k in cube)}


def label(r: dict) -> str:
    return f"{r['model']} b{r['batch']}"


def model_table(rows: list[dict]) -> str:
    header = ["model (f16, ascend910)", "kernels", "kernel cycles", "sum of bounds", "bound / cycles",
              "Cube kernels: cycles", "Cube: bound / cycles"]
    return markdown(header, ([label(r), len(r["kernels"]), f"{r['cycles']:,.0f}", f"{r['bound']:,.0f}",
                              f"{r['bound'] / r['cycles']:.3f}", f"{r['cube_cycles']:,.0f}",
                              f"{r['cube_bound'] / r['cube_cycles']:.3f}"] for r in rows))


def compare_table(rows: list[dict], base: dict[str, dict]) -> str:
    header = ["model", "kernel cycles", "bound / cycles", "Cube kernels: cycles", "Cube: bound / cycles"]
    body = []
    for r in rows:
        b = base.get(label(r))
        if b is None:
            continue
        body.append([label(r), f"{b['cycles']:,.0f} -> {r['cycles']:,.0f} ({r['cycles'] / b['cycles'] - 1:+.1%})",
                     f"{b['bound'] / b['cycles']:.3f} -> {r['bound'] / r['cycles']:.3f}",
                     f"{b['cube_cycles']:,.0f} -> {r['cube_cycles']:,.0f}",
                     f"{b['cube_bound'] / b['cube_cycles']:.3f} -> {r['cube_bound'] / r['cube_cycles']:.3f}"])
    return markdown(header, body)


def kernel_table(r: dict, base: dict | None) -> str:
    old = {k["kernel"]: k for k in base["kernels"]} if base else {}
    header = ["kernel", "cores", "cycles" + (" (before)" if old else ""), "bound", "bound / cycles", "modeled",
              *[f"{p} busy" for p in PIPES]]
    body = []
    for k in sorted((k for k in r["kernels"] if k["cube"]), key=lambda k: k["bound"] - k["cycles"]):
        was = f" ({old[k['kernel']]['cycles']:,.0f})" if k["kernel"] in old else ""
        body.append([k["kernel"], k["cores"], f"{k['cycles']:,.0f}{was}", f"{k['bound']:,.0f}",
                     f"{k['bound'] / k['cycles']:.2f}", f"{k['modeled']:,.0f}",
                     *[f"{k['busy'][p]:.0%}" for p in PIPES]])
    return f"{label(r)}, Cube kernels (largest gap first):\n\n" + markdown(header, body)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "cube_roofline", QUICK)
    p.add_argument("--baseline", help="JSON of an earlier run: before -> after")
    args = p.parse_args(argv)
    specs = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    rows = []
    for spec in specs:
        rows.append(measure(spec))
        print(f"{label(rows[-1])}: {rows[-1]['cycles']:,.0f} cycles", file=sys.stderr)
    base = {}
    if args.baseline:
        base = {label(r): r for r in json.loads(open(args.baseline).read())["models"]}
    print(model_table(rows))
    if base:
        print("\nbefore -> after:\n")
        print(compare_table(rows, base))
    for r in rows:
        print()
        print(kernel_table(r, base.get(label(r))))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"target": "ascend910", "precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
