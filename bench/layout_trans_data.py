"""How many `layout.trans_data` each light model keeps, next to onnxruntime's NCHWc reorders.

    python bench/layout_trans_data.py [--json out.json]

Columns: after `assign-layouts` alone, after `eliminate-trans-data`, with
`graph-optimize{precision=must_keep_origin_dtype}` first (when that pass exists), and the
ReorderInput + ReorderOutput nodes of onnxruntime's NCHWc layout transformer (the model it
saves at ORT_ENABLE_ALL). This is the table of README "Targets and layouts".
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile

import onnx
import onnxruntime as ort
from xdsl.context import Context
from xdsl.passes import PassPipeline

import ge
from ge.testing import LIGHT_MODELS, light_model_path, with_random_weights
from ge.transforms import get_all_ge_passes


def trans_data(model: onnx.ModelProto, spec: str) -> int:
    module = ge.load_onnx(model)
    PassPipeline.parse_spec(get_all_ge_passes(), spec).apply(Context(), module)
    return sum(op.name == "layout.trans_data" for op in module.walk())


def onnxruntime_reorders(model: onnx.ModelProto) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        ops = collections.Counter(n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)
    return ops["ReorderInput"], ops["ReorderOutput"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    optimize = "graph-optimize" in get_all_ge_passes()
    rows = []
    print("| model | assign-layouts | + eliminate-trans-data | graph-optimize first | onnxruntime reorders |")
    print("|---|---|---|---|---|")
    for name in LIGHT_MODELS:
        model = with_random_weights(light_model_path(name), seed=1)
        row = {
            "model": name,
            "assign_layouts": trans_data(model, "assign-layouts"),
            "eliminated": trans_data(model, "assign-layouts,eliminate-trans-data"),
            "optimized": trans_data(
                model, "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data"
            ) if optimize else None,
            "onnxruntime": onnxruntime_reorders(model),
        }
        rows.append(row)
        ort_in, ort_out = row["onnxruntime"]
        print(f"| {name} | {row['assign_layouts']} | {row['eliminated']} | "
              f"{'-' if row['optimized'] is None else row['optimized']} | {ort_in} + {ort_out} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
