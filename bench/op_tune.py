"""Operator tuning (`ge-aoe`, ge/aoe.py) on models and chips nobody tuned the cost model for.

    python bench/op_tune.py [--quick] [--models squeezenet@ascend910b,...] [--json bench/results/op_tune.json]

Each model (a light model with seeded weights calibrated on a seeded input, `force_fp16`)
is tuned on its chip (`ge.aoe.tune`, the default 8 plans per Cube problem, the bank in a
temporary directory), then compiled twice -- with the cost model's plans and with the bank
-- and run on the simulator with numerics. Per model: the Cube problems and how many took
another plan, the tuning's compiles and seconds, the simulated cycles before -> after, and
each output's error against onnxruntime (max abs error over max |onnxruntime|): another
plan changes only the order of f32 sums, so the errors stay where they were. Cycles are
simulated: one run is exact. Seconds are wall time on a shared machine.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

import numpy as np
from _common import markdown, parser

import ge
from ge.aoe import tune
from ge.dialects.blobs import blob_scope
from ge.testing import calibrated_model, onnxruntime_outputs, random_inputs

MODELS = ("resnet50@ascend910", "squeezenet@ascend910b", "inception_v1@ascend910", "inception_v2@ascend910b",
          "densenet121@ascend910", "shufflenet@ascend910", "squeezenet@ascend310b", "resnet50@ascend910b")
QUICK = ("squeezenet@ascend910",)


def measure(spec: str) -> dict:
    name, soc = spec.split("@")
    with blob_scope(), tempfile.TemporaryDirectory() as bank:
        model = calibrated_model(name)
        inputs = random_inputs(model, seed=2)
        options = ge.CompileOptions(soc_version=soc, keep_ir_text=False)
        started = time.time()
        result = tune(model, options, op_bank_path=bank)
        seconds = time.time() - started
        ref = onnxruntime_outputs(model, inputs)[0]
        runs = []
        for path in (None, bank):
            compiled = ge.compile(model, ge.CompileOptions(soc_version=soc, keep_ir_text=False, op_bank_path=path))
            y = next(iter(compiled.run(inputs).values())).astype(np.float64)
            runs.append((compiled.last_run.total_cycles, float(np.abs(y - ref).max() / np.abs(ref).max()),
                         (compiled.report.get("op_bank") or {}).get("used", 0)))
    (before, err_before, _), (after, err_after, used) = runs
    return {"model": name, "soc": soc, "problems": len(result.problems), "replanned": len(result.bank.entries),
            "used": used, "compiles": result.compiles, "seconds": round(seconds, 1), "before": before, "after": after,
            "tuned_run": result.tuned, "kept": result.kept, "error_before": err_before, "error_after": err_after}


def table(rows: list[dict]) -> str:
    header = ["model", "chip", "Cube problems re-planned", "tuning: compiles, seconds", "cycles before -> after",
              "change", "error vs onnxruntime before -> after"]
    return markdown(header, ([r["model"], r["soc"], f"{r['replanned']} of {r['problems']}",
                              f"{r['compiles']}, {r['seconds']} s", f"{r['before']:,.0f} -> {r['after']:,.0f}",
                              f"{r['after'] / r['before'] - 1:+.1%}",
                              f"{r['error_before']:.2e} -> {r['error_after']:.2e}"] for r in rows))


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "op_tune", QUICK).parse_args(argv)
    specs = args.models.split(",") if args.models else QUICK if args.quick else MODELS
    rows = []
    for spec in specs:
        row = measure(spec)
        rows.append(row)
        print(f"{spec}: {row['before']:,.0f} -> {row['after']:,.0f} cycles, tuned in {row['seconds']} s",
              file=sys.stderr)
        if row["after"] != (row["tuned_run"] if row["kept"] else row["before"]) or row["used"] != row["replanned"]:
            raise SystemExit(f"{spec}: the bank's compile did not reproduce the tuned run")
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"precision": "force_fp16", "models": rows}, indent=1))


if __name__ == "__main__":
    main()
