"""`bufferize`: fusion level -> tile level (untiled). Graph tensors become GM buffers, each
`fusion.group` becomes a `tile.kernel`, and the graph function launches the kernels in order.

- Function arguments and results, group results and weights become memrefs in
  `#tile.space<gm>` with the tensor's storage shape (a storage-formatted tensor keeps its
  NC1HWC0 / FRACTAL_Z / FRACTAL_NZ shape; the kernels know the format from their ops).
- `graph.constant` -> `tile.const` (the same weight blob); view ops (reshape, flatten,
  squeeze, unsqueeze, identity, dropout) -> `tile.view` of the same bytes.
- `fusion.group` -> `tile.kernel @kN_<node> ins(...) outs(...)` holding the group's ops in a
  `tile.untiled` body, one `tile.alloc` per group result and a `tile.launch`.

Every compute op must be inside a group: run `fuse` first. The kernel keeps the group's
location (its ONNX node names) so that tiling errors and profiles name the user's nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge.dialects import fusion
from ge.dialects import graph as g
from ge.dialects import tile as t
from ge.lowering.fuse import op_label
from ge.lowering.fusion_rules import VIEW_OPS
from ge.transforms.tile_capacity import node_names


def gm_type(ty: Attribute) -> MemRefType:
    """The GM buffer holding a tensor of type `ty` (its storage shape and element type)."""
    if not isinstance(ty, TensorType):
        raise PassFailedException(f"bufferize: expected a tensor, got {ty}")
    return t.buffer_type(ty.get_shape(), ty.element_type, t.MemSpace.GM)


def kernel_label(group: fusion.GroupOp) -> str:
    """A symbol-friendly name for a group: its first ONNX node's name (from the group's
    location), else its first op's result name."""
    names = node_names(group)
    label = names[0] if names else op_label(next(iter(group.body.block.ops)))
    label = re.sub(r"[^A-Za-z0-9_]", "_", label).strip("_")
    return label[:40] or "kernel"


def outline(group: fusion.GroupOp, name: str) -> t.KernelOp:
    """The kernel computing `group`: its body in a `tile.untiled` on GM arguments."""
    ins = [gm_type(v.type) for v in group.inputs]
    outs = [gm_type(r.type) for r in group.outputs]
    kernel = t.KernelOp(name, ins, outs, group.kind.data)
    args = kernel.body.block.args
    for arg, v in zip(args, group.inputs):
        arg.name_hint = v.name_hint
    for arg, r in zip(args[len(ins):], group.outputs):
        arg.name_hint = r.name_hint
    body = group.body.clone()
    yield_op = body.block.last_op
    assert isinstance(yield_op, fusion.YieldOp)
    body.block.insert_op_before(t.YieldOp(*yield_op.values), yield_op)
    body.block.erase_op(yield_op)
    kernel.body.block.add_op(t.UntiledOp(args[: len(ins)], args[len(ins):], body))
    kernel.location = group.location
    if group.rule_names:
        kernel.attributes["rules"] = ArrayAttr([StringAttr(r) for r in group.rule_names])
    warm = [i for i, v in enumerate(group.inputs) if _written_in_run(v)]
    if warm:
        kernel.attributes["l2_inputs"] = ArrayAttr([IntegerAttr(i, 64) for i in warm])
    return kernel


def _written_in_run(v: SSAValue) -> bool:
    """Is `v` written by a kernel of the run (not a model input, not a constant, seen
    through views)? Such an input may still sit in the L2 when its reader launches (the
    tiler's cost model: `tile_cube.WARM_INPUTS`)."""
    while isinstance(v, OpResult):
        op = v.op
        if isinstance(op, g.ConstantOp | t.ConstOp):
            return False
        if not isinstance(op, VIEW_OPS) or not op.operands:
            return True
        v = op.operands[0]
    return False


class _FunctionBufferizer:
    def __init__(self, module: ModuleOp, fn: func.FuncOp, names: set[str]):
        self.module = module
        self.fn = fn
        self.names = names
        self.env: dict[SSAValue, SSAValue] = {}

    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def run(self) -> None:
        old = self.fn.body.block
        block = Block(arg_types=[gm_type(a.type) for a in old.args])
        for a, b in zip(old.args, block.args):
            b.name_hint = a.name_hint
            self.env[a] = b
        results: list[Attribute] = []
        for op in list(old.ops):
            for new in self.lower(op):
                block.add_op(new)
            if isinstance(op, func.ReturnOp):
                results = [self.env[v].type for v in op.arguments]
        self.fn.body.detach_block(old)
        self.fn.body.add_block(block)
        self.fn.properties["function_type"] = FunctionType.from_lists([a.type for a in block.args], results)

    def lower(self, op: Operation) -> list[Operation]:
        if isinstance(op, g.ConstantOp):
            if all(isinstance(u.operation, VIEW_OPS) and u.index > 0 for u in op.output.uses):
                return []  # only a view's shape operand: no buffer
            new = t.ConstOp(op.value, gm_type(op.output.type))
            return self.bind(op, new, [new.result])
        if isinstance(op, VIEW_OPS):
            return self.view(op)
        if isinstance(op, fusion.GroupOp):
            return self.group(op)
        if isinstance(op, func.ReturnOp):
            return [func.ReturnOp(*[self.env[v] for v in op.arguments])]
        where = f" ('{op_label(op)}')" if op.results else ""
        raise PassFailedException(
            f"bufferize: {op.name}{where} is not in a fusion.group; run `fuse` first so that every compute op "
            "belongs to a kernel"
        )

    def bind(self, op: Operation, new: Operation | None, values: list[SSAValue]) -> list[Operation]:
        for old, v in zip(op.results, values):
            if old.name_hint:
                v.name_hint = old.name_hint
            self.env[old] = v
        return [new] if new is not None else []

    def view(self, op: Operation) -> list[Operation]:
        if any(r.uses for r in op.results[1:]):
            raise PassFailedException(f"bufferize: the second result of {op.name} ('{op_label(op)}') is used")
        src = self.env[op.operands[0]]
        want = gm_type(op.results[0].type)
        if src.type == want:
            return self.bind(op, None, [src])
        new = t.ViewOp(src, want.get_shape())
        new.location = op.location
        return self.bind(op, new, [new.result])

    def group(self, group: fusion.GroupOp) -> list[Operation]:
        name = self.unique(f"k{len(self.names)}_{kernel_label(group)}")
        kernel = outline(group, name)
        self.module.body.block.insert_op_before(kernel, self.fn)
        allocs = [t.AllocOp(gm_type(r.type)) for r in group.outputs]
        launch = t.LaunchOp(name, [self.env[v] for v in group.inputs], [a.result for a in allocs])
        launch.location = group.location
        return [*self.bind(group, None, [a.result for a in allocs]), *allocs, launch]


@dataclass(frozen=True)
class BufferizePass(ModulePass):
    """Tensors -> GM buffers, fusion groups -> launched kernels (see the module docstring)."""

    name = "bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = {o.sym_name.data for o in op.ops if isinstance(o, t.KernelOp)}
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                _FunctionBufferizer(op, fn, names).run()
