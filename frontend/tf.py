"""TensorFlow frozen GraphDef (`.pb`) -> `graph` dialect importer (ATC's `--framework 3`).

Reads the protobuf with the GraphDef classes that `tensorboard` ships
(`tensorboard.compat.proto`), so TensorFlow itself is never imported. A frozen graph holds
its weights as `Const` nodes (-> `graph.constant`, weight blobs), its inputs as
`Placeholder`s (-> function arguments; unknown dims come from `input_shape`), and
Identity/NoOp glue that is skipped. Node names ride as op locations; shapes come from each
graph op's `infer`, with small constant values propagated (Shape -> StridedSlice -> Pack ->
Reshape chains give static shapes, as in the ONNX importer).

Layout: TensorFlow models are NHWC, the graph dialect's convolutions and pools are NCHW.
Every 4-D value may have two forms, NHWC (the origin format, what the user sees at the
inputs and outputs) and NCHW; each form is made on demand by one `graph.transpose`.
Convolutions, pools and batch norm read and write NCHW; elementwise ops, BiasAdd, Pad,
ConcatV2 and spatial Mean stay in NCHW when their 4-D operand has it (per-channel constants
are permuted at import time). So a Keras CNN becomes one transpose at the input and NCHW
throughout, rather than a transpose pair around every convolution.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import dtypes, graph
from ge.dialects.blobs import constant_attr
from ge.errors import ModelFormatError, ShapeError, UnsupportedModelError
from ge.frontend.onnx import PROPAGATE_LIMIT, _value_name, parse_input_shape
from ge.frontend.registry import registrar

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto) -> numpy.
_TF_DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.int32), 4: np.dtype(np.uint8),
    5: np.dtype(np.int16), 6: np.dtype(np.int8), 9: np.dtype(np.int64), 10: np.dtype(np.bool_),
    17: np.dtype(np.uint16), 19: np.dtype(np.float16), 22: np.dtype(np.uint32), 23: np.dtype(np.uint64),
}
# Which repeated field of a TensorProto holds the values when tensor_content is empty.
_VAL_FIELDS = {
    np.float32: "float_val", np.float64: "double_val", np.int64: "int64_val", np.bool_: "bool_val",
    np.uint32: "uint32_val", np.uint64: "uint64_val", np.float16: "half_val",
}


def _pb():
    try:
        from tensorboard.compat.proto import graph_pb2
    except ImportError:  # pragma: no cover - the `tf` extra is missing
        raise UnsupportedModelError(
            "reading TensorFlow models needs the GraphDef protos of the `tensorboard` package: "
            "pip install 'ge[tf]'"
        ) from None
    return graph_pb2


class NodeError(Exception):
    """A problem with one node; the importer adds the node's name and op."""


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def is_graphdef_message(model) -> bool:
    """A GraphDef message from any copy of TensorFlow's protos (tensorboard's, tensorflow's)."""
    descriptor = getattr(model, "DESCRIPTOR", None)
    return descriptor is not None and descriptor.full_name.endswith(".GraphDef")


def is_tf_source(model) -> bool:
    """Whether ge.compile should read `model` as TensorFlow: a `.pb` path or a GraphDef."""
    if isinstance(model, str | os.PathLike):
        return Path(model).suffix == ".pb"
    return is_graphdef_message(model)


def parse_graphdef(data: bytes):
    """The GraphDef in `data`, or None if it is not one (empty, undecodable, no op nodes)."""
    try:
        g = _pb().GraphDef.FromString(data)
    except Exception:  # protobuf's DecodeError and friends
        return None
    if not g.node or any(not n.op or not n.name for n in g.node):
        return None
    return g


