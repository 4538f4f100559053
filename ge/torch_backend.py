"""PyTorch entry points: `ge.from_torch` and the Dynamo backend `torch.compile(backend="ge")`.

Both go through `torch.export` and its decompositions to the core ATen opset, then
`ge.frontend.torch_fx` (no ONNX in between). The Dynamo backend receives Dynamo's graph of
torch-level calls (functions, methods, modules); rather than convert that open-ended set,
it exports the captured GraphModule again (non-strict, which traces it with make_fx), so
one ATen converter serves both paths. Parameters and buffers reach the backend as graph
inputs (Dynamo lifts them); they are frozen into weights, as an inference compiler does
(TorchAir's frozen-parameter mode): change the weights and compile again.

An unsupported operator makes the backend run the captured graph eagerly and log why;
under `fullgraph=True` (or `options={"fallback": False}`) it is an error naming the ops.
ge compiles static shapes: a graph with symbolic sizes is compiled once per concrete set
of input shapes (`ShapeSpecialized`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.errors import GeError, UnsupportedModelError

log = logging.getLogger("ge.torch")

# Options of torch.compile(backend="ge", options={...}) that are not CompileOptions fields.
BACKEND_OPTIONS = {
    "fallback": "run the graph eagerly (with a logged reason) when ge cannot import it; default True",
    "executor": "'simulator' (default: ge.compile and run on the simulator) or 'reference' (graph-level interpreter)",
}


def _torch():
    try:
        import torch
    except ImportError:
        raise GeError("PyTorch is not installed; pip install 'ge[torch]'") from None
    return torch


def export(module, example_inputs: Sequence, decompositions=None):
    """torch.export + run_decompositions (to the core ATen opset, or with `decompositions`)."""
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise GeError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}")
    args = tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
    try:
        ep = torch.export.export(module, args, strict=False)
        return ep.run_decompositions(decompositions) if decompositions is not None else ep.run_decompositions()
    except Exception as e:  # torch raises many kinds here (UserError, Unsupported, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnsupportedModelError(f"from_torch: torch.export cannot capture {type(module).__name__}: {first}") from None


def from_torch(module, example_inputs: Sequence, input_names: Sequence[str] | None = None,
               output_names: Sequence[str] | None = None, decompositions=None):
    """A torch module -> a graph-dialect ModuleOp (weights as blobs, input/output names kept).

    `example_inputs` fixes the (static) shapes and dtypes; inputs are named `input_names`,
    else after forward's parameters; outputs `output_names`, else after their FX nodes.
    Call `module.eval()` first: batch norm and dropout convert in inference mode only.
    """
    from ge.frontend.torch_fx import import_exported_program

    ep = export(module, example_inputs, decompositions)
    return import_exported_program(ep, input_names, output_names, where=type(module).__name__)


class TorchSource:
    """A torch module and its example inputs, as `ge.compile` receives them: imported once
    per gear, with the gear's input shapes (`input_shape="x:-1,3,32,32"` plus
    `dynamic_batch_size`) in place of the examples' shapes."""

    def __init__(self, module, example_inputs: Sequence):
        self.module = module
        self.example_inputs = tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
        self.names = _forward_names(module, len(self.example_inputs))

    def imported(self, shapes: dict[str, tuple[int, ...]]):
        from ge.errors import ShapeError

        torch = _torch()
        unknown = [n for n in shapes if n not in self.names]
        if unknown:
            raise ShapeError(f"{type(self.module).__name__}: input_shape names {', '.join(map(repr, unknown))}; the "
                             f"module's inputs are {', '.join(map(repr, self.names))}")
        args = []
        for name, x in zip(self.names, self.example_inputs):
            shape = shapes.get(name)
            if shape is not None and len(shape) != x.dim():
                raise ShapeError(f"input_shape gives '{name}' rank {len(shape)}; the example input has rank {x.dim()}")
            args.append(x if shape is None or tuple(shape) == tuple(x.shape) else torch.zeros(shape, dtype=x.dtype))
        return from_torch(self.module, args)


