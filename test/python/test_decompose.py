"""The `decompose` pass (transforms/decompose.py), its primitives' vector lowerings
(lowering/isa_vector.py) and the op interfaces they read (dialects/graph.py).

1. Every decomposition against the reference interpreter on the original op, on random inputs
   with edge values (zeros of both signs, infinities, NaN, ties, negative bases, exact
   multiples). Tolerances: exact for integers and booleans; 1e-6 relative (+1e-6 absolute,
   exp(x) - 1 against expm1 near 0) for the activations; 2e-5 relative for pow through
   exp / ln; the sin / cos bounds stated in transforms/decompose.py.
2. The first generated ONNX node case of every operator the decomposition and the new
   primitives bring to the NPU (integer shape / axes inputs frozen as constants), through
   `ge.compile` (isa kernels) + `CompiledModel.run` in f32 (must_keep_origin_dtype) and in
   the default f16, against onnxruntime: f32 within 1e-4 relative to the output scale, f16
   within 2e-2; integer and boolean outputs exact; an f16 result where onnxruntime's f32
   value is outside the f16 range must be that infinity.
3. One model per op family (logic + select, rounding + sign, activations, sin / cos / pow /
   mod, index and product reductions) with broadcasts, tails past one vector repeat and edge
   values, through ge.compile + run in f32 and f16 against onnxruntime.
4. The interfaces: traits on the ops agree with the reference semantics, and the fusion
   rules derive their op sets from them.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.dialects import graph
from ge.frontend.onnx import NeedsInputValue, import_model
from ge.ir import parse_module, run_passes
from ge.lowering import fusion_rules
from ge.runtime.reference import run
from ge.transforms.decompose import DECOMPOSITIONS

F32, F16 = "must_keep_origin_dtype", "force_fp16"


# --------------------------------------------------------------------------------------
# 1. Decompositions against the reference interpreter
# --------------------------------------------------------------------------------------

EDGE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-7, -1e-7, 30.0, -30.0, 100.0, -100.0,
                 np.inf, -np.inf], dtype=np.float32)


def _floats(rng, shape, scale=3.0):
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    flat = x.reshape(-1)
    flat[: min(flat.size, EDGE.size)] = EDGE[: flat.size]
    return x


def _decomposed_matches(text: str, inputs: list[np.ndarray], rtol: float = 1e-6, atol: float = 1e-6,
                        changed: type | None = None) -> list[np.ndarray]:
    """Run the module before and after `decompose` on the reference interpreter."""
    module = parse_module(text)
    want = run(module, inputs)
    run_passes(module, "decompose")
    names = {op.name for op in module.walk()}
    if changed is not None:
        assert changed.name not in names, f"{changed.name} was not decomposed"
    got = run(module, inputs)
    for g_, w in zip(got, want):
        assert g_.dtype == w.dtype and g_.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g_, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g_, w)
    return got


UNARY_DECOMPOSITIONS = [
    ("elu", "{alpha = 2.0 : f32}", graph.EluOp),
    ("elu", "{alpha = 1.0 : f32}", graph.EluOp),
    ("selu", "{alpha = 1.67326319 : f32, gamma = 1.05070102 : f32}", graph.SeluOp),
    ("celu", "{alpha = 0.5 : f32}", graph.CeluOp),
    ("thresholded_relu", "{alpha = 0.5 : f32}", graph.ThresholdedReluOp),
    ("sign", "", graph.SignOp),
]


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("name,attrs,cls", UNARY_DECOMPOSITIONS, ids=[f"{n}{i}" for i, (n, *_) in
                                                                     enumerate(UNARY_DECOMPOSITIONS)])
def test_unary_decompositions(name, attrs, cls, elem):
    ty = f"tensor<4x37x{elem}>"
    text = f"""func.func @main(%x: {ty}) -> {ty} {{
      %y = graph.{name} %x {attrs} : {ty}
      func.return %y : {ty}
    }}"""
    x = _floats(np.random.default_rng(0), (4, 37))
    x.reshape(-1)[20] = np.nan
    x = x.astype(np.float16 if elem == "f16" else np.float32)
    tol = 1e-6 if elem == "f32" else 1e-3
    _decomposed_matches(text, [x], rtol=tol, atol=tol, changed=cls)


def test_sign_on_integers():
    text = """func.func @main(%x: tensor<9xi32>) -> tensor<9xi32> {
      %y = graph.sign %x : tensor<9xi32>
      func.return %y : tensor<9xi32>
    }"""
    _decomposed_matches(text, [np.array([0, 1, -1, 7, -7, 2**31 - 1, -2**31, 3, -3], np.int32)], changed=graph.SignOp)


def test_prelu_with_a_broadcast_slope():
    text = """func.func @main(%x: tensor<2x3x5xf32>, %s: tensor<3x1xf32>) -> tensor<2x3x5xf32> {
      %y = graph.prelu %x, %s : (tensor<2x3x5xf32>, tensor<3x1xf32>) -> tensor<2x3x5xf32>
      func.return %y : tensor<2x3x5xf32>
    }"""
    rng = np.random.default_rng(1)
    _decomposed_matches(text, [_floats(rng, (2, 3, 5)), np.array([[0.25], [-2.0], [0.0]], np.float32)],
                        changed=graph.PReluOp)


@pytest.mark.parametrize("fmod", [False, True])
def test_integer_mod(fmod):
    x = np.array([-4, 7, 5, 4, -7, 8, 0, -9, 9, 13, -13, 6], np.int32)
    y = np.array([2, -3, 8, -2, 3, 5, 3, 4, -4, -5, 5, -6], np.int32)
    flag = " {fmod}" if fmod else ""
    text = f"""func.func @main(%x: tensor<12xi32>, %y: tensor<12xi32>) -> tensor<12xi32> {{
      %r = graph.mod %x, %y{flag} : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
      func.return %r : tensor<12xi32>
    }}"""
    got = _decomposed_matches(text, [x, y], changed=graph.ModOp)[0]
    assert got[0] == 0 and got[1] == (-2 if not fmod else 1)  # 7 mod -3: Python -2, C fmod 1


@pytest.mark.parametrize("fmod", [False, True])
def test_float_mod(fmod):
    """Incl. ONNX's float edge cases: zeros keep the sign C fmod / Python give them,
    infinite divisors, infinite or NaN operands, a zero divisor."""
    x = np.array([-4.3, 7.2, 5.0, 4.3, -7.2, 8.0, 6.0, -6.0, 0.0, 1e3, 0.0, -0.0, 0.0, -0.0, -3.0, 3.0, -1.0, 1.0,
                  np.inf, -np.inf, 1.0, 1.0, np.nan, 1.0, -4.0, 4.0], np.float32)
    y = np.array([2.1, -3.4, 8.0, -2.1, 3.4, 5.0, 3.0, 3.0, 2.0, 7.0, -2.0, 2.0, 2.0, -2.0, np.inf, np.inf, -np.inf,
                  -np.inf, 2.0, 2.0, 0.0, -0.0, 2.0, np.nan, 2.0, -2.0], np.float32)
    n = x.size
    flag = " {fmod}" if fmod else ""
    text = f"""func.func @main(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %r = graph.mod %x, %y{flag} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
      func.return %r : tensor<{n}xf32>
    }}"""
    got = _decomposed_matches(text, [x, y], rtol=1e-5, atol=1e-5, changed=graph.ModOp)[0]
    want = np.fmod(x, y) if fmod else np.mod(x, y)
    exact = np.abs(x) < 1  # zeros and the infinite-divisor cases: exact, with the sign
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))


@pytest.mark.parametrize("exp_elem", ["i32", "f32"])
def test_pow_of_integer_bases(exp_elem):
    """onnxruntime's integer pow: exact whole results, fractional ones truncated."""
    x = np.array([1, 2, 3, -2, -3, 0, 7, 10, 2, 9, -8, 5], np.int32)
    y = np.array([4, 5, 6, 3, 2, 3, 0, 6, -1, 2, 1, 9], np.int32)
    ys = y.astype(np.float32) if exp_elem == "f32" else y
    if exp_elem == "f32":
        ys[-3:] = [0.5, 1.0 / 3, 1.5]
    text = f"""func.func @main(%x: tensor<12xi32>, %y: tensor<12x{exp_elem}>) -> tensor<12xi32> {{
      %r = graph.pow %x, %y : (tensor<12xi32>, tensor<12x{exp_elem}>) -> tensor<12xi32>
      func.return %r : tensor<12xi32>
    }}"""
    got = _decomposed_matches(text, [x, ys], changed=graph.PowOp)[0]
    assert got[1] == 32 and got[7] == 10**6 and got[3] == -8


