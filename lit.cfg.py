"""lit configuration: the .mlir / .onnxtxt tests under test/ run through ge-opt and filecheck."""

import os
import shutil
import sys

import lit.formats

config.name = "ge"  # noqa: F821
config.test_format = lit.formats.ShTest(False)  # noqa: F821
config.suffixes = [".mlir", ".onnxtxt"]  # noqa: F821
config.excludes = ["python", "Inputs", ".venv", "build", "bench", "examples"]  # noqa: F821

root = os.path.dirname(os.path.abspath(__file__))

# lit scrubs the environment: forward what the tools need.
bindir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])  # noqa: F821
config.environment["PYTHONPATH"] = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])  # noqa: F821
for var in ("HOME", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]  # noqa: F821

ge_opt = shutil.which("ge-opt", path=config.environment["PATH"]) or f"{sys.executable} -m ge.tools.ge_opt"  # noqa: F821
# Macros first: lit applies substitutions in order, so their `ge-opt` is rewritten too.
config.substitutions.append(  # noqa: F821
    ("GE_ROUNDTRIP", "ge-opt %s --print-op-generic --split-input-file | ge-opt --split-input-file | filecheck %s")
)
config.substitutions.append(  # noqa: F821
    ("GE_GENERIC_ROUNDTRIP", "ge-opt %s --print-op-generic --split-input-file | filecheck %s --check-prefix=CHECK-GENERIC")
)
config.substitutions.append(("ge-opt", ge_opt))  # noqa: F821
config.substitutions.append(("%python", sys.executable))  # noqa: F821
