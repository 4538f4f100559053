"""Operator support without building: what `ge-compile --mode 3` reports (ATC's `--mode 3`).

Where it sits: on top of the compiler's stages (`ge.compiler.pass_stages`), stopping at
tiling legality. `check_support(model, options)` imports the model and runs the stages up
to `tile` -- graph-optimize, assign-layouts, eliminate-trans-data, fuse, bufferize and the
others the compiler runs there -- then tiles the kernels one at a time, so that one kernel
that cannot be tiled does not hide the others; at the isa kernel level it also asks the isa
vector lowering's table (`isa_vector.check_supported`) about every op of every tiled
`tile.vector`. Nothing is lowered to instructions, planned or built.

The answer is per ONNX node: `supported`, `unsupported` (the stage that refuses it and
why) or `unchecked` (an earlier stage stopped for another node, so this one was not
reached). A node the importer refuses (an operator ge does not have, an attribute it does
not support) is cut out -- its outputs become graph inputs of the types ONNX's shape
inference gives them -- and the rest imported again, so every node is checked; only when a
refused node's output type cannot be inferred are the nodes after it left unchecked.

`ge.backend.is_compatible(model, device="NPU")` can answer with
`check_support(model, CompileOptions(...)).supported`.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from typing import Any

from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

from ge.errors import GeError

SUPPORTED, UNSUPPORTED, UNCHECKED = "supported", "unsupported", "unchecked"
_STAGE_ERRORS = (PassFailedException, DiagnosticException, VerifyException, GeError)


@dataclass
class NodeSupport:
    """One ONNX node: its status, the stage that refuses it (or stopped before it), why,
    and the kernels it is part of."""

    node: str
    op_type: str
    status: str = UNCHECKED
    level: str | None = None
    reason: str | None = None
    kernels: list[str] = field(default_factory=list)

    def refuse(self, level: str, reason: str) -> None:
        if self.status != UNSUPPORTED:  # the earliest refusal is the one that matters
            self.status, self.level, self.reason = UNSUPPORTED, level, reason


@dataclass
class SupportReport:
    """Per-node support of one model on one target (`to_json` is the --check-report file)."""

    model: str
    target: str
    precision_mode: str
    kernel_level: str
    nodes: list[NodeSupport]
    stages: list[str]  # the stages that ran through
    seconds: float = 0.0

    @property
    def supported(self) -> bool:
        return all(n.status == SUPPORTED for n in self.nodes)

    @property
    def unsupported(self) -> list[NodeSupport]:
        return [n for n in self.nodes if n.status == UNSUPPORTED]

    def summary(self) -> str:
        """One line: how many nodes are supported, and the first refusals."""
        total = len(self.nodes)
        if self.supported:
            return (f"{self.model}: all {total} ONNX node(s) supported on {self.target} "
                    f"(checked up to {self.stages[-1] if self.stages else 'import'})")
        bad, unchecked = self.unsupported, sum(n.status == UNCHECKED for n in self.nodes)
        causes: dict[tuple, list[NodeSupport]] = {}  # the nodes of one refused kernel share a cause
        for n in bad:
            causes.setdefault((n.level, n.reason), []).append(n)
        shown = "; ".join(", ".join(f"'{n.node}' ({n.op_type})" for n in nodes) + f" at {level}: {reason}"
                          for (level, reason), nodes in list(causes.items())[:3])
        more = f"; and {len(causes) - 3} more" if len(causes) > 3 else ""
        rest = f", {unchecked} not reached" if unchecked else ""
        return (f"{self.model}: {len(bad)} of {total} ONNX node(s) unsupported on {self.target}{rest}: "
                f"{shown}{more}")

    def table(self) -> str:
        rows = [("node", "op", "status", "level", "kernels / reason")]
        for n in self.nodes:
            detail = n.reason if n.status != SUPPORTED else ", ".join(n.kernels) or "(no kernel: folded or a view)"
            rows.append((n.node, n.op_type, n.status, n.level or "", detail or ""))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "target": self.target, "precision_mode": self.precision_mode,
            "kernel_level": self.kernel_level, "supported": self.supported, "stages": self.stages,
            "summary": {s: sum(n.status == s for n in self.nodes) for s in (SUPPORTED, UNSUPPORTED, UNCHECKED)},
            "nodes": [dataclasses.asdict(n) for n in self.nodes],
        }


def _named_nodes(message: str, known: dict[str, NodeSupport]) -> list[str]:
    """The ONNX nodes a stage's error message names (`node 'x'`, `(node x)`, `(nodes x, y)`)."""
    names = re.findall(r"node '([^']+)'", message)
    for group in re.findall(r"\(nodes? ([^)]+)\)", message):
        names += [n.strip() for n in group.split(",")]
    return [n for n in dict.fromkeys(names) if n in known]


