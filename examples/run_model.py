"""Import an ONNX model into ge's graph dialect, run it, and compare with onnxruntime.

    python examples/run_model.py                 # resnet50 from the onnx wheel, seeded weights
    python examples/run_model.py squeezenet      # any of the nine light models
    python examples/run_model.py path/to/model.onnx [--input-shape "x:1,3,224,224"]

This is today's end of the pipeline (the graph level and its reference interpreter); later
stages add ge-compile / ge-run on the AI Core simulator.
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
from ge.runtime.reference import run
from ge.testing import LIGHT_MODELS, light_model_path, random_inputs, with_random_weights


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="resnet50", help="a light model name or an .onnx path")
    parser.add_argument("--input-shape", default=None, help='ATC-style "name:1,3,224,224;name2:..."')
    args = parser.parse_args()

    if args.model in LIGHT_MODELS:
        model = with_random_weights(light_model_path(args.model), seed=0)
    else:
        model = onnx.load(str(Path(args.model)))
    inputs = random_inputs(model, seed=0)
    try:
        t0 = time.perf_counter()
        module = ge.load_onnx(model, input_shape=args.input_shape)
        t1 = time.perf_counter()
        outputs = run(module, inputs)
        t2 = time.perf_counter()
    except ge.GeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    ops = collections.Counter(op.name for op in module.walk() if op.name.startswith("graph."))
    print(f"{args.model}: {sum(ops.values())} graph ops; import {t1 - t0:.2f} s, reference run {t2 - t1:.2f} s")
    print("  " + ", ".join(f"{name[6:]} {n}" for name, n in ops.most_common()))

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