@pytest.mark.parametrize("op", ["reduce_prod", "reduce_sum", "reduce_max", "reduce_min", "reduce_l2",
                                "reduce_sum_square", "reduce_mean"])
def test_reductions_over_an_empty_axis_are_constants(op):
    text = f"""func.func @main(%x: tensor<2x0x3xf32>) -> tensor<2x3xf32> {{
      %r = graph.{op} %x {{axes = array<i64: 1>}} : (tensor<2x0x3xf32>) -> tensor<2x3xf32>
      func.return %r : tensor<2x3xf32>
    }}"""
    module = parse_module(text)
    want = run(module, [np.zeros((2, 0, 3), np.float32)])[0]
    run_passes(module, "decompose")
    assert [o.name for o in module.walk() if o.name.startswith("graph.")] == ["graph.constant"]
    np.testing.assert_array_equal(run(module, [np.zeros((2, 0, 3), np.float32)])[0], want)


POW_BASE = np.array([-2.0, -1.5, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0, -np.inf, np.inf, np.nan],
                    np.float32)


@pytest.mark.parametrize("exponent", ["4.0", "5.0", "-2.0", "0.0", "1.5", "-0.5", "7.0", "-3.0"])
def test_pow_by_constants(exponent):
    ty = f"tensor<{POW_BASE.size}xf32>"
    text = f"""func.func @main(%x: {ty}) -> {ty} {{
      %c = graph.constant dense<{exponent}> : tensor<f32>
      %y = graph.pow %x, %c : ({ty}, tensor<f32>) -> {ty}
      func.return %y : {ty}
    }}"""
    _decomposed_matches(text, [POW_BASE], rtol=2e-5, atol=0, changed=graph.PowOp)