def load_graphdef(model, where: str):
    """A GraphDef from a path, bytes or a GraphDef message; ModelFormatError if it is none."""
    if is_graphdef_message(model):
        return model
    if isinstance(model, bytes | bytearray):
        data = bytes(model)
    else:
        path = Path(model)
        if not path.exists():
            raise ModelFormatError(f"{path}: no such file")
        data = path.read_bytes()
    if not data:
        raise ModelFormatError(f"{where}: the file is empty, not a TensorFlow GraphDef")
    g = parse_graphdef(data)
    if g is None:
        raise ModelFormatError(
            f"{where}: not a valid TensorFlow GraphDef (the protobuf cannot be decoded or has no nodes); "
            "is the file truncated, a SavedModel's saved_model.pb, or of another format? "
            "ge reads frozen graphs (convert_variables_to_constants_v2)"
        )
    return g


def tensor_array(t) -> np.ndarray:
    """A TensorFlow TensorProto -> numpy (tensor_content, or the typed *_val fields, where
    one value stands for all)."""
    if t.dtype not in _TF_DTYPES:
        raise NodeError(f"element type {_dtype_name(t.dtype)} is not supported")
    dt = _TF_DTYPES[t.dtype]
    shape = tuple(d.size for d in t.tensor_shape.dim)
    size = int(np.prod(shape))
    if t.tensor_content:
        arr = np.frombuffer(t.tensor_content, dtype=dt)
    else:
        vals = getattr(t, _VAL_FIELDS.get(dt.type, "int_val"))
        if dt == np.float16:
            arr = np.array(vals, np.uint16).view(np.float16)
        else:
            arr = np.array(vals, dtype=dt)
        if arr.size == 1 and size != 1:
            arr = np.full(size, arr[0], dt)
        elif arr.size == 0:
            arr = np.zeros(size, dt)
    if arr.size != size:
        raise NodeError(f"the constant holds {arr.size} values for shape {list(shape)}")
    return arr.reshape(shape).copy()


def _dtype_name(code: int) -> str:
    try:
        from tensorboard.compat.proto import types_pb2

        return types_pb2.DataType.Name(code)
    except (ImportError, ValueError):
        return str(code)


def _elem(code: int, what: str):
    if code not in _TF_DTYPES:
        raise NodeError(f"{what} has element type {_dtype_name(code)}, which ge does not support")
    return dtypes.element_type(_TF_DTYPES[code])


def _attr(a):
    """An AttrValue -> a Python value (list values as lists)."""
    kind = a.WhichOneof("value")
    if kind == "list":
        lst = a.list
        for f in ("i", "f", "s", "b", "type"):
            if len(getattr(lst, f)):
                vals = list(getattr(lst, f))
                return [v.decode() for v in vals] if f == "s" else vals
        return [list(s.dim) for s in lst.shape] if len(lst.shape) else []
    if kind == "s":
        return a.s.decode()
    return getattr(a, kind) if kind else None


# --------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------


@dataclass
class Value:
    """One TensorFlow tensor: its NHWC (origin) form and, for 4-D tensors, an NCHW form."""

    nhwc: SSAValue | None = None
    nchw: SSAValue | None = None
    node: str = ""  # the TensorFlow node that produced it (locates the layout transposes)

    @property
    def rank(self) -> int:
        return (self.nhwc or self.nchw).type.get_num_dims()  # type: ignore[union-attr]


@dataclass
class NodeContext:
    importer: TfImporter
    node: object
    inputs: list[Value]
    attrs: dict = field(default_factory=dict)

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def x(self, i: int = 0) -> SSAValue:
        """Input i in its origin (NHWC) form."""
        return self.importer.origin(self.inputs[i])

    def nchw(self, i: int = 0) -> SSAValue:
        return self.importer.as_nchw(self.inputs[i])

    def const(self, i: int, what: str) -> np.ndarray:
        v = self.importer.value_of(self.x(i))
        if v is None:
            raise NodeError(f"{what} (input #{i}) must be a constant; ge needs it at compile time")
        return v

    def emit(self, op_cls, operands: Sequence, props: dict | None = None) -> SSAValue:
        return self.importer.emit(self.node, op_cls, operands, props).results[0]

    def constant(self, arr: np.ndarray, hint: str = "c") -> SSAValue:
        return self.importer.constant(np.asarray(arr), f"{self.node.name}_{hint}")


