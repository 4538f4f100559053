"""PyTorch FX (ATen core opset) -> `graph` dialect importer.

`ge.from_torch` and the Dynamo backend (`ge.torch_backend`) both reach this module with an
FX graph of ATen ops, as `torch.export` produces after `run_decompositions()`: one
converter per ATen overload emits graph ops, the same op classes the ONNX importer uses.
Parameters, buffers and lifted constants become `graph.constant` weight blobs named after
their state-dict key; every op's location is its FX node's name, so errors and profiles
name the user's layer. Shapes are static: each converted value's type is checked against
the FX node's own metadata (`meta["val"]`), so a converter that disagrees with torch is an
error, never a silent wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
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
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import dtypes, graph
from ge.dialects.graph import shape_of
from ge.errors import ModelFormatError, UnsupportedModelError
from ge.frontend.onnx import Importer, NodeError, _value_name
from ge.frontend.registry import registrar

_NUMPY_OF_TORCH = {
    torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64,
    torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
    torch.uint8: np.uint8, torch.bool: np.bool_,
}


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    if dtype not in _NUMPY_OF_TORCH:
        raise NodeError(f"element type {dtype} is not supported by the graph level")
    return np.dtype(_NUMPY_OF_TORCH[dtype])


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's value as a C-contiguous numpy array (detached, on the CPU)."""
    t = t.detach().cpu().contiguous()
    numpy_dtype(t.dtype)
    return np.require(t.numpy(), requirements="C")  # keeps 0-d tensors 0-d


def _is_node(a) -> bool:
    return isinstance(a, torch.fx.Node)


# --------------------------------------------------------------------------------------
# What a converter sees
# --------------------------------------------------------------------------------------


@dataclass
class FxContext:
    """One FX node: its args, its metadata, and `emit` (graph op with the node's location)."""

    importer: FxImporter
    node: torch.fx.Node

    @property
    def args(self) -> tuple:
        return self.node.args

    def arg(self, i: int, name: str, default=None):
        """Positional arg i, else kwarg `name`, else the default."""
        if i < len(self.node.args):
            return self.node.args[i]
        return self.node.kwargs.get(name, default)

    def value(self, a) -> SSAValue:
        """The SSA value of an FX node argument (a tensor)."""
        if not _is_node(a):
            raise NodeError(f"expected a tensor argument, got {a!r}")
        return self.importer.value(a)

    def tensor(self, a, dtype: np.dtype) -> SSAValue:
        """A tensor argument in `dtype` (cast if needed), or a Python number as a constant."""
        if _is_node(a):
            v = self.value(a)
            if dtypes.numpy_dtype(v.type.element_type) != dtype:
                v = self.cast(v, dtype)
            return v
        if isinstance(a, bool | int | float):
            return self.constant(np.array(a, dtype=dtype), "scalar")
        raise NodeError(f"expected a tensor or a number, got {a!r}")

    @property
    def val(self):
        """torch's own result (a FakeTensor, or a tuple of them) for this node."""
        return self.node.meta.get("val")

    def out_shape(self, i: int | None = None) -> tuple[int, ...]:
        v = self.val if i is None else self.val[i]
        return tuple(int(d) for d in v.shape)

    def out_dtype(self) -> np.dtype:
        return numpy_dtype(self.val.dtype)

    def rank(self, a) -> int:
        return self.value(a).type.get_num_dims()

    def shape(self, a) -> tuple[int, ...]:
        return shape_of(self.value(a).type)

    def emit(self, op_cls: type[graph.GraphOp], operands: Sequence, props: dict | None = None) -> SSAValue:
        return self.importer.emit_op(self.node, op_cls, operands, props).results[0]

    def emit_all(self, op_cls: type[graph.GraphOp], operands: Sequence, props: dict | None = None) -> list[SSAValue]:
        return list(self.importer.emit_op(self.node, op_cls, operands, props).results)

    def constant(self, arr: np.ndarray, hint: str = "c") -> SSAValue:
        return self.importer.constant(np.asarray(arr), f"{self.node.name}_{hint}")

    def cast(self, v: SSAValue, dtype: np.dtype) -> SSAValue:
        op = graph.CastOp.to(v, dtypes.element_type(dtype))
        return self.importer.add(self.node, op).results[0]

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.emit(graph.ReshapeOp, [v, self.constant(np.array(shape, np.int64), "shape")])


Result = SSAValue | list[SSAValue]
Converter = Callable[[FxContext], Result]
CONVERTERS: dict[str, Converter] = {}


converts = registrar(CONVERTERS)  # @converts(name, ...) fills CONVERTERS


def target_name(node: torch.fx.Node) -> str:
    """`aten.add.Tensor` for an ATen overload; `getitem` for operator.getitem."""
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return str(t)
    return getattr(t, "__name__", str(t))