@pytest.mark.parametrize("elem", ["f32", "f16"])
def test_pow_by_a_tensor(elem):
    dt = np.float16 if elem == "f16" else np.float32
    base = np.repeat(POW_BASE, 6).astype(dt)
    exps = np.tile(np.array([2.0, 3.0, 0.0, -1.0, 0.5, 2.5], np.float32), POW_BASE.size).astype(dt)
    n = base.size
    text = f"""func.func @main(%x: tensor<{n}x{elem}>, %y: tensor<{n}x{elem}>) -> tensor<{n}x{elem}> {{
      %r = graph.pow %x, %y : (tensor<{n}x{elem}>, tensor<{n}x{elem}>) -> tensor<{n}x{elem}>
      func.return %r : tensor<{n}x{elem}>
    }}"""
    got = _decomposed_matches(text, [base, exps], rtol=2e-5 if elem == "f32" else 1e-3, atol=0,
                              changed=graph.PowOp)[0]
    assert got[0] == 4 and got[1] == -8 and got[2] == 1 and np.isnan(got[5])  # (-2)^2, (-2)^3, ^0, ^2.5


@pytest.mark.parametrize("op,bound,limit", [("sin", 6e-7, 100.0), ("cos", 6e-7, 100.0), ("sin", 2e-6, 1e4),
                                            ("cos", 2e-6, 1e4)])
