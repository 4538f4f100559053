"""`decompose`: rewrite composite graph ops into the primitive set the vector lowering has.

Graph level (DESIGN.md §2 "Op interfaces and the primitive set"). The pass runs in the
compile pipeline right after `graph-optimize` and before `assign-layouts`: after it, because
constant folding has already removed composites over constants and the precision mode has
fixed every element type (a decomposition that needs f32 for accuracy sees f16 and adds the
casts); before it, because the ops it creates (reshapes, constants, compares, selects) must get
storage formats and fusion groups like any other op -- fusion then sees only primitives, and
the tile and isa levels never learn about a composite.

The primitive set (what `lowering/isa_vector.py` has instruction sequences for):

- elementwise arithmetic: add, sub, mul, div, max, min, sum, mean, neg, abs, relu, clip,
  exp, log, sqrt, reciprocal, tanh, erf, sigmoid, softplus, softsign, hard_sigmoid, hard_swish,
  gelu, leaky_relu, cast (each a short fixed instruction sequence);
- rounding: floor, ceil, round (half to even) -- `vconv` to i32 in that rounding mode and
  back, values of magnitude >= 2^23 (already integers) kept;
- comparisons equal, less, less_or_equal, greater, greater_or_equal (`vcmp` modes) giving
  boolean (i1, one byte per element) tensors; logic and, or (`vand`, `vor`), xor
  (`vcmp ne`), not (`vcmp eq 0`); where (`vsel`);
- reductions reduce_sum / mean / max / min (`vreduce_*`) and reduce_prod (a `vmul` tree);
  softmax, log_softmax, layer_norm (axis >= 1), batch_norm, lrn, global pools, transpose.

Decompositions (each checked against the reference interpreter in test/python/test_decompose.py):

- elu(x) = where(x > 0, x, alpha * (exp(x) - 1)); selu = gamma * elu(x, alpha);
  celu(x) = max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0);
  thresholded_relu(x) = where(x > alpha, x, 0); prelu(x, s) = relu(x) + s * min(x, 0);
- sign(x) = cast(x > 0) - cast(x < 0) (NaN kept for floats);
- mod: fmod r = x - trunc(x / y) * y (integers: the truncating integer div; floats: a zero
  keeps x's sign, fmod(x, +-inf) = x), Python's mod from it: r + y where r != 0 and the signs
  of r and y differ (floats: a zero takes y's sign), as numpy's np.mod;
- pow(x, c), constant c: an integer |c| <= 64 by repeated squaring (negative: its
  reciprocal; integer bases: positive c only), 0 -> ones, 0.5 -> sqrt (kept although a
  one-value exponent now reaches the Vector kernel as an immediate, fuse: the chain serves
  every integer up to 64 and integer bases, the vector lowering's pow only 2, 3, -1 on
  floats, and its exp(c ln x) for a fractional c is NaN at x = -inf where C's pow is not);
  otherwise and for a tensor exponent
  exp(y * ln|x|) with C's sign rules: a negative sign bit (-0 and -inf too) and an odd integer
  y -> negative, a finite x < 0 and a fractional y -> NaN, y == 0 -> 1; integer bases compute
  that in f32 (exact results up to 2^24), rounded when y is whole, truncated to the integer;
- sin / cos: k = round(x / pi) (cos: round(x / pi - 1/2) + 1/2), r = x - k pi in three
  Cody-Waite steps (pi = P1 + P2 + P3, P1 and P2 short enough that k * P is exact for
  |k| < 2^12), sin(r) = r + r^3 P(r^2) with a degree-4 P (|error| < 2e-11 on [-pi/2, pi/2]),
  the sign (-1)^k (cos: -(-1)^(k - 1/2)). Computed in f32; max |error| 6e-7 for
  |x| <= 100 and 2e-6 for |x| <= 1e4 in f32 (test_decompose.py checks both bounds);
- reduce_sum_square = reduce_sum(x * x), reduce_l2 = sqrt(that) (f16 in f32);
- argmax / argmin: m = reduce_max (min) keeping dims, e = (x == m), idx = where(e, iota, n),
  reduce_min(idx) (reduce_max of where(e, iota, -1) for select_last_index), cast to i64;
- layer_norm with axis 0: a reshape to [1, ...] and layer_norm over axis 1;
- max_pool / global_max_pool on 8- or 16-bit integers: cast to f16 (8-bit) or f32 (16-bit),
  pool, cast back -- exact, as the float type holds every value of the integer type and max
  only picks one of them; the Vector unit pools floats only (GE's MaxPool takes float16).
  32- and 64-bit integers stay (f32 does not hold them) and the vector lowering refuses them;
- a reduction over an empty axis: the constant the reference interpreter gives (its identity).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, NoneAttr, TensorType, UnitAttr, f16, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ge.dialects import dtypes, graph
from ge.dialects.graph import get_float, get_int, has_flag, int_array, int_attr
from ge.transforms.graph_utils import constant_value, elem_of, erase_dead, make_constant, shape_of

# Cody-Waite split of pi: P1 has 8 significant bits, P2 11, so k * P1 and k * P2 are exact in
# f32 for |k| < 2^12; P3 is the f32 rest.
PI_1, PI_2, PI_3 = 3.140625, 2029 / 2**21, 1.5099580252808664e-07
# sin(r) = r + r^3 * P(r^2) on [-pi/2, pi/2]; least squares on Chebyshev nodes, |error| < 2e-11.
SIN_POLY = (-0.16666666603870198, 0.008333330420206139, -0.0001984079648547804, 2.7522303358114213e-06,
            -2.3841987646778482e-08)
MAX_INTEGER_POWER = 64


class _Builder:
    """Creates graph ops before the op being decomposed, each with its location (the ONNX
    node name) and result types inferred."""

    def __init__(self, op: Operation):
        self.op, self.ops = op, []

    def __call__(self, cls: type[graph.GraphOp], *operands, **props) -> SSAValue:
        new = cls.make(list(operands), {k: v for k, v in props.items() if v is not None})
        new.location = self.op.location
        self.ops.append(new)
        return new.results[0]

    def const(self, value, elem: Attribute) -> SSAValue:
        c = make_constant(np.asarray(value), elem, "c", like=self.op)
        self.ops.append(c)
        return c.output

    def cast(self, v: SSAValue, elem: Attribute) -> SSAValue:
        if elem_of(v) == elem:
            return v
        new = graph.CastOp.to(v, elem)
        new.location = self.op.location
        self.ops.append(new)
        return new.output

    # arithmetic shorthands on values of one element type
    def add(self, a, b): return self(graph.AddOp, a, b)
    def sub(self, a, b): return self(graph.SubOp, a, b)
    def mul(self, a, b): return self(graph.MulOp, a, b)
    def div(self, a, b): return self(graph.DivOp, a, b)

    def scalar(self, v: SSAValue, value: float, elem: Attribute | None = None) -> SSAValue:
        """A one-element constant of v's rank (rank-0 tensors are not kernel operands)."""
        return self.const(np.full((1,) * len(shape_of(v)), value), elem or elem_of(v))

    def where(self, c, a, b): return self(graph.WhereOp, c, a, b)