def supported_ops() -> list[str]:
    """ATen overloads the importer converts."""
    _load_converters()
    return sorted(CONVERTERS)


def _load_converters() -> None:
    from ge.frontend import torch_fx_ops  # noqa: F401  (registers the converters)


# --------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------


@dataclass
class Placeholder:
    """How one FX placeholder enters the graph: a function argument `name`, or a constant."""

    node: torch.fx.Node
    name: str
    value: np.ndarray | None = None  # a weight (parameter, buffer, frozen input)


class FxImporter:
    """Builds one `func.func @main` from an FX graph of ATen ops."""

    # The ONNX importer's constant table and constant propagation serve here unchanged.
    constant = Importer.constant
    value_of = Importer.value_of
    _propagate = Importer._propagate

    def __init__(self, gm: torch.fx.GraphModule, placeholders: list[Placeholder], output_names: Sequence[str] | None,
                 where: str):
        self.gm = gm
        self.placeholders = placeholders
        self.output_names = output_names
        self.where = where
        self.env: dict[torch.fx.Node, Result] = {}
        self.known: dict[SSAValue, np.ndarray] = {}
        self.ops: list[Operation] = []
        self._const_cache: dict[tuple, SSAValue] = {}

    def value(self, n: torch.fx.Node) -> SSAValue:
        v = self.env.get(n)
        if v is None:
            raise NodeError(f"argument '{n.name}' has no value (an unsupported producer or a non-tensor value)")
        if isinstance(v, list):
            raise NodeError(f"argument '{n.name}' is a list of tensors; index it first")
        return v

    def add(self, node: torch.fx.Node, op: Operation) -> Operation:
        op.location = NameLoc(StringAttr(node.name), NoneAttr())
        self.ops.append(op)
        self._propagate(op)
        return op

    def emit_op(self, node: torch.fx.Node, op_cls: type[graph.GraphOp], operands: Sequence, props: dict | None):
        values = [None if o is None else [self.value_of(v) for v in o] if isinstance(o, list | tuple)
                  else self.value_of(o) for o in operands]
        try:
            op = op_cls.make(operands, props, values)
        except VerifyException as e:
            raise NodeError(f"{op_cls.name}: {e}") from None
        return self.add(node, op)

    def run(self) -> ModuleOp:
        _load_converters()
        self._check_supported()
        args: list[tuple[str, TensorType]] = []
        for p in self.placeholders:
            if p.value is not None:
                self.env[p.node] = self.constant(p.value, p.name)
            else:
                val = p.node.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    raise UnsupportedModelError(f"{self.where}: input '{p.name}' is not a tensor ({val!r})")
                _check_static(val, f"{self.where}: input '{p.name}'")
                try:
                    elem = dtypes.element_type(numpy_dtype(val.dtype))
                except NodeError as e:
                    raise UnsupportedModelError(f"{self.where}: input '{p.name}': {e}") from None
                args.append((p.name, graph.tensor(elem, tuple(val.shape))))
        fn = func.FuncOp(
            "main", FunctionType.from_lists([t for _, t in args], []),
            arg_attrs=ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n)}) for n, _ in args]),
        )
        block = fn.body.block
        inputs = [p for p in self.placeholders if p.value is None]
        for p, a in zip(inputs, block.args):
            a.name_hint = _value_name(p.name)
            self.env[p.node] = a

        output = None
        for node in self.gm.graph.nodes:
            if node.op == "call_function":
                self._convert(node)
            elif node.op == "get_attr":
                self.env[node] = self.constant(to_numpy(_attr(self.gm, node.target)), node.target)
            elif node.op == "output":
                output = node
        results, names = self._outputs(output)
        for op in self.ops:
            block.add_op(op)
        block.add_op(func.ReturnOp(*results))
        fn.function_type = FunctionType.from_lists([t for _, t in args], [r.type for r in results])
        fn.res_attrs = ArrayAttr([DictionaryAttr({"ge.name": StringAttr(n)}) for n in names])
        module = ModuleOp([fn])
        try:
            module.verify()
        except VerifyException as e:
            raise ModelFormatError(f"{self.where}: the imported graph does not verify: {e}") from None
        return module

    def _check_supported(self) -> None:
        bad = [f"'{n.name}' ({target_name(n)})" for n in self.gm.graph.nodes
               if n.op == "call_function" and target_name(n) not in CONVERTERS]
        if bad:
            raise UnsupportedModelError(
                f"{self.where}: {len(bad)} node(s) use ATen operators ge does not support: {', '.join(bad)}",
                node=bad[0].split("'")[1],
            )

    def _convert(self, node: torch.fx.Node) -> None:
        first_new = len(self.ops)
        try:
            out = CONVERTERS[target_name(node)](FxContext(self, node))
            if out is not None:
                self._check_result(node, out)
        except NodeError as e:
            raise UnsupportedModelError(f"{self.where}: node '{node.name}' ({target_name(node)}): {e}",
                                        node=node.name) from None
        created = set(self.ops[first_new:])
        for v in out if isinstance(out, list) else [out]:
            if v is not None and v.owner in created:
                v.name_hint = _value_name(node.name)
        self.env[node] = out

    def _check_result(self, node: torch.fx.Node, out: Result) -> None:
        """The converted value has torch's shape and element type (meta["val"])."""
        val = node.meta.get("val")
        pairs = zip(out, val) if isinstance(out, list) and isinstance(val, list | tuple) else [(out, val)]
        for v, t in pairs:
            if v is None or not isinstance(t, torch.Tensor):
                continue
            want = (tuple(int(d) for d in t.shape), numpy_dtype(t.dtype))
            got = (shape_of(v.type), dtypes.numpy_dtype(v.type.element_type))
            if got != want:
                raise NodeError(f"converted to shape {list(got[0])} {got[1]}, but torch gives {list(want[0])} {want[1]}")

    def _outputs(self, output: torch.fx.Node | None) -> tuple[list[SSAValue], list[str]]:
        if output is None:
            raise ModelFormatError(f"{self.where}: the FX graph has no output node")
        outs = output.args[0]
        outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        results, names = [], []
        for i, o in enumerate(outs):
            if not _is_node(o):
                raise UnsupportedModelError(f"{self.where}: output #{i} is not a tensor ({o!r})")
            try:
                results.append(self.value(o))
            except NodeError as e:
                raise UnsupportedModelError(f"{self.where}: output #{i}: {e}") from None
            names.append(self.output_names[i] if self.output_names else o.name)
        for i, n in enumerate(names):  # one name per output, even when a value is returned twice
            if n in names[:i]:
                names[i] = f"{n}_{i}"
        return results, names