Converter = Callable[[NodeContext], Value]
CONVERTERS: dict[str, Converter] = {}
# Pass-through glue; a PlaceholderWithDefault in a frozen graph is its default value.
SKIPPED = ("Identity", "NoOp", "StopGradient", "Snapshot", "PlaceholderWithDefault")
VARIABLE_OPS = ("VarHandleOp", "ReadVariableOp", "VariableV2", "Variable", "AssignVariableOp")


converts = registrar(CONVERTERS)  # @converts(name, ...) fills CONVERTERS


def supported_ops() -> list[str]:
    """TensorFlow op types the importer converts (besides Const, Placeholder and the
    skipped Identity/NoOp glue)."""
    return sorted(CONVERTERS)


class TfImporter:
    """Builds one `func.func @main` from a frozen GraphDef."""

    def __init__(self, g, where: str, input_shape: dict[str, tuple[int, ...]], outputs: Sequence[str] | None):
        self.g, self.where, self.input_shape = g, where, input_shape
        self.nodes = {n.name: n for n in g.node}
        if len(self.nodes) != len(g.node):
            raise ModelFormatError(f"{where}: node names are not unique")
        self.outputs = list(outputs) if outputs else self._sinks()
        self.env: dict[str, Value] = {}
        self.known: dict[SSAValue, np.ndarray] = {}
        self.ops: list[Operation] = []
        self._const_cache: dict[tuple, SSAValue] = {}

    # -- graph structure -------------------------------------------------------------

    @staticmethod
    def _split(ref: str) -> tuple[str, int]:
        name, _, index = ref.partition(":")
        return name, int(index) if index else 0

    def _data_inputs(self, node) -> list[str]:
        return [i for i in node.input if not i.startswith("^")]

    def _sinks(self) -> list[str]:
        consumed = {self._split(i)[0] for n in self.g.node for i in self._data_inputs(n)}
        return [n.name for n in self.g.node if n.name not in consumed and n.op not in ("NoOp", "Const", "Placeholder")]

    def _order(self) -> list:
        """The nodes the outputs need, producers first (GraphDefs need not be sorted)."""
        order, state = [], {}
        for out in self.outputs:
            name = self._split(out)[0]
            if name not in self.nodes:
                raise ModelFormatError(f"{self.where}: output '{out}' names no node of the graph")
            stack = [(name, False)]
            while stack:
                name, done = stack.pop()
                if done:
                    state[name] = 2
                    order.append(self.nodes[name])
                    continue
                if state.get(name) == 2:
                    continue
                if state.get(name) == 1:
                    raise ModelFormatError(f"{self.where}: the graph has a cycle through node '{name}'")
                state[name] = 1
                stack.append((name, True))
                for ref in self._data_inputs(self.nodes[name]):
                    src = self._split(ref)[0]
                    if src not in self.nodes:
                        raise ModelFormatError(f"{self.where}: node '{name}' reads '{ref}', which no node produces")
                    if state.get(src) != 2:
                        stack.append((src, False))
        return order

    # -- building blocks -------------------------------------------------------------

    def constant(self, arr: np.ndarray, name: str) -> SSAValue:
        arr = np.asarray(arr, order="C")
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._const_cache:
            return self._const_cache[key]
        t = graph.tensor(dtypes.element_type(arr.dtype), arr.shape)
        op = graph.ConstantOp(constant_attr(arr, t, name))
        op.output.name_hint = _value_name(name)
        self.ops.append(op)
        self.known[op.output] = arr  # weights too: filters are rearranged at import time
        if key is not None:
            self._const_cache[key] = op.output
        return op.output

    def value_of(self, v: SSAValue) -> np.ndarray | None:
        return self.known.get(v)

    def emit(self, node, op_cls, operands: Sequence, props: dict | None = None) -> Operation:
        values = [None if o is None else [self.value_of(v) for v in o] if isinstance(o, list | tuple)
                  else self.value_of(o) for o in operands]
        try:
            op = op_cls.make(operands, props, values)
        except VerifyException as e:
            raise NodeError(str(e)) from None
        return self.add(node, op)

    def add(self, node, op: Operation) -> Operation:
        from ge.runtime.reference import evaluate

        op.location = NameLoc(StringAttr(node.name), NoneAttr())
        self.ops.append(op)
        if isinstance(op, graph.ShapeOp):
            self.known[op.output] = np.array(graph.shape_of(op.input.type), np.int64)
            return op
        args = [self.value_of(o) for o in op.operands]
        if all(a is not None for a in args) and all(
                np.prod(r.type.get_shape()) <= PROPAGATE_LIMIT for r in op.results):
            for r, v in zip(op.results, evaluate(op, args)):  # type: ignore[arg-type]
                self.known[r] = v
        return op

    def _layout_change(self, value: Value, v: SSAValue, perm: Sequence[int]) -> SSAValue:
        """`v` permuted, located at the TensorFlow node that produced `value`."""
        known = self.value_of(v)
        if known is not None:
            return self.constant(np.ascontiguousarray(np.transpose(known, perm)), f"{value.node}_t")
        op = self.emit(_Named(value.node), graph.TransposeOp, [v], {"perm": graph.int_array(perm)})
        op.results[0].name_hint = _value_name(f"{value.node}_{'nhwc' if tuple(perm) == TO_NHWC else 'nchw'}")
        return op.results[0]

    def origin(self, v: Value) -> SSAValue:
        if v.nhwc is None:
            v.nhwc = self._layout_change(v, v.nchw, TO_NHWC)  # type: ignore[arg-type]
        return v.nhwc

    def as_nchw(self, v: Value) -> SSAValue:
        if v.nchw is None:
            if v.rank != 4:
                raise NodeError(f"expected a 4-D NHWC tensor, got {v.nhwc.type}")  # type: ignore[union-attr]
            v.nchw = self._layout_change(v, v.nhwc, TO_NCHW)  # type: ignore[arg-type]
        return v.nchw

    # -- the whole graph -------------------------------------------------------------

    def run(self) -> ModuleOp:
        order = self._order()
        bad = [f"'{n.name}' ({n.op})" for n in order
               if n.op not in CONVERTERS and n.op not in SKIPPED and n.op not in ("Const", "Placeholder")]
        if bad:
            frozen_hint = ("; the graph still has variables: freeze it first (convert_variables_to_constants_v2)"
                           if any(n.op in VARIABLE_OPS for n in order) else "")
            raise UnsupportedModelError(
                f"{self.where}: {len(bad)} node(s) use TensorFlow operators ge does not support: "
                + ", ".join(bad) + frozen_hint + ". Supported: " + ", ".join(supported_ops()) + "."
            )
        placeholders = [n for n in order if n.op == "Placeholder"]
        unknown = [k for k in self.input_shape if k not in {p.name for p in placeholders}]
        if unknown:
            raise ShapeError(f"{self.where}: input_shape names {', '.join(map(repr, unknown))}, not an input "
                             f"of the graph; its inputs: {', '.join(repr(p.name) for p in placeholders) or 'none'}")
        args = [(p.name, self._input_type(p)) for p in placeholders]
        fn = func.FuncOp(
            "main", FunctionType.from_lists([t for _, t in args], []),
            arg_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n)}) for n, _ in args]),
        )
        for (name, _), a in zip(args, fn.body.block.args):
            a.name_hint = _value_name(name)
            self.env[name] = Value(nhwc=a, node=name)
        for node in order:
            if node.op != "Placeholder":
                self._convert(node)
        results = []
        for out in self.outputs:
            name, index = self._split(out)
            if index != 0:
                raise UnsupportedModelError(f"{self.where}: output '{out}': only output 0 of a node can be an output")
            results.append(self.origin(self.env[name]))
        block = fn.body.block
        for op in self.ops:
            block.add_op(op)
        block.add_op(func.ReturnOp(*results))
        fn.function_type = FunctionType.from_lists([t for _, t in args], [r.type for r in results])
        fn.res_attrs = ArrayAttr([DictionaryAttr({"ge.name": StringAttr(o)}) for o in self.outputs])
        return ModuleOp([fn])

    def _input_type(self, node):
        try:
            elem = _elem(node.attr["dtype"].type, f"input '{node.name}'")
        except NodeError as e:
            raise UnsupportedModelError(f"{self.where}: {e}") from None
        shape_attr = node.attr["shape"].shape if "shape" in node.attr else None
        declared = None
        if shape_attr is not None and not shape_attr.unknown_rank:
            declared = [d.size for d in shape_attr.dim]
        if node.name in self.input_shape:
            given = self.input_shape[node.name]
            if declared is not None and len(declared) != len(given):
                raise ShapeError(f"{self.where}: input_shape gives '{node.name}' rank {len(given)} but the graph "
                                 f"says rank {len(declared)} {_dims(declared)}")
            if any(d < 0 for d in given):
                raise ShapeError(f"{self.where}: input_shape for '{node.name}' has a negative dim: {list(given)}")
            return graph.tensor(elem, given)
        if declared is None or any(d < 0 for d in declared):
            example = ",".join(str(d) if d >= 0 else "1" for d in declared) if declared else "d0,d1,..."
            which = ("has no shape" if declared is None else
                     f"has shape {_dims(declared)} with unknown dim(s) "
                     + ", ".join(str(i) for i, d in enumerate(declared) if d < 0))
            raise ShapeError(f"{self.where}: input '{node.name}' {which}; give static dims with "
                             f"--input-shape \"{node.name}:{example}\" (input_shape= in Python)")
        return graph.tensor(elem, declared)

    def _convert(self, node) -> None:
        try:
            inputs = [self.env[self._split(ref)[0]] if self._split(ref)[1] == 0 else self._output(ref)
                      for ref in self._data_inputs(node)]
            if node.op == "Const":
                arr = tensor_array(node.attr["value"].tensor)
                self.env[node.name] = Value(nhwc=self.constant(arr, node.name), node=node.name)
                return
            if node.op in SKIPPED:
                if inputs:
                    self.env[node.name] = inputs[0]
                return
            ctx = NodeContext(self, node, inputs, {k: _attr(v) for k, v in node.attr.items()})
            first_new = len(self.ops)
            value = CONVERTERS[node.op](ctx)
        except NodeError as e:
            raise UnsupportedModelError(f"{self.where}: node '{node.name}' ({node.op}): {e}", node=node.name) from None
        for v in (value.nhwc, value.nchw):
            if v is not None and v.owner in self.ops[first_new:] and not v.name_hint:
                v.name_hint = _value_name(node.name)
        value.node = node.name
        self.env[node.name] = value

    def _output(self, ref: str) -> Value:
        name, index = self._split(ref)
        node = self.nodes[name]
        if node.op == "FusedBatchNormV3" or node.op == "FusedBatchNorm":
            raise NodeError(f"reads output {index} of batch norm '{name}' (its batch statistics); ge imports "
                            "inference graphs, where only output 0 is used")
        raise NodeError(f"reads output {index} of '{name}' ({node.op}), which ge does not import")


@dataclass
class _Named:
    """Stands for a node where only its name is needed (the location of a layout transpose)."""

    name: str


def _dims(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def import_graphdef(model, input_shape=None, outputs: str | Sequence[str] | None = None,
                    name: str | None = None) -> ModuleOp:
    """Import a frozen TensorFlow GraphDef (path, bytes or GraphDef message) into a verified
    graph-dialect module. `outputs` names the output nodes (default: the graph's sinks)."""
    from ge.frontend import tf_ops  # noqa: F401  (registers the converters)

    where = name or (str(model) if isinstance(model, str | os.PathLike) else "<graphdef>")
    g = load_graphdef(model, where)
    if isinstance(outputs, str):
        outputs = [o.strip() for o in outputs.split(",") if o.strip()]
    module = TfImporter(g, where, parse_input_shape(input_shape), outputs).run()
    try:
        module.verify()
    except VerifyException as e:
        raise ModelFormatError(f"{where}: the imported graph does not verify: {e}") from None
    return module
