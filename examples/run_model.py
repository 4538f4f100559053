"""Compile an ONNX model through ge's levels, run it, and compare with onnxruntime.

    python examples/run_model.py                 # resnet50 from the onnx wheel, seeded weights
    python examples/run_model.py squeezenet      # any of the nine light models
    python examples/run_model.py path/to/model.onnx [--input-shape "x:1,3,224,224"]
    python examples/run_model.py resnet50 --precision force_fp16

Stages: import -> graph-optimize -> assign-layouts + eliminate-trans-data -> fuse, then the
fused module runs on the reference interpreter (the simulator path comes with ge-compile).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np
import onnx

import ge
from ge.ir import run_passes
from ge.runtime.reference import run
from ge.testing import LIGHT_MODELS, light_model_path, random_inputs, with_random_weights


def _summary(module) -> str:
    ops = collections.Counter(op.name for op in module.walk())
    compute = sum(n for name, n in ops.items() if name.startswith(("graph.", "layout.")) and name != "graph.constant")
    groups = ops["fusion.group"]
    kernels = f", {groups} kernels" if groups else ""
    return f"{compute} compute ops, {ops['layout.trans_data']} trans_data{kernels}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="resnet50", help="a light model name or an .onnx path")
    parser.add_argument("--input-shape", default=None, help='ATC-style "name:1,3,224,224;name2:..."')
    parser.add_argument("--precision", default="must_keep_origin_dtype",
                        choices=["must_keep_origin_dtype", "force_fp16", "allow_mix_precision"])
    args = parser.parse_args()

    if args.model in LIGHT_MODELS:
        model = with_random_weights(light_model_path(args.model), seed=0)
    else:
        model = onnx.load(str(Path(args.model)))
    inputs = random_inputs(model, seed=0)
    stages = [
        ("graph-optimize", f"graph-optimize{{precision={args.precision}}}"),
        ("layouts", "assign-layouts,eliminate-trans-data"),
        ("fuse", "fuse"),
    ]
    try:
        t0 = time.perf_counter()
        module = ge.load_onnx(model, input_shape=args.input_shape)
        print(f"{args.model}: import {time.perf_counter() - t0:.2f} s, {_summary(module)}")
        for name, spec in stages:
            t0 = time.perf_counter()
            run_passes(module, spec)
            print(f"  {name}: {time.perf_counter() - t0:.2f} s, {_summary(module)}")
        t0 = time.perf_counter()
        outputs = run(module, inputs)
        print(f"  reference run of the fused module: {time.perf_counter() - t0:.2f} s")
    except ge.GeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    for name, got, want in zip([o.name for o in model.graph.output], outputs, expected):
        err = float(np.max(np.abs(got - want)))
        scale = float(np.max(np.abs(want))) or 1.0
        print(f"  output {name}: shape {list(got.shape)}, max |ge - onnxruntime| = {err:.3g} ({err / scale:.2e} of scale)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