def _reason(e: Exception) -> str:
    return " ".join(str(e).split())


class _Check:
    """One run of the pre-check on one module."""

    def __init__(self, proto, name: str, options, target):
        from ge.frontend.onnx import node_name

        self.proto, self.name, self.options, self.target = proto, name, options, target
        self.nodes = {node_name(n): NodeSupport(node_name(n), n.op_type) for n in proto.graph.node}
        self.stages: list[str] = []

    def stop(self, level: str) -> None:
        """Mark every node not yet refused as not reached (the check stops at `level`)."""
        for n in self.nodes.values():
            if n.status == UNCHECKED and n.reason is None:
                n.level, n.reason = level, f"not reached: the check stopped at {level}"

    def refuse_named(self, level: str, e: Exception) -> bool:
        """Refuse the nodes an error names; False when it names none (a whole-model error)."""
        node = getattr(e, "node", None)
        names = [node] if node in self.nodes else _named_nodes(str(e), self.nodes)
        reason = _reason(e)
        if node in self.nodes:  # the importer's `file: node 'n' (Op, opset k): ` prefix is the row itself
            reason = re.sub(r"^.*?node '[^']*' \([^)]*\): ", "", reason, count=1)
        for n in names:
            self.nodes[n].refuse(level, reason)
        return bool(names)

    def run(self):
        from ge.frontend.onnx import converter_for, import_model

        for n, node in zip(self.nodes.values(), self.proto.graph.node):
            if converter_for(node) is None:  # ge's own operators and registered custom ones (ge.plugins)
                n.refuse("import", f"operator {node.domain or 'ai.onnx'}::{node.op_type} is not supported by ge")
        while True:  # each refused node is cut out (its outputs become inputs) and the rest imported again
            refused = {n.node for n in self.nodes.values() if n.status == UNSUPPORTED}
            proto, unreached = _cut(self.proto, refused, self.options.input_shape) if refused else (self.proto, {})
            for name, blocker in unreached.items():
                self.nodes[name].level = "import"
                self.nodes[name].reason = f"not reached: it needs the output of '{blocker}', whose type is unknown"
            try:
                module = import_model(proto, input_shape=self.options.input_shape, name=self.name)
                break
            except GeError as e:
                if not self.refuse_named("import", e):
                    raise
                if {n.node for n in self.nodes.values() if n.status == UNSUPPORTED} == refused:
                    return self.stop("import")
        self.stages.append("import")
        return self.passes(module)

    def passes(self, module) -> None:
        from ge.compiler import pass_stages
        from ge.ir import make_context

        ctx = make_context()
        for stage, p in pass_stages(dataclasses.replace(self.options, kernel_level="tile"), self.target):
            if stage == "tile":
                self.tile(module)
                continue
            try:
                p.apply(ctx, module)
                module.verify()
            except _STAGE_ERRORS as e:
                if not self.refuse_named(stage, e):
                    raise GeError(f"{self.name}: {stage} failed: {_reason(e)}") from None
                return self.stop(stage)
            self.stages.append(stage)

    def tile(self, module) -> None:
        """Tile every kernel; a kernel that cannot be tiled refuses its nodes, the rest go on."""
        from ge import targets
        from ge.dialects import tile as t
        from ge.lowering.tile import tile_module
        from ge.transforms.tile_capacity import node_names

        if targets.target_of(module) is None:
            targets.set_target(module, self.target.name)
        kernels = {k.sym_name.data: list(dict.fromkeys(node_names(k))) for k in module.ops if isinstance(k, t.KernelOp)}
        for kernel, names in kernels.items():
            for n in names:
                if n in self.nodes:
                    self.nodes[n].kernels.append(kernel)
        while True:
            try:
                tile_module(module, self.target)
                break
            except _STAGE_ERRORS as e:
                failed = _failing_kernel(module, str(e))
                if failed is None:
                    raise GeError(f"{self.name}: tile failed: {_reason(e)}") from None
                refused = [n for n in kernels.get(failed.sym_name.data, []) if n in self.nodes]
                refused = refused or _named_nodes(str(e), self.nodes)
                if not refused:  # no ONNX node to blame: the model as a whole does not compile
                    raise GeError(f"{self.name}: tile failed: {_reason(e)}") from None
                for n in refused:
                    self.nodes[n].refuse("tile", _reason(e))
                module.body.block.erase_op(failed)  # its launch names a symbol: nothing else uses it
        self.stages.append("tile")
        if self.options.kernel_level == "isa":
            self.isa_support(module)
            self.stages.append("to-isa")  # its support check only: nothing is lowered
        for n in self.nodes.values():
            if n.status == UNCHECKED and n.reason is None:  # not a node cut off behind a refused one
                n.status, n.level = SUPPORTED, self.stages[-1]

    def isa_support(self, module) -> None:
        """The isa vector lowering's own check (`isa_vector.check_supported`, what to-isa runs
        first) on every tile.vector; its message names the refused ops' nodes."""
        from ge.dialects import tile as t
        from ge.lowering.isa_vector import check_supported
        from ge.transforms.tile_capacity import node_names

        for kernel in module.ops:
            if not isinstance(kernel, t.KernelOp):
                continue
            for op in kernel.walk():
                if not isinstance(op, t.VectorOp):
                    continue
                try:
                    check_supported(op)
                except _STAGE_ERRORS as e:
                    named = _named_nodes(str(e), self.nodes) or [n for n in node_names(kernel) if n in self.nodes]
                    for n in named:
                        self.nodes[n].refuse("to-isa", f"kernel @{kernel.sym_name.data}: {_reason(e)}")