def test_sin_cos_error_bounds(op, bound, limit):
    """The bounds the module docstring states, on a dense grid, against float64 numpy."""
    x = np.concatenate([np.linspace(-limit, limit, 200001), np.pi / 2 * np.arange(-64, 65),
                        [0.0, -0.0]]).astype(np.float32)
    n = x.size
    text = f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %y = graph.{op} %x : tensor<{n}xf32>
      func.return %y : tensor<{n}xf32>
    }}"""
    module = parse_module(text)
    run_passes(module, "decompose")
    assert not any(o.name == f"graph.{op}" for o in module.walk())
    (got,) = run(module, [x])
    exact = getattr(np, op)(x.astype(np.float64))
    err = np.max(np.abs(got.astype(np.float64) - exact))
    assert err <= bound, f"max |error| {err:.3g} over |x| <= {limit:g}"
    assert abs(float(got[n - 2]) - (0.0 if op == "sin" else 1.0)) <= bound


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("op", ["reduce_l2", "reduce_sum_square"])
@pytest.mark.parametrize("axes,keep", [("1", True), ("0, 2", False)])
def test_square_reductions(op, elem, axes, keep):
    dt = np.float16 if elem == "f16" else np.float32
    x = _floats(np.random.default_rng(2), (3, 5, 7), scale=1.0)[..., :]
    x[~np.isfinite(x)] = 4.0
    shape = (3, 5, 7)
    axs = [int(a) for a in axes.split(",")]
    out = [1 if i in axs else d for i, d in enumerate(shape)] if keep else [d for i, d in enumerate(shape) if i not in axs]
    ty = f"tensor<3x5x7x{elem}>"
    oty = f"tensor<{'x'.join(map(str, out))}x{elem}>"
    text = f"""func.func @main(%x: {ty}) -> {oty} {{
      %y = graph.{op} %x {{axes = array<i64: {axes}>{', keepdims' if keep else ''}}} : ({ty}) -> {oty}
      func.return %y : {oty}
    }}"""
    tol = 1e-6 if elem == "f32" else 1e-3
    _decomposed_matches(text, [x.astype(dt)], rtol=tol, atol=tol)


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("attrs", ["axis = 1 : i64", "axis = 0 : i64, keepdims", "axis = 1 : i64, select_last_index",
                                   "axis = 0 : i64, keepdims, select_last_index"])
def test_arg_reductions_with_ties(op, elem, attrs):
    dt = np.float16 if elem == "f16" else np.float32
    x = np.random.default_rng(3).integers(-3, 4, size=(6, 9)).astype(dt)  # many ties
    x[0, :] = -np.inf
    x[:, 0] = np.inf
    axis = int(attrs.split()[2])
    keep = "keepdims" in attrs
    out = [1 if i == axis else d for i, d in enumerate(x.shape)] if keep else [d for i, d in enumerate(x.shape) if i != axis]
    oty = f"tensor<{'x'.join(map(str, out))}xi64>"
    text = f"""func.func @main(%x: tensor<6x9x{elem}>) -> {oty} {{
      %y = graph.{op} %x {{{attrs}}} : (tensor<6x9x{elem}>) -> {oty}
      func.return %y : {oty}
    }}"""
    _decomposed_matches(text, [x], changed=graph.ArgMaxOp if op == "argmax" else graph.ArgMinOp)


@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_over_every_dim(bias):
    b_arg, b_op, b_ty = (", %b: tensor<4x6xf32>", ", %b", ", tensor<4x6xf32>") if bias else ("", "", "")
    text = f"""func.func @main(%x: tensor<4x6xf32>, %w: tensor<4x6xf32>{b_arg}) -> tensor<4x6xf32> {{
      %y = graph.layer_norm %x, %w{b_op} {{axis = 0 : i64, epsilon = 1.0e-05 : f32}} : (tensor<4x6xf32>, tensor<4x6xf32>{b_ty}) -> tensor<4x6xf32>
      func.return %y : tensor<4x6xf32>
    }}"""
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3 if bias else 2)]
    module = parse_module(text)
    want = run(module, inputs)
    run_passes(module, "decompose")
    assert [o.properties["axis"].value.data for o in module.walk() if isinstance(o, graph.LayerNormOp)] == [1]
    np.testing.assert_allclose(run(module, inputs)[0], want[0], rtol=1e-6, atol=1e-6)


INT_POOL_WORK = [("i8", np.int8, "f16"), ("ui8", np.uint8, "f16"), ("i16", np.int16, "f32"),
                 ("ui16", np.uint16, "f32")]


@pytest.mark.parametrize("elem,np_type,work", INT_POOL_WORK)
def test_integer_max_pools_pool_in_a_float_type_that_holds_every_value(elem, np_type, work):
    """max_pool / global_max_pool on 8- and 16-bit integers: cast, pool, cast back -- exact
    on the type's extremes (f16 holds every 8-bit value, f32 every 16-bit one)."""
    ty, pty, gty = f"tensor<2x3x7x7x{elem}>", f"tensor<2x3x3x3x{elem}>", f"tensor<2x3x1x1x{elem}>"
    text = f"""func.func @main(%x: {ty}) -> ({pty}, {gty}) {{
      %p = graph.max_pool %x {{kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                               pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>}} : ({ty}) -> {pty}
      %g = graph.global_max_pool %x : ({ty}) -> {gty}
      func.return %p, %g : {pty}, {gty}
    }}"""
    info = np.iinfo(np_type)
    x = np.random.default_rng(5).integers(info.min, info.max, (2, 3, 7, 7), endpoint=True).astype(np_type)
    x.reshape(-1)[:4] = [info.min, info.max, info.max - 1, info.min + 1]
    got = _decomposed_matches(text, [x])
    assert got[1].reshape(-1)[0] == x[0, 0].max()
    module = parse_module(text)
    run_passes(module, "decompose")
    pools = [o for o in module.walk() if isinstance(o, graph.MaxPoolOp | graph.GlobalMaxPoolOp)]
    assert [str(o.results[0].type.element_type) for o in pools] == [work, work]
    assert sum(isinstance(o, graph.CastOp) for o in module.walk()) == 4  # a cast in and one out per pool


