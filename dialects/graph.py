"""The `graph` dialect: one op per ONNX operator semantics, on builtin tensor types.

This is the top level of ge (see DESIGN.md): framework graphs are imported here, optimized
here, and lowered from here. Attributes are normalized on import (explicit pads, strides,
dilations and axes; no `auto_pad`; negative axes resolved), so every op states exactly what
it computes. Each op knows its result types from its operands and attributes
(`infer`); the verifier checks that the printed result types agree, so hand-written IR is
checked as strictly as imported IR. What an op computes lives in `ge.runtime.reference`.
What an op *is* for the later levels -- elementwise (with broadcasting), a reduction (axes,
combiner, identity), a normalization, the storage formats it implements -- is an interface
(an xDSL trait) on its class, which fusion, layouts, tiling and the vector lowering read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import ConstantLike, OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from ge.dialects import dtypes
from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)

# --------------------------------------------------------------------------------------
# Property helpers: how attributes are spelled, and how they are read back.
# --------------------------------------------------------------------------------------

Props = dict[str, Attribute]


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def get_ints(props: Props, name: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
    attr = props.get(name)
    if attr is None:
        if default is None:
            raise VerifyException(f"missing attribute '{name}'")
        return tuple(default)
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def get_int(props: Props, name: str, default: int | None = None) -> int:
    attr = props.get(name)
    if attr is None:
        if default is None:
            raise VerifyException(f"missing attribute '{name}'")
        return default
    assert isinstance(attr, IntegerAttr)
    return int(attr.value.data)


def get_float(props: Props, name: str, default: float | None = None) -> float:
    attr = props.get(name)
    if attr is None:
        if default is None:
            raise VerifyException(f"missing attribute '{name}'")
        return default
    assert isinstance(attr, FloatAttr)
    return float(attr.value.data)


def get_str(props: Props, name: str, default: str) -> str:
    attr = props.get(name)
    if attr is None:
        return default
    assert isinstance(attr, StringAttr)
    return attr.data


def has_flag(props: Props, name: str) -> bool:
    return name in props


# --------------------------------------------------------------------------------------
# Shape helpers shared by the inference functions.
# --------------------------------------------------------------------------------------

Types = list  # build-form operand types: TensorType | None | list[TensorType] per operand def


def shape_of(t: TensorType) -> tuple[int, ...]:
    return tuple(t.get_shape())


def tensor(elem: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(elem, [int(d) for d in shape])


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/ONNX multidirectional broadcasting."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise VerifyException(
                "operand shapes " + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
                + " do not broadcast"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def check_axis(axis: int, rank: int, what: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise VerifyException(f"{what} {axis} is out of range for rank {rank} (normalized axes are 0..rank-1)")


def check_axes(axes: Sequence[int], rank: int) -> None:
    for a in axes:
        check_axis(a, rank)
    if len(set(axes)) != len(axes):
        raise VerifyException(f"axes {list(axes)} contain duplicates")


def same_elem(types: Sequence[TensorType], what: str = "operands") -> Attribute:
    elems = list(dict.fromkeys(t.element_type for t in types))
    if len(elems) != 1:
        raise VerifyException(f"{what} must have one element type, got " + ", ".join(str(e) for e in elems))
    return elems[0]


def require_float(t: TensorType, what: str = "operand") -> None:
    if not dtypes.is_float(t.element_type):
        raise VerifyException(f"{what} must have a floating-point element type, got {t.element_type}")


def require_rank(t: TensorType, rank: int, what: str = "operand") -> None:
    if t.get_num_dims() != rank:
        raise VerifyException(f"{what} must have rank {rank}, got {t}")


def window_out(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int, ceil: bool) -> int:
    """Output length of a sliding window (conv/pool), with ONNX's ceil_mode rule."""
    span = dilation * (kernel - 1) + 1
    padded = size + pad_begin + pad_end - span
    if padded < 0:
        raise VerifyException(f"window of extent {span} does not fit input of size {size} with pads {pad_begin},{pad_end}")
    out = (-(-padded // stride) if ceil else padded // stride) + 1
    # ONNX/PyTorch: the last window must start inside the input or the begin padding.
    if ceil and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


# --------------------------------------------------------------------------------------
# Op interfaces: what an op is, for the passes that lower it (DESIGN.md "Op interfaces")
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """Each result element comes from the operand elements at the same index (operands
    broadcast numpy-style when `broadcast`), so any tiling of the result tiles the operands
    alike. `follows_format`: computes in whatever storage format its operands carry
    (BatchNorm is per-channel elementwise but has its own formats). What the op computes
    (its scalar semantics) is its kernel in ge.runtime.reference: `semantics(op)`."""

    broadcast: bool = True
    follows_format: bool = True

    @staticmethod
    def semantics(op: type[IRDLOperation] | IRDLOperation):
        from ge.runtime.reference import KERNELS

        return KERNELS[op if isinstance(op, type) else type(op)]


@dataclass(frozen=True)
class Reduction(OpTrait):
    """Combines the elements along `axes` with `combiner` ("add", "mul", "max", "min")
    starting from `identity`; `mean` divides by the count afterwards. The tile level keeps
    the reduced dims whole; the vector lowering picks the instructions by the combiner."""

    combiner: str
    identity: float
    mean: bool = False
    square_first: bool = False  # ReduceSumSquare / ReduceL2 (composites: see transforms/decompose.py)
    sqrt_after: bool = False


@dataclass(frozen=True)
class Activation(OpTrait):
    """A pointwise nonlinearity of one tensor (Relu, Sigmoid, Gelu, ...): GE fuses it into
    a Cube kernel's epilogue after the bias (fusion_rules.ACTIVATION_OPS)."""


@dataclass(frozen=True)
class Normalization(OpTrait):
    """A reduction along some axes whose result is used elementwise on the same tensor
    (Softmax, LayerNorm, LRN): fused like a reduction, tiled with the axes whole."""


@dataclass(frozen=True)
class StorageFormats(OpTrait):
    """The storage formats the op implements beyond plain tensors, for assign-layouts:
    `feature_map` ops compute on NC1HWC0 feature maps (rank 4), `cube` ops read FRACTAL_Z /
    FRACTAL_NZ weights, `channel_concat` joins NC1HWC0 inputs."""

    formats: tuple[str, ...]
    rule: str  # "feature_map" | "conv" | "matmul" | "channel_concat"


def has_trait(op: IRDLOperation | type[IRDLOperation], trait: type[OpTrait]) -> bool:
    """Whether op (or op class) carries an interface of type `trait`."""
    cls = op if isinstance(op, type) else type(op)
    return issubclass(cls, IRDLOperation) and cls.has_trait(trait)


def trait_of(op: IRDLOperation, trait: type[OpTrait]):
    """The interface of type `trait` that `op` carries, or None."""
    return type(op).get_trait(trait) if isinstance(op, IRDLOperation) else None


# --------------------------------------------------------------------------------------
# Base class
# --------------------------------------------------------------------------------------


class GraphOp(IRDLOperation):
    """Shared machinery: result types come from `infer`, and the verifier checks them.

    `infer(types, props, values)` receives the operand types in build form (one entry per
    operand definition: a type, None for an absent optional operand, a list for a variadic
    one), the properties, and the constant values of operands where they are known, and
    returns the result types in build form. A None result type means the shape depends on
    an operand value that is not a known constant.

    After `assign-layouts`, operand and result types may carry a storage format
    (`#layout.fmt<...>` encoding); `infer` still sees the origin (logical) tensors, and
    `ge.dialects.layout.verify_graph_op` checks that the op implements those formats.
    """

    irdl_options = (ParsePropInAttrDict(),)

    # Names of operands whose constant value the shape depends on (Reshape's shape, ...).
    VALUE_OPERANDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def infer(cls, types: Types, props: Props, values: list) -> list:
        raise NotImplementedError

    @classmethod
    def make(
        cls,
        operands: Sequence[SSAValue | Sequence[SSAValue] | None],
        props: Props | None = None,
        values: list | None = None,
    ):
        """Build the op with inferred result types (raises VerifyException if invalid)."""
        props = {k: v for k, v in (props or {}).items() if v is not None}
        types = [_types_of(o) for o in operands]
        values = values if values is not None else [None] * len(operands)
        results = cls.infer(types, props, values)
        if any(r is None for r in _flatten(results, keep_none=True)):
            raise VerifyException("the result shape depends on an operand value that is not a constant")
        return cls.build(
            operands=[[] if o is None else o for o in operands],
            result_types=results,
            properties=props,
        )

    def _build_form_operands(self) -> list:
        out = []
        for name, _ in self.get_irdl_definition().operands:
            out.append(getattr(self, name))
        return out

    def verify_(self) -> None:
        operands = self._build_form_operands()
        for v in _flatten(operands):
            if not isinstance(v.type, TensorType) or any(d < 0 for d in v.type.get_shape()):
                raise VerifyException(f"operands must be statically shaped tensors, got {v.type}")
            if v.type.element_type not in dtypes.SUPPORTED:
                raise VerifyException(f"element type {v.type.element_type} is not supported by the graph level")
        for r in self.results:
            if isinstance(r.type, TensorType) and r.type.element_type not in dtypes.SUPPORTED:
                raise VerifyException(f"element type {r.type.element_type} is not supported by the graph level")
        types = [_types_of(o) for o in operands]
        values = [_constant_value(o) if name in self.VALUE_OPERANDS else None
                  for (name, _), o in zip(self.get_irdl_definition().operands, operands)]
        actual = [r.type for r in self.results]
        if (layout := _layout_level(self)) is not None:
            # After assign-layouts: the formats must be ones the op implements, and the
            # shapes are inferred and checked on the origin (logical) tensors.
            layout.verify_graph_op(self)
            types = [layout.logical_types(t) for t in types]
            actual = [layout.logical_type(t) for t in actual]
        expected = _flatten(self.infer(types, dict(self.properties), values), keep_none=True)
        if len(expected) != len(actual):
            raise VerifyException(f"expected {len(expected)} results, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            if e is not None and e != a:
                raise VerifyException(f"result #{i} has type {a}, but the operands and attributes give {e}")
            if e is None and (not isinstance(a, TensorType) or any(d < 0 for d in a.get_shape())):
                raise VerifyException(f"result #{i} must be a statically shaped tensor, got {a}")


def _flatten(items, keep_none: bool = False) -> list:
    """Build form -> flat list (variadic groups expanded; absent optionals dropped unless
    `keep_none`, which result types use to mean "not inferable")."""
    out = []
    for x in items:
        if isinstance(x, list | tuple) or (x is not None and not isinstance(x, SSAValue | Attribute) and hasattr(x, "__iter__")):
            out.extend(x)
        elif x is not None or keep_none:
            out.append(x)
    return out


def _layout_level(op: IRDLOperation):
    """`ge.dialects.layout` when a type of `op` carries an encoding (a storage format, set
    by assign-layouts), else None. Imported lazily: the layout dialect builds on this one."""
    if all(not isinstance(v.type, TensorType) or isinstance(v.type.encoding, NoneAttr)
           for v in (*op.operands, *op.results)):
        return None
    from ge.dialects import layout

    return layout


def _types_of(o):
    if o is None:
        return None
    if isinstance(o, SSAValue):
        return o.type
    return [v.type for v in o]


def _constant_value(o) -> np.ndarray | None:
    """The value of an operand defined by `graph.constant`, else None."""
    if not isinstance(o, SSAValue) or not isinstance(o.owner, ConstantOp):
        return None
    from ge.dialects.blobs import attr_array

    try:
        return attr_array(o.owner.value)
    except (KeyError, ValueError) as e:
        raise VerifyException(f"constant operand is unreadable: {e}") from None


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor: weights as `dense_resource`, small values inline as `dense`."""

    name = "graph.constant"
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = prop_def(
        ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr()))
        | ParamAttrConstraint(DenseResourceAttr, (AnyAttr(), T))
    )
    output = result_def(T)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "attr-dict $value"

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(result_types=[value.get_type()], properties={"value": value})

    def verify_(self) -> None:
        t = self.output.type
        if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
            raise VerifyException(f"a constant must be a statically shaped tensor, got {t}")
        if t.element_type not in dtypes.SUPPORTED:
            raise VerifyException(f"element type {t.element_type} is not supported by the graph level")
        if _layout_level(self) is not None:  # a weight pre-transformed to a storage format
            from ge.dialects.layout import check_type

            check_type(t)


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------


class UnaryOp(GraphOp):
    """y = f(x), same type; `FLOAT_ONLY` ops reject integer tensors."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    output = result_def(T)
    traits = traits_def(Pure(), Elementwise(broadcast=False))
    assembly_format = "$input attr-dict `:` type($output)"
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types, props, values):
        (t,) = types
        if cls.FLOAT_ONLY:
            require_float(t)
        return [t]


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)."""

    name = "graph.relu"
    FLOAT_ONLY: ClassVar[bool] = False
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))."""

    name = "graph.sigmoid"
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent."""

    name = "graph.tanh"
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class ErfOp(UnaryOp):
    """Gauss error function."""

    name = "graph.erf"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root."""

    name = "graph.sqrt"


@irdl_op_definition
class ExpOp(UnaryOp):
    """Natural exponential."""

    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine."""

    name = "graph.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine."""

    name = "graph.cos"


@irdl_op_definition
class NegOp(UnaryOp):
    """-x."""

    name = "graph.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|."""

    name = "graph.abs"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class SignOp(UnaryOp):
    """-1, 0 or 1."""

    name = "graph.sign"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """1 / x."""

    name = "graph.reciprocal"


@irdl_op_definition
class FloorOp(UnaryOp):
    """Round down."""

    name = "graph.floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    """Round up."""

    name = "graph.ceil"


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round half to even."""

    name = "graph.round"


@irdl_op_definition
class SoftplusOp(UnaryOp):
    """log(1 + exp(x))."""

    name = "graph.softplus"
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class SoftsignOp(UnaryOp):
    """x / (1 + |x|)."""

    name = "graph.softsign"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x/6 + 1/2))."""

    name = "graph.hard_swish"
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class IdentityOp(UnaryOp):
    """x (kept by the importer; removed by graph simplification)."""

    name = "graph.identity"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"
    alpha = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class EluOp(UnaryOp):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    name = "graph.elu"
    alpha = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class CeluOp(UnaryOp):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    name = "graph.celu"
    alpha = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class SeluOp(UnaryOp):
    """gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "graph.selu"
    alpha = prop_def(FloatAttr[Float32Type])
    gamma = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    alpha = prop_def(FloatAttr[Float32Type])
    beta = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class ThresholdedReluOp(UnaryOp):
    """x if x > alpha else 0."""

    name = "graph.thresholded_relu"
    alpha = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class GeluOp(UnaryOp):
    """x * Phi(x); `approximate = "tanh"` uses the tanh formula."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr)
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class DropoutOp(UnaryOp):
    """Inference dropout: the identity (the ratio is kept for the record)."""

    name = "graph.dropout"
    FLOAT_ONLY: ClassVar[bool] = False
    ratio = opt_prop_def(FloatAttr[Float32Type])


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical not on i1."""

    name = "graph.not"
    FLOAT_ONLY: ClassVar[bool] = False

    @classmethod
    def infer(cls, types, props, values):
        (t,) = types
        if t.element_type != i1:
            raise VerifyException(f"operand must be a tensor of i1, got {t}")
        return [t]


