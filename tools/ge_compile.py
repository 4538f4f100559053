"""`ge-compile`: ATC's counterpart, an ONNX or TensorFlow model in, a model file (`.om`) out.

A thin command-line wrapper over `ge.compile` (ge/compiler.py), with ATC's options in
ge's spelling (ATC's underscore spelling is accepted too):

    ge-compile model.onnx -o model.om --soc-version ascend910 --input-shape "x:1,3,224,224"
    ge-compile model.onnx -o model.om --input-shape "x:-1,3,224,224" --dynamic-batch-size 1,2,4,8
    ge-compile model.onnx -o model.om --report report.json --dump-ir ir/ --log info
    ge-compile --mode 1 --om model.om --json model.json   # a model file as readable JSON (ATC's --mode 1)
    ge-compile --mode 3 model.onnx --check-report r.json  # operator support, without building (ATC's --mode 3)
    ge-compile model.pb --framework 3 -o model.om --input-shape "input:1,224,224,3"  # a frozen TF GraphDef
    ge-compile model.onnx -o model.om --op-bank-path bank/  # Cube plans tuned by ge-aoe (ATC's --op_bank_path)

`--framework` takes ATC's numbers: 5 ONNX (the default), 3 TensorFlow; without it a `.pb`
file is read as TensorFlow. The file's content must match the framework.

A user mistake (a bad file, an unsupported operator, a kernel that does not fit) prints one
`ge-compile: error: ...` message and exits with 1, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ge.errors import GeError
from ge.tools import ArgumentParser

# (ge.tools.ge_opt and ge_quantize, which load the dialects and onnx, are imported where
# used: by `main` after it turns the garbage collector off, see there)

MODES = (0, 1, 3)  # ATC's --mode: 0 build, 1 model file -> JSON, 3 pre-check only
FRAMEWORKS = {3: "TensorFlow", 5: "ONNX"}  # ATC's --framework numbers (0 Caffe, 1 MindSpore: not read)


def parser() -> argparse.ArgumentParser:
    from ge.compiler import KERNEL_LEVELS, PRECISION_MODES
    from ge.tools.ge_opt import LOG_LEVELS
    from ge.tools.ge_quantize import add_compile_options

    p = ArgumentParser(prog="ge-compile",
                                description="Compile an ONNX or TensorFlow model into a ge model file (.om).")
    p.add_argument("model", nargs="?", help="the model (.onnx, or a frozen TensorFlow GraphDef .pb); with --mode 1, "
                   "the model file instead of --om")
    p.add_argument("--framework", type=int, default=None,
                   help="ATC's framework number: 5 ONNX (default), 3 TensorFlow (default for a .pb file)")
    p.add_argument("-o", "--output", help="the model file to write (.om); required with --mode 0")
    p.add_argument("--mode", type=int, choices=MODES, default=0,
                   help="0: compile (default); 1: describe a model file (--om) as JSON; "
                   "3: pre-check operator support without building")
    p.add_argument("--om", help="--mode 1: the model file to describe")
    p.add_argument("--json", metavar="OUT.json", help="--mode 1: write the description here instead of printing it")
    p.add_argument("--check-report", "--check_report", metavar="REPORT.json",
                   help="--mode 3: write the per-node support report here")
    p.add_argument("--soc-version", "--soc_version", default="ascend910",
                   help="target chip: a ge target name (ascend910, ascend910b, ascend310b) or ATC's soc version")
    p.add_argument("--input-shape", "--input_shape", help='static input shapes, "name:1,3,224,224;name2:1,128"; '
                   "-1 for the dims that vary, with one of --dynamic-batch-size, --dynamic-image-size, "
                   "--dynamic-dims")
    p.add_argument("--precision-mode", "--precision_mode", default="force_fp16", choices=PRECISION_MODES)
    p.add_argument("--fusion-switch-file", "--fusion_switch_file", help="turn fusion rules on or off (GE's JSON form)")
    p.add_argument("--op-bank-path", "--op_bank_path", metavar="DIR",
                   help="operator tuning's repository (written by ge-aoe): Cube problems found there take their "
                   "tuned plans")
    p.add_argument("--dynamic-batch-size", "--dynamic_batch_size", help="batch sizes to compile, e.g. 1,2,4,8")
    p.add_argument("--dynamic-image-size", "--dynamic_image_size",
                   help='image sizes to compile for the -1 height and width, e.g. "224,224;320,320"')
    p.add_argument("--dynamic-dims", "--dynamic_dims",
                   help='per gear the values of every -1 of --input-shape in input order, e.g. "16,16;32,32"')
    p.add_argument("--input-shape-range", "--input_shape_range",
                   help='true dynamic shapes, e.g. "input_ids:[1,1~512]" (a dim: n, lo~hi or -1): kernels are '
                   "compiled per input shape at run time and cached ($GE_CACHE_DIR, default ~/.cache/ge)")
    p.add_argument("--disable-reuse-memory", "--disable_reuse_memory", action="store_true",
                   help="give every activation its own GM bytes")
    p.add_argument("--enable-single-stream", "--enable_single_stream", action="store_true",
                   help="put every task on one stream")
    p.add_argument("--super-kernel", "--super_kernel", choices=("on", "off"), default="on",
                   help="on (default): each stream's consecutive launches run as one SuperKernel, a full-core "
                   "barrier instead of a dispatch between two (and one stream when no two launches could run "
                   "side by side); off: a dispatch per launch")
    p.add_argument("--kernel-level", choices=KERNEL_LEVELS, default="isa",
                   help="isa (default): instructions run on the AI Core simulator; tile: stop after tiling, "
                   "kernels run in the tile interpreter (functional, modeled cycles; a fast debug mode)")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    p.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage to DIR (re-parsable by ge-opt)")
    p.add_argument("--report", metavar="REPORT.json", help="write the compile report (times, counts, memory)")
    p.add_argument("--ir-text", action="store_true",
                   help="store the task-level IR text in the model file (for ge-opt model.om; slower to compile)")
    p.add_argument("--no-ir-text", action="store_true", help="leave the IR text out (the default)")
    p.add_argument("--verify-each", action="store_true",
                   help="verify the IR after every stage, not only at the end of each level (names the stage that broke it)")
    add_compile_options(p)  # --calibration-data, --quant-method, --quant-skip (tools/ge_quantize.py)
    p.add_argument("--passes", default="", metavar="NAME[,NAME]",
                   help="custom passes to run, each at its registered stage (ge.register_pass or a package's "
                   "`ge.passes` entry point; README \"Extending ge\")")
    return p


class UsageError(GeError):
    """A missing or contradictory command-line argument."""


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
        dynamic_batch_size=args.dynamic_batch_size, dynamic_image_size=args.dynamic_image_size,
        dynamic_dims=args.dynamic_dims, input_shape_range=args.input_shape_range, fusion_switch_file=args.fusion_switch_file,
        op_bank_path=args.op_bank_path,
        disable_reuse_memory=args.disable_reuse_memory, enable_single_stream=args.enable_single_stream,
        super_kernel=args.super_kernel == "on",
        kernel_level=args.kernel_level, dump_ir=args.dump_ir, keep_ir_text=args.ir_text and not args.no_ir_text, passes=args.passes,
        verify_each=args.verify_each,
    )


def _gears_summary(gears: list[dict]) -> str:
    """The gears in the summary line: their batch or label, then per gear kernels and peak."""
    names = ", ".join(str(g["batch"]) if g.get("batch") is not None else g["gear"] for g in gears)
    kernels = "/".join(str(g["kernels"]) for g in gears)
    peaks = "/".join(str(g["memory"]["activation_peak_bytes"]) for g in gears)
    return f", gears {names} (kernels {kernels}, activations {peaks} bytes)"


def summary(report: dict, path: str, size: int) -> str:
    if report.get("mode") == "dynamic":
        ranges = "; ".join(f"{n}:{r}" for n, r in report["input_shape_range"].items())
        return (f"{path}: {size} bytes; dynamic shapes {ranges}: kernels are compiled per input shape at run time "
                f"and cached; checked in {report['compile_seconds']['total']:.2f} s")
    m = report["memory"]
    gears = _gears_summary(report["gears"]) if "gears" in report else ""
    tuned = f", {report['op_bank']['used']} tuned plan(s) from the op bank" if "op_bank" in report else ""
    return (f"{path}: {size} bytes; {report['kernels']} kernels ({report['kernel_level']} level), "
            f"{report['streams']} stream(s), {report['events']} event(s){gears}{tuned}; activations "
            f"{m['activation_peak_bytes']} bytes (lower bound {m['activation_lower_bound_bytes']}, no reuse "
            f"{m['no_reuse_bytes']}), weights {m['weights_bytes']}; compiled in {report['compile_seconds']['total']:.2f} s")


def describe_model_file(args: argparse.Namespace) -> int:
    """--mode 1: the model file as JSON (ge/inspect_model.py), printed or written to --json."""
    from ge.inspect_model import describe_file, to_text

    path = args.om or args.model
    if path is None:
        raise UsageError("--mode 1 needs the model file: --om model.om")
    text = to_text(describe_file(path))
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
        print(f"wrote {args.json}")
    else:
        print(text)
    return 0


def precheck(args: argparse.Namespace) -> int:
    """--mode 3: per-node operator support without building (ge/precheck.py); exit 1 if any
    node is unsupported, with the one-line summary as the error."""
    from ge.precheck import check_support

    if args.model is None:
        raise UsageError("--mode 3 needs the ONNX model: ge-compile --mode 3 model.onnx")
    if args.framework == 3 or (args.framework is None and args.model.endswith(".pb")):
        raise UsageError("--mode 3 checks ONNX models only; compile a TensorFlow model to see what it lacks")
    report = check_support(args.model, _options(args))
    print(report.table())
    if args.check_report:
        with open(args.check_report, "w") as f:
            json.dump(report.to_json(), f, indent=2)
        print(f"wrote {args.check_report}")
    if report.supported:
        print(report.summary())
        return 0
    print(f"ge-compile: error: {report.summary()}", file=sys.stderr)
    return 1


def framework_source(path: str, framework: int | None):
    """What ge.compile reads for `path` under --framework: the path itself, or the parsed
    GraphDef for a TensorFlow file not named .pb. The content must match the framework."""
    if framework is None:
        framework = 3 if path.endswith(".pb") else 5
    if framework not in FRAMEWORKS:
        known = ", ".join(f"{k} ({v})" for k, v in sorted(FRAMEWORKS.items()))
        raise UsageError(f"--framework {framework} is not supported; ge reads {known}")
    try:
        with open(path, "rb") as f:
            if framework == 5:  # only looked at: the ONNX loader reads the file (BERT-base's 218 MB read was 0.3 s)
                if _is_graphdef_file(f) and _onnx_model(f.read()) is None:
                    raise UsageError(f"{path} is a TensorFlow GraphDef, not an ONNX model; use --framework 3")
                return path
            data = f.read()
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or e}") from None
    from ge.frontend import tf

    graphdef = tf.parse_graphdef(data) if data else None
    if framework == 3:
        if graphdef is None and _onnx_model(data) is not None:
            raise UsageError(f"{path} is an ONNX model, not a TensorFlow GraphDef; use --framework 5")
        graphdef = tf.load_graphdef(data, path)  # the format error for a malformed file
        return path if path.endswith(".pb") else graphdef
    return path


def _is_graphdef_file(f) -> bool:
    """Does the open file parse as a GraphDef (`tf.parse_graphdef`)? Read through a memory
    map: parsing an ONNX file as a GraphDef skips its fields by their lengths, so the pages
    of its weights are never read. A file without a top-level GraphDef node field is not
    parsed at all (an ONNX model: the TensorFlow front end and its protos stay unimported)."""
    import mmap

    if os.fstat(f.fileno()).st_size == 0:
        return False
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data, memoryview(data) as view:
        if not _may_hold_nodes(view):
            return False
        from ge.frontend import tf

        return tf.parse_graphdef(view) is not None  # (protobuf takes a memoryview, not the map)


def _may_hold_nodes(view: memoryview) -> bool:
    """False when the protobuf fields at the top level of `view` include no length-delimited
    field 1 -- GraphDef's `node`, the only way a GraphDef gets nodes (`tf.parse_graphdef`
    then finds none: None). An ONNX model's field 1 is `ir_version`, a varint. True when
    there is one, or for anything this walk does not follow (groups, a truncated field):
    the GraphDef parser decides."""
    pos, end = 0, len(view)

    def varint() -> int | None:
        nonlocal pos
        value = shift = 0
        while pos < end and shift < 64:
            byte = view[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
        return None

    while pos < end:
        tag = varint()
        if tag is None:
            return True
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            if varint() is None:
                return True
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            length = varint()
            if length is None or field == 1:
                return True
            pos += length
        else:
            return True
        if pos > end:
            return True
    return False


def _onnx_model(data: bytes):
    import onnx

    try:
        model = onnx.load_model_from_string(data)
    except Exception:  # protobuf's DecodeError and friends
        return None
    return model if model.ir_version > 0 and model.graph.node else None


def run(args: argparse.Namespace) -> int:
    from ge.compiler import compile_to_file
    from ge.tools.ge_opt import setup_logging
    from ge.tools.ge_quantize import calibrated

    setup_logging("ge-compile", args.log)
    if args.mode == 1:
        return describe_model_file(args)
    if args.mode == 3:
        return precheck(args)
    if args.model is None or args.output is None:
        raise UsageError("compiling needs the model and -o model.om (or --mode 1 / --mode 3)")
    source = framework_source(args.model, args.framework)
    source = calibrated(source, args)  # ge.quantize first with --calibration-data
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    compiled, size = compile_to_file(source, args.output, _options(args), progress=progress)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(compiled.report, f, indent=2)
    print(summary(compiled.report, args.output, size))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command. Run as the process itself (`argv` None), the cyclic garbage collector
    is off from before the dialects are imported, and the heap is frozen at the end. Why:
    every young collection walks all the objects made since the previous one that are
    still alive -- at `ge.compile`'s thresholds that was 0.31 s CPU of a resnet50 run and
    1.3 s of densenet121's (and 0.06 s of importing the dialects), for cyclic garbage (probe
    modules, replaced kernels) that only the process's exit frees anyway; the interpreter's
    final collection would walk every object (0.6 s of squeezenet's run). Peak RSS grows by
    that garbage: resnet50 475 -> 483 MB, densenet121 362 -> 398 MB.

    The process then ends without the interpreter's teardown (`hard_exit`, as mypy ends):
    freeing the compile's objects one by one only to exit took about 0.2 s of a resnet50
    run (wall time outside the stages, medians of 6 alternating runs: 1.04 -> 0.82 s)."""
    import gc

    command = argv is None
    if command:
        gc.disable()
    try:
        from ge.tools.ge_opt import run_reporting_errors

        args = parser().parse_args(argv)
        where = args.om if args.mode == 1 and args.om else args.model
        code = run_reporting_errors("ge-compile", lambda: run(args), where or "<no model>", args.output)
    finally:
        if command:
            gc.freeze()
    if command:
        hard_exit(code)
    return code


def hard_exit(code: int) -> None:
    """End the process now with `code`, its output flushed and its log handlers closed:
    what is left to free is only the compile's objects (every file was written and closed)."""
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
