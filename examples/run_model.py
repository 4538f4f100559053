"""Compile an ONNX model with `ge-compile` and run it with `ge-run` on the AI Core simulator,
comparing with onnxruntime.

    python examples/run_model.py                  # squeezenet from the onnx wheel, seeded weights
    python examples/run_model.py resnet50         # any of the nine light models
    python examples/run_model.py path/to/model.onnx [--input-shape "x:1,3,224,224"]
    python examples/run_model.py squeezenet --precision-mode must_keep_origin_dtype

The light models ship with every weight equal to 0.02; the script writes a copy with seeded
random weights calibrated on a seeded input to build/examples/<name>.onnx first (real
BatchNorm statistics, unit-RMS layers: plain random weights make a deep net's activations
grow past f16's range, and ATC's default force_fp16 then computes inf / NaN where
onnxruntime's f32 does not). Then it runs, and prints, the two
commands a user runs on their own model:

    ge-compile MODEL.onnx -o MODEL.om --soc-version ascend910 --report MODEL.report.json
    ge-run MODEL.om --compare MODEL.onnx
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import onnx

from ge.testing import LIGHT_MODELS, calibrated_model

OUT = Path("build") / "examples"


def _run(argv: list[str]) -> None:
    print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    done = subprocess.run(argv)
    if done.returncode:
        raise SystemExit(done.returncode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="squeezenet", help="a light model name or an .onnx path")
    parser.add_argument("--input-shape", default=None, help='ATC-style "name:1,3,224,224;name2:..."')
    parser.add_argument("--precision-mode", default="force_fp16",
                        choices=["force_fp16", "must_keep_origin_dtype", "allow_mix_precision"])
    parser.add_argument("--soc-version", default="ascend910")
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    if args.model in LIGHT_MODELS:
        path = OUT / f"{args.model}.onnx"
        onnx.save(calibrated_model(args.model, seed=0), str(path))
    else:
        path = Path(args.model)
    om = OUT / f"{path.stem}.om"
    compile_cmd = ["ge-compile", str(path), "-o", str(om), "--soc-version", args.soc_version,
                   "--precision-mode", args.precision_mode, "--report", str(OUT / f"{path.stem}.report.json")]
    if args.input_shape:
        compile_cmd += ["--input-shape", args.input_shape]
    _run(compile_cmd)
    _run(["ge-run", str(om), "--compare", str(path)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