@irdl_op_definition
class ClipOp(UnaryOp):
    """min(max(x, min), max); absent bounds are unbounded."""

    name = "graph.clip"
    FLOAT_ONLY: ClassVar[bool] = False
    min = opt_prop_def(FloatAttr[Float32Type])
    max = opt_prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False), Activation())


@irdl_op_definition
class CastOp(GraphOp):
    """Element type conversion (ONNX Cast; float -> int truncates toward zero)."""

    name = "graph.cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise(broadcast=False))
    assembly_format = "$input attr-dict `:` type($input) `to` type($output)"

    @classmethod
    def infer(cls, types, props, values):
        return [None]

    def verify_(self) -> None:
        super().verify_()
        a, b = self.input.type, self.output.type
        if shape_of(a) != shape_of(b):
            raise VerifyException(f"cast must keep the shape: {a} to {b}")

    @classmethod
    def to(cls, value: SSAValue, elem: Attribute) -> CastOp:
        return cls.build(operands=[value], result_types=[tensor(elem, shape_of(value.type))])


class BinaryOp(GraphOp):
    """Elementwise with multidirectional broadcasting; result element type of `lhs`."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    KIND: ClassVar[str] = "arith"  # arith | compare | logic | pow

    @classmethod
    def infer(cls, types, props, values):
        a, b = types
        shape = broadcast_shapes(shape_of(a), shape_of(b))
        if cls.KIND == "pow":
            return [tensor(a.element_type, shape)]
        elem = same_elem([a, b])
        if cls.KIND == "logic":
            if elem != i1:
                raise VerifyException(f"operands must be tensors of i1, got {elem}")
            return [tensor(i1, shape)]
        if cls.KIND == "compare":
            return [tensor(i1, shape)]
        return [tensor(elem, shape)]


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs."""

    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs (integer division truncates toward zero, as ONNX)."""

    name = "graph.div"


@irdl_op_definition
class PowOp(BinaryOp):
    """lhs ** rhs; the exponent may have another element type."""

    name = "graph.pow"
    KIND: ClassVar[str] = "pow"


@irdl_op_definition
class EqualOp(BinaryOp):
    """lhs == rhs, as i1."""

    name = "graph.equal"
    KIND: ClassVar[str] = "compare"


@irdl_op_definition
class LessOp(BinaryOp):
    """lhs < rhs, as i1."""

    name = "graph.less"
    KIND: ClassVar[str] = "compare"


@irdl_op_definition
class LessOrEqualOp(BinaryOp):
    """lhs <= rhs, as i1."""

    name = "graph.less_or_equal"
    KIND: ClassVar[str] = "compare"


@irdl_op_definition
class GreaterOp(BinaryOp):
    """lhs > rhs, as i1."""

    name = "graph.greater"
    KIND: ClassVar[str] = "compare"


@irdl_op_definition
class GreaterOrEqualOp(BinaryOp):
    """lhs >= rhs, as i1."""

    name = "graph.greater_or_equal"
    KIND: ClassVar[str] = "compare"


@irdl_op_definition
class AndOp(BinaryOp):
    """Logical and on i1."""

    name = "graph.and"
    KIND: ClassVar[str] = "logic"


@irdl_op_definition
class OrOp(BinaryOp):
    """Logical or on i1."""

    name = "graph.or"
    KIND: ClassVar[str] = "logic"


@irdl_op_definition
class XorOp(BinaryOp):
    """Logical xor on i1."""

    name = "graph.xor"
    KIND: ClassVar[str] = "logic"


@irdl_op_definition
class ModOp(BinaryOp):
    """Remainder; `fmod` selects C fmod semantics (sign of lhs), else Python's (sign of rhs)."""

    name = "graph.mod"
    fmod = opt_prop_def(UnitAttr)