def test_32_bit_integer_max_pool_stays_and_the_npu_refuses_it():
    """f32 does not hold every int32: the pool is left alone and the vector lowering says why."""
    ty, pty = "tensor<1x16x4x4xi32>", "tensor<1x16x2x2xi32>"
    text = f"""func.func @main(%x: {ty}) -> {pty} {{
      %p = graph.max_pool %x {{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                               pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}} : ({ty}) -> {pty}
      func.return %p : {pty}
    }}"""
    module = parse_module(text)
    run_passes(module, "decompose")
    assert not any(isinstance(o, graph.CastOp) for o in module.walk())
    with pytest.raises(ge.GeError, match="float tiles only"):
        ge.compile(parse_module(text), ge.CompileOptions(precision_mode=F32))


def test_every_decomposition_is_tested_here():
    tested = {graph.EluOp, graph.SeluOp, graph.CeluOp, graph.ThresholdedReluOp, graph.SignOp, graph.PReluOp,
              graph.ModOp, graph.PowOp, graph.SinOp, graph.CosOp, graph.ReduceL2Op, graph.ReduceSumSquareOp,
              graph.ArgMaxOp, graph.ArgMinOp, graph.LayerNormOp, graph.MaxPoolOp, graph.GlobalMaxPoolOp}
    assert set(DECOMPOSITIONS) == tested  # (+ reductions over empty axes, tested above)


# --------------------------------------------------------------------------------------
# 2. The first ONNX node case of each operator, on the NPU path
# --------------------------------------------------------------------------------------

NPU_OPS = ("And", "Or", "Xor", "Not", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Where", "Ceil",
           "Floor", "Round", "Sign", "Sin", "Cos", "Elu", "Celu", "Selu", "PRelu", "ThresholdedRelu", "HardSigmoid",
           "Mod", "ReduceProd", "ReduceL2", "ReduceSumSquare", "Pow", "ArgMax", "ArgMin", "LayerNormalization")


def _first_cases() -> dict[str, object]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    first: dict[str, object] = {}
    for case in sorted(cases, key=lambda c: c.name):
        ops = {n.op_type for n in case.model.graph.node}
        if len(ops) == 1 and (op := ops.pop()) in NPU_OPS and op not in first:
            first[op] = case
    return first


_CASES: dict[str, object] = {}


def _case(op: str):
    if not _CASES:
        _CASES.update(_first_cases())
    return _CASES[op]


def freeze_value_inputs(model: onnx.ModelProto, arrays: dict[str, np.ndarray]):
    """The model with the inputs ge needs at compile time (axes, shapes) as initializers,
    and the remaining inputs."""
    frozen: dict[str, np.ndarray] = {}
    while True:
        try:
            import_model(model, input_shape={n: a.shape for n, a in arrays.items() if n not in frozen},
                         frozen_inputs=frozen)
            break
        except NeedsInputValue as e:
            frozen.update({n: arrays[n] for n in e.names})
    out = onnx.ModelProto()
    out.CopyFrom(model)
    keep = [i for i in out.graph.input if i.name not in frozen]
    del out.graph.input[:]
    out.graph.input.extend(keep)
    out.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in frozen.items())
    return out, {n: a for n, a in arrays.items() if n not in frozen}


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def compare_on_npu(model: onnx.ModelProto, feeds: dict[str, np.ndarray], precision: str) -> None:
    """ge.compile (isa kernels) + run against onnxruntime (tolerances in the module docstring)."""
    compiled = ge.compile(model, ge.CompileOptions(precision_mode=precision,
                                                   input_shape={n: a.shape for n, a in feeds.items()}))
    assert compiled.report["kernel_level"] == "isa"
    got = compiled.run(feeds)
    for out, want in zip(model.graph.output, _onnxruntime(model, feeds)):
        have = got[out.name]
        assert have.dtype == want.dtype and have.shape == want.shape, (out.name, have.dtype, have.shape)
        if want.dtype.kind != "f":
            np.testing.assert_array_equal(have, want, err_msg=out.name)
            continue
        tol = 1e-4 if precision == F32 else 2e-2
        finite = np.isfinite(want)
        if precision == F16:  # beyond f16's range the f16 answer is that infinity
            big = finite & (np.abs(want) > np.finfo(np.float16).max)
            np.testing.assert_array_equal(have[big], np.sign(want[big]) * np.inf, err_msg=out.name)
            finite &= ~big
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want), err_msg=out.name)
        np.testing.assert_array_equal(have[np.isinf(want)], want[np.isinf(want)], err_msg=out.name)
        scale = max(1.0, float(np.max(np.abs(want[finite]), initial=0.0)))
        np.testing.assert_allclose(have[finite], want[finite], rtol=tol, atol=tol * scale, err_msg=out.name)


