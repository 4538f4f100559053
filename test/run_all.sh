#!/usr/bin/env bash
# The whole test suite: ruff, lit (FileCheck tests under test/), pytest (test/python) on one
# worker per core (pytest-xdist). Quick subset for local work:
# `bash test/run_all.sh -m "not slow"` (extra args go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
# The example plugin (README "Extending ge") that test/python/test_plugins.py exercises.
# Installed every run (a few seconds): its entry points change with the example.
python -m pip install -q --no-deps -e examples/ge_plugin_example
lit -sv test
python -m pytest -n auto --durations=25 "$@"