@irdl_op_definition
class PReluOp(GraphOp):
    """x if x >= 0 else slope * x; slope broadcasts to x (unidirectionally)."""

    name = "graph.prelu"
    input = operand_def(TensorType)
    slope = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise(), Activation())
    assembly_format = "$input `,` $slope attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, s = types
        same_elem([x, s])
        if broadcast_shapes(shape_of(x), shape_of(s)) != shape_of(x):
            raise VerifyException(f"slope {s} does not broadcast to the input {x}")
        return [x]


class VariadicOp(GraphOp):
    """Elementwise over any number of inputs with broadcasting (ONNX Sum/Max/Min/Mean)."""

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise())
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (ts,) = types
        if not ts:
            raise VerifyException(f"{cls.name} needs at least one input")
        return [tensor(same_elem(ts), broadcast_shapes(*(shape_of(t) for t in ts)))]


@irdl_op_definition
class SumOp(VariadicOp):
    """Sum of all inputs."""

    name = "graph.sum"


@irdl_op_definition
class MaxOp(VariadicOp):
    """Elementwise maximum of all inputs."""

    name = "graph.max"


@irdl_op_definition
class MinOp(VariadicOp):
    """Elementwise minimum of all inputs."""

    name = "graph.min"


@irdl_op_definition
class MeanOp(VariadicOp):
    """Elementwise mean of all inputs."""

    name = "graph.mean"


@irdl_op_definition
class WhereOp(GraphOp):
    """cond ? x : y with broadcasting."""

    name = "graph.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise())
    assembly_format = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        c, a, b = types
        if c.element_type != i1:
            raise VerifyException(f"condition must be a tensor of i1, got {c}")
        return [tensor(same_elem([a, b]), broadcast_shapes(shape_of(c), shape_of(a), shape_of(b)))]