@pytest.mark.parametrize("precision", [F32, F16])
@pytest.mark.parametrize("op", NPU_OPS)
def test_first_onnx_node_case_on_the_npu(op, precision):
    case = _case(op)
    inputs, _ = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    arrays = {n: numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else np.asarray(a)
              for n, a in zip(names, inputs)}
    model, feeds = freeze_value_inputs(case.model, arrays)
    compare_on_npu(model, feeds, precision)


# --------------------------------------------------------------------------------------
# 3. One model per op family, on the NPU path
# --------------------------------------------------------------------------------------


def _model(nodes, inputs, outputs, initializers=(), opset=18) -> onnx.ModelProto:
    graph_ = helper.make_graph(nodes, "family", inputs, outputs, list(initializers))
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _f16_exact(x: np.ndarray) -> np.ndarray:
    """Values that f16 holds exactly (so an f16 compile compares the same numbers)."""
    return x.astype(np.float16).astype(np.float32)


FLOAT, BOOL = TensorProto.FLOAT, TensorProto.BOOL


@pytest.mark.parametrize("precision", [F32, F16])
def test_logic_and_select_model(precision):
    """An attention-mask style graph: compares, logic with a broadcast mask, where."""
    shape, mshape = [4, 300], [1, 300]
    nodes = [
        helper.make_node("Less", ["a", "b"], ["lt"]),
        helper.make_node("GreaterOrEqual", ["a", "half"], ["ge"]),
        helper.make_node("Not", ["mask"], ["nm"]),
        helper.make_node("And", ["lt", "nm"], ["m"]),
        helper.make_node("Xor", ["ge", "mask"], ["x"]),
        helper.make_node("Or", ["m", "x"], ["o"]),
        helper.make_node("Equal", ["a", "b"], ["eq"]),
        helper.make_node("LessOrEqual", ["a", "b"], ["le"]),
        helper.make_node("Greater", ["a", "b"], ["gt"]),
        helper.make_node("Mul", ["b", "two"], ["b2"]),
        helper.make_node("Where", ["o", "a", "b2"], ["y"]),
        helper.make_node("Where", ["mask", "a", "neg"], ["z"]),
    ]
    rng = np.random.default_rng(5)
    a = _f16_exact(rng.integers(-8, 8, size=shape) / 4)  # many equal pairs
    b = _f16_exact(rng.integers(-8, 8, size=shape) / 4)
    # b is a weight: two f16 input casts each feeding several outputs make `fuse` form two
    # groups that need each other (a fuse bug, reported), so only `a` is a graph input.
    model = _model(
        nodes, [_vi("a", FLOAT, shape), _vi("mask", BOOL, mshape)],
        [_vi("y", FLOAT, shape), _vi("o", BOOL, shape), _vi("eq", BOOL, shape), _vi("le", BOOL, shape),
         _vi("gt", BOOL, shape), _vi("z", FLOAT, shape)],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array([0.5], np.float32), "half"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two"),
         numpy_helper.from_array(np.array([-1e4], np.float32), "neg")],
    )
    feeds = {"a": a, "mask": rng.random(mshape) < 0.3}
    compare_on_npu(model, feeds, precision)


@pytest.mark.parametrize("precision", [F32, F16])
def test_rounding_and_sign_model(precision):
    shape = [3, 257]
    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ("Floor", "Ceil", "Round", "Sign")]
    model = _model(nodes, [_vi("x", FLOAT, shape)], [_vi(op.lower(), FLOAT, shape) for op in
                                                      ("Floor", "Ceil", "Round", "Sign")])
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 20).astype(np.float32)
    edges = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0, 1e8 + 8, -1e8, 2.0**23 + 1, np.inf, -np.inf, np.nan, 3.0, -3.0]
    x.reshape(-1)[: len(edges)] = edges
    if precision == F16:
        x[np.abs(x) > 6e4] = 6e4
    compare_on_npu(model, {"x": _f16_exact(x) if precision == F16 else x}, precision)


@pytest.mark.parametrize("precision", [F32, F16])
def test_activation_model(precision):
    shape = [2, 16, 7, 7]
    nodes = [
        helper.make_node("Elu", ["x"], ["elu"], alpha=0.7),
        helper.make_node("Celu", ["x"], ["celu"], alpha=1.3),
        helper.make_node("Selu", ["x"], ["selu"]),
        helper.make_node("ThresholdedRelu", ["x"], ["thr"], alpha=0.4),
        helper.make_node("PRelu", ["x", "slope"], ["prelu"]),
        helper.make_node("HardSigmoid", ["x"], ["hs"], alpha=0.3, beta=0.4),
    ]
    outs = ["elu", "celu", "selu", "thr", "prelu", "hs"]
    slope = np.linspace(-0.5, 0.5, 16, dtype=np.float32).reshape(16, 1, 1)
    model = _model(nodes, [_vi("x", FLOAT, shape)], [_vi(o, FLOAT, shape) for o in outs],
                   [numpy_helper.from_array(slope, "slope")])
    x = _floats(np.random.default_rng(7), shape)
    x[~np.isfinite(x)] = -50.0
    compare_on_npu(model, {"x": _f16_exact(x)}, precision)