def _cut(proto, refused: set[str], input_shape: dict[str, tuple[int, ...]]):
    """(model, unreached): a copy of the model without the `refused` nodes, their outputs
    made graph inputs of the types ONNX's shape inference gives them and their inputs made
    graph outputs (so that what feeds them is still built and checked). A node that needs
    an output whose type cannot be inferred is cut too: `unreached` maps it to the refused
    node it waits for."""
    import onnx

    from ge.frontend.onnx import node_name

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    g = model.graph
    for vi in g.input:
        if vi.name in input_shape:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in input_shape[vi.name]:
                dims.add().dim_value = d
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        known = {vi.name: vi for vi in (*inferred.value_info, *inferred.output)}
    except Exception:  # onnx raises several kinds on models it cannot infer
        known = {}

    def static(name: str) -> bool:
        tt = known[name].type.tensor_type if name in known else None
        return tt is not None and tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim)

    produced = {o: n for n in g.node for o in n.output if o}
    dead: dict[str, str] = {}  # value -> the refused node it comes from
    unreached: dict[str, str] = {}
    keep, fed = [], []
    for n in g.node:
        name = node_name(n)
        blocker = next((dead[i] for i in n.input if i in dead), None)
        if name not in refused and blocker is None:
            keep.append(n)
            continue
        fed += [i for i in n.input if i in produced]
        if blocker is not None and name not in refused:
            unreached[name] = blocker
        for out in filter(None, n.output):
            if name in refused and static(out):
                g.input.append(known[out])
            else:
                dead[out] = blocker or name
    outputs = [o for o in g.output if o.name not in dead]
    names = {o.name for o in outputs}
    outputs += [onnx.helper.make_empty_tensor_value_info(v) for v in dict.fromkeys(fed)
                if v not in names and v not in dead]
    del g.node[:]
    g.node.extend(keep)
    del g.output[:]
    g.output.extend(outputs)
    return model, unreached


def _failing_kernel(module, message: str):
    """The kernel a tile error is about: the one it names, else the first still untiled."""
    from ge.dialects import tile as t

    kernels = [k for k in module.ops if isinstance(k, t.KernelOp)]
    for name in re.findall(r"@([\w$.-]+)", message):
        for k in kernels:
            if k.sym_name.data == name:
                return k
    return next((k for k in kernels if isinstance(k.body.block.first_op, t.UntiledOp)), None)


def check_support(model, options=None) -> SupportReport:
    """Per-node support of an ONNX model (path, bytes or ModelProto) for `options`' target,
    precision and kernel level, without building (see the module docstring)."""
    from ge.compiler import CompileOptions, compile_gears, resolve_target
    from ge.frontend.onnx import load_onnx_model

    start = time.perf_counter()
    options = options or CompileOptions()
    target = resolve_target(options.soc_version)
    if options.input_shape_range:  # a dynamic-shape model: checked at the smallest shapes of its ranges
        from ge.dynamic import parse_shape_ranges

        shapes = {n: tuple(lo for lo, _ in r) for n, r in parse_shape_ranges(options.input_shape_range).items()}
        options = dataclasses.replace(options, input_shape_range=None)
    else:
        shapes = dict(compile_gears(options)[0].shapes)
    name = _model_name(model)
    proto = load_onnx_model(model, name)
    check = _Check(proto, name, dataclasses.replace(options, input_shape=shapes), target)
    check.run()
    return SupportReport(name, target.name, options.precision_mode, options.kernel_level, list(check.nodes.values()),
                         check.stages, time.perf_counter() - start)


def _model_name(model) -> str:
    from pathlib import Path

    if isinstance(model, str | Path):
        return str(model)
    graph = getattr(model, "graph", None)
    return graph.name if graph is not None and graph.name else "<model>"
