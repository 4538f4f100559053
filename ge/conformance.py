"""The ONNX conformance suite through `ge.backend`: which official node cases ge claims.

`onnx.backend.test.case.node.collect_testcases()` regenerates the official single-node test
cases in memory. ge claims every case of the operators in `CLAIMED_OPS`, except the cases in
`EXCLUDED` (each with the reason). pytest runs all claimed cases; `python -m ge.conformance`
prints the per-operator counts and the README's supported-operator table.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx

# Operators whose generated node cases ge runs (default ONNX domain).
CLAIMED_OPS = (
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "CastLike",
    "Ceil", "Celu", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Cos", "DepthToSpace", "Div",
    "Dropout", "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "Gelu", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish",
    "Identity", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "LRN",
    "MatMul", "Max", "MaxPool", "Mean", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "PRelu",
    "Range", "Reciprocal", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Relu", "Reshape", "Round", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Slice",
    "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh",
    "ThresholdedRelu", "Tile", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
)

# Generated cases of claimed operators that ge does not support: (case-name regex, reason).
# Every other generated case of a claimed operator must pass.
EXCLUDED_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(?i)bfloat16|float8|float4|e8m0|int4|uint4|int2|uint2",
     "element types without a graph-level counterpart (bf16, 8/4-bit floats, 2/4-bit ints)"),
    (r"_string", "string tensors"),
    (r"^test_(averagepool|maxpool)_3d", "only 1-D and 2-D pooling is supported"),
    (r"^test_averagepool_2d_dilations$", "dilated AveragePool (opset 19) is not supported"),
    (r"training_mode|^test_training_dropout", "training mode: ge compiles for inference"),
    (r"^test_identity_(opt|sequence)$", "optional and sequence types"),
    (r"^test_maxpool_with_argmax", "MaxPool's Indices output"),
)


def excluded_reason(name: str) -> str | None:
    for pattern, reason in EXCLUDED_PATTERNS:
        if re.search(pattern, name):
            return reason
    return None


@dataclass
class CaseResult:
    name: str
    op: str
    status: str  # "pass", "fail", "excluded"
    detail: str = ""


def node_cases():
    """(name, op_type, case) for every generated single-operator case of a claimed op."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    claimed = set(CLAIMED_OPS)
    out = []
    for case in cases:
        ops = {n.op_type for n in case.model.graph.node}
        if len(ops) == 1 and (op := ops.pop()) in claimed:
            out.append((case.name, op, case))
    return sorted(out, key=lambda t: t[0])


def run_case(case) -> None:
    """Run one case through ge.backend; raises AssertionError on a wrong result."""
    from onnx import numpy_helper

    from ge.backend import prepare

    rep = prepare(case.model)
    for inputs, expected in case.data_sets:
        inputs = [numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else a for a in inputs]
        expected = [numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else a for a in expected]
        outputs = rep.run(inputs)
        assert len(outputs) >= len(expected), f"{len(outputs)} outputs, expected {len(expected)}"
        for got, want in zip(outputs, expected):
            want = np.asarray(want)
            assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
            assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
            if want.dtype.kind in "fc":
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
            else:
                np.testing.assert_array_equal(got, want)


def run_all() -> list[CaseResult]:
    results = []
    for name, op, case in node_cases():
        if (reason := excluded_reason(name)) is not None:
            results.append(CaseResult(name, op, "excluded", reason))
            continue
        try:
            run_case(case)
            results.append(CaseResult(name, op, "pass"))
        except Exception as e:
            results.append(CaseResult(name, op, "fail", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"))
    return results


def operator_table(results: list[CaseResult]) -> str:
    """Markdown table: operator, passing generated cases, excluded cases."""
    passed, excluded = Counter(), Counter()
    for r in results:
        if r.status == "pass":
            passed[r.op] += 1
        elif r.status == "excluded":
            excluded[r.op] += 1
    lines = ["| ONNX operator | node cases passed | excluded |", "|---|---|---|"]
    for op in sorted(CLAIMED_OPS, key=str.lower):
        lines.append(f"| {op} | {passed[op]} | {excluded[op]} |")
    return "\n".join(lines)


README_BEGIN = "<!-- BEGIN operator table (python -m ge.conformance --write-readme) -->"
README_END = "<!-- END operator table -->"


def readme_with_table(readme: str, table: str) -> str:
    """The README text with the operator table between its markers replaced."""
    head, _, rest = readme.partition(README_BEGIN)
    _, _, tail = rest.partition(README_END)
    return f"{head}{README_BEGIN}\n{table}\n{README_END}{tail}"


def main() -> int:
    results = run_all()
    status = Counter(r.status for r in results)
    for r in results:
        if r.status == "fail":
            print(f"FAIL {r.name}: {r.detail}")
    table = operator_table(results)
    print(table)
    print(f"\n{status['pass']} passed, {status['fail']} failed, {status['excluded']} excluded")
    if "--write-readme" in sys.argv:
        from pathlib import Path

        readme = Path(__file__).resolve().parent.parent / "README.md"
        readme.write_text(readme_with_table(readme.read_text(), table))
    return 1 if status["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
