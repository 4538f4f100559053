"""Extending ge without forking it: custom graph passes and custom ONNX operators.

GE lets a user inject a GraphPass into its pipeline and bring operators it does not have;
this module is ge's counterpart (README "Extending ge").

- A *pass* is an xDSL `ModulePass` (most simply a `GraphPass` with a `run(module)` method),
  registered with `register_pass(cls, stage=...)` or by the entry point group `ge.passes`.
  `ge-opt -p NAME` runs it; `ge.compile` runs it at its stage when named in
  `CompileOptions(passes=...)` (`ge-compile --passes`). A pass that raises or leaves IR
  that does not verify is reported as `pass 'NAME' (plugin PKG) at stage S: ...`.
- A *custom operator* (`register_op(domain, op_type, ...)`, or a function named by the entry
  point group `ge.ops` that calls it) declares its ONNX signature, shape inference, numpy
  reference semantics and a kernel, of one of two kinds:
  * a *decomposition into graph ops* (`decompose=`, built with a `GraphBuilder`): the ONNX
    importer expands a `domain::op_type` node into it, so the op travels through optimize,
    fuse, tile and isa like any other. On first use (per input types) the importer checks
    the decomposition's result types against the declared shape inference and its values
    against the reference (random inputs, the graph reference interpreter);
  * a *tile-level kernel* (`kernel=`, written with the `TileKernel` API of
    ge/plugin_tile.py): the node imports as one opaque `graph.custom` op (its result types
    from the declared shape inference, its semantics the reference), which graph-optimize
    and decompose leave alone, assign-layouts gives plain ND tensors, fuse makes a kernel of
    its own, and `tile` builds by calling the plugin's builder; to-isa, sync, the memory
    plan and the simulator then treat it as any other kernel. On first use (per input
    types) the built kernel is run by the tile interpreter on random inputs and compared
    with the reference, and every output element must be written.
  A broken plugin is an error naming it and the operator, not a wrong answer.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import VarOperandDef
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ge.errors import GeError

# The points of ge.compile's pipeline where a custom pass can run (after the named stage).
PIPELINE_STAGES = ("import", "graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data", "fuse",
                   "bufferize", "tile", "to-isa", "plan-local-memory", "insert-sync")
STAGES = tuple(f"after-{s}" for s in PIPELINE_STAGES)
DEFAULT_STAGE = "after-graph-optimize"
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
_KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class PluginError(GeError):
    """A plugin is broken (bad registration, a pass that raises or breaks the IR, an operator
    whose decomposition disagrees with its declaration); the message names the plugin."""


# --------------------------------------------------------------------------------------
# Passes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphPass(ModulePass):
    """Base of a custom pass: set `name` (kebab-case), optionally `stage`, implement `run`.

    `run(module)` rewrites the `builtin.module` in place (at the graph level it holds one
    `func.func @main` of `graph.*` ops). Options are dataclass fields, as for any xDSL pass
    (`ge-opt -p 'my-pass{threshold=3}'`).
    """

    name: ClassVar[str] = ""
    stage: ClassVar[str] = DEFAULT_STAGE

    def run(self, module: ModuleOp) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement run(module)")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        guarded(self.name, lambda: self.run(op), op)


@dataclass(frozen=True)
class PassEntry:
    cls: type[ModulePass]
    stage: str
    plugin: str


_PASSES: dict[str, PassEntry] = {}
_loading: list[str] = []  # the distribution whose entry point is being loaded


def _plugin_of(obj: Any, plugin: str | None) -> str:
    if plugin:
        return plugin
    if _loading:
        return _loading[-1]
    return (getattr(obj, "__module__", None) or "?").split(".")[0]


def guarded(name: str, run: Callable[[], Any], module: ModuleOp) -> None:
    """Run a registered pass's body; an exception or IR that no longer verifies becomes a
    PluginError naming the pass, its plugin and its stage (never silently skipped)."""
    entry = _PASSES.get(name)
    where = f"pass '{name}'" + (f" (plugin {entry.plugin}) at stage {entry.stage}" if entry else "")
    try:
        run()
    except Exception as e:
        raise PluginError(f"{where}: {type(e).__name__}: {e}") from e
    try:
        module.verify()
    except Exception as e:
        raise PluginError(f"{where}: the IR it leaves does not verify: {e}") from None


def register_pass(cls: type[ModulePass] | None = None, *, stage: str | None = None, plugin: str | None = None):
    """Register a ModulePass (usually a `GraphPass`) under its `name`; usable as a decorator.

    `stage` is where `ge.compile` runs it when named in `CompileOptions(passes=...)`
    (one of `STAGES`; default the class's `stage`, else after graph-optimize).
    """
    if cls is None:
        return lambda c: register_pass(c, stage=stage, plugin=plugin)
    plugin = _plugin_of(cls, plugin)
    if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
        raise PluginError(f"plugin {plugin}: register_pass needs a ModulePass subclass (e.g. ge.GraphPass), got {cls!r}")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not _KEBAB.match(name):
        raise PluginError(f"plugin {plugin}: pass class {cls.__name__} needs a kebab-case `name`, got {name!r}")
    if not dataclasses.is_dataclass(cls):
        raise PluginError(f"plugin {plugin}: pass '{name}' must be a dataclass (@dataclass(frozen=True)) as xDSL "
                          "passes are")
    stage = stage or getattr(cls, "stage", None) or DEFAULT_STAGE
    if stage not in STAGES:
        raise PluginError(f"plugin {plugin}: pass '{name}' has stage '{stage}'; stages: {', '.join(STAGES)}")
    from ge.transforms import builtin_passes

    if name in builtin_passes():
        raise PluginError(f"plugin {plugin}: pass name '{name}' is one of ge's own passes")
    old = _PASSES.get(name)
    if old is not None and old.cls is not cls:
        raise PluginError(f"plugin {plugin}: pass '{name}' is already registered by plugin {old.plugin}")
    _PASSES[name] = PassEntry(cls, stage, plugin)
    return cls


def unregister_pass(name: str) -> None:
    _PASSES.pop(name, None)


def registered_passes() -> dict[str, PassEntry]:
    """The custom passes by name (entry points loaded on first use)."""
    load_entry_points()
    return dict(_PASSES)


def pass_factory(name: str) -> Callable[[], type[ModulePass]]:
    """What `ge-opt` registers: the pass class, with its run guarded if it is a plain ModulePass."""

    def load() -> type[ModulePass]:
        cls = _PASSES[name].cls
        if issubclass(cls, GraphPass):
            return cls

        def apply(self, ctx, op):
            guarded(name, lambda: cls.apply(self, ctx, op), op)

        return type(cls.__name__, (cls,), {"apply": apply})

    return load


def with_custom_passes(stages: list[tuple[str, Any]], names: Sequence[str] | str) -> list[tuple[str, Any]]:
    """ge.compile's stages with the named custom passes inserted after their stage (in the
    order given); the stage label is the pass's name."""
    names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
    if not names:
        return stages
    passes = registered_passes()
    out = list(stages)
    for name in names:
        if name not in passes:
            raise PluginError(f"unknown custom pass '{name}'; registered: {', '.join(sorted(passes)) or 'none'} "
                              "(install a package with a `ge.passes` entry point, or call ge.register_pass)")
        entry = passes[name]
        after = entry.stage.removeprefix("after-")
        labels = [label for label, _ in out]
        if after == "import":
            index = 0
            while index < len(out) and out[index][0] in names[: names.index(name)]:
                index += 1
        elif after in labels:
            index = len(labels) - labels[::-1].index(after)
            while index < len(out) and out[index][0] in names:
                index += 1
        else:
            raise PluginError(f"pass '{name}' (plugin {entry.plugin}) runs at stage {entry.stage}, which this "
                              "compile does not reach (kernel_level='tile' stops after tile)")
        out.insert(index, (name, pass_factory(name)()()))
    return out