def _attr(gm: torch.nn.Module, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _check_static(val: torch.Tensor, where: str) -> None:
    if any(not isinstance(d, int) for d in val.shape):
        raise UnsupportedModelError(f"{where} has a symbolic shape {list(val.shape)}; ge compiles static shapes "
                                    "(export without dynamic_shapes, or torch.compile(..., dynamic=False))")


def import_graph_module(gm: torch.fx.GraphModule, placeholders: list[Placeholder],
                        output_names: Sequence[str] | None = None, where: str = "<torch>") -> ModuleOp:
    """Import an ATen-level FX graph; `placeholders` says, in graph order, which are inputs."""
    return FxImporter(gm, placeholders, output_names, where).run()


def import_exported_program(ep: torch.export.ExportedProgram, input_names: Sequence[str] | None = None,
                            output_names: Sequence[str] | None = None, where: str = "<torch>") -> ModuleOp:
    """Import a (decomposed) ExportedProgram: parameters, buffers and constants become
    weights named by their state-dict key; user inputs become arguments."""
    from torch.export.graph_signature import InputKind

    specs = ep.graph_signature.input_specs
    nodes = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    user = [s for s in specs if s.kind == InputKind.USER_INPUT]
    if input_names is not None and len(input_names) != len(user):
        raise UnsupportedModelError(f"{where}: input_names has {len(input_names)} names; the model takes "
                                    f"{len(user)} tensor inputs ({', '.join(s.arg.name for s in user)})")
    names = iter(input_names or [])
    placeholders = []
    for node, spec in zip(nodes, specs):
        if spec.kind == InputKind.USER_INPUT:
            placeholders.append(Placeholder(node, next(names, None) or spec.arg.name))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            source = ep.state_dict.get(spec.target)
            if source is None:  # a non-persistent buffer
                source = ep.constants[spec.target]
            placeholders.append(Placeholder(node, spec.target, to_numpy(source)))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            placeholders.append(Placeholder(node, spec.target, to_numpy(ep.constants[spec.target])))
        else:
            raise UnsupportedModelError(f"{where}: input '{spec.arg.name}' of kind {spec.kind.name} is not supported")
    return import_graph_module(ep.graph_module, placeholders, output_names, where)


# Shared helpers for the converters -------------------------------------------------------


def axis(a: int, rank: int) -> int:
    if not -max(rank, 1) <= a < max(rank, 1):
        raise NodeError(f"dim {a} is out of range for rank {rank}")
    return a % max(rank, 1)


def flag(value) -> UnitAttr | None:
    return UnitAttr() if value else None


def ints(values) -> list[int]:
    return [int(v) for v in (values if isinstance(values, list | tuple) else [values])]