# --------------------------------------------------------------------------------------
# Neural-network ops
# --------------------------------------------------------------------------------------


def _window_props(kernel_rank: int, props: Props, with_dilation: bool = True) -> tuple[tuple[int, ...], ...]:
    strides = get_ints(props, "strides")
    pads = get_ints(props, "pads")
    dilations = get_ints(props, "dilations") if with_dilation else (1,) * kernel_rank
    if len(strides) != kernel_rank or len(dilations) != kernel_rank or len(pads) != 2 * kernel_rank:
        raise VerifyException(
            f"expected {kernel_rank} strides, {kernel_rank} dilations and {2 * kernel_rank} pads, got "
            f"strides={list(strides)} dilations={list(dilations)} pads={list(pads)}"
        )
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations) or any(p < 0 for p in pads):
        raise VerifyException("strides and dilations must be >= 1 and pads >= 0")
    return strides, pads, dilations


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, NCHW input, OIHW weight (ONNX Conv), optional per-channel bias.

    pads are [top, left, bottom, right] (ONNX order: all begins, then all ends).
    """

    name = "graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), StorageFormats(("NC1HWC0", "FRACTAL_Z"), "conv"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, w, b = types
        require_rank(x, 4, "input")
        require_rank(w, 4, "weight")
        require_float(x, "input")
        same_elem([x, w] + ([b] if b else []))
        strides, pads, dilations = _window_props(2, props)
        group = get_int(props, "group")
        n, c, h, wd = shape_of(x)
        m, cg, kh, kw = shape_of(w)
        if group < 1 or c % group or m % group or cg != c // group:
            raise VerifyException(
                f"weight {w} does not match input {x} with group {group} "
                f"(need weight dim 1 = channels / group = {c // max(group, 1)}, channels and filters divisible by group)"
            )
        if b is not None and shape_of(b) != (m,):
            raise VerifyException(f"bias must have shape [{m}], got {b}")
        oh = window_out(h, kh, strides[0], pads[0], pads[2], dilations[0], False)
        ow = window_out(wd, kw, strides[1], pads[1], pads[3], dilations[1], False)
        return [tensor(x.element_type, (n, m, oh, ow))]


class PoolOp(GraphOp):
    """Sliding-window pool over the two trailing dims of an NCHW tensor."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    ceil_mode = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"
    HAS_DILATION: ClassVar[bool] = False

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_rank(x, 4, "input")
        kernel = get_ints(props, "kernel_shape")
        if len(kernel) != 2 or min(kernel) < 1:
            raise VerifyException(f"kernel_shape must be two positive sizes, got {list(kernel)}")
        strides, pads, dil = _window_props(2, props, cls.HAS_DILATION)
        for i in range(2):
            if pads[i] >= kernel[i] * dil[i] or pads[i + 2] >= kernel[i] * dil[i]:
                raise VerifyException(f"pads {list(pads)} must be smaller than the window {list(kernel)}")
        n, c, h, w = shape_of(x)
        ceil = has_flag(props, "ceil_mode")
        oh = window_out(h, kernel[0], strides[0], pads[0], pads[2], dil[0], ceil)
        ow = window_out(w, kernel[1], strides[1], pads[1], pads[3], dil[1], ceil)
        return [tensor(x.element_type, (n, c, oh, ow))]


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Max pool; padded positions never win."""

    name = "graph.max_pool"
    dilations = prop_def(DenseArrayBase[I64])
    HAS_DILATION: ClassVar[bool] = True


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pool; `count_include_pad` divides by the full window."""

    name = "graph.avg_pool"
    count_include_pad = opt_prop_def(UnitAttr)


class GlobalPoolOp(GraphOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        if x.get_num_dims() < 3:
            raise VerifyException(f"input must have rank >= 3, got {x}")
        s = shape_of(x)
        return [tensor(x.element_type, s[:2] + (1,) * (len(s) - 2))]


@irdl_op_definition
class GlobalAvgPoolOp(GlobalPoolOp):
    """Mean over all spatial dims, kept as size 1."""

    name = "graph.global_avg_pool"


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    """Max over all spatial dims, kept as size 1."""

    name = "graph.global_max_pool"


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch norm over dim 1: (x - mean) / sqrt(var + epsilon) * scale + bias."""

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Elementwise(broadcast=False, follows_format=False),
                        StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, *params = types
        require_float(x, "input")
        same_elem([x, *params])
        if x.get_num_dims() < 2:
            raise VerifyException(f"input must have rank >= 2, got {x}")
        c = shape_of(x)[1]
        for name, p in zip(("scale", "bias", "mean", "var"), params):
            if shape_of(p) != (c,):
                raise VerifyException(f"{name} must have shape [{c}] (the channel count), got {p}")
        return [x]


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Normalize over dims axis..rank-1, then scale (and bias), as ONNX LayerNormalization."""

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    epsilon = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Normalization())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, s, b = types
        require_float(x, "input")
        same_elem([x, s] + ([b] if b else []))
        axis = get_int(props, "axis")
        check_axis(axis, x.get_num_dims())
        norm = shape_of(x)[axis:]
        for name, p in (("scale", s), ("bias", b)):
            ps = shape_of(p) if p is not None else ()
            if p is not None and (len(ps) > len(norm) or any(d not in (1, t) for d, t in zip(ps[::-1], norm[::-1]))):
                raise VerifyException(f"{name} {p} does not broadcast to the normalized shape {list(norm)}")
        return [x]


@irdl_op_definition
class LrnOp(GraphOp):
    """Local response normalization across channels (ONNX LRN)."""

    name = "graph.lrn"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    output = result_def(T)
    size = prop_def(IntegerAttr[I64])
    alpha = prop_def(FloatAttr[Float32Type])
    beta = prop_def(FloatAttr[Float32Type])
    bias = prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure(), Normalization(), StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "$input attr-dict `:` type($output)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_float(x, "input")
        if x.get_num_dims() < 3:
            raise VerifyException(f"input must have rank >= 3, got {x}")
        if get_int(props, "size") < 1:
            raise VerifyException("size must be >= 1")
        return [x]


class AxisNormOp(GraphOp):
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    output = result_def(T)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), Normalization())
    assembly_format = "$input attr-dict `:` type($output)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_float(x, "input")
        check_axis(get_int(props, "axis"), x.get_num_dims())
        return [x]


@irdl_op_definition
class SoftmaxOp(AxisNormOp):
    """exp(x) / sum(exp(x)) along one axis (opset-13 semantics; legacy 2-D coercion is
    spelled out by the importer with reshapes)."""

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(AxisNormOp):
    """log(softmax(x)) along one axis."""

    name = "graph.log_softmax"


