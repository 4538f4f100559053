"""ONNX -> `graph` dialect importer.

One graph op per ONNX node (a few legacy forms are spelled out with reshapes), static shapes
for every value, initializers as `graph.constant` (`dense_resource` blobs for weights), ONNX
node names as op locations (`loc("conv1")`). Attributes are normalized here so the graph level
never sees `auto_pad`, negative axes or opset-dependent attribute/input placement.

Shapes come from each op's own inference (`GraphOp.infer`). Where a shape depends on a
value (Reshape's target from a Shape -> Gather -> Concat chain), the importer propagates small
constant values through the reference kernels while it imports, so the result type is static
even though the chain itself stays in the graph for the optimizer to fold.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import dtypes, graph
from ge.dialects.blobs import constant_attr
from ge.errors import ModelFormatError, ShapeError, UnsupportedModelError
from ge.frontend.registry import registrar

MIN_OPSET = 7
MAX_OPSET = onnx.defs.onnx_opset_version()

# Values with at most this many elements are propagated as constants while importing.
PROPAGATE_LIMIT = 4096

_ONNX_TO_ELEM: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT: dtypes.element_type(np.float32),
    onnx.TensorProto.FLOAT16: dtypes.element_type(np.float16),
    onnx.TensorProto.DOUBLE: dtypes.element_type(np.float64),
    onnx.TensorProto.INT64: dtypes.element_type(np.int64),
    onnx.TensorProto.INT32: dtypes.element_type(np.int32),
    onnx.TensorProto.INT16: dtypes.element_type(np.int16),
    onnx.TensorProto.INT8: dtypes.element_type(np.int8),
    onnx.TensorProto.UINT8: dtypes.element_type(np.uint8),
    onnx.TensorProto.UINT16: dtypes.element_type(np.uint16),
    onnx.TensorProto.UINT32: dtypes.element_type(np.uint32),
    onnx.TensorProto.UINT64: dtypes.element_type(np.uint64),
    onnx.TensorProto.BOOL: dtypes.element_type(np.bool_),
}


class NodeError(Exception):
    """A problem with one node; the importer adds the node's name, type and opset."""


class NeedsInputValue(UnsupportedModelError):
    """A graph input is used where ge needs a compile-time value (a shape, axes, pads).

    `ge.backend` answers by specializing the model on the values given at run time
    (`frozen_inputs`); the compiler reports it as an error.
    """

    def __init__(self, message: str, names: list[str]):
        super().__init__(message)
        self.names = names


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def load_onnx_model(model: str | os.PathLike | bytes | onnx.ModelProto, name: str | None = None) -> onnx.ModelProto:
    """Read a model from a path (`.onnx` binary or `.onnxtxt` text), bytes or a ModelProto."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, bytes | bytearray):
        return _parse_bytes(bytes(model), name or "<bytes>")
    path = Path(model)
    if not path.exists():
        raise ModelFormatError(f"{path}: no such file")
    data = path.read_bytes()
    if path.suffix == ".onnxtxt":
        return parse_onnx_text(data.decode(errors="replace"), str(path))
    proto = _parse_bytes(data, str(path))
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
        try:
            onnx.load_external_data_for_model(proto, str(path.parent))
        except Exception as e:  # the onnx package raises several kinds here
            raise ModelFormatError(f"{path}: cannot load external weight data: {e}") from None
    return proto


def _parse_bytes(data: bytes, where: str) -> onnx.ModelProto:
    if not data:
        raise ModelFormatError(f"{where}: the file is empty, not an ONNX model")
    try:
        proto = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf's DecodeError and friends
        raise ModelFormatError(
            f"{where}: not a valid ONNX model (the protobuf cannot be decoded: {e}); "
            "is the file truncated or of another format?"
        ) from None
    if not proto.graph.node and not proto.graph.output:
        raise ModelFormatError(f"{where}: not a valid ONNX model (it has no graph)")
    return proto


def parse_onnx_text(text: str, where: str = "<text>") -> onnx.ModelProto:
    """Parse ONNX's textual syntax (`onnx.parser`), as used by the lit tests."""
    try:
        return onnx.parser.parse_model(text)
    except Exception as e:
        raise ModelFormatError(f"{where}: cannot parse ONNX text: {e}") from None