def _work_elem(v: SSAValue) -> Attribute:
    """f32 for f16 data (transcendental decompositions lose too much in f16), else the type."""
    return f32 if elem_of(v) == f16 else elem_of(v)


# --------------------------------------------------------------------------------------
# Decompositions: op -> its value from primitives (None: leave the op as it is)
# --------------------------------------------------------------------------------------


def _elu_core(b: _Builder, x: SSAValue, alpha: float) -> SSAValue:
    zero = b.scalar(x, 0.0)
    em1 = b.sub(b(graph.ExpOp, x), b.scalar(x, 1.0))
    return b.where(b(graph.GreaterOp, x, zero), x, em1 if alpha == 1 else b.mul(em1, b.scalar(x, alpha)))


def _elu(b: _Builder, op: Operation) -> SSAValue:
    return _elu_core(b, op.operands[0], get_float(op.properties, "alpha", 1.0))


def _selu(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    y = _elu_core(b, x, get_float(op.properties, "alpha", 1.67326319217681884765625))
    return b.mul(y, b.scalar(x, get_float(op.properties, "gamma", 1.05070102214813232421875)))


def _celu(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    alpha = get_float(op.properties, "alpha", 1.0)
    zero = b.scalar(x, 0.0)
    em1 = b.sub(b(graph.ExpOp, b.mul(x, b.scalar(x, 1.0 / alpha))), b.scalar(x, 1.0))
    neg = b(graph.MinOp, [b.mul(em1, b.scalar(x, alpha)), zero])
    return b.add(b(graph.MaxOp, [x, zero]), neg)


def _thresholded_relu(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    alpha = b.scalar(x, get_float(op.properties, "alpha", 1.0))
    return b.where(b(graph.GreaterOp, x, alpha), x, b.scalar(x, 0.0))


def _prelu(b: _Builder, op: Operation) -> SSAValue:
    x, slope = op.operands
    return b.add(b(graph.ReluOp, x), b.mul(b(graph.MinOp, [x, b.scalar(x, 0.0)]), slope))


def _sign(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    elem, zero = elem_of(x), b.scalar(x, 0.0)
    s = b.sub(b.cast(b(graph.GreaterOp, x, zero), elem), b.cast(b(graph.LessOp, x, zero), elem))
    if dtypes.is_float(elem):
        s = b.where(b(graph.EqualOp, x, x), s, x)  # NaN stays NaN
    return s


def _trunc(b: _Builder, q: SSAValue) -> SSAValue:
    return b.where(b(graph.LessOp, q, b.scalar(q, 0.0)), b(graph.CeilOp, q), b(graph.FloorOp, q))


def _python_mod_fix(b: _Builder, r: SSAValue, y: SSAValue) -> SSAValue:
    """fmod -> Python's mod: add y where r != 0 and the signs of r and y differ."""
    zero = b.scalar(r, 0)
    differ = b(graph.XorOp, b(graph.LessOp, r, zero), b(graph.LessOp, y, zero))
    fix = b(graph.AndOp, b(graph.NotOp, b(graph.EqualOp, r, zero)), differ)
    return b.where(fix, b.add(r, y), r)


def _mod(b: _Builder, op: Operation) -> SSAValue:
    x, y = op.operands
    fmod = has_flag(op.properties, "fmod")
    if not dtypes.is_float(elem_of(x)):
        r = b.sub(x, b.mul(b.div(x, y), y))  # integer div truncates toward zero (ONNX)
        return r if fmod else _python_mod_fix(b, r, y)
    elem = elem_of(x)
    xw, yw = b.cast(x, _work_elem(x)), b.cast(y, _work_elem(x))
    inf = b.scalar(xw, math.inf)
    r = b.sub(xw, b.mul(_trunc(b, b.div(xw, yw)), yw))
    r = b.where(b(graph.EqualOp, r, b.scalar(r, 0.0)), b.mul(xw, b.scalar(xw, 0.0)), r)  # a zero has x's sign
    finite_x = b(graph.LessOp, b(graph.AbsOp, xw), inf)
    r = b.where(b(graph.AndOp, b(graph.EqualOp, b(graph.AbsOp, yw), inf), finite_x), xw, r)  # fmod(x, inf) = x
    if not fmod:
        r = _python_mod_fix(b, r, yw)
        zero = b.scalar(r, 0.0)
        signed_zero = b.where(b(graph.LessOp, yw, zero), b.scalar(r, -0.0), zero)
        r = b.where(b(graph.EqualOp, r, zero), signed_zero, r)  # a zero has y's sign
    return b.cast(r, elem)


def _splat(v: SSAValue) -> float | None:
    arr = constant_value(v)
    if arr is None or arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]):
        return None
    return float(arr.reshape(-1)[0])


def _integer_power(b: _Builder, x: SSAValue, n: int) -> SSAValue:
    """x ** n for an integer n >= 1 by repeated squaring."""
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else b.mul(result, square)
        n >>= 1
        if n:
            square = b.mul(square, square)
    assert result is not None
    return result


def _pow(b: _Builder, op: Operation) -> SSAValue | None:
    x, y = op.operands
    elem = elem_of(x)
    c = _splat(y)
    out_shape = shape_of(op.results[0])
    if c == 0.5 and dtypes.is_float(elem):
        return _broadcast_to(b, b(graph.SqrtOp, x), out_shape)
    if c is not None and c == 0:
        return b.const(np.ones(out_shape), elem)
    if c is not None and c == int(c) and abs(c) <= MAX_INTEGER_POWER and (c > 0 or dtypes.is_float(elem)):
        p = _broadcast_to(b, _integer_power(b, x, abs(int(c))), out_shape)
        return b(graph.ReciprocalOp, p) if c < 0 else p
    if dtypes.is_float(elem):
        return b.cast(_pow_f32(b, b.cast(x, _work_elem(x)), b.cast(y, _work_elem(x)), c is not None), elem)
    # an integer base: in f32 (exact up to 2^24), rounded when the exponent is whole, then
    # truncated toward zero as onnxruntime's std::pow result is
    yw = b.cast(y, f32)
    r = _pow_f32(b, b.cast(x, f32), yw, c is not None)
    rounded = b(graph.RoundOp, r)
    if dtypes.is_float(elem_of(y)) and (c is None or c != int(c)):
        rounded = b.where(b(graph.EqualOp, b(graph.FloorOp, yw), yw), rounded, r)
    return b.cast(rounded, elem)


def _pow_f32(b: _Builder, xw: SSAValue, yw: SSAValue, constant: bool) -> SSAValue:
    """exp(y ln|x|) with C's sign rules (see the module docstring)."""
    mag = b(graph.ExpOp, b.mul(yw, b(graph.LogOp, b(graph.AbsOp, xw))))
    # a finite negative base and a fractional exponent: NaN (C's pow: -0 and -inf are not)
    finite_neg = b(graph.AndOp, b(graph.LessOp, xw, b.scalar(xw, 0.0)),
                   b(graph.GreaterOp, xw, b.scalar(xw, -math.inf)))
    if constant:  # a constant non-integer exponent
        return b.where(finite_neg, b.scalar(xw, math.nan), mag)
    # the sign bit: x + 1/x has the sign of x, also for -0 (-0 + -inf) and -inf (-inf + -0)
    neg = b(graph.LessOp, b.add(xw, b(graph.ReciprocalOp, xw)), b.scalar(xw, 0.0))
    whole = b(graph.EqualOp, b(graph.FloorOp, yw), yw)
    half = b.mul(yw, b.scalar(yw, 0.5))
    odd = b(graph.AndOp, whole, b(graph.NotOp, b(graph.EqualOp, b(graph.FloorOp, half), half)))
    r = b.where(b(graph.AndOp, neg, odd), b(graph.NegOp, mag), mag)
    r = b.where(b(graph.AndOp, finite_neg, b(graph.NotOp, whole)), b.scalar(xw, math.nan), r)
    return b.where(b(graph.EqualOp, yw, b.scalar(yw, 0.0)), b.scalar(xw, 1.0), r)


def _broadcast_to(b: _Builder, v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    if shape_of(v) == shape:
        return v
    return b.add(v, b.const(np.zeros(shape), elem_of(v)))


def _sin_reduced(b: _Builder, x: SSAValue, k: SSAValue) -> SSAValue:
    """sin(x - k pi) for |x - k pi| <= pi/2: Cody-Waite reduction and the polynomial."""
    r = x
    for part in (PI_1, PI_2, PI_3):
        r = b.sub(r, b.mul(k, b.scalar(k, part)))
    z = b.mul(r, r)
    p = b.add(b.mul(z, b.scalar(z, SIN_POLY[-1])), b.scalar(z, SIN_POLY[-2]))
    for c in reversed(SIN_POLY[:-2]):
        p = b.add(b.mul(p, z), b.scalar(z, c))
    return b.add(r, b.mul(b.mul(r, z), p))


def _parity_sign(b: _Builder, k: SSAValue) -> SSAValue:
    """(-1)^k for an integral k: 1 - 2 * (k - 2 floor(k / 2))."""
    half = b(graph.FloorOp, b.mul(k, b.scalar(k, 0.5)))
    odd = b.sub(k, b.mul(half, b.scalar(k, 2.0)))
    return b.add(b.mul(odd, b.scalar(k, -2.0)), b.scalar(k, 1.0))


def _sin(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    xw = b.cast(x, f32)
    k = b(graph.RoundOp, b.mul(xw, b.scalar(xw, 1 / math.pi)))
    return b.cast(b.mul(_sin_reduced(b, xw, k), _parity_sign(b, k)), elem_of(x))


def _cos(b: _Builder, op: Operation) -> SSAValue:
    """cos(x) = -(-1)^m sin(x - (m + 1/2) pi) with m = round(x / pi - 1/2)."""
    x = op.operands[0]
    xw = b.cast(x, f32)
    m = b(graph.RoundOp, b.add(b.mul(xw, b.scalar(xw, 1 / math.pi)), b.scalar(xw, -0.5)))
    k = b.add(m, b.scalar(m, 0.5))
    s = b.mul(_sin_reduced(b, xw, k), _parity_sign(b, m))
    return b.cast(b(graph.NegOp, s), elem_of(x))


def _sum_square(b: _Builder, op: Operation) -> SSAValue:
    x = op.operands[0]
    xw = b.cast(x, _work_elem(x))
    keep = UnitAttr() if has_flag(op.properties, "keepdims") else None
    return b(graph.ReduceSumOp, b.mul(xw, xw), axes=op.properties["axes"], keepdims=keep)


def _reduce_sum_square(b: _Builder, op: Operation) -> SSAValue:
    return b.cast(_sum_square(b, op), elem_of(op.results[0]))


def _reduce_l2(b: _Builder, op: Operation) -> SSAValue:
    return b.cast(b(graph.SqrtOp, _sum_square(b, op)), elem_of(op.results[0]))


def _arg_reduce(b: _Builder, op: Operation) -> SSAValue | None:
    x = op.operands[0]
    if not dtypes.is_float(elem_of(x)):
        return None
    axis = get_int(op.properties, "axis")
    n = shape_of(x)[axis]
    if n >= 2**24:
        return None  # indices would not be exact in f32
    is_max = isinstance(op, graph.ArgMaxOp)
    last = has_flag(op.properties, "select_last_index")
    axes = int_array([axis])
    m = b(graph.ReduceMaxOp if is_max else graph.ReduceMinOp, x, axes=axes, keepdims=UnitAttr())
    hit = b(graph.EqualOp, x, m)
    iota_shape = [n if i == axis else 1 for i in range(len(shape_of(x)))]
    iota = b.const(np.arange(n, dtype=np.float32).reshape(iota_shape), f32)
    miss = b.scalar(x, -1.0 if last else n, f32)
    idx = b.where(hit, iota, miss)
    keep = UnitAttr() if has_flag(op.properties, "keepdims") else None
    pick = b(graph.ReduceMaxOp if last else graph.ReduceMinOp, idx, axes=axes, keepdims=keep)
    return b.cast(pick, i64)


def _layer_norm(b: _Builder, op: Operation) -> SSAValue | None:
    if get_int(op.properties, "axis") != 0:
        return None
    x = op.operands[0]
    shape = shape_of(x)
    y = b(graph.LayerNormOp, _reshape(b, x, (1, *shape)), op.scale, op.bias, axis=int_attr(1),
          epsilon=op.properties["epsilon"])
    return _reshape(b, y, shape)


def _integer_max_pool(b: _Builder, op: Operation) -> SSAValue | None:
    x = op.operands[0]
    elem = elem_of(x)
    if not dtypes.is_integer(elem) or dtypes.is_bool(elem):
        return None
    bits = dtypes.numpy_dtype(elem).itemsize * 8
    work = {8: f16, 16: f32}.get(bits)
    if work is None:
        return None  # f32 does not hold every 32-bit integer
    pooled = type(op).create(operands=[b.cast(x, work)], result_types=[graph.tensor(work, shape_of(op.results[0]))],
                             properties=dict(op.properties))
    pooled.location = op.location
    b.ops.append(pooled)
    return pooled.results[0]


def _reshape(b: _Builder, v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    target = make_constant(np.array(shape, dtype=np.int64), i64, "shape", like=b.op)
    b.ops.append(target)
    new = graph.ReshapeOp.make([v, target.output], {}, [None, np.array(shape, dtype=np.int64)])
    new.location = b.op.location
    b.ops.append(new)
    return new.results[0]


def _empty_reduction(b: _Builder, op: Operation) -> SSAValue:
    """A reduction over no elements is a constant (its identity, or what the reference
    interpreter makes of it: sqrt(0), 0 / 0 for a mean)."""
    from ge.runtime.reference import evaluate

    x = op.operands[0]
    (value,) = evaluate(op, [np.zeros(shape_of(x), dtypes.numpy_dtype(elem_of(x)))])
    return b.const(value, elem_of(op.results[0]))


DECOMPOSITIONS: dict[type[Operation], Callable[[_Builder, Operation], SSAValue | None]] = {
    graph.EluOp: _elu, graph.SeluOp: _selu, graph.CeluOp: _celu, graph.ThresholdedReluOp: _thresholded_relu,
    graph.PReluOp: _prelu, graph.SignOp: _sign, graph.ModOp: _mod,
    graph.PowOp: _pow, graph.SinOp: _sin, graph.CosOp: _cos, graph.ReduceSumSquareOp: _reduce_sum_square,
    graph.ReduceL2Op: _reduce_l2, graph.ArgMaxOp: _arg_reduce, graph.ArgMinOp: _arg_reduce,
    graph.LayerNormOp: _layer_norm, graph.MaxPoolOp: _integer_max_pool, graph.GlobalMaxPoolOp: _integer_max_pool,
}


class DecomposeOp(RewritePattern):
    """One composite op -> its primitives (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if any(isinstance(v.type, TensorType) and not isinstance(v.type.encoding, NoneAttr)
               for v in (*op.operands, *op.results)):
            return  # a graph-level pass: ops with storage formats (after assign-layouts) stay
        rule = DECOMPOSITIONS.get(type(op))
        if graph.has_trait(op, graph.Reduction) and 0 in shape_of(op.operands[0]):
            rule = _empty_reduction
        if rule is None:
            return
        b = _Builder(op)
        value = rule(b, op)
        if value is None:
            return
        if value.type != op.results[0].type:
            value = b.cast(value, elem_of(op.results[0]))
        operands = list(op.operands)
        rewriter.replace(op, b.ops, [value])
        erase_dead(rewriter, operands)


@dataclass(frozen=True)
class DecomposePass(ModulePass):
    """Composites -> the primitive set (see the module docstring)."""

    name = "decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOp(), apply_recursively=False).rewrite_module(op)


__all__ = ["DECOMPOSITIONS", "DecomposePass"]
