"""Kernels and trans_data per model, next to onnxruntime's node counts.

    python bench/graph.py [--json bench/results/graph.json]

For each light model (seeded random weights) and the transformer encoder layer: ONNX nodes,
ge's compute ops after `graph-optimize` (f32), the `layout.trans_data` left after
`assign-layouts` + `eliminate-trans-data`, and the kernels (`fusion.group`s) after `fuse`;
beside them onnxruntime's node counts at ORT_ENABLE_BASIC / EXTENDED / ALL (the models it
saves at each level) and its NCHWc reorder count at ALL. Counts, not times: one run is enough.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
from pathlib import Path

import onnx
import onnxruntime as ort

import ge
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes
from ge.lowering.fuse import count_kernels
from ge.testing import LIGHT_MODELS, encoder_layer_model, light_model_path, with_random_weights
from ge.transforms.graph_utils import compute_ops, histogram

OPTIMIZE = "graph-optimize{precision=must_keep_origin_dtype}"
LAYOUTS = "assign-layouts,eliminate-trans-data"
LEVELS = {
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def onnxruntime_nodes(model: onnx.ModelProto, level) -> collections.Counter:
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return collections.Counter(n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)


def measure(name: str, model: onnx.ModelProto) -> dict:
    with blob_scope():
        module = run_passes(ge.load_onnx(model), OPTIMIZE)
        optimized = compute_ops(histogram(module))
        run_passes(module, LAYOUTS)
        trans_data = sum(op.name == "layout.trans_data" for op in module.walk())
        kernels = count_kernels(run_passes(module, "fuse"))
    ort_counts = {level: onnxruntime_nodes(model, value) for level, value in LEVELS.items()}
    return {
        "model": name,
        "onnx_nodes": len(model.graph.node),
        "ge_compute_ops": optimized,
        "ge_trans_data": trans_data,
        "ge_kernels": kernels,
        **{f"ort_{level}_nodes": sum(c.values()) for level, c in ort_counts.items()},
        "ort_reorders": ort_counts["all"]["ReorderInput"] + ort_counts["all"]["ReorderOutput"],
    }


def models():
    for name in LIGHT_MODELS:
        yield name, with_random_weights(light_model_path(name), seed=1)
    yield "encoder_layer", encoder_layer_model()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "graph.json"))
    args = parser.parse_args()
    columns = ["model", "onnx_nodes", "ge_compute_ops", "ge_trans_data", "ge_kernels",
               "ort_basic_nodes", "ort_extended_nodes", "ort_all_nodes", "ort_reorders"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    rows = []
    for name, model in models():
        row = measure(name, model)
        rows.append(row)
        print("| " + " | ".join(str(row[c]) for c in columns) + " |", flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
