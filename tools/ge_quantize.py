"""`ge-quantize`: post-training int8 quantization of an ONNX model (AMCT's role before ATC).

    ge-quantize model.onnx --calibration-data calib.npz -o model_int8.onnx
    ge-quantize model.onnx --calibration-data calib.npz -o q.onnx --method entropy --skip conv1,fc --report r.json

A thin wrapper over `ge.quantize` (ge/quantization.py): the calibration data is an `.npz`
with one array per model input (samples along dim 0); the output is a QDQ ONNX model that
`ge-compile` (and onnxruntime) runs, and the per-layer report is printed (and written as
JSON with --report). `ge-compile --calibration-data` does both steps in one command.
A user mistake prints one `ge-quantize: error: ...` line and exits with 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ge.tools import ArgumentParser
from ge.tools.ge_opt import LOG_LEVELS, run_reporting_errors, setup_logging


def parser() -> argparse.ArgumentParser:
    from ge.quantization import METHODS

    p = ArgumentParser(prog="ge-quantize", description="Quantize an ONNX model to int8 (QDQ) on calibration data.")
    p.add_argument("model", help="the float ONNX model")
    p.add_argument("--calibration-data", required=True, metavar="CALIB.npz",
                   help="one array per model input, the samples along dim 0")
    p.add_argument("-o", "--output", required=True, help="the QDQ ONNX model to write")
    p.add_argument("--method", choices=METHODS, default="minmax", help="how activation ranges are calibrated")
    p.add_argument("--skip", default="", metavar="NODE[,NODE]", help="nodes to keep in float (ATC's skip layers)")
    p.add_argument("--quantize-first-last", action="store_true",
                   help="quantize the first and last layer too (by default they stay float)")
    p.add_argument("--asymmetric", action="store_true",
                   help="activations with a zero point (default: symmetric, zero point 0, as ge's int8 Cube path runs)")
    p.add_argument("--percentile", type=float, default=99.999, help="--method percentile: the percentile of |x|")
    p.add_argument("--no-fold-bn", action="store_true",
                   help="leave each Conv -> BatchNormalization as is (by default the BN is folded into the conv first)")
    p.add_argument("--report", metavar="REPORT.json", help="write the per-layer report as JSON")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    return p


def skip_list(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def add_compile_options(p: argparse.ArgumentParser) -> None:
    """ge-compile's quantization options (quantize, then compile the QDQ model)."""
    from ge.quantization import METHODS

    p.add_argument("--calibration-data", "--calibration_data", metavar="CALIB.npz",
                   help="quantize to int8 first (README \"INT8 quantization\"): one array per model input, the "
                   "samples along dim 0")
    p.add_argument("--quant-method", "--quant_method", choices=METHODS, help="with --calibration-data: how "
                   "activation ranges are calibrated (default minmax)")
    p.add_argument("--quant-skip", "--quant_skip", metavar="NODE[,NODE]",
                   help="with --calibration-data: nodes to keep in float (ATC's skip layers)")
    p.add_argument("--quant-no-fold-bn", "--quant_no_fold_bn", action="store_true",
                   help="with --calibration-data: do not fold Conv -> BatchNormalization into the conv first")


def calibrated(source, args: argparse.Namespace):
    """ge-compile's model source, quantized (a QDQ ModelProto) when --calibration-data is given."""
    import ge
    from ge.errors import GeError

    if args.calibration_data is None:
        if args.quant_method or args.quant_skip or args.quant_no_fold_bn:
            raise GeError("--quant-method, --quant-skip and --quant-no-fold-bn need --calibration-data")
        return source
    if not isinstance(source, str) or source.endswith(".pb"):
        raise GeError("--calibration-data quantizes ONNX models only")
    quantized = ge.quantize(source, args.calibration_data, method=args.quant_method or "minmax",
                            skip=skip_list(args.quant_skip), fold_bn=not args.quant_no_fold_bn)
    print(quantized.report.table())
    return quantized.model


def run(args: argparse.Namespace) -> int:
    import ge

    setup_logging("ge-quantize", args.log)
    quantized = ge.quantize(args.model, args.calibration_data, method=args.method, skip=skip_list(args.skip),
                            keep_first_last=not args.quantize_first_last, symmetric=not args.asymmetric,
                            percentile=args.percentile, fold_bn=not args.no_fold_bn)
    quantized.save(args.output, args.report)
    print(quantized.report.table())
    print(f"wrote {args.output}" + (f" and {args.report}" if args.report else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_reporting_errors("ge-quantize", lambda: run(args), args.model, args.output)


if __name__ == "__main__":
    sys.exit(main())
