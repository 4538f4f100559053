"""The official ONNX node test cases through `ge.backend` (see ge/conformance.py).

Every generated case of a claimed operator runs, with the case's own tolerances; the cases
excluded by rule must be refused with a ge error (never a wrong answer or a crash).
"""

from __future__ import annotations

import pytest

from ge.conformance import CLAIMED_OPS, excluded_reason, node_cases, run_case
from ge.errors import GeError

CASES = node_cases()
RUN = [(n, c) for n, _, c in CASES if excluded_reason(n) is None]
REFUSED = [(n, c) for n, _, c in CASES if excluded_reason(n) is not None]


def test_enough_cases_are_claimed():
    assert len(RUN) >= 300
    claimed_with_cases = {op for _, op, _ in CASES}
    # Every claimed operator has at least one generated case that runs.
    ran = {op for n, op, _ in CASES if excluded_reason(n) is None}
    assert claimed_with_cases == ran == set(CLAIMED_OPS)


@pytest.mark.parametrize(("name", "case"), RUN, ids=[n for n, _ in RUN])
def test_node_case(name, case):
    run_case(case)


@pytest.mark.parametrize(("name", "case"), REFUSED, ids=[n for n, _ in REFUSED])
def test_excluded_case_is_refused(name, case):
    with pytest.raises(GeError):
        run_case(case)


def test_readme_operator_table_is_current():
    """The README's table is what `python -m ge.conformance --write-readme` writes."""
    from pathlib import Path

    from ge.conformance import README_BEGIN, README_END, npu_column, operator_table, run_all

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    current = readme.split(README_BEGIN)[1].split(README_END)[0].strip()
    # (the NPU column is `--device npu --write-readme`'s, checked by test_conformance_npu.py)
    assert current == operator_table(run_all(), npu_column(current))