# --------------------------------------------------------------------------------------
# Building graph ops (the decompositions' and passes' builder)
# --------------------------------------------------------------------------------------


def _graph_ops() -> dict[str, type]:
    from ge.dialects.graph import Graph

    return {op.name.removeprefix("graph."): op for op in Graph.operations}


def _prop(value: Any) -> Attribute | None:
    from ge.dialects.graph import float_attr, int_array, int_attr

    if value is None or value is False:
        return None
    if isinstance(value, Attribute):
        return value
    if value is True:
        return UnitAttr()
    if isinstance(value, int | np.integer):
        return int_attr(int(value))
    if isinstance(value, float | np.floating):
        return float_attr(float(value))
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, Sequence | np.ndarray):
        return int_array([int(v) for v in value])
    raise TypeError(f"cannot turn {value!r} into a graph op property")


class GraphBuilder:
    """Emits graph ops with inferred result types: `b.mul(x, y)`, `b.reduce_mean(x, axes=[-1],
    keepdims=True)`, `b.sqrt(v)`, `b.constant(array)`. Any `graph.NAME` op is `b.NAME(...)`
    (or `b.op("NAME", ...)`); a Python number operand becomes a scalar constant of the
    first tensor operand's element type; negative `axes` count from the end."""

    def __init__(self, emit: Callable[[type, list, dict], Operation], constant: Callable[[np.ndarray], SSAValue]):
        self._emit, self._constant = emit, constant

    @classmethod
    def before(cls, anchor: Operation, name: str = "plugin") -> GraphBuilder:
        """A builder that inserts the new ops just before `anchor` (for passes)."""
        from ge.dialects import dtypes, graph
        from ge.dialects.blobs import constant_attr

        counter = [0]

        def emit(op_cls, operands, props):
            op = op_cls.make(operands, props)
            op.location = anchor.location
            Rewriter.insert_op(op, InsertPoint.before(anchor))
            return op

        def constant(arr):
            counter[0] += 1
            t = graph.tensor(dtypes.element_type(arr.dtype), arr.shape)
            op = graph.ConstantOp(constant_attr(arr, t, f"{name}_{counter[0]}"))
            Rewriter.insert_op(op, InsertPoint.before(anchor))
            return op.output

        return cls(emit, constant)

    def constant(self, value, dtype=None) -> SSAValue:
        return self._constant(np.asarray(value, dtype=dtype))

    def op(self, name: str | type, *operands, **props) -> SSAValue | list[SSAValue]:
        """Emit graph op `name` (e.g. "mul") or class; returns its result (a list if several)."""
        from ge.dialects import dtypes

        op_cls = _graph_ops().get(name) if isinstance(name, str) else name
        if op_cls is None:
            raise AttributeError(f"the graph dialect has no op 'graph.{name}'")
        tensors = [o for o in operands if isinstance(o, SSAValue)]
        elem = tensors[0].type.element_type if tensors else None
        values = [self.constant(o, dtypes.numpy_dtype(elem)) if isinstance(o, int | float) and elem is not None else o
                  for o in operands]
        if "axes" in props and tensors and props["axes"] is not None:
            rank = tensors[0].type.get_num_dims()
            props["axes"] = sorted(int(a) % rank for a in props["axes"])
        defs = op_cls.get_irdl_definition().operands
        if len(defs) == 1 and isinstance(defs[0][1], VarOperandDef) and not (len(values) == 1 and isinstance(values[0], list)):
            values = [values]  # a variadic op (max, min, sum, mean, concat): b.max(a, b)
        op = self._emit(op_cls, values, {k: _prop(v) for k, v in props.items()})
        return op.results[0] if len(op.results) == 1 else list(op.results)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in _graph_ops():
            raise AttributeError(f"the graph dialect has no op 'graph.{name}'")
        return lambda *operands, **props: self.op(name, *operands, **props)


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The numpy value of a `graph.constant` result, else None (for passes that match patterns)."""
    from ge.dialects.graph import _constant_value

    return _constant_value(value)


# --------------------------------------------------------------------------------------
# Custom operators
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpEntry:
    """A custom operator: ONNX signature, shape inference, numpy reference, and a kernel.

    - `infer_shape(input_shapes, **attrs)` -> one output shape per output;
    - `reference(*arrays, **attrs)` -> the output array (or a tuple of them);
    - `decompose(builder, *inputs, **attrs)` -> the output value(s), built with the
      `GraphBuilder`; the outputs keep the first input's element type; or
    - `kernel(k, *inputs, *outputs, **attrs)` writes the tile kernel with the `TileKernel`
      `k` (ge/plugin_tile.py); the outputs have the first input's element type.
    """

    domain: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    infer_shape: Callable[..., Sequence[Sequence[int]]]
    reference: Callable[..., Any]
    decompose: Callable[..., Any] | None
    attributes: dict[str, Any] = field(default_factory=dict)
    plugin: str = "?"
    kernel: Callable[..., Any] | None = None
    _checked: set = field(default_factory=set, compare=False, repr=False)

    @property
    def label(self) -> str:
        return f"custom operator {self.domain}::{self.op_type} (plugin {self.plugin})"

    def attrs(self, given: dict[str, Any]) -> dict[str, Any]:
        """The node's attributes over the declared defaults (bytes decoded); unknown ones refused."""
        unknown = sorted(set(given) - set(self.attributes))
        if unknown:
            known = ", ".join(sorted(self.attributes)) or "none"
            raise PluginError(f"{self.label}: unknown attribute(s) {', '.join(unknown)} (declared: {known})")
        out = dict(self.attributes)
        for k, v in given.items():
            out[k] = v.decode() if isinstance(v, bytes) else v
        return out

    def run_reference(self, *arrays: np.ndarray, **attrs) -> list[np.ndarray]:
        """The numpy reference's outputs, as a list."""
        out = self.reference(*arrays, **self.attrs(attrs))
        return [np.asarray(o) for o in (out if isinstance(out, tuple | list) else [out])]

    def declared_shapes(self, shapes: Sequence[Sequence[int]], attrs: dict[str, Any]) -> list[tuple[int, ...]]:
        """What `infer_shape` gives for these input shapes (a PluginError if it raises or
        does not give one shape per declared output)."""
        try:
            declared = [tuple(int(d) for d in s) for s in self.infer_shape([tuple(s) for s in shapes], **attrs)]
        except Exception as e:
            raise PluginError(f"{self.label}: infer_shape raised {type(e).__name__}: {e}") from e
        if len(declared) != len(self.outputs):
            raise PluginError(f"{self.label} declares {len(self.outputs)} output(s) ({', '.join(self.outputs)}); "
                              f"infer_shape gives {len(declared)}")
        return declared

    def build(self, builder: GraphBuilder, inputs: Sequence[SSAValue], attrs: dict[str, Any]) -> list[SSAValue]:
        """Emit the decomposition (its result types must be what `infer_shape` declares), or
        for an operator with a tile kernel one `graph.custom` op."""
        if len(inputs) != len(self.inputs):
            raise PluginError(f"{self.label} takes {len(self.inputs)} input(s) ({', '.join(self.inputs)}), "
                              f"got {len(inputs)}")
        attrs = self.attrs(attrs)
        shapes = [tuple(v.type.get_shape()) for v in inputs]
        declared = self.declared_shapes(shapes, attrs)
        if self.kernel is not None:
            from ge.dialects.graph import CustomOp

            out = builder.op(CustomOp, list(inputs), domain=self.domain, op_type=self.op_type,
                             params=params_attr(attrs, self.label) if attrs else None)
            return out if isinstance(out, list) else [out]
        try:
            outs = self.decompose(builder, *inputs, **attrs)
        except GeError:
            raise
        except Exception as e:
            raise PluginError(f"{self.label}: decompose raised {type(e).__name__}: {e}") from e
        outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        if len(outs) != len(self.outputs) or len(declared) != len(self.outputs):
            raise PluginError(f"{self.label} declares {len(self.outputs)} output(s); infer_shape gives "
                              f"{len(declared)}, decompose returns {len(outs)}")
        elem = inputs[0].type.element_type if inputs else None
        for name, v, want in zip(self.outputs, outs, declared):
            if not isinstance(v, SSAValue) or not isinstance(v.type, TensorType):
                raise PluginError(f"{self.label}: decompose returned {v!r} for output '{name}', not a tensor value")
            got = tuple(v.type.get_shape())
            if got != want:
                raise PluginError(f"{self.label}: output '{name}': infer_shape gives {list(want)} for inputs "
                                  f"{[list(s) for s in shapes]}, but the decomposition's result is {list(got)}")
            if elem is not None and v.type.element_type != elem:
                raise PluginError(f"{self.label}: output '{name}' is {v.type.element_type}, the inputs {elem}")
        return outs


    def random_inputs(self, types: Sequence[TensorType]) -> list[np.ndarray]:
        """Seeded standard-normal inputs of these types (what the first-use checks run on)."""
        from ge.dialects import dtypes

        rng = np.random.default_rng(0)
        return [rng.standard_normal(t.get_shape()).astype(dtypes.numpy_dtype(t.element_type)) for t in types]

    def reference_outputs(self, arrays: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        """The reference on `arrays`: a PluginError if it raises or gives other shapes than
        `infer_shape` declares."""
        try:
            want = self.run_reference(*arrays, **attrs)
        except Exception as e:
            raise PluginError(f"{self.label}: reference raised {type(e).__name__}: {e}") from e
        declared = self.declared_shapes([a.shape for a in arrays], self.attrs(attrs))
        if len(want) != len(declared):
            raise PluginError(f"{self.label}: the reference gives {len(want)} output(s), infer_shape {len(declared)}")
        for name, w, shape in zip(self.outputs, want, declared):
            if tuple(w.shape) != shape:
                raise PluginError(f"{self.label}: output '{name}': infer_shape gives {list(shape)} for inputs "
                                  f"{[list(a.shape) for a in arrays]}, but the reference's result is {list(w.shape)}")
        return want

    def compare(self, what: str, got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                shapes: Sequence[Sequence[int]], label: str | None = None) -> None:
        """`got` (from the decomposition or the tile kernel) against the reference's `want`:
        within 1e-3 of the reference's scale (max |reference|) for f32, 1e-2 for f16.
        `label` names the operator in messages (default: its label)."""
        label = label or self.label
        for name, g, w in zip(self.outputs, got, want):
            tol = 1e-2 if np.asarray(g).dtype == np.float16 or w.dtype == np.float16 else 1e-3
            g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
            if g64.shape != w64.shape:
                raise PluginError(f"{label}: output '{name}': the reference gives shape {list(w64.shape)}, "
                                  f"the {what} {list(g64.shape)}")
            scale = max(float(np.nanmax(np.abs(w64), initial=0.0)), 1e-30)
            diff = np.abs(g64 - w64)
            if not np.array_equal(np.isnan(g64), np.isnan(w64)) or np.nanmax(diff, initial=0.0) > tol * scale:
                raise PluginError(f"{label}: output '{name}': the {what} disagrees with the reference "
                                  f"on random inputs of shapes {[list(s) for s in shapes]}: max "
                                  f"|difference| {np.nanmax(diff, initial=0.0):.3g}, reference scale {scale:.3g}")

    def check(self, types: Sequence[TensorType], attrs: dict[str, Any]) -> None:
        """The decomposition against the numpy reference on seeded random inputs of these
        types (graph reference interpreter; tolerances of `compare`); a disagreement is a
        PluginError. Non-float inputs: not checked here. An operator with a tile kernel:
        the reference's shapes against `infer_shape` here, the kernel when `tile` builds it."""
        from xdsl.dialects import func
        from xdsl.dialects.builtin import FunctionType

        from ge.dialects import dtypes
        from ge.runtime.reference import run_function

        if not all(dtypes.is_float(t.element_type) for t in types):
            return
        arrays = self.random_inputs(types)
        if self.kernel is not None:
            self.reference_outputs(arrays, attrs)
            return
        fn = func.FuncOp("check", FunctionType.from_lists(list(types), []))
        block = fn.body.block

        def emit(cls, operands, props):
            op = cls.make(operands, props)
            block.add_op(op)
            return op

        def constant(arr):
            from ge.dialects import graph
            from ge.dialects.blobs import dense_attr

            op = graph.ConstantOp(dense_attr(arr, graph.tensor(dtypes.element_type(arr.dtype), arr.shape)))
            block.add_op(op)
            return op.output

        outs = self.build(GraphBuilder(emit, constant), list(block.args), attrs)
        block.add_op(func.ReturnOp(*outs))
        got = run_function(fn, arrays)
        try:
            want = self.run_reference(*arrays, **attrs)
        except Exception as e:
            raise PluginError(f"{self.label}: reference raised {type(e).__name__}: {e}") from e
        self.compare("decomposition", got, want, [t.get_shape() for t in types])

    def checked(self, types: Sequence[TensorType], attrs: dict[str, Any]) -> None:
        """`check` once per input types and attributes (the importer's first use)."""
        key = (tuple(types), tuple(sorted((k, repr(v)) for k, v in self.attrs(attrs).items())))
        if key not in self._checked:
            self.check(types, attrs)
            self._checked.add(key)


_OPS: dict[tuple[str, str], OpEntry] = {}


def register_op(domain: str, op_type: str, *, inputs: Sequence[str], infer_shape: Callable, reference: Callable,
                decompose: Callable | None = None, kernel: Callable | None = None, outputs: Sequence[str] = ("Y",),
                attributes: dict[str, Any] | None = None, plugin: str | None = None) -> OpEntry:
    """Declare the custom ONNX operator `domain::op_type` (see `OpEntry`) with either a
    `decompose` into graph ops or a tile-level `kernel` builder; `attributes` maps each
    attribute the node may carry to its default."""
    plugin = _plugin_of(kernel if decompose is None else decompose, plugin)
    label = f"plugin {plugin}: custom operator {domain}::{op_type}"
    if domain in STANDARD_DOMAINS:
        raise PluginError(f"{label}: a custom operator needs its own domain (e.g. com.acme), not the standard one")
    if not op_type:
        raise PluginError(f"{label}: op_type is empty")
    if (decompose is None) == (kernel is None):
        raise PluginError(f"{label}: give a kernel as exactly one of decompose= (graph ops) or kernel= (a tile "
                          "kernel builder)")
    for what, fn in (("reference", reference), ("infer_shape", infer_shape),
                     ("decompose" if kernel is None else "kernel", decompose or kernel)):
        if not callable(fn):
            raise PluginError(f"{label}: missing {what} (a function is required; got {fn!r})")
    if not inputs or not outputs:
        raise PluginError(f"{label}: declare its inputs and outputs by name")
    old = _OPS.get((domain, op_type))
    if old is not None and old.plugin != plugin:
        raise PluginError(f"{label}: already registered by plugin {old.plugin}")
    for value in (attributes or {}).values():
        params_attr({"default": value}, label)  # every default has an IR spelling
    entry = OpEntry(domain, op_type, tuple(inputs), tuple(outputs), infer_shape, reference, decompose,
                    dict(attributes or {}), plugin, kernel)
    _OPS[(domain, op_type)] = entry
    return entry


def unregister_op(domain: str, op_type: str) -> None:
    _OPS.pop((domain, op_type), None)


def registered_ops() -> dict[tuple[str, str], OpEntry]:
    load_entry_points()
    return dict(_OPS)


def find_op(domain: str, op_type: str) -> OpEntry | None:
    return registered_ops().get((domain, op_type))


def onnx_converter(domain: str, op_type: str):
    """The importer's converter for a registered custom operator (None if there is none)."""
    entry = find_op(domain, op_type)
    if entry is None:
        return None

    def convert(ctx) -> list[SSAValue]:
        from ge.frontend.onnx import NodeError

        inputs = [ctx.input(i) for i in range(len(ctx.node.input))]
        builder = GraphBuilder(lambda cls, operands, props: ctx.emit(cls, operands, props),
                               lambda arr: ctx.constant(arr, "plugin"))
        try:
            entry.checked([v.type for v in inputs], ctx.attrs)
            return entry.build(builder, inputs, ctx.attrs)
        except PluginError as e:
            raise NodeError(str(e)) from None

    return convert


def expand_op(builder: GraphBuilder, domain: str, op_type: str, *inputs: SSAValue, **attrs) -> list[SSAValue]:
    """Emit the registered custom operator: its decomposition, or its `graph.custom` op when
    it has a tile kernel (what a pass calls to rewrite a pattern into the op)."""
    entry = find_op(domain, op_type)
    if entry is None:
        raise PluginError(f"no custom operator {domain}::{op_type} is registered")
    return entry.build(builder, list(inputs), attrs)


# --------------------------------------------------------------------------------------
# graph.custom: an operator with a tile kernel, opaque to ge
# --------------------------------------------------------------------------------------


def params_attr(attrs: dict[str, Any], label: str = "custom operator") -> DictionaryAttr:
    """A custom op's attributes as the `params` dictionary of its `graph.custom` op (ints,
    floats, strings and lists of them)."""

    def one(name: str, v: Any) -> Attribute:
        if isinstance(v, bool | np.bool_):
            return IntegerAttr(int(v), i64)
        if isinstance(v, int | np.integer):
            return IntegerAttr(int(v), i64)
        if isinstance(v, float | np.floating):
            return FloatAttr(float(v), f64)
        if isinstance(v, str | bytes):
            return StringAttr(v.decode() if isinstance(v, bytes) else v)
        if isinstance(v, Sequence | np.ndarray):
            return ArrayAttr([one(name, x) for x in v])
        raise PluginError(f"{label}: attribute '{name}' = {v!r} is not an int, float, string or a list of them")

    return DictionaryAttr({k: one(k, v) for k, v in attrs.items()})


def _python(a: Attribute) -> Any:
    if isinstance(a, IntegerAttr):
        return int(a.value.data)
    if isinstance(a, FloatAttr):
        return float(a.value.data)
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, ArrayAttr):
        return [_python(x) for x in a.data]
    raise TypeError(f"unexpected attribute {a}")


