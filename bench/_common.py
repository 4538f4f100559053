"""What the benchmark scripts share: table formatting and their common options.

A file whose name starts with `_` is not a benchmark (`run_all.py` skips it); the scripts
import it as a sibling module (`python bench/x.py` puts bench/ on the path).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def markdown(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table (cells already formatted as text)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def parser(doc: str, name: str, quick: Sequence[str]) -> argparse.ArgumentParser:
    """--quick (only `quick` models), --models, --json (default bench/results/<name>.json)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(quick)}")
    p.add_argument("--models", help="comma-separated model names")
    p.add_argument("--json", type=Path, default=RESULTS / f"{name}.json")
    return p