@irdl_op_definition
class MatMulOp(GraphOp):
    """numpy.matmul semantics: 1-D operands promoted, batch dims broadcast."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), StorageFormats(("FRACTAL_NZ",), "matmul"))
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        a, b = types
        elem = same_elem([a, b])
        sa, sb = shape_of(a), shape_of(b)
        if not sa or not sb:
            raise VerifyException("matmul operands must have rank >= 1")
        ma = sa if len(sa) > 1 else (1,) + sa
        mb = sb if len(sb) > 1 else sb + (1,)
        if ma[-1] != mb[-2]:
            raise VerifyException(f"contraction dims differ: {a} x {b} ({ma[-1]} vs {mb[-2]})")
        try:
            batch = broadcast_shapes(ma[:-2], mb[:-2])
        except VerifyException:
            raise VerifyException(f"batch dims of {a} and {b} do not broadcast") from None
        out = batch + (ma[-2], mb[-1])
        if len(sa) == 1:
            out = out[:-2] + out[-1:]
        if len(sb) == 1:
            out = out[:-1]
        return [tensor(elem, out)]


@irdl_op_definition
class GemmOp(GraphOp):
    """alpha * op(A) @ op(B) + beta * C, with op = transpose when trans_a / trans_b."""

    name = "graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    alpha = prop_def(FloatAttr[Float32Type])
    beta = prop_def(FloatAttr[Float32Type])
    trans_a = opt_prop_def(UnitAttr)
    trans_b = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), StorageFormats(("FRACTAL_NZ",), "matmul"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        a, b, c = types
        require_rank(a, 2, "A")
        require_rank(b, 2, "B")
        elem = same_elem([a, b] + ([c] if c else []))
        m, k = shape_of(a)[:: -1 if has_flag(props, "trans_a") else 1]
        k2, n = shape_of(b)[:: -1 if has_flag(props, "trans_b") else 1]
        if k != k2:
            raise VerifyException(f"contraction dims differ: {k} vs {k2}")
        if c is not None and (len(shape_of(c)) > 2 or any(d not in (1, t) for d, t in zip(shape_of(c)[::-1], (n, m)))):
            raise VerifyException(f"C {c} does not broadcast to [{m}, {n}]")
        return [tensor(elem, (m, n))]


# --------------------------------------------------------------------------------------
# Quantized int8 ops (issue 21, /tmp/ge_team/INT8_SPEC.md): GE's AscendQuant / AscendDequant
# around int8 x int8 -> int32 Cube ops. Scales are f32, zero points ("offsets") i64 in the
# int8 range; weights are symmetric (no zero point). Semantics: ge.runtime.reference.
# --------------------------------------------------------------------------------------


def _check_offset(props: Props, name: str) -> None:
    if not -128 <= (v := get_int(props, name)) <= 127:
        raise VerifyException(f"{name} {v} is outside the int8 range [-128, 127]")


def _require_elem(t: TensorType, allowed: Sequence[Attribute], what: str) -> None:
    if t.element_type not in allowed:
        raise VerifyException(f"{what} must have element type " + " or ".join(map(str, allowed)) + f", got {t}")


@irdl_op_definition
class QuantizeOp(GraphOp):
    """AscendQuant: y = saturate_int8(round_half_even(x / scale) + offset), result i8."""

    name = "graph.quantize"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(FloatAttr[Float32Type])
    offset = prop_def(IntegerAttr[I64])
    # not format-following: the result's C0 (32 for i8) is not the operand's (16 for f16)
    traits = traits_def(Pure(), Elementwise(broadcast=False, follows_format=False),
                        StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "$input attr-dict `:` type($input) `to` type($output)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_float(x, "input")
        scale = get_float(props, "scale")
        if not (np.isfinite(scale) and scale > 0):
            raise VerifyException(f"scale must be a positive finite number, got {scale}")
        _check_offset(props, "offset")
        return [tensor(i8, shape_of(x))]


@irdl_op_definition
class DequantizeOp(GraphOp):
    """AscendDequant: y = (x - offset) * scale, scale per tensor ([]) or per channel ([C] along
    `axis`); x is an int32 accumulator (offset 0) or int8. The result type (f32 or f16) is
    chosen by the builder, as for graph.cast: `DequantizeOp.to(...)`; `make` gives f32."""

    name = "graph.dequantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    offset = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), Elementwise(broadcast=False, follows_format=False),
                        StorageFormats(("NC1HWC0",), "feature_map"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, s = types
        _require_elem(x, (i32, i8), "input")
        require_float(s, "scale")
        _check_offset(props, "offset")
        axis = get_int(props, "axis")
        if shape_of(s) != ():
            check_axis(axis, x.get_num_dims())
            if shape_of(s) != (shape_of(x)[axis],):
                raise VerifyException(f"scale must have shape [] or [{shape_of(x)[axis]}] (dim {axis} of the input), got {s}")
        return [None]  # f32 or f16: the result type says (see `to`)

    @classmethod
    def make(cls, operands, props=None, values=None) -> DequantizeOp:
        """The f32-result form (GraphOp.make's signature, for generic builders)."""
        x, scale = operands
        props = props or {}
        return cls.to(x, scale, f32, get_int(props, "axis"), get_int(props, "offset"))

    @classmethod
    def to(cls, x: SSAValue, scale: SSAValue, elem: Attribute = f32, axis: int = 1, offset: int = 0) -> DequantizeOp:
        """Dequantize `x` with `scale` along `axis` to an `elem` (f32 or f16) tensor."""
        props: Props = {"axis": int_attr(axis), "offset": int_attr(offset)}
        cls.infer([x.type, scale.type], props, [None, None])
        if elem not in (f32, f16):
            raise VerifyException(f"dequantize gives f32 or f16, not {elem}")
        return cls.build(operands=[x, scale], result_types=[tensor(elem, shape_of(x.type))], properties=props)

    def verify_(self) -> None:
        super().verify_()
        x, out = self.input.type, self.output.type
        if (layout := _layout_level(self)) is not None:
            x, out = layout.logical_type(x), layout.logical_type(out)
        if out.element_type not in (f32, f16) or shape_of(out) != shape_of(x):
            raise VerifyException(f"result must be an f32 or f16 tensor of the input's shape {shape_of(x)}, got {out}")


@irdl_op_definition
class QuantConv2dOp(GraphOp):
    """int8 convolution with int32 accumulation (the AscendQuant -> Conv -> AscendDequant
    core): sum((x - input_offset) * w) + bias; padded positions hold input_offset (contribute
    0). NCHW i8 input, OIHW i8 symmetric weight, optional i32 [M] bias; result i32 NCHW.
    Props as graph.conv2d."""

    name = "graph.quant_conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    input_offset = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), StorageFormats(("NC1HWC0", "FRACTAL_Z"), "conv"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, w, b = types
        _require_elem(x, (i8,), "input")
        _require_elem(w, (i8,), "weight")
        if b is not None:
            _require_elem(b, (i32,), "bias")
        _check_offset(props, "input_offset")
        float_types = [tensor(f32, shape_of(t)) for t in (x, w)] + [tensor(f32, shape_of(b)) if b else None]
        (out,) = Conv2dOp.infer(float_types, props, values)
        return [tensor(i32, shape_of(out))]


@irdl_op_definition
class QuantMatMulOp(GraphOp):
    """int8 matmul with int32 accumulation: numpy.matmul((lhs - lhs_offset), rhs) + bias, rhs
    symmetric; bias (optional, i32 [N]) is added along the last result dim (Gemm's C)."""

    name = "graph.quant_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    lhs_offset = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), StorageFormats(("FRACTAL_NZ",), "matmul"))
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        a, b, c = types
        _require_elem(a, (i8,), "lhs")
        _require_elem(b, (i8,), "rhs")
        _check_offset(props, "lhs_offset")
        (out,) = MatMulOp.infer([tensor(f32, shape_of(a)), tensor(f32, shape_of(b))], props, values)
        n = shape_of(out)[-1] if shape_of(out) else 1
        if c is not None:
            _require_elem(c, (i32,), "bias")
            if len(shape_of(b)) < 2 or shape_of(c) != (n,):
                raise VerifyException(f"bias must have shape [{n}] (the last result dim), got {c}")
        return [tensor(i32, shape_of(out))]


# --------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------


class ReduceOp(GraphOp):
    """Reduce over explicit `axes` (sorted, non-negative); `keepdims` keeps them as 1."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase[I64])
    keepdims = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axes = get_ints(props, "axes")
        check_axes(axes, x.get_num_dims())
        keep = has_flag(props, "keepdims")
        s = shape_of(x)
        out = [1 if i in axes else d for i, d in enumerate(s)] if keep else [d for i, d in enumerate(s) if i not in axes]
        return [tensor(x.element_type, out)]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over axes."""

    name = "graph.reduce_mean"
    traits = traits_def(Pure(), Reduction("add", 0.0, mean=True))


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over axes."""

    name = "graph.reduce_sum"
    traits = traits_def(Pure(), Reduction("add", 0.0))


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over axes."""

    name = "graph.reduce_max"
    traits = traits_def(Pure(), Reduction("max", -float("inf")))


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over axes."""

    name = "graph.reduce_min"
    traits = traits_def(Pure(), Reduction("min", float("inf")))


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over axes."""

    name = "graph.reduce_prod"
    traits = traits_def(Pure(), Reduction("mul", 1.0))


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """sqrt(sum(x^2)) over axes."""

    name = "graph.reduce_l2"
    traits = traits_def(Pure(), Reduction("add", 0.0, square_first=True, sqrt_after=True))


@irdl_op_definition
class ReduceSumSquareOp(ReduceOp):
    """sum(x^2) over axes."""

    name = "graph.reduce_sum_square"
    traits = traits_def(Pure(), Reduction("add", 0.0, square_first=True))


class ArgReduceOp(GraphOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(UnitAttr)
    select_last_index = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axis = get_int(props, "axis")
        check_axis(axis, x.get_num_dims())
        s = list(shape_of(x))
        if has_flag(props, "keepdims"):
            s[axis] = 1
        else:
            del s[axis]
        return [tensor(i64, s)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """Index of the maximum along an axis (first one unless select_last_index)."""

    name = "graph.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """Index of the minimum along an axis (first one unless select_last_index)."""

    name = "graph.argmin"


# --------------------------------------------------------------------------------------
# Shape and data movement
# --------------------------------------------------------------------------------------


def _shape_operand(value: np.ndarray | None, what: str) -> list[int] | None:
    if value is None:
        return None
    if value.ndim != 1:
        raise VerifyException(f"{what} must be a 1-D tensor, got shape {list(value.shape)}")
    return [int(v) for v in value]


def _shape_target(t: TensorType, value: np.ndarray | None) -> list[int] | None:
    """The value of a Reshape/Expand `shape` operand (a 1-D i64 tensor), if known."""
    if t.element_type != i64 or t.get_num_dims() != 1:
        raise VerifyException(f"shape must be a 1-D tensor of i64, got {t}")
    return _shape_operand(value, "shape")


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reshape to the `shape` operand (ONNX rules: 0 copies the input dim unless
    `allowzero`, one -1 is inferred)."""

    name = "graph.reshape"
    input = operand_def(TensorType)
    shape = operand_def(TensorType)
    output = result_def(TensorType)
    allowzero = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $shape attr-dict `:` functional-type(operands, results)"
    VALUE_OPERANDS: ClassVar[tuple[str, ...]] = ("shape",)

    @classmethod
    def infer(cls, types, props, values):
        x, s = types
        target = _shape_target(s, values[1])
        if target is None:
            return [None]
        return [tensor(x.element_type, reshape_target(shape_of(x), target, has_flag(props, "allowzero")))]

    def verify_(self) -> None:
        super().verify_()
        a, b = self.input.type, self.output.type
        if int(np.prod(shape_of(a))) != int(np.prod(shape_of(b))) or a.element_type != b.element_type:
            raise VerifyException(f"cannot reshape {a} to {b}")
        if shape_of(self.shape.type)[0] != b.get_num_dims():
            raise VerifyException(f"shape operand {self.shape.type} does not match the result rank of {b}")


def reshape_target(src: Sequence[int], target: Sequence[int], allowzero: bool) -> tuple[int, ...]:
    """ONNX Reshape's shape rule."""
    out = [src[i] if (d == 0 and not allowzero and i < len(src)) else d for i, d in enumerate(target)]
    total = int(np.prod(src))
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise VerifyException(f"invalid reshape target {list(target)}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        if known == 0 or total % known:
            raise VerifyException(f"cannot reshape {list(src)} to {list(target)}")
        out[out.index(-1)] = total // known
    if int(np.prod(out)) != total:
        raise VerifyException(f"cannot reshape {list(src)} ({total} elements) to {list(target)}")
    return tuple(out)


@irdl_op_definition
class FlattenOp(GraphOp):
    """To 2-D: dims [0, axis) and [axis, rank) each multiplied together."""

    name = "graph.flatten"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axis = get_int(props, "axis")
        s = shape_of(x)
        if not 0 <= axis <= len(s):
            raise VerifyException(f"axis {axis} is out of range for rank {len(s)}")
        return [tensor(x.element_type, (int(np.prod(s[:axis])), int(np.prod(s[axis:]))))]


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permute dims: output dim i is input dim perm[i]."""

    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        perm = get_ints(props, "perm")
        if sorted(perm) != list(range(x.get_num_dims())):
            raise VerifyException(f"perm {list(perm)} is not a permutation of 0..{x.get_num_dims() - 1}")
        s = shape_of(x)
        return [tensor(x.element_type, [s[p] for p in perm])]


@irdl_op_definition
class ConcatOp(GraphOp):
    """Join inputs along `axis`."""

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), StorageFormats(("NC1HWC0",), "channel_concat"))
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (ts,) = types
        if not ts:
            raise VerifyException(f"{cls.name} needs at least one input")
        elem = same_elem(ts)
        axis = get_int(props, "axis")
        rank = ts[0].get_num_dims()
        check_axis(axis, rank)
        s0 = shape_of(ts[0])
        for t in ts:
            s = shape_of(t)
            if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, s0)) if i != axis):
                raise VerifyException(f"inputs {ts[0]} and {t} differ outside the concat axis {axis}")
        out = list(s0)
        out[axis] = sum(shape_of(t)[axis] for t in ts)
        return [tensor(elem, out)]


@irdl_op_definition
class SplitOp(GraphOp):
    """Cut `input` along `axis` into pieces of the given `sizes`."""

    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    sizes = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axis = get_int(props, "axis")
        check_axis(axis, x.get_num_dims())
        sizes = get_ints(props, "sizes")
        s = shape_of(x)
        if any(v < 0 for v in sizes):
            raise VerifyException(f"sizes {list(sizes)} must be non-negative")
        if sum(sizes) != s[axis]:
            raise VerifyException(f"sizes {list(sizes)} do not add up to dim {axis} of {x}")
        return [[tensor(x.element_type, s[:axis] + (v,) + s[axis + 1:]) for v in sizes]]


@irdl_op_definition
class SliceOp(GraphOp):
    """Strided slice with one normalized (start, end, step) per dim.

    Starts are in [0, dim) (or dim for an empty slice), ends in [-1, dim]; -1 as an end only
    occurs with a negative step and means "through index 0".
    """

    name = "graph.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(DenseArrayBase[I64])
    ends = prop_def(DenseArrayBase[I64])
    steps = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        s = shape_of(x)
        starts, ends, steps = get_ints(props, "starts"), get_ints(props, "ends"), get_ints(props, "steps")
        if not len(starts) == len(ends) == len(steps) == len(s):
            raise VerifyException(f"starts, ends and steps need one entry per dim ({len(s)})")
        out = []
        for d, b, e, st in zip(s, starts, ends, steps):
            if st == 0:
                raise VerifyException("steps must be non-zero")
            if not (0 <= b <= d and -1 <= e <= d):
                raise VerifyException(f"slice [{b}:{e}:{st}] is not normalized for a dim of size {d}")
            out.append(slice_len(b, e, st))
        return [tensor(x.element_type, out)]


def slice_len(start: int, end: int, step: int) -> int:
    return max(0, -(-(end - start) // step)) if step > 0 else max(0, -(-(start - end) // -step))


@irdl_op_definition
class GatherOp(GraphOp):
    """Take entries of `input` along `axis` at `indices` (negative indices wrap)."""

    name = "graph.gather"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        x, idx = types
        if not dtypes.is_integer(idx.element_type):
            raise VerifyException(f"indices must be an integer tensor, got {idx}")
        axis = get_int(props, "axis")
        check_axis(axis, x.get_num_dims())
        s = shape_of(x)
        return [tensor(x.element_type, s[:axis] + shape_of(idx) + s[axis + 1:])]


@irdl_op_definition
class SqueezeOp(GraphOp):
    """Drop the size-1 dims listed in `axes`."""

    name = "graph.squeeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axes = get_ints(props, "axes")
        check_axes(axes, x.get_num_dims())
        s = shape_of(x)
        if any(s[a] != 1 for a in axes):
            raise VerifyException(f"cannot squeeze axes {list(axes)} of {x}: not all of size 1")
        return [tensor(x.element_type, [d for i, d in enumerate(s) if i not in axes])]


@irdl_op_definition
class UnsqueezeOp(GraphOp):
    """Insert size-1 dims at `axes` (positions in the output)."""

    name = "graph.unsqueeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        axes = get_ints(props, "axes")
        rank = x.get_num_dims() + len(axes)
        check_axes(axes, rank)
        it = iter(shape_of(x))
        return [tensor(x.element_type, [1 if i in axes else next(it) for i in range(rank)])]


@irdl_op_definition
class ExpandOp(GraphOp):
    """Broadcast `input` against the `shape` operand (ONNX Expand)."""

    name = "graph.expand"
    input = operand_def(TensorType)
    shape = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $shape attr-dict `:` functional-type(operands, results)"
    VALUE_OPERANDS: ClassVar[tuple[str, ...]] = ("shape",)

    @classmethod
    def infer(cls, types, props, values):
        x, s = types
        target = _shape_target(s, values[1])
        if target is None:
            return [None]
        if any(d < 0 for d in target):
            raise VerifyException(f"shape {target} has a negative dim")
        return [tensor(x.element_type, broadcast_shapes(shape_of(x), target))]

    def verify_(self) -> None:
        super().verify_()
        a, b = self.input.type, self.output.type
        if broadcast_shapes(shape_of(a), shape_of(b)) != shape_of(b) or a.element_type != b.element_type:
            raise VerifyException(f"cannot expand {a} to {b}")


@irdl_op_definition
class TileOp(GraphOp):
    """Repeat the input `repeats[i]` times along dim i."""

    name = "graph.tile"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    repeats = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        reps = get_ints(props, "repeats")
        s = shape_of(x)
        if len(reps) != len(s) or any(r < 0 for r in reps):
            raise VerifyException(f"repeats {list(reps)} need one non-negative entry per dim of {x}")
        return [tensor(x.element_type, [d * r for d, r in zip(s, reps)])]


@irdl_op_definition
class PadOp(GraphOp):
    """Pad with `pads` = [begin_0.., end_0..]; mode constant (with `value`), reflect or edge."""

    name = "graph.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(DenseArrayBase[I64])
    mode = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr[Float32Type])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        pads = get_ints(props, "pads")
        s = shape_of(x)
        if len(pads) != 2 * len(s):
            raise VerifyException(f"pads needs {2 * len(s)} entries for {x}, got {len(pads)}")
        mode = get_str(props, "mode", "constant")
        if mode not in ("constant", "reflect", "edge", "wrap"):
            raise VerifyException(f"unknown pad mode '{mode}' (constant, reflect, edge, wrap)")
        out = [d + pads[i] + pads[i + len(s)] for i, d in enumerate(s)]
        if any(d < 0 for d in out):
            raise VerifyException(f"pads {list(pads)} remove more than {x} holds")
        return [tensor(x.element_type, out)]


@irdl_op_definition
class ShapeOp(GraphOp):
    """The input's shape as a 1-D i64 tensor, dims [start, end)."""

    name = "graph.shape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    start = opt_prop_def(IntegerAttr[I64])
    end = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        rank = x.get_num_dims()
        start, end = get_int(props, "start", 0), get_int(props, "end", rank)
        if not 0 <= start <= end <= rank:
            raise VerifyException(f"start {start} / end {end} out of range for rank {rank}")
        return [tensor(i64, (end - start,))]


@irdl_op_definition
class ConstantOfShapeOp(GraphOp):
    """A tensor of the `shape` operand's shape filled with `value` (its element type is
    the result's)."""

    name = "graph.constant_of_shape"
    shape = operand_def(TensorType)
    output = result_def(TensorType)
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = traits_def(Pure())
    assembly_format = "$shape attr-dict `:` functional-type(operands, results)"
    VALUE_OPERANDS: ClassVar[tuple[str, ...]] = ("shape",)

    @classmethod
    def infer(cls, types, props, values):
        (s,) = types
        if not dtypes.is_integer(s.element_type) or s.get_num_dims() != 1:
            raise VerifyException(f"shape must be a 1-D integer tensor, got {s}")
        value = props["value"]
        assert isinstance(value, DenseIntOrFPElementsAttr)
        if int(np.prod(value.get_shape())) != 1:
            raise VerifyException("value must hold exactly one element")
        target = _shape_operand(values[0], "shape")
        if target is None:
            return [None]
        if any(d < 0 for d in target):
            raise VerifyException(f"shape {target} has a negative dim")
        return [tensor(value.get_element_type(), target)]

    def verify_(self) -> None:
        super().verify_()
        if self.output.type.element_type != self.value.get_element_type():
            raise VerifyException(f"value {self.value} and result {self.output.type} differ in element type")
        if shape_of(self.shape.type)[0] != self.output.type.get_num_dims():
            raise VerifyException(f"shape operand {self.shape.type} does not match the result rank of {self.output.type}")


@irdl_op_definition
class RangeOp(GraphOp):
    """start, start + delta, ... below limit (scalar operands)."""

    name = "graph.range"
    start = operand_def(TensorType)
    limit = operand_def(TensorType)
    delta = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    VALUE_OPERANDS: ClassVar[tuple[str, ...]] = ("start", "limit", "delta")

    @classmethod
    def infer(cls, types, props, values):
        elem = same_elem(types)
        if any(t.get_num_dims() != 0 for t in types):
            raise VerifyException("start, limit and delta must be scalars (rank 0)")
        if any(v is None for v in values):
            return [None]
        start, limit, delta = (v.item() for v in values)
        if delta == 0:
            raise VerifyException("delta must be non-zero")
        return [tensor(elem, (max(int(np.ceil((limit - start) / delta)), 0),))]


@irdl_op_definition
class DepthToSpaceOp(GraphOp):
    """Move blocks of channels into space (mode DCR or CRD)."""

    name = "graph.depth_to_space"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    blocksize = prop_def(IntegerAttr[I64])
    mode = prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_rank(x, 4, "input")
        b = get_int(props, "blocksize")
        n, c, h, w = shape_of(x)
        if b < 1 or c % (b * b):
            raise VerifyException(f"channels {c} are not divisible by blocksize^2 = {b * b}")
        if get_str(props, "mode", "DCR") not in ("DCR", "CRD"):
            raise VerifyException("mode must be DCR or CRD")
        return [tensor(x.element_type, (n, c // (b * b), h * b, w * b))]


@irdl_op_definition
class SpaceToDepthOp(GraphOp):
    """Move blocks of space into channels (the inverse of depth_to_space in the same mode;
    DCR when `mode` is absent)."""

    name = "graph.space_to_depth"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    blocksize = prop_def(IntegerAttr[I64])
    mode = opt_prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        require_rank(x, 4, "input")
        b = get_int(props, "blocksize")
        n, c, h, w = shape_of(x)
        if b < 1 or h % b or w % b:
            raise VerifyException(f"spatial dims {h}x{w} are not divisible by blocksize {b}")
        if get_str(props, "mode", "DCR") not in ("DCR", "CRD"):
            raise VerifyException("mode must be DCR or CRD")
        return [tensor(x.element_type, (n, c * b * b, h // b, w // b))]


@irdl_op_definition
class TriluOp(GraphOp):
    """The upper (`upper`) or lower triangle of the last two dims, from diagonal `k` on
    (k > 0 above the main diagonal); the rest is zero."""

    name = "graph.trilu"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    k = prop_def(IntegerAttr[I64])
    upper = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer(cls, types, props, values):
        (x,) = types
        if x.get_num_dims() < 2:
            raise VerifyException(f"trilu needs a tensor of rank >= 2, got {x}")
        return [x]


@irdl_op_definition
class CustomOp(GraphOp):
    """An operator a plugin brings with its own tile kernel (`ge.register_op(..., kernel=)`,
    ge/plugins.py): opaque to ge -- no rule fuses into it, decompose leaves it, it gets plain
    (ND) tensors and a kernel of its own, written by the plugin's builder at the tile level.
    Its result types and its semantics are the plugin's declared shape inference and numpy
    reference, so IR naming an unregistered operator does not verify."""

    name = "graph.custom"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    domain = prop_def(StringAttr)
    op_type = prop_def(StringAttr)
    params = opt_prop_def(DictionaryAttr)
    traits = traits_def(Pure())
    assembly_format = "$op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    @classmethod
    def infer(cls, types, props, values):
        from ge.plugins import infer_custom

        return [infer_custom(props, types[0])]


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        ReluOp, SigmoidOp, TanhOp, ErfOp, SqrtOp, ExpOp, LogOp, SinOp, CosOp, NegOp, AbsOp, SignOp,
        ReciprocalOp, FloorOp, CeilOp, RoundOp, SoftplusOp, SoftsignOp, HardSwishOp, IdentityOp,
        LeakyReluOp, EluOp, CeluOp, SeluOp, HardSigmoidOp, ThresholdedReluOp, GeluOp, DropoutOp,
        NotOp, ClipOp, CastOp,
        AddOp, SubOp, MulOp, DivOp, ModOp, PowOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
        GreaterOrEqualOp, AndOp, OrOp, XorOp, PReluOp, SumOp, MaxOp, MinOp, MeanOp, WhereOp,
        Conv2dOp, MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp, GlobalMaxPoolOp, BatchNormOp, LayerNormOp,
        LrnOp, SoftmaxOp, LogSoftmaxOp, MatMulOp, GemmOp,
        QuantizeOp, DequantizeOp, QuantConv2dOp, QuantMatMulOp,
        ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceL2Op,
        ReduceSumSquareOp, ArgMaxOp, ArgMinOp,
        ReshapeOp, FlattenOp, TransposeOp, ConcatOp, SplitOp, SliceOp, GatherOp, SqueezeOp,
        UnsqueezeOp, ExpandOp, TileOp, PadOp, ShapeOp, ConstantOfShapeOp, RangeOp,
        DepthToSpaceOp, SpaceToDepthOp, TriluOp,
        CustomOp,
    ],
    [],
)
install_fast_verify(Graph)  # xDSL's verdict, faster (dialects/fast_verify.py)


def argument_names(func_op) -> list[str]:
    """The user-facing input names of a graph function: the `ge.name` argument attributes
    the importer records (ONNX input names), else the printed `%names`."""
    attrs = func_op.arg_attrs.data if func_op.arg_attrs is not None else ()
    names = []
    for i, arg in enumerate(func_op.body.block.args):
        name = attrs[i].data.get("ge.name") if i < len(attrs) else None
        names.append(name.data if isinstance(name, StringAttr) else arg.name_hint or f"arg{i}")
    return names