def custom_entry(props: dict[str, Attribute]) -> OpEntry:
    """The registered operator a `graph.custom` op names (VerifyException if none is)."""
    from xdsl.utils.exceptions import VerifyException

    domain, op_type = props["domain"], props["op_type"]
    assert isinstance(domain, StringAttr) and isinstance(op_type, StringAttr)
    entry = find_op(domain.data, op_type.data)
    if entry is None or entry.kernel is None:
        raise VerifyException(f"no custom operator {domain.data}::{op_type.data} with a tile kernel is registered "
                              "(install its plugin, or call ge.register_op)")
    return entry


def custom_attrs(props: dict[str, Attribute]) -> dict[str, Any]:
    """The node's attributes over the declared defaults, from a `graph.custom` op's `params`."""
    entry = custom_entry(props)
    params = props.get("params")
    given = {k: _python(v) for k, v in params.data.items()} if isinstance(params, DictionaryAttr) else {}
    return entry.attrs(given)


def infer_custom(props: dict[str, Attribute], types: Sequence[TensorType]) -> list[TensorType]:
    """`graph.custom`'s result types: the plugin's `infer_shape`, the first input's element type."""
    from xdsl.utils.exceptions import VerifyException

    entry = custom_entry(props)
    if len(types) != len(entry.inputs):
        raise VerifyException(f"{entry.label} takes {len(entry.inputs)} input(s), got {len(types)}")
    try:
        shapes = entry.declared_shapes([t.get_shape() for t in types], custom_attrs(props))
    except PluginError as e:
        raise VerifyException(str(e)) from None
    elem = types[0].element_type
    return [TensorType(elem, list(s)) for s in shapes]


