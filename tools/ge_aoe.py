"""`ge-aoe`: operator tuning, AOE's `--job_type=2` -- each Cube problem's plan chosen by
timing candidates on the simulator, the winners written to an op bank (ge/aoe.py):

    ge-aoe model.onnx --job-type 2 --op-bank-path bank/ --input-shape "x:16,3,224,224"
    ge-compile model.onnx -o model.om --op-bank-path bank/ --input-shape "x:16,3,224,224"

With `-o` the tuned model file is written too (AOE writes one). The tuning compiles and
runs the model once with the cost model's plans, once per alternative rank for each half of
the problems, and once with the winners (resnet50 at batch 16: 16 compiles, about 4
minutes); later compiles read the bank at no cost. `--report` writes what was timed, per
problem, as JSON. Subgraph tuning (job type 1) is not implemented.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ge.errors import GeError
from ge.tools import ArgumentParser

JOB_TYPES = {1: "subgraph tuning", 2: "operator tuning"}


class UsageError(GeError):
    """A missing or contradictory command-line argument."""


def parser() -> argparse.ArgumentParser:
    from ge.compiler import PRECISION_MODES
    from ge.lowering.op_bank import VARIANTS
    from ge.tools.ge_opt import LOG_LEVELS

    p = ArgumentParser(prog="ge-aoe", description="Tune a model's Cube kernels on the simulator (AOE's operator "
                       "tuning) and write the winners to an op bank for ge-compile --op-bank-path.")
    p.add_argument("model", help="the model (.onnx, or a frozen TensorFlow GraphDef .pb)")
    p.add_argument("--framework", type=int, default=None, help="ATC's framework number: 5 ONNX, 3 TensorFlow")
    p.add_argument("--job-type", "--job_type", type=int, default=2,
                   help="2: operator tuning (the default); 1, subgraph tuning, is not implemented")
    p.add_argument("--op-bank-path", "--op_bank_path", metavar="DIR", required=True,
                   help="the op bank to write (created if missing; a bank there is merged into)")
    p.add_argument("-o", "--output", help="also write the model file compiled with the tuned plans")
    p.add_argument("--soc-version", "--soc_version", default="ascend910", help="target chip (as ge-compile)")
    p.add_argument("--input-shape", "--input_shape", help='static input shapes, "name:16,3,224,224;name2:1,128"')
    p.add_argument("--precision-mode", "--precision_mode", default="force_fp16", choices=PRECISION_MODES)
    p.add_argument("--fusion-switch-file", "--fusion_switch_file", help="turn fusion rules on or off (GE's JSON form)")
    p.add_argument("--variants", type=int, default=VARIANTS,
                   help=f"plans timed per Cube problem, the cost model's choice first (default {VARIANTS})")
    p.add_argument("--report", metavar="REPORT.json", help="write each problem's plans and simulated cycles here")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ge.aoe import tune
    from ge.compiler import CompileOptions
    from ge.tools.ge_compile import framework_source
    from ge.tools.ge_opt import setup_logging

    setup_logging("ge-aoe", args.log)
    if args.job_type not in JOB_TYPES:
        raise UsageError(f"--job-type {args.job_type} is not a job type; ge-aoe runs 2 (operator tuning)")
    if args.job_type != 2:
        raise UsageError(f"--job-type {args.job_type} ({JOB_TYPES[args.job_type]}) is not implemented; "
                         "ge-aoe runs 2 (operator tuning)")
    if args.variants < 2:
        raise UsageError(f"--variants {args.variants}: tuning needs at least 2 plans per problem")
    bank = Path(args.op_bank_path)
    if bank.exists() and not bank.is_dir():
        raise UsageError(f"--op-bank-path {bank}: not a directory")
    bank.mkdir(parents=True, exist_ok=True)
    source = framework_source(args.model, args.framework)
    options = CompileOptions(soc_version=args.soc_version, precision_mode=args.precision_mode,
                             input_shape=args.input_shape, fusion_switch_file=args.fusion_switch_file)
    result = tune(source, options, op_bank_path=bank, variants=args.variants,
                  progress=lambda line: print(f"ge-aoe: {line}", file=sys.stderr, flush=True))
    if result.table().count("\n") > 1:
        print(result.table())
    print(result.summary())
    print(f"wrote {result.path} ({len(result.bank.entries)} tuned plans)")
    if args.output:
        if result.model is None:  # (not kept: the cost model's plans)
            from ge.compiler import compile_to_file

            _, size = compile_to_file(source, args.output, options)
        else:
            size = result.model.save(args.output)
        print(f"wrote {args.output} ({size} bytes)")
    if args.report:
        with open(args.report, "w") as f:
            json.dump(result.to_json(), f, indent=2)
        print(f"wrote {args.report}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from ge.tools.ge_opt import run_reporting_errors

    args = parser().parse_args(argv)
    return run_reporting_errors("ge-aoe", lambda: run(args), args.model, args.output)


if __name__ == "__main__":
    sys.exit(main())
