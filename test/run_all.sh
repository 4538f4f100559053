#!/usr/bin/env bash
# The whole test suite: ruff, lit (FileCheck tests under test/), pytest (test/python) on one
# worker per core (pytest-xdist). Quick subset for local work:
# `bash test/run_all.sh -m "not slow"` (extra args go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
lit -sv test
python -m pytest -n auto "$@"