def _forward_names(module, count: int) -> list[str]:
    """The names of forward's first `count` parameters (what torch.export calls the inputs)."""
    import inspect

    params = [p.name for p in inspect.signature(module.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return params[:count] + [f"input{i}" for i in range(len(params), count)]


# --------------------------------------------------------------------------------------
# The Dynamo backend
# --------------------------------------------------------------------------------------


def _split_options(options: dict[str, Any] | None):
    from ge.compiler import CompileOptions

    options = dict(options or {})
    fields = {f.name for f in dataclasses.fields(CompileOptions)}
    unknown = sorted(k for k in options if k not in fields and k not in BACKEND_OPTIONS)
    if unknown:
        raise GeError(f"torch.compile(backend='ge'): unknown option(s) {', '.join(unknown)}; known: "
                      + ", ".join(sorted(fields | set(BACKEND_OPTIONS))))
    backend = {k: options.pop(k) for k in list(options) if k in BACKEND_OPTIONS}
    executor = backend.get("executor", "simulator")
    if executor not in ("simulator", "reference"):
        raise GeError(f"torch.compile(backend='ge'): executor '{executor}' is not 'simulator' or 'reference'")
    options.setdefault("precision_mode", "must_keep_origin_dtype")
    return CompileOptions(**options), bool(backend.get("fallback", True)), executor


def _fullgraph() -> bool:
    """True when the graph being compiled was asked for with torch.compile(fullgraph=True)."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
    except Exception:  # not inside Dynamo (the backend called directly)
        return False
    return bool(getattr(tx, "one_graph", False))


def import_dynamo_graph(gm, example_inputs: Sequence):
    """Dynamo's GraphModule, at the given concrete inputs -> (graph module, input positions
    that stay inputs).

    Dynamo passes parameters and buffers as inputs (marked static); they become weights.
    Sizes (ints; a dynamic-shape graph's SymInts made concrete) become constants.
    """
    torch = _torch()
    from ge.frontend.torch_fx import Placeholder, import_graph_module, to_numpy

    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor | int):
            raise UnsupportedModelError(f"input #{i} is a {type(x).__name__}; ge takes tensors and sizes")
    frozen = [isinstance(x, torch.nn.Parameter) or getattr(x, "_dynamo_static_input_type", None) is not None
              for x in example_inputs]
    ep = export(gm, example_inputs)
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    from torch.export.graph_signature import InputKind

    nodes = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    specs = ep.graph_signature.input_specs
    user = iter(range(len(example_inputs)))
    placeholders, kept = [], []
    for node, spec in zip(nodes, specs):
        if spec.kind != InputKind.USER_INPUT:
            source = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
            placeholders.append(Placeholder(node, spec.target, to_numpy(source)))
            continue
        i = next(user)
        x = example_inputs[i]
        if isinstance(x, int):
            placeholders.append(Placeholder(node, _input_name(names[i]), np.array(x, np.int64)))
        elif frozen[i]:
            placeholders.append(Placeholder(node, _weight_name(names[i]), to_numpy(x)))
        else:
            placeholders.append(Placeholder(node, _input_name(names[i])))
            kept.append(i)
    module = import_graph_module(ep.graph_module, placeholders, where="torch.compile graph")
    return module, kept


def _input_name(placeholder: str) -> str:
    """Dynamo's `L_x_` -> `x`."""
    name = placeholder[2:] if placeholder.startswith(("L_", "G_")) else placeholder
    return name.rstrip("_") or placeholder


def _weight_name(placeholder: str) -> str:
    """Dynamo's `L_self_modules_fc_parameters_weight_` -> `fc.weight`."""
    name = _input_name(placeholder)
    for prefix in ("self_", "s_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.replace("modules_", "").replace("parameters_", "").replace("buffers_", "")


class GeGraph:
    """A captured graph compiled by ge: called with the graph's inputs, returns torch tensors."""

    def __init__(self, module, kept: list[int], options, executor: str, cached: bool = False):
        from ge.dialects.graph import argument_names
        from ge.runtime.reference import find_function

        self.module, self.kept, self.executor = module, kept, executor
        self.names = argument_names(find_function(module, "main"))
        self.compiled = None
        if executor == "simulator":
            from ge.compiler import compile as ge_compile
            from ge.dynamic import compile_module_cached  # dynamic-shape graphs: the on-disk kernel cache

            self.compiled = compile_module_cached(module, options) if cached else ge_compile(module, options)

    def __call__(self, *args):
        torch = _torch()
        from ge.frontend.torch_fx import to_numpy

        arrays = [to_numpy(args[i]) for i in self.kept]
        if self.compiled is None:
            from ge.runtime.reference import run

            outs = run(self.module, arrays)
        else:
            result = self.compiled.run(dict(zip(self.names, arrays)))
            outs = [result[o["name"]] for o in self.compiled.outputs]
        return tuple(torch.from_numpy(np.require(o, requirements=["C", "W"])) for o in outs)


def _concrete(x):
    """A SymInt of a dynamic-shape graph as the int it stands for in this example."""
    hint = getattr(getattr(x, "node", None), "hint", None)
    return int(hint) if hint is not None and not isinstance(x, int) else x


def _shape_key(args: Sequence) -> tuple:
    return tuple((tuple(a.shape), a.dtype) if hasattr(a, "shape") else a for a in args)


class ShapeSpecialized:
    """A dynamic-shape graph (Dynamo marks sizes symbolic after it sees a second shape):
    ge compiles static shapes, so it is compiled once per concrete set of input shapes."""

    def __init__(self, gm, options, executor: str, fallback: bool, args: Sequence, first: GeGraph):
        self.gm, self.options, self.executor, self.fallback = gm, options, executor, fallback
        self.graphs: dict[tuple, Callable] = {_shape_key(args): first}

    def __call__(self, *args):
        key = _shape_key(args)
        if key not in self.graphs:
            self.graphs[key] = self._build(args)
        return self.graphs[key](*args)

    def _build(self, args: Sequence) -> Callable:
        try:
            return GeGraph(*import_dynamo_graph(self.gm, args), self.options, self.executor, cached=True)
        except UnsupportedModelError as e:
            if not self.fallback:
                raise UnsupportedModelError(f"torch.compile(backend='ge'): {e}") from None
            log.warning("ge: running this graph eagerly for these shapes: %s", e)
            return self.gm.forward


def ge_backend(gm, example_inputs, options: dict[str, Any] | None = None) -> Callable:
    """The Dynamo backend registered as "ge" (entry point `torch_dynamo_backends`)."""
    compile_options, fallback, executor = _split_options(options)
    args = [_concrete(x) for x in example_inputs]
    symbolic = any(a is not x for a, x in zip(args, example_inputs))  # sizes were symbolic
    try:
        module, kept = import_dynamo_graph(gm, args)
        compiled = GeGraph(module, kept, compile_options, executor, cached=symbolic)
    except UnsupportedModelError as e:
        if not fallback or _fullgraph():
            raise UnsupportedModelError(f"torch.compile(backend='ge'): {e}") from None
        log.warning("ge: running this graph eagerly: %s", e)
        return gm.forward
    if symbolic:
        return ShapeSpecialized(gm, compile_options, executor, fallback and not _fullgraph(), args, compiled)
    return compiled
