"""The ONNX conformance suite through `ge.backend`: which official node cases ge claims.

`onnx.backend.test.case.node.collect_testcases()` regenerates the official single-node test
cases in memory. ge claims every case of the operators in `CLAIMED_OPS`, except the cases in
`EXCLUDED` (each with the reason). pytest runs all claimed cases; `python -m ge.conformance`
prints the per-operator counts and the README's supported-operator table.

`--device npu` runs the same cases on the NPU path instead: `ge.compile` down to the isa
level (f32, must_keep_origin_dtype) and `CompiledModel.run` on the simulator, with no
fallback to the interpreter. Graph inputs that ge needs at compile time (a Reshape
target, Slice starts, reduction axes, pads) are frozen into initializers with the case's
values, since the NPU path compiles static shapes; every other input stays an input.
`--device npu --write-readme` fills the table's NPU column.
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
    # quantization (issue 21)
    "ConvInteger", "DequantizeLinear", "MatMulInteger", "QLinearConv", "QLinearMatMul", "QuantizeLinear",
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
    (r"^test_(de)?quantizelinear_blocked", "blocked quantization (block_size: one scale per block of the axis)"),
    (r"^test_(de)?quantizelinear_(e4m3fn|e5m2)", "8-bit float quantization (float8e4m3fn / float8e5m2 types)"),
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
    from ge.backend import prepare

    rep = prepare(case.model)
    for inputs, expected in case.data_sets:
        _compare(case, rep.run(_arrays(inputs)), _arrays(expected))


def _arrays(values) -> list:
    from onnx import numpy_helper

    return [numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else a for a in values]


def compile_time_inputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[str]:
    """The graph inputs whose values ge needs at compile time (the importer names them)."""
    from ge.frontend.onnx import NeedsInputValue, import_model

    frozen: dict[str, np.ndarray] = {}
    while True:
        shapes = {n: a.shape for n, a in inputs.items() if n not in frozen}
        try:
            import_model(model, input_shape=shapes, frozen_inputs=frozen)
            return list(frozen)
        except NeedsInputValue as e:
            if set(e.names) <= set(frozen):
                raise
            frozen.update((n, inputs[n]) for n in e.names)


def frozen_model(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` whose inputs named in `values` are initializers with those values."""
    from onnx import numpy_helper

    out = onnx.ModelProto.FromString(model.SerializeToString())
    kept = [i for i in out.graph.input if i.name not in values]
    del out.graph.input[:]
    out.graph.input.extend(kept)
    out.graph.initializer.extend(numpy_helper.from_array(np.asarray(a), n) for n, a in values.items())
    return out


def run_case_npu(case) -> None:
    """Run one case through ge.compile (isa, f32) + CompiledModel.run; raises AssertionError
    on a wrong result and the compiler's GeError when it refuses (never falls back)."""
    import ge

    inits = {t.name for t in case.model.graph.initializer}
    names = [i.name for i in case.model.graph.input if i.name not in inits]
    options = dict(precision_mode="must_keep_origin_dtype", kernel_level="isa", keep_ir_text=False)
    compiled: dict[bytes, object] = {}
    for inputs, expected in case.data_sets:
        inputs = dict(zip(names, _arrays(inputs)))
        frozen = {n: inputs[n] for n in compile_time_inputs(case.model, inputs)}
        key = b"".join(n.encode() + np.ascontiguousarray(a).tobytes() for n, a in sorted(frozen.items()))
        if key not in compiled:
            model = frozen_model(case.model, frozen) if frozen else case.model
            shapes = {n: a.shape for n, a in inputs.items() if n not in frozen}
            compiled[key] = ge.compile(model, ge.CompileOptions(input_shape=shapes or None, **options))
        outs = compiled[key].run({n: a for n, a in inputs.items() if n not in frozen})
        _compare(case, [outs[o.name] for o in case.model.graph.output], _arrays(expected))


def _compare(case, outputs, expected) -> None:
    assert len(outputs) >= len(expected), f"{len(outputs)} outputs, expected {len(expected)}"
    for got, want in zip(outputs, expected):
        want = np.asarray(want)
        got = np.asarray(got)
        assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
        assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
        else:
            np.testing.assert_array_equal(got, want)


