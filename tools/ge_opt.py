"""`ge-opt`: the pass driver, xdsl-opt with ge's dialects, passes and the ONNX frontend.

Reads `.mlir`, `.onnx` and `.onnxtxt`; runs `-p pass,pass{opt=...}`; prints IR. A model file
(`.om`) prints the task-level IR stored in it. `--log debug|info|warning|error` sets Python
logging; at debug every pass with a `debug` option runs with it on. Unlike stock
xdsl-opt, user mistakes (malformed IR, a failing verifier, a bad model file) end with a
located one-paragraph message and exit code 1, never a Python traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from ge.dialects import get_all_ge_dialects
from ge.errors import GeError

LOG_LEVELS = ("error", "warning", "info", "debug")
UPSTREAM_DIALECTS = ("builtin", "func", "arith", "scf", "memref", "test")
UPSTREAM_PASSES = ("canonicalize", "cse", "dce")
log = logging.getLogger("ge.opt")


def setup_logging(tool: str, level: str) -> None:
    """`--log LEVEL` of every tool: Python logging on stderr as `<tool>: <level>: message`."""

    class Format(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"{tool}: {record.levelname.lower()}: {record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Format())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


class GeOptMain(xDSLOptMain):
    version_format = "ge-opt (built on xDSL {xdsl_version})"

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--log", choices=LOG_LEVELS, default="warning",
                                help="what to log on stderr; debug also turns on the passes' debug output")

    def setup_pipeline(self) -> None:
        super().setup_pipeline()
        setup_logging("ge-opt", self.args.log)
        if log.isEnabledFor(logging.DEBUG):
            from ge.compiler import with_debug

            self.pipeline = PassPipeline(tuple(with_debug(p) for p in self.pipeline.passes), self._logged_callback())
        elif log.isEnabledFor(logging.INFO):
            self.pipeline = PassPipeline(self.pipeline.passes, self._logged_callback())

    def _logged_callback(self):
        """The pipeline's callback, plus one log line per pass with its time."""
        inner = self.pipeline.callback
        started = [time.perf_counter()]

        def callback(previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
            if previous is not None:
                log.info("%s took %.3f s", previous.name, time.perf_counter() - started[0])
            if inner is not None:
                inner(previous, module, following)
            started[0] = time.perf_counter()

        return callback

    def run(self) -> None:
        path = self.args.input_file
        if path is not None and str(path).endswith(".om"):
            self.print_model_file(str(path))
            return
        super().run()

    def print_model_file(self, path: str) -> None:
        """`ge-opt model.om`: the task-level IR stored in the file's IR_TEXT partition."""
        from ge.runtime.model_file import load_model

        if self.args.passes:
            raise GeError(f"{path}: a model file can only be printed (ge-opt model.om); run passes on the .onnx "
                          "or .mlir it was compiled from")
        model = load_model(path)
        if model.ir_text is None:
            raise GeError(f"{path}: the model file holds no IR text (it was written without ge-compile --ir-text); "
                          f"ge-compile --mode 1 --om {path} describes it as JSON")
        out = self.prepare_output()
        try:
            out.write(model.ir_text)
        finally:
            if out is not sys.stdout:
                out.close()

    def register_all_dialects(self) -> None:
        from xdsl.dialects import get_all_dialects

        upstream = get_all_dialects()
        for name in UPSTREAM_DIALECTS:
            self.ctx.register_dialect(name, upstream[name])
        for name, factory in get_all_ge_dialects().items():
            self.ctx.register_dialect(name, factory)
        # Passes create dense_resource weights even when the input has none; the printer
        # finds their blobs through the builtin dialect, which must then be loaded.
        self.ctx.load_registered_dialect("builtin")

    def register_all_passes(self) -> None:
        from xdsl.transforms import get_all_passes

        from ge.transforms import get_all_ge_passes

        upstream = get_all_passes()
        for name in UPSTREAM_PASSES:
            self.register_pass(name, upstream[name])
        for name, factory in get_all_ge_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def get_onnx():
            from ge.frontend.onnx_frontend import OnnxFrontend

            return OnnxFrontend

        def get_onnxtxt():
            from ge.frontend.onnx_frontend import OnnxTextFrontend

            return OnnxTextFrontend

        self.available_frontends["onnx"] = get_onnx
        self.available_frontends["onnxtxt"] = get_onnxtxt


def _input_name(argv: Sequence[str]) -> str:
    files = [a for a in argv if not a.startswith("-") and a.endswith((".mlir", ".onnx", ".onnxtxt", ".om"))]
    return files[0] if files else "<stdin>"


def _failing_op(e: Exception) -> str:
    """The offending op's line from the annotated IR that xDSL attaches as a note."""
    for note in getattr(e, "__notes__", []):
        lines = note.splitlines()
        for i, line in enumerate(lines):
            if i and line.strip() and set(line.strip()) <= {"^", "-"} and line.strip()[0] == "^":
                return "\n  in: " + lines[i - 1].strip()
    return ""


def describe_error(e: Exception, where: str) -> str | None:
    """The one-paragraph message for a user mistake, or None for an internal error."""
    if isinstance(e, ParseError):
        return f"cannot parse {where}:\n{e}"
    if isinstance(e, PassFailedException):  # before DiagnosticException, its base class
        return f"a pass failed on {where}: {e}"
    if isinstance(e, DiagnosticException | VerifyException):
        return f"{where} does not verify: {e}{_failing_op(e)}"
    if isinstance(e, FileNotFoundError):
        return f"no such file: {e.filename}"
    if isinstance(e, GeError | ValueError):
        # xDSLOptMain reports unknown passes and file types as ValueError.
        return str(e)
    return None


def run_reporting_errors(tool: str, run: Callable[[], int], where: str, default_file: str | None = None) -> int:
    """`run()`, with a user mistake printed as one `<tool>: error: ...` line and exit code 1
    (the command-line tools' shared error handling; internal errors still raise)."""
    try:
        return run()
    except BrokenPipeError:  # the output was piped into `head`: not a mistake
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        message = describe_error(e, where)
        if message is None:
            if not isinstance(e, OSError):
                raise
            message = f"{e.filename or default_file}: {e.strerror or e}"
        print(f"{tool}: error: {message}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        GeOptMain(args=argv).run()
    except Exception as e:
        message = describe_error(e, _input_name(argv))
        if message is None:
            raise
        print(f"ge-opt: error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