def parse_input_shape(spec: str | dict[str, Sequence[int]] | None) -> dict[str, tuple[int, ...]]:
    """ATC's `--input_shape "name:1,3,224,224;name2:1,128"` (or a dict) -> {name: shape}."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {k: tuple(int(d) for d in v) for k, v in spec.items()}
    out: dict[str, tuple[int, ...]] = {}
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        name, sep, dims = item.rpartition(":")
        if not sep or not name:
            raise ShapeError(f"input_shape entry '{item}' is not of the form name:d0,d1,...")
        try:
            out[name] = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            raise ShapeError(f"input_shape entry '{item}': dims must be integers") from None
        if 0 in out[name]:
            raise ShapeError(f"input_shape entry '{item}': dim {out[name].index(0)} is 0; every dim must be "
                             "positive (-1 stands for the batch dim with a dynamic batch size)")
    return out


# --------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------


@dataclass
class NodeContext:
    """What a converter sees of one node: inputs, known values, attributes, and `emit`."""

    importer: Importer
    node: onnx.NodeProto
    opset: int
    inputs: list[SSAValue | None]
    values: list[np.ndarray | None]
    attrs: dict[str, object] = field(default_factory=dict)

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def input(self, i: int) -> SSAValue:
        if i >= len(self.inputs) or self.inputs[i] is None:
            raise NodeError(f"input #{i} is required")
        return self.inputs[i]  # type: ignore[return-value]

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def type(self, i: int) -> TensorType:
        return self.input(i).type  # type: ignore[return-value]

    def rank(self, i: int = 0) -> int:
        return self.type(i).get_num_dims()

    def const(self, i: int, what: str) -> np.ndarray:
        """The value of input i, which must be a constant."""
        if not self.has_input(i):
            raise NodeError(f"{what} (input #{i}) is required")
        if self.values[i] is None:
            self.importer.raise_if_graph_inputs([self.inputs[i]], self, what)
            raise NodeError(f"{what} (input #{i}) must be a constant; ge needs it at compile time")
        return self.values[i]  # type: ignore[return-value]

    def const_or(self, i: int, default, what: str):
        return self.const(i, what) if self.has_input(i) else default

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and self.node.output[i] != "" and self.node.output[i] in self.importer.used

    def emit(self, op_cls: type[graph.GraphOp], operands: Sequence, props: dict | None = None) -> Operation:
        return self.importer.emit(self, op_cls, operands, props)

    def constant(self, arr: np.ndarray, hint: str = "c") -> SSAValue:
        return self.importer.constant(np.asarray(arr), f"{node_name(self.node)}_{hint}")


Converter = Callable[[NodeContext], Sequence[SSAValue | None]]
CONVERTERS: dict[str, Converter] = {}


converts = registrar(CONVERTERS)  # @converts(name, ...) fills CONVERTERS


def supported_ops() -> list[str]:
    """ONNX operator types (default domain) the importer converts."""
    _load_converters()
    return sorted(CONVERTERS)


def _load_converters() -> None:
    from ge.frontend import onnx_ops  # noqa: F401  (registers the converters)


class Importer:
    """Builds one `func.func @main` from an ONNX graph."""

    def __init__(
        self,
        model: onnx.ModelProto,
        where: str,
        input_shape: dict[str, tuple[int, ...]],
        frozen_inputs: dict[str, np.ndarray] | None = None,
    ):
        self.model = model
        self.frozen = dict(frozen_inputs or {})
        self.arg_names: dict[SSAValue, str] = {}
        self.where = where
        self.input_shape = input_shape
        self.opset = _default_opset(model, where)
        self.env: dict[str, SSAValue] = {}
        self.known: dict[SSAValue, np.ndarray] = {}
        self.ops: list[Operation] = []
        self.used: set[str] = set()
        self._const_cache: dict[tuple, SSAValue] = {}
        # uint8 quantized values -> their int8-carried form (q - 128) for the int8 graph ops (onnx_ops.py)
        self.shifted_u8: dict[SSAValue, SSAValue] = {}

    # -- building blocks -----------------------------------------------------------

    def constant(self, arr: np.ndarray, name: str) -> SSAValue:
        arr = np.asarray(arr, order="C")
        key = None
        if arr.size <= 64:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            if key in self._const_cache:
                return self._const_cache[key]
        t = graph.tensor(dtypes.element_type(arr.dtype), arr.shape)
        op = graph.ConstantOp(constant_attr(arr, t, name))
        op.output.name_hint = _value_name(name)
        self.ops.append(op)
        if arr.size <= PROPAGATE_LIMIT:
            self.known[op.output] = arr
        if key is not None:
            self._const_cache[key] = op.output
        return op.output

    def value_of(self, v: SSAValue | None) -> np.ndarray | None:
        return None if v is None else self.known.get(v)

    def emit(self, ctx: NodeContext, op_cls: type[graph.GraphOp], operands: Sequence, props: dict | None) -> Operation:
        values = [
            None if o is None else [self.value_of(v) for v in o] if isinstance(o, list | tuple) else self.value_of(o)
            for o in operands
        ]
        try:
            op = op_cls.make(operands, props, values)
        except VerifyException as e:
            by_name = dict(zip((n for n, _ in op_cls.get_irdl_definition().operands), operands))
            self.raise_if_graph_inputs([by_name[n] for n in op_cls.VALUE_OPERANDS], ctx, "a shape operand")
            raise NodeError(str(e)) from None
        op.location = node_location(ctx.node)
        self.ops.append(op)
        self._propagate(op)
        return op

    def raise_if_graph_inputs(self, values: Sequence, ctx: NodeContext, what: str) -> None:
        """Raise NeedsInputValue if unknown `values` are graph inputs (which a caller can freeze)."""
        names = [self.arg_names[v] for v in values if v in self.arg_names and self.value_of(v) is None]
        if names:
            raise NeedsInputValue(
                f"{self.where}: node '{node_name(ctx.node)}' ({ctx.node.op_type}) needs the value of graph "
                f"input(s) {', '.join(names)} as {what} at compile time; make them initializers or constants",
                names,
            )

    def _propagate(self, op: Operation) -> None:
        from ge.runtime.reference import evaluate

        if isinstance(op, graph.ShapeOp):
            shape = graph.shape_of(op.input.type)
            start = graph.get_int(op.properties, "start", 0)
            end = graph.get_int(op.properties, "end", len(shape))
            self.known[op.output] = np.array(shape[start:end], dtype=np.int64)
            return
        args = [self.value_of(o) for o in op.operands]
        if any(a is None for a in args):
            return
        if any(np.prod(r.type.get_shape()) > PROPAGATE_LIMIT for r in op.results):
            return
        for r, v in zip(op.results, evaluate(op, args)):  # type: ignore[arg-type]
            self.known[r] = v

    # -- the graph -----------------------------------------------------------------

    def run(self) -> ModuleOp:
        _load_converters()
        g = self.model.graph
        self._check_supported(g)
        self._check_old_opset(g)
        for out in g.output:
            self.used.add(out.name)
        for n in g.node:
            self.used.update(i for i in n.input if i)

        inits = {t.name: t for t in g.initializer}
        if g.sparse_initializer:
            raise UnsupportedModelError(f"{self.where}: sparse initializers are not supported")
        self._check_input_shape_names(g, inits)
        args: list[tuple[str, TensorType]] = []
        for vi in g.input:
            if vi.name in inits:
                continue
            if vi.name in self.frozen:
                self.env[vi.name] = self.constant(self.frozen[vi.name], vi.name)
                continue
            args.append((vi.name, self._input_type(vi)))
        for t in g.initializer:
            arr = _tensor_array(t, self.where)
            v = self.constant(arr, t.name)
            self.env[t.name] = v
            self.known[v] = arr  # initializers are always known

        fn = func.FuncOp(
            "main",
            FunctionType.from_lists([t for _, t in args], []),
            arg_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n)}) for n, _ in args]),
        )
        block = fn.body.block
        for (n, _), a in zip(args, block.args):
            a.name_hint = _value_name(n)
            self.env[n] = a
            self.arg_names[a] = n

        for node in g.node:
            self._convert(node)

        results = []
        for out in g.output:
            if out.name not in self.env:
                raise ModelFormatError(f"{self.where}: graph output '{out.name}' is not produced by any node")
            results.append(self.env[out.name])
        for op in self.ops:
            block.add_op(op)
        block.add_op(func.ReturnOp(*results))
        fn.function_type = FunctionType.from_lists([t for _, t in args], [r.type for r in results])
        fn.res_attrs = ArrayAttr([DictionaryAttr({"ge.name": StringAttr(o.name)}) for o in g.output])
        module = ModuleOp([fn])
        return module

    def _check_input_shape_names(self, g: onnx.GraphProto, inits: dict) -> None:
        """Every name input_shape gives is a graph input (a typo must not be silently ignored)."""
        real = [vi.name for vi in g.input if vi.name not in inits]
        unknown = [n for n in self.input_shape if n not in real]
        if unknown:
            raise ShapeError(
                f"{self.where}: input_shape names {', '.join(map(repr, unknown))}, which "
                f"{'is not an input' if len(unknown) == 1 else 'are not inputs'} of the model; its inputs: "
                + (", ".join(f"'{vi.name}' {_declared_shape(vi)}" for vi in g.input if vi.name not in inits) or "none")
            )

    def _check_supported(self, g: onnx.GraphProto) -> None:
        bad = []
        for n in g.node:
            if converter_for(n) is None:
                domain = n.domain or "ai.onnx"
                bad.append(f"'{node_name(n)}' ({domain}::{n.op_type}, opset {self._opset_of(n.domain)})")
        if bad:
            raise UnsupportedModelError(
                f"{self.where}: {len(bad)} node(s) use operators ge does not support: " + ", ".join(bad)
                + ". Supported operators: " + ", ".join(sorted(CONVERTERS)) + "."
            )

    def _check_old_opset(self, g: onnx.GraphProto) -> None:
        """A model older than MIN_OPSET is accepted when none of its operators changed
        between its opset and MIN_OPSET (ONNX Not, Relu... have one version)."""
        if self.opset >= MIN_OPSET:
            return
        changed = sorted({
            n.op_type for n in g.node
            if onnx.defs.get_schema(n.op_type, self.opset).since_version
            != onnx.defs.get_schema(n.op_type, MIN_OPSET).since_version
        })
        if changed:
            raise UnsupportedModelError(
                f"{self.where}: opset {self.opset} is older than {MIN_OPSET}, and these operators changed "
                f"meaning since: {', '.join(changed)}; convert the model with onnx.version_converter"
            )
        self.opset = MIN_OPSET

    def _opset_of(self, domain: str) -> int | str:
        for o in self.model.opset_import:
            if o.domain == domain or (domain in ("", "ai.onnx") and o.domain in ("", "ai.onnx")):
                return o.version
        return "?"

    def _input_type(self, vi: onnx.ValueInfoProto) -> TensorType:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise UnsupportedModelError(f"{self.where}: input '{vi.name}' is not a tensor")
        elem = _elem_type(tt.elem_type, f"{self.where}: input '{vi.name}'")
        if vi.name in self.input_shape:
            shape = self.input_shape[vi.name]
            if tt.HasField("shape") and len(tt.shape.dim) != len(shape):
                raise ShapeError(
                    f"{self.where}: input_shape gives '{vi.name}' rank {len(shape)} but the model says rank {len(tt.shape.dim)}"
                )
            if any(d < 0 for d in shape):
                raise ShapeError(f"{self.where}: input_shape for '{vi.name}' has a negative dim: {list(shape)}")
            return graph.tensor(elem, shape)
        if not tt.HasField("shape"):
            raise ShapeError(f"{self.where}: input '{vi.name}' has no shape; give one with input_shape \"{vi.name}:d0,d1,...\"")
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in tt.shape.dim]
        if None in dims:
            raise ShapeError(f"{self.where}: {symbolic_dims_hint(vi)}")
        return graph.tensor(elem, dims)

    def _convert(self, node: onnx.NodeProto) -> None:
        inputs: list[SSAValue | None] = []
        for name in node.input:
            if not name:
                inputs.append(None)
                continue
            if name not in self.env:
                raise ModelFormatError(
                    f"{self.where}: node '{node.name}' ({node.op_type}) reads '{name}', which no earlier node or "
                    "graph input produces (the graph is not topologically sorted or is malformed)"
                )
            inputs.append(self.env[name])
        self._check_attributes(node)
        self._check_agreement(node, inputs)
        ctx = NodeContext(
            self, node, self.opset, inputs, [self.value_of(v) for v in inputs],
            {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute},
        )
        first_new = len(self.ops)
        try:
            outs = converter_for(node)(ctx)
        except NodeError as e:
            raise UnsupportedModelError(
                f"{self.where}: node '{node_name(node)}' ({node.op_type}, opset {self.opset}): {e}", node=node_name(node)
            ) from None
        created = set(self.ops[first_new:])
        for name, v in zip(node.output, outs):
            if name and v is not None:
                if v.owner in created:
                    v.name_hint = _value_name(name)
                self.env[name] = v

    def _node_fault(self, node: onnx.NodeProto, fault: str) -> ModelFormatError:
        return ModelFormatError(f"{self.where}: node '{node_name(node)}' ({node.op_type}, opset {self.opset}): {fault}",
                                node=node_name(node))

    def _check_attributes(self, node: onnx.NodeProto) -> None:
        """Attribute names and types as the operator's schema defines them (onnx.checker's rule)."""
        try:
            schema = onnx.defs.get_schema(node.op_type, self.opset, node.domain)
        except onnx.defs.SchemaError:
            return  # no schema at this opset: the converter reports what it cannot do
        for a in node.attribute:
            if a.ref_attr_name:
                continue
            spec = schema.attributes.get(a.name)
            if spec is None:
                known = ", ".join(sorted(schema.attributes)) or "none"
                raise self._node_fault(node, f"unknown attribute '{a.name}' (opset {schema.since_version} "
                                             f"{node.op_type} has: {known})")
            want = onnx.AttributeProto.AttributeType.Name(int(spec.type))
            got = onnx.AttributeProto.AttributeType.Name(a.type)
            if a.type != int(spec.type):
                raise self._node_fault(node, f"attribute '{a.name}' is {got}; ONNX requires {want}")

    def _check_agreement(self, node: onnx.NodeProto, inputs: list[SSAValue | None]) -> None:
        """Attributes that restate an input's shape agree with it (ONNX shape inference's checks)."""
        check = _AGREEMENT.get(node.op_type)
        if check is None:
            return
        types = [v.type if v is not None and isinstance(v.type, TensorType) else None for v in inputs]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        fault = check(node, attrs, types)
        if fault:
            raise self._node_fault(node, fault)


def converter_for(node: onnx.NodeProto) -> Converter | None:
    """The node's converter: ge's own for the default domain, a registered custom
    operator's (ge.plugins, README "Extending ge") for another domain."""
    if node.domain in ("", "ai.onnx"):
        _load_converters()
        return CONVERTERS.get(node.op_type)
    from ge.plugins import onnx_converter

    return onnx_converter(node.domain, node.op_type)