@pytest.mark.parametrize("precision", [F32, F16])
def test_trig_pow_mod_model(precision):
    shape = [5, 70]
    nodes = [
        helper.make_node("Sin", ["x"], ["sin"]),
        helper.make_node("Cos", ["x"], ["cos"]),
        helper.make_node("Pow", ["base", "e"], ["pow"]),
        helper.make_node("Pow", ["base", "four"], ["pow4"]),
        helper.make_node("Mod", ["x", "d"], ["fmod"], fmod=1),
        helper.make_node("Mod", ["xi", "di"], ["mod"], fmod=0),  # onnxruntime: float Mod needs fmod=1
    ]
    outs = ["sin", "cos", "pow", "pow4", "fmod"]
    model = _model(nodes, [_vi("x", FLOAT, shape), _vi("base", FLOAT, shape), _vi("e", FLOAT, shape),
                           _vi("d", FLOAT, [1, 70]), _vi("xi", TensorProto.INT32, shape),
                           _vi("di", TensorProto.INT32, [1, 70])],
                   [*(_vi(o, FLOAT, shape) for o in outs), _vi("mod", TensorProto.INT32, shape)],
                   [numpy_helper.from_array(np.array(4.0, np.float32), "four")])
    rng = np.random.default_rng(8)
    feeds = {
        "x": _f16_exact(rng.uniform(-20, 20, shape)),
        "base": _f16_exact(rng.choice([-2.0, -1.5, -0.5, 0.0, 0.5, 1.25, 2.0, 3.0], size=shape)),
        "e": _f16_exact(rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 2.5], size=shape)),
        "d": _f16_exact(rng.choice([-3.0, -1.5, 0.75, 2.0, 4.5], size=[1, 70])),
        "xi": rng.integers(-50, 50, size=shape).astype(np.int32),
        "di": rng.choice([-7, -3, -1, 1, 2, 5, 9], size=[1, 70]).astype(np.int32),
    }
    compare_on_npu(model, feeds, precision)


@pytest.mark.parametrize("precision", [F32, F16])
def test_index_and_product_reductions_model(precision):
    nodes = [
        helper.make_node("ArgMax", ["x"], ["amax"], axis=1, keepdims=0),
        helper.make_node("ArgMin", ["x"], ["amin"], axis=0, keepdims=1, select_last_index=1),
        helper.make_node("ReduceProd", ["p", "ax1"], ["prod"], keepdims=0),
        helper.make_node("ReduceL2", ["x", "ax1"], ["l2"], keepdims=1),
        helper.make_node("LayerNormalization", ["x", "w"], ["ln"], axis=0),
    ]
    model = _model(
        nodes, [_vi("x", FLOAT, [6, 37]), _vi("p", FLOAT, [4, 70])],
        [_vi("amax", TensorProto.INT64, [6]), _vi("amin", TensorProto.INT64, [1, 37]), _vi("prod", FLOAT, [4]),
         _vi("l2", FLOAT, [6, 1]), _vi("ln", FLOAT, [6, 37])],
        [numpy_helper.from_array(np.array([1], np.int64), "ax1"),
         numpy_helper.from_array(np.linspace(0.5, 1.5, 6 * 37, dtype=np.float32).reshape(6, 37), "w")],
    )
    rng = np.random.default_rng(9)
    x = _f16_exact(rng.integers(-20, 20, size=(6, 37)) / 8)  # ties
    p = _f16_exact(rng.uniform(0.8, 1.2, size=(4, 70)) * rng.choice([-1.0, 1.0], size=(4, 70)))
    p[2, 5] = 0.0
    compare_on_npu(model, {"x": x, "p": p}, precision)