def run_custom(props: dict[str, Attribute], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The reference semantics of a `graph.custom` op (the reference interpreter's kernel)."""
    entry = custom_entry(props)
    return entry.run_reference(*args, **custom_attrs(props))


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------

_loaded = False


def _entry_points(group: str) -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=group)


def load_entry_points(force: bool = False) -> None:
    """Load the installed packages' `ge.passes` (pass classes) and `ge.ops` (functions that
    call `register_op`) entry points, once."""
    global _loaded
    if _loaded and not force:
        return
    _loaded = True
    for group in ("ge.passes", "ge.ops"):
        for ep in _entry_points(group):
            dist = ep.dist.name if ep.dist is not None else ep.module
            _loading.append(dist)
            try:
                obj = ep.load()
                if group == "ge.passes":
                    register_pass(obj, plugin=dist)
                else:
                    if not callable(obj):
                        raise PluginError(f"plugin {dist}: entry point {group} '{ep.name}' = {ep.value} is not a "
                                          "function that registers operators")
                    obj()
            except PluginError:
                raise
            except Exception as e:
                raise PluginError(f"plugin {dist}: entry point {group} '{ep.name}' = {ep.value} cannot be loaded: "
                                  f"{type(e).__name__}: {e}") from e
            finally:
                _loading.pop()