def _declared_shape(vi: onnx.ValueInfoProto) -> str:
    """`[N, 3, 224, 224]`: an input's declared dims, symbolic ones by name ('?' when unnamed)."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return "(no shape)"
    return "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in tt.shape.dim) + "]"


def _example_dim(i: int, rank: int) -> int:
    """A concrete stand-in for a symbolic dim in a hint: batch 1, image 224 x 224, else 128."""
    if i == 0:
        return 1
    return 224 if rank == 4 and i >= 2 else 128


def symbolic_dims_hint(vi: onnx.ValueInfoProto) -> str:
    """Which dims of an input are symbolic, and an input_shape with numbers in their place."""
    dims = list(vi.type.tensor_type.shape.dim)
    symbolic = [(i, d.dim_param or "?") for i, d in enumerate(dims) if not (d.HasField("dim_value") and d.dim_value >= 0)]
    example = ",".join(str(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0 else str(_example_dim(i, len(dims)))
                       for i, d in enumerate(dims))
    named = ", ".join(f"'{label}' (dim {i})" for i, label in symbolic)
    return (f"input '{vi.name}' {_declared_shape(vi)} has symbolic dim{'s' if len(symbolic) > 1 else ''} {named}; "
            f"give static dims with input_shape, e.g. \"{vi.name}:{example}\" (your sizes in place of "
            f"{', '.join(label for _, label in symbolic)})")


def _conv_kernel_agrees(node: onnx.NodeProto, attrs: dict, types: list) -> str | None:
    """Conv: kernel_shape is the weight's spatial dims; the weight has the input's rank."""
    if len(types) < 2 or types[0] is None or types[1] is None:
        return None
    x, w = list(types[0].get_shape()), list(types[1].get_shape())
    if len(w) != len(x):
        return f"the weight '{node.input[1]}' has rank {len(w)} ({w}); the input has rank {len(x)}"
    kernel = attrs.get("kernel_shape")
    if kernel is not None and list(kernel) != w[2:]:
        return (f"kernel_shape {list(kernel)} disagrees with the weight '{node.input[1]}' of shape {w} "
                f"(a {'x'.join(map(str, w[2:]))} kernel)")
    return None


def _window_agrees(node: onnx.NodeProto, attrs: dict, types: list) -> str | None:
    """Conv / pools: kernel_shape, strides and dilations give one entry per spatial dim of
    the input, pads two (ONNX shape inference: "Attribute ... has incorrect size")."""
    if not types or types[0] is None:
        return None
    spatial = types[0].get_num_dims() - 2
    for name, per_dim in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 2)):
        value = attrs.get(name)
        if value is not None and len(value) != per_dim * spatial:
            return (f"{name} {list(value)} has {len(value)} entries; the input {list(types[0].get_shape())} has "
                    f"{spatial} spatial dim(s), so it needs {per_dim * spatial}")
    return None


def _conv_agrees(node: onnx.NodeProto, attrs: dict, types: list) -> str | None:
    return _window_agrees(node, attrs, types) or _conv_kernel_agrees(node, attrs, types)


_AGREEMENT: dict[str, Callable[[onnx.NodeProto, dict, list], str | None]] = {
    "Conv": _conv_agrees,
    "ConvTranspose": _conv_agrees,
    "MaxPool": _window_agrees,
    "AveragePool": _window_agrees,
    "LpPool": _window_agrees,
}


def _default_opset(model: onnx.ModelProto, where: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise ModelFormatError(f"{where}: the model imports no version of the default ONNX domain")
    v = versions[0]
    if not 1 <= v <= MAX_OPSET:
        raise UnsupportedModelError(f"{where}: opset {v} is outside the supported range {MIN_OPSET}..{MAX_OPSET}")
    return v


def _elem_type(onnx_type: int, where: str) -> Attribute:
    if onnx_type not in _ONNX_TO_ELEM:
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in onnx.TensorProto.DataType.values() else onnx_type
        raise UnsupportedModelError(f"{where}: element type {name} is not supported")
    return _ONNX_TO_ELEM[onnx_type]


def _tensor_array(t: onnx.TensorProto, where: str) -> np.ndarray:
    _elem_type(t.data_type, f"{where}: tensor '{t.name}'")
    try:
        return np.require(numpy_helper.to_array(t), requirements="C")  # keeps 0-d tensors 0-d
    except Exception as e:
        raise ModelFormatError(f"{where}: tensor '{t.name}' cannot be read: {e}") from None


def elem_of_onnx(onnx_type: int) -> Attribute:
    return _elem_type(onnx_type, "Cast")


def array_of_tensor(t: onnx.TensorProto) -> np.ndarray:
    return _tensor_array(t, "Constant")


def node_name(node: onnx.NodeProto) -> str:
    """How errors and locations name a node: its name, else its first output's name."""
    return node.name or (node.output[0] if node.output else node.op_type)


def node_location(node: onnx.NodeProto) -> NameLoc:
    return NameLoc(StringAttr(node_name(node)), NoneAttr())


_NAME_BAD = re.compile(r"[^\w$.-]")


def _value_name(name: str) -> str:
    out = _NAME_BAD.sub("_", name)
    if not out or out[0].isdigit():
        out = "v" + out
    return out


def import_model(
    model: str | os.PathLike | bytes | onnx.ModelProto,
    input_shape: str | dict[str, Sequence[int]] | None = None,
    name: str | None = None,
    frozen_inputs: dict[str, np.ndarray] | None = None,
) -> ModuleOp:
    """Import an ONNX model into a verified graph-dialect module.

    `frozen_inputs` turns the named graph inputs into constants with the given values
    (specialization, as `ge.backend` does for inputs used as shapes or axes).
    """
    where = name or (str(model) if isinstance(model, str | os.PathLike) else "<model>")
    proto = load_onnx_model(model, where)
    module = Importer(proto, where, parse_input_shape(input_shape), frozen_inputs).run()
    try:
        module.verify()
    except VerifyException as e:
        raise ModelFormatError(f"{where}: the imported graph does not verify: {e}") from None
    return module