def run_all(device: str = "cpu", ops: set[str] | None = None, progress: bool = False) -> list[CaseResult]:
    run = run_case_npu if device == "npu" else run_case
    results = []
    for name, op, case in node_cases():
        if ops is not None and op not in ops:
            continue
        if (reason := excluded_reason(name)) is not None:
            results.append(CaseResult(name, op, "excluded", reason))
            continue
        try:
            run(case)
            results.append(CaseResult(name, op, "pass"))
        except Exception as e:
            results.append(CaseResult(name, op, "fail", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"))
        if progress:
            print(f"{results[-1].status} {name} {results[-1].detail}", file=sys.stderr, flush=True)
    return results


def operator_table(results: list[CaseResult], npu: dict[str, int] | None = None) -> str:
    """Markdown table: operator, passing generated cases (interpreter, and the NPU path
    when `npu` gives its per-operator counts), excluded cases."""
    passed, excluded = Counter(), Counter()
    for r in results:
        if r.status == "pass":
            passed[r.op] += 1
        elif r.status == "excluded":
            excluded[r.op] += 1
    if npu is None:
        lines = ["| ONNX operator | node cases passed | excluded |", "|---|---|---|"]
    else:
        lines = ["| ONNX operator | node cases passed | on the NPU (isa, simulator) | excluded |", "|---|---|---|---|"]
    for op in sorted(CLAIMED_OPS, key=str.lower):
        npu_cell = "" if npu is None else f" {npu.get(op, 0)} |"
        lines.append(f"| {op} | {passed[op]} |{npu_cell} {excluded[op]} |")
    return "\n".join(lines)


def npu_counts(results: list[CaseResult]) -> dict[str, int]:
    return dict(Counter(r.op for r in results if r.status == "pass"))


def npu_column(table: str) -> dict[str, int] | None:
    """The NPU counts a README table carries (None when it has no NPU column)."""
    rows = [line.strip().strip("|").split("|") for line in table.strip().splitlines()]
    if not rows or len(rows[0]) < 4:
        return None
    return {cells[0].strip(): int(cells[2]) for cells in rows[2:]}


README_BEGIN = "<!-- BEGIN operator table (python -m ge.conformance --write-readme) -->"
README_END = "<!-- END operator table -->"


def readme_with_table(readme: str, table: str) -> str:
    """The README text with the operator table between its markers replaced."""
    head, _, rest = readme.partition(README_BEGIN)
    _, _, tail = rest.partition(README_END)
    return f"{head}{README_BEGIN}\n{table}\n{README_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m ge.conformance", description="ONNX node cases through ge")
    ap.add_argument("--device", choices=("cpu", "npu"), default="cpu",
                    help="cpu: the reference interpreter; npu: ge.compile (isa, f32) + the simulator")
    ap.add_argument("--ops", help="only these operators (comma-separated)")
    ap.add_argument("--write-readme", action="store_true", help="rewrite the README's operator table")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case as it finishes")
    args = ap.parse_args(argv)
    ops = set(args.ops.split(",")) if args.ops else None
    readme = Path(__file__).resolve().parent.parent / "README.md"
    results = run_all(args.device, ops, args.verbose)
    status = Counter(r.status for r in results)
    for r in results:
        if r.status == "fail":
            print(f"FAIL {r.name}: {r.detail}")
    if args.device == "npu":
        table = operator_table(run_all("cpu", ops), npu_counts(results)) if args.write_readme else ""
        ran = Counter(r.op for r in results if r.status != "excluded")
        for op, n in sorted(ran.items(), key=lambda kv: kv[0].lower()):
            print(f"{op:24s} {npu_counts(results).get(op, 0):3d} of {n:3d} cases pass on the NPU")
    else:
        current = readme.read_text().split(README_BEGIN)[-1].split(README_END)[0] if readme.exists() else ""
        table = operator_table(results, npu_column(current))
        print(table)
    total_ops = len({r.op for r in results})
    clean_ops = total_ops - len({r.op for r in results if r.status == "fail"})
    print(f"\n{args.device}: {status['pass']} passed, {status['fail']} failed, {status['excluded']} excluded; "
          f"{clean_ops} of {total_ops} operators pass every case")
    if args.write_readme and ops is None:
        readme.write_text(readme_with_table(readme.read_text(), table))
    return 1 if status["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
