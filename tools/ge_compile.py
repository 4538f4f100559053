"""`ge-compile`: ATC's counterpart, an ONNX model in, a model file (`.om`) out.

A thin command-line wrapper over `ge.compile` (ge/compiler.py), with ATC's options in
ge's spelling (ATC's underscore spelling is accepted too):

    ge-compile model.onnx -o model.om --soc-version ascend910 --input-shape "x:1,3,224,224"
    ge-compile model.onnx -o model.om --input-shape "x:-1,3,224,224" --dynamic-batch-size 1,2,4,8
    ge-compile model.onnx -o model.om --report report.json --dump-ir ir/ --log info

A user mistake (a bad file, an unsupported operator, a kernel that does not fit) prints one
`ge-compile: error: ...` message and exits with 1, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from ge.tools.ge_opt import run_reporting_errors

LOG_LEVELS = ("error", "warning", "info", "debug")


def parser() -> argparse.ArgumentParser:
    from ge.compiler import KERNEL_LEVELS, PRECISION_MODES

    p = argparse.ArgumentParser(prog="ge-compile", description="Compile an ONNX model into a ge model file (.om).")
    p.add_argument("model", help="the ONNX model (.onnx)")
    p.add_argument("-o", "--output", required=True, help="the model file to write (.om)")
    p.add_argument("--soc-version", "--soc_version", default="ascend910",
                   help="target chip: a ge target name (ascend910, ascend910b, ascend310b) or ATC's soc version")
    p.add_argument("--input-shape", "--input_shape", help='static input shapes, "name:1,3,224,224;name2:1,128"; '
                   "-1 as the batch dim with --dynamic-batch-size")
    p.add_argument("--precision-mode", "--precision_mode", default="force_fp16", choices=PRECISION_MODES)
    p.add_argument("--fusion-switch-file", "--fusion_switch_file", help="turn fusion rules on or off (GE's JSON form)")
    p.add_argument("--dynamic-batch-size", "--dynamic_batch_size", help="batch sizes to compile, e.g. 1,2,4,8")
    p.add_argument("--disable-reuse-memory", "--disable_reuse_memory", action="store_true",
                   help="give every activation its own GM bytes")
    p.add_argument("--enable-single-stream", "--enable_single_stream", action="store_true",
                   help="put every task on one stream")
    p.add_argument("--kernel-level", choices=KERNEL_LEVELS, default="isa",
                   help="isa (default): instructions run on the AI Core simulator; tile: stop after tiling, "
                   "kernels run in the tile interpreter (functional, modeled cycles; a fast debug mode)")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    p.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage to DIR (re-parsable by ge-opt)")
    p.add_argument("--report", metavar="REPORT.json", help="write the compile report (times, counts, memory)")
    p.add_argument("--no-ir-text", action="store_true", help="leave the task-level IR out of the model file")
    return p


class _Progress:
    """One self-overwriting status line on a terminal."""

    def __init__(self, stream):
        self.stream = stream

    def __call__(self, stage: str, done: int, total: int) -> None:
        end = "\n" if stage == "done" else ""
        self.stream.write(f"\r\033[K[{done:2d}/{total}] {stage}{end}")
        self.stream.flush()


def _options(args: argparse.Namespace):
    from ge.compiler import CompileOptions

    return CompileOptions(
        soc_version=args.soc_version, precision_mode=args.precision_mode, input_shape=args.input_shape,
        dynamic_batch_size=args.dynamic_batch_size, fusion_switch_file=args.fusion_switch_file,
        disable_reuse_memory=args.disable_reuse_memory, enable_single_stream=args.enable_single_stream,
        kernel_level=args.kernel_level, dump_ir=args.dump_ir, keep_ir_text=not args.no_ir_text,
    )


def summary(report: dict, path: str, size: int) -> str:
    m = report["memory"]
    gears = f", gears {', '.join(str(g['batch']) for g in report['gears'])}" if "gears" in report else ""
    return (f"{path}: {size} bytes; {report['kernels']} kernels ({report['kernel_level']} level), "
            f"{report['streams']} stream(s), {report['events']} event(s){gears}; activations "
            f"{m['activation_peak_bytes']} bytes (lower bound {m['activation_lower_bound_bytes']}, no reuse "
            f"{m['no_reuse_bytes']}), weights {m['weights_bytes']}; compiled in {report['compile_seconds']['total']:.2f} s")


def run(args: argparse.Namespace) -> int:
    import ge

    logging.basicConfig(level=args.log.upper(), format="ge-compile: %(levelname)s: %(message)s")
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    compiled = ge.compile(args.model, _options(args), progress=progress)
    size = compiled.save(args.output)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(compiled.report, f, indent=2)
    print(summary(compiled.report, args.output, size))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_reporting_errors("ge-compile", lambda: run(args), args.model, args.output)


if __name__ == "__main__":
    sys.exit(main())
