"""The ONNX node conformance cases on the NPU path: `ge.compile` (isa, f32) + the simulator,
no interpreter fallback (`python -m ge.conformance --device npu`; see ge/conformance.py).

A case of a claimed operator either passes with the case's own tolerances or is refused
with a GeError naming what the NPU path lacks -- never a wrong answer, never a traceback.
The operators in FAST_OPS must pass every case and run in the default (not slow) set; the
rest of the cases run under `-m slow`.
"""

from __future__ import annotations

import pytest

from ge.conformance import excluded_reason, node_cases, run_case_npu
from ge.errors import GeError

CASES = [(n, op, c) for n, op, c in node_cases() if excluded_reason(n) is None]
FAST_OPS = {"Relu", "Sigmoid", "Tanh", "Add", "Mul", "Softmax", "MaxPool", "GlobalAveragePool", "Transpose",
            "Reshape", "Gemm", "BatchNormalization",
            # quantization: every case that is not excluded by name (blocked, float8) passes
            "ConvInteger", "MatMulInteger", "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"}
# Cases the NPU path refuses today, with the part of the message that says why (none since
# max_pool on 8-bit integers pools in f16: transforms/decompose.py; the int32 refusal is
# tested in test_decompose.py).
REFUSED_ON_NPU: dict[str, str] = {}
FAST = [(n, c) for n, op, c in CASES if op in FAST_OPS and n not in REFUSED_ON_NPU]
SLOW = [(n, c) for n, op, c in CASES if op not in FAST_OPS]


@pytest.mark.parametrize(("name", "case"), FAST, ids=[n for n, _ in FAST])
def test_npu_case_fast(name, case):
    run_case_npu(case)


def test_npu_refusal_names_what_is_missing():
    for name, why in REFUSED_ON_NPU.items():
        case = next(c for n, _, c in CASES if n == name)
        with pytest.raises(GeError, match=why):
            run_case_npu(case)


def test_uint8_max_pool_runs_on_the_npu():
    """The case the Vector unit's float-only pools used to refuse (decompose casts it to f16)."""
    run_case_npu(next(c for n, _, c in CASES if n == "test_maxpool_2d_uint8"))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "case"), SLOW, ids=[n for n, _ in SLOW])
def test_npu_case(name, case):
    """Pass, or a refusal that is a GeError (the NPU lowering the case needs is missing)."""
    try:
        run_case_npu(case)
    except GeError as e:
        assert str(e), "a refusal must say what is missing"


def test_compile_time_inputs_are_frozen():
    """Reshape's shape input is frozen into an initializer; the data input stays."""
    import numpy as np

    from ge.conformance import compile_time_inputs, frozen_model

    case = next(c for n, _, c in node_cases() if n == "test_reshape_reordered_all_dims")
    inputs, _ = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    feeds = dict(zip(names, inputs))
    assert compile_time_inputs(case.model, feeds) == ["shape"]
    frozen = frozen_model(case.model, {"shape": feeds["shape"]})
    assert [i.name for i in frozen.graph.input] == ["data"]
    assert any(t.name == "shape" for t in frozen.graph.initializer)
    run_case_npu(case)
    assert np.asarray(feeds["shape"]).dtype == np.int64
