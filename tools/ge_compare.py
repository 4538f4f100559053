"""`ge-compare`: layer-by-layer accuracy of a model file against its ONNX model (msaccucmp).

    ge-compare model.onnx model.om --inputs in.npz [--csv out.csv]

Runs onnxruntime with every intermediate tensor exposed and the model file with the dump on
(`ge.dump`), aligns the kernel outputs by ONNX tensor name, prints cosine / max abs / max
relative error per tensor in topological order and the first node beyond the tolerance
(`ge.compare`). Exit status 0 whether or not a node diverges; 1 with one `ge-compare: error:`
line for a bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ge.errors import InputError
from ge.tools import ArgumentParser
from ge.tools.ge_opt import LOG_LEVELS, run_reporting_errors, setup_logging


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="ge-compare", description="Compare a ge model file layer by layer with onnxruntime.")
    p.add_argument("onnx", help="the ONNX model the model file was compiled from")
    p.add_argument("model", help="the model file (.om)")
    p.add_argument("--inputs", nargs="+", metavar="FILE", help="one .npz with the inputs by name, or one .npy per input "
                   "(default: seeded random inputs)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (when --inputs is not given)")
    p.add_argument("--csv", metavar="OUT.csv", help="also write the table as CSV")
    p.add_argument("--allow-hazards", action="store_true", help="run on when the simulator reports problems")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    return p


def run(args: argparse.Namespace) -> int:
    import tempfile

    import onnx

    import ge
    from ge import compare
    from ge.dump import Dumper
    from ge.tools.ge_run import random_inputs, read_inputs, reference_session

    setup_logging("ge-compare", args.log)
    if not Path(args.onnx).is_file():
        raise FileNotFoundError(2, "no such file", args.onnx)
    model = ge.load_model(args.model)
    try:  # the ONNX model takes the model file's inputs
        reference_session(args.onnx, model.inputs, args.model)
    except InputError as e:  # worded for ge-run's --compare
        raise InputError(str(e).replace("--compare ", "", 1)) from None
    try:
        proto = onnx.load(args.onnx)
    except Exception as e:  # a protobuf decode error
        raise InputError(f"{args.onnx}: not an ONNX model ({str(e).splitlines()[0]})") from None
    names = [io["name"] for io in model.inputs]
    inputs = (read_inputs(args.inputs, names) if args.inputs
              else random_inputs(model.inputs, args.seed, (model.batch_sizes or [None])[0]))
    model.executor._check_inputs(inputs)  # names, dtypes and shapes before onnxruntime runs
    reference = compare.reference_values(proto, inputs)
    shapes = {name: list(np.shape(value)) for name, value in reference.items()}  # dynamic dims resolved
    with tempfile.TemporaryDirectory() as tmp:
        dumper = Dumper(model.model, tmp, None, shapes)
        dumper.attach(model.executor)
        try:
            with np.errstate(all="ignore"):  # an overflow is what the comparison is looking for
                model.run(inputs, allow_hazards=args.allow_hazards)
        finally:
            model.executor.on_launch = None
    rows = compare.compare(proto, dumper.arrays, dumper.entries, reference, model.model.metadata.get("precision_mode"))
    print(compare.table(rows))
    print(compare.summary(rows))
    if args.csv:
        compare.write_csv(rows, args.csv)
        print(f"wrote {args.csv}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_reporting_errors("ge-compare", lambda: run(args), args.model, None)


if __name__ == "__main__":
    sys.exit(main())