def test_the_isa_kernels_use_the_primitive_instructions():
    """Floor is vconv floor + back, a compare is vcmp, where is vsel, a product no vreduce."""
    text = """func.func @main(%x: tensor<4x40xf32>, %y: tensor<4x40xf32>) -> (tensor<4x40xf32>, tensor<4xf32>) {
      %f = graph.floor %x : tensor<4x40xf32>
      %l = graph.less_or_equal %x, %y : (tensor<4x40xf32>, tensor<4x40xf32>) -> tensor<4x40xi1>
      %w = graph.where %l, %f, %y : (tensor<4x40xi1>, tensor<4x40xf32>, tensor<4x40xf32>) -> tensor<4x40xf32>
      %p = graph.reduce_prod %y {axes = array<i64: 1>} : (tensor<4x40xf32>) -> tensor<4xf32>
      func.return %w, %p : tensor<4x40xf32>, tensor<4xf32>
    }"""
    module = parse_module(text)
    run_passes(module, "decompose,assign-layouts,fuse,bufferize,tile,to-isa")
    ops = [o for o in module.walk() if o.name.startswith("isa.v")]
    rounds = [o.properties["round"].data for o in ops if o.name == "isa.vconv" and "round" in o.properties]
    modes = sorted({o.properties["mode"].data for o in ops if o.name == "isa.vcmp"})
    assert "floor" in rounds
    assert modes == ["le", "lt"]  # the compare, and the |x| < 2^23 guard of floor
    assert any(o.name == "isa.vsel" for o in ops)
    assert not any(o.name.startswith("isa.vreduce") for o in ops)
    assert any(o.name == "isa.vmul" for o in ops)


# --------------------------------------------------------------------------------------
# 4. The op interfaces
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [graph.ReduceSumOp, graph.ReduceMaxOp, graph.ReduceMinOp, graph.ReduceProdOp])
def test_reduction_identity_is_the_reference_value_of_an_empty_reduction(cls):
    """(A mean over nothing is 0 / 0: ReduceMean's identity is its sum's.)"""
    red = cls.get_trait(graph.Reduction)
    text = f"""func.func @main(%x: tensor<2x0xf32>) -> tensor<2xf32> {{
      %y = {cls.name} %x {{axes = array<i64: 1>}} : (tensor<2x0xf32>) -> tensor<2xf32>
      func.return %y : tensor<2xf32>
    }}"""
    (got,) = run(parse_module(text), [np.zeros((2, 0), np.float32)])
    np.testing.assert_array_equal(got, np.full(2, red.identity, np.float32))


def test_interfaces_drive_the_fusion_op_sets():
    for cls in (graph.EqualOp, graph.WhereOp, graph.NotOp, graph.FloorOp, graph.CastOp, graph.PReluOp,
                graph.BatchNormOp):
        assert cls in fusion_rules.ELEMENTWISE_OPS, cls.name
    assert graph.ReduceProdOp in fusion_rules.REDUCE_OPS and graph.SoftmaxOp in fusion_rules.REDUCE_OPS
    assert graph.MatMulOp not in fusion_rules.ELEMENTWISE_OPS
    assert set(fusion_rules.CUBE_OPS) == {graph.Conv2dOp, graph.MatMulOp, graph.GemmOp, graph.QuantConv2dOp,
                                          graph.QuantMatMulOp}
    assert set(fusion_rules.POOL_OPS) == {graph.MaxPoolOp, graph.AvgPoolOp, graph.GlobalAvgPoolOp,
                                          graph.GlobalMaxPoolOp}
    from ge.runtime.reference import KERNELS

    assert graph.Elementwise.semantics(graph.FloorOp) is KERNELS[graph.FloorOp]
    assert graph.BatchNormOp.get_trait(graph.Elementwise).follows_format is False
    assert graph.Conv2dOp.get_trait(graph.StorageFormats).rule == "conv"


@pytest.mark.parametrize("mode,want", [("rint", [2, -2, 0, 0, 2, 3]), ("round", [3, -3, 1, 0, 2, 3]),
                                       ("floor", [2, -3, 0, -1, 1, 3]), ("ceil", [3, -2, 1, 0, 2, 4]),
                                       ("trunc", [2, -2, 0, 0, 1, 3])])
def test_vconv_rounding_modes(mode, want):
    """isa.vconv's modes are Ascend C's RoundMode: CAST_RINT (half to even), CAST_ROUND (half
    away from zero), CAST_FLOOR, CAST_CEIL, CAST_TRUNC."""
    from ge.dialects import isa
    from ge.runtime import isa_kernels

    assert mode in isa.VConvOp.ROUND_MODES
    x = np.array([2.5, -2.5, 0.5, -0.49, 1.5, 3.25], np.float32)
    np.testing.assert_array_equal(isa_kernels.convert(x, np.dtype(np.int32), mode), np.array(want, np.int32))
