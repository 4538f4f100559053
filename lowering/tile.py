"""`tile`: untiled kernels -> loops over tiles that fit the AI Core's buffers.

For every `tile.kernel` whose body is still a `tile.untiled` (from `bufferize`) the pass
picks tile sizes, loop order, buffer counts and the multi-core split (`block_dim`) from
the target's capacities and the analytic cost model (lowering/tile_cost.py), then emits
the tiled body:

- a Conv / MatMul / Gemm group -> a Cube kernel (lowering/tile_cube.py): L1 chunks,
  img2col / L0 loads, mmad into L0C, the fused epilogue in UB;
- a data-movement op (Concat, Split, Slice, Gather, Pad, Expand, Tile, DepthToSpace,
  SpaceToDepth, Trilu) -> DMA copy loops (lowering/tile_move.py);
- every other group -> a vector kernel (lowering/tile_vector.py): CopyIn / Compute /
  CopyOut over the tiles of its output.

Each kernel records its choice as attributes: `tile.plan` (the tiles), `tile.cycles` (the
modeled cycles) and `tile.bound` (the roofline bound: max of compute at peak and GM
traffic at HBM bandwidth). `tile{debug=true}` prints the same per kernel on stderr. The
choice is deterministic (a fixed candidate order; ties keep the first). A kernel whose
smallest tiling does not fit a local memory is a compile error naming the kernel, the
memory and the bytes needed and available; every emitted kernel is checked again by
`check_kernel` (transforms/tile_capacity.py).

`tile{target=ascend910b}` names the chip when the module does not (`ge.target`, default
ascend910).
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, NameLoc, NoneAttr, StringAttr, TensorType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge import plugin_tile, targets
from ge.dialects import tile as t
from ge.dialects.blobs import attr_array, constant_attr
from ge.dialects.dtypes import numpy_dtype
from ge.lowering import op_bank
from ge.lowering import tile_cube as cube
from ge.lowering import tile_move as move
from ge.lowering import tile_vector as vec
from ge.lowering.kernel_dedup import PROBE_BLIND, clone_kernel, defined_values, structure_key
from ge.lowering.tile_cost import Machine, Roofline
from ge.lowering.tile_ir import KernelBuilder
from ge.runtime import layouts
from ge.transforms.tile_capacity import (
    TileCapacityError,
    check_kernel,
    describe_kernel,
    node_names,
    overflow_message,
)


@dataclass
class KernelReport:
    """What `tile` chose for one kernel (also what the debug log prints)."""

    name: str
    what: str
    plan: str
    blocks: int
    cycles: float
    bound: Roofline
    candidates: int
    nodes: tuple[str, ...] = ()
    chosen: object = None  # the CubePlan / VectorPlan / MovePlan
    problem: object = None  # the CubeProblem of a cube kernel

    def line(self) -> str:
        return (f"{self.what}: {self.plan} | cycles {self.cycles:.0f}, bound {self.bound.bound:.0f} "
                f"(compute {self.bound.compute:.0f}, gm {self.bound.memory:.0f}) | {self.candidates} candidates")


def _tensor_shape(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def _shape(v: SSAValue) -> str:
    ty = v.type
    assert isinstance(ty, TensorType)
    return "x".join(map(str, ty.get_shape())) + f"x{ty.element_type}"


class _KernelTiler:
    def __init__(self, module: ModuleOp, kernel: t.KernelOp, mach: Machine, launch: t.LaunchOp | None):
        self.module, self.kernel, self.mach, self.launch = module, kernel, mach, launch
        untiled = kernel.body.block.first_op
        assert isinstance(untiled, t.UntiledOp)
        self.block: Block = untiled.body.block
        self.name = kernel.sym_name.data

    def weight_value(self, v: SSAValue) -> np.ndarray | None:
        """The origin-format value of group argument `v` when it is a constant weight."""
        if self.launch is None or v not in self.block.args:
            return None
        operand = self.launch.operands[self.block.args.index(v)]
        owner = operand.owner
        if not isinstance(owner, t.ConstOp):
            return None
        ty = v.type
        assert isinstance(ty, TensorType)
        return layouts.to_origin(np.asarray(attr_array(owner.value)).reshape(ty.get_shape()), ty)

    def run(self) -> KernelReport:
        if plugin_tile.is_custom_group(self.block):
            return self.custom_kernel()
        if cube.is_cube_group(self.block):
            return self.cube_kernel()
        if all(math.prod(_tensor_shape(v)) == 0 for v in self.block.last_op.operands):
            return self.empty_kernel()
        if move.is_move_group(self.block):
            return self.move_kernel()
        return self.vector_kernel()

    # -- kernel kinds --------------------------------------------------------------------

    def new_kernel(self, in_types=None) -> tuple[t.KernelOp, KernelBuilder, dict[SSAValue, SSAValue]]:
        old = self.kernel
        ins = in_types or [a.type for a in old.ins]
        new = t.KernelOp(self.name, ins, [a.type for a in old.outs], old.kind.data)
        new.location = old.location
        new.attributes.update(old.attributes)
        for a, b in zip(old.body.block.args, new.body.block.args):
            b.name_hint = a.name_hint
        gm = dict(zip(self.block.args, new.ins))
        for v, arg in zip(self.block.last_op.operands, new.outs):
            gm.setdefault(v, arg)
        return new, KernelBuilder(new), gm

    def cube_kernel(self) -> KernelReport:
        p = cube.cube_problem(self.block, self.weight_value, self.mach.target)
        plan = cube.plan_cube(p, self.mach)
        cube.use_plan(p, plan)
        in_types = [a.type for a in self.kernel.ins]
        rebuilt = self.rebuilt_constants(p)
        for index, value, _ in rebuilt:
            in_types[index] = t.buffer_type(list(value.shape), p.elem, t.MemSpace.GM)
        new, b, gm = self.new_kernel(in_types)
        cube.emit_cube(b, p, plan, gm, self.mach.target)
        for index, value, type_ in rebuilt:
            self.replace_constant(index, value, type_)
        anchor = p.anchor
        if p.kind == "conv":
            cv = p.conv
            what = (f"cube conv {_shape(anchor.operands[0])} -> {_shape(anchor.results[0])} k{cv['kh']}x{cv['kw']} "
                    f"s{cv['strides'][0]} g{cv['group']}" + (f" (extended x{cv['ext']})" if cv["ext"] > 1 else ""))
            if p.summed is not None:  # (the original strides: the problem's are the concatenated map's)
                (_, _, own), (src, _, sub) = p.a_parts
                what = (f"cube conv {_shape(anchor.operands[0])} k1x1 s{own[0]} and conv {_shape(src)} k1x1 s{sub[0]} "
                        f"summed (K concatenated) -> {_shape(anchor.results[0])}")
        else:
            what = f"cube {anchor.name.split('.')[1]} {_shape(anchor.operands[0])} x {_shape(anchor.operands[1])}"
        if p.epilogue_ops:
            what += " + " + " ".join(o.name.split(".")[1] for o in p.epilogue_ops)
        report = self.finish(new, what, plan.describe(), plan.blocks, plan.cycles, cube.roofline(p, self.mach),
                             plan.candidates)
        report.chosen, report.problem = plan, p
        return report

    def rebuilt_constants(self, p: cube.CubeProblem) -> list[tuple[int, np.ndarray, TensorType]]:
        """(kernel operand, new value, its type) of the constants the Cube reads rebuilt: the
        weights (`weight_transform`: C04, extended groups), the bias as a B block (`bias_block`)."""
        out = []
        if p.weight_transform is not None:
            out.append((self.block.args.index(p.anchor.operands[1]), p.weight_transform, p.weight_type))
        if p.summed is not None:  # (the partner conv's weights are in `weight_transform`'s: one element left)
            partner = next(v.owner for v in p.summed.operands if v.owner is not p.anchor)
            out.append((self.block.args.index(partner.weight), np.zeros((1, 1, 1, 1), numpy_dtype(p.elem)),
                        TensorType(p.elem, [1, 1, 1, 1])))
        if p.bias_block is not None:
            out.append((self.block.args.index(p.anchor.bias), p.bias_block,
                        TensorType(p.elem, list(p.bias_block.shape))))
        return out

    def replace_constant(self, index: int, value: np.ndarray, type_: TensorType) -> None:
        """Launch the kernel on a rebuilt constant (a new one, the old one dropped when
        nothing else uses it)."""
        assert self.launch is not None
        old = self.launch.operands[index]
        name = f"{old.name_hint or 'w'}_cube"
        const = t.ConstOp(constant_attr(value, type_, name),
                          t.buffer_type(type_.get_shape(), type_.element_type, t.MemSpace.GM))
        const.result.name_hint = name
        const.location = old.owner.location if isinstance(old.owner, t.ConstOp) else self.launch.location
        self.launch.parent.insert_op_before(const, self.launch)
        self.launch.operands[index] = const.result
        if isinstance(old.owner, t.ConstOp) and not old.uses:
            old.owner.parent.erase_op(old.owner)

    def copy_of(self, template: t.KernelOp, report: KernelReport, names: _Names) -> KernelReport:
        """This kernel tiled as its twin was: a copy of the twin's tiled kernel (`template`,
        tiled with placeholder names) with this one's names, kind and attributes, and its
        own weights rebuilt for the Cube as `cube_kernel` rebuilds them."""
        new = clone_kernel(template)  # (`template.clone()` in one pass)
        new.properties["sym_name"] = StringAttr(self.name)
        new.properties["kind"] = self.kernel.kind
        new.location = self.kernel.location
        tiled = {k: new.attributes[k] for k in _TILE_ATTRS}  # as `new_kernel` and `finish` order them
        new.attributes.clear()
        new.attributes.update(self.kernel.attributes)
        new.attributes.update(tiled)
        names.put(new)
        problem = report.problem
        if cube.is_cube_group(self.block):
            problem = cube.cube_problem(self.block, self.weight_value, self.mach.target)
            cube.use_plan(problem, report.chosen)
            for index, value, type_ in self.rebuilt_constants(problem):
                self.replace_constant(index, value, type_)
        self.module.body.block.insert_op_before(new, self.kernel)
        self.module.body.block.erase_op(self.kernel)
        self.kernel = new
        return dataclasses.replace(report, name=self.name, nodes=tuple(node_names(new)), problem=problem)

    def vector_kernel(self) -> KernelReport:
        kern = vec.VectorKernel.of(self.block)
        plan = vec.plan_vector(kern, self.mach)
        new, b, gm = self.new_kernel()
        vec.emit_vector(b, kern, plan, gm)
        ops = [o.name.split(".")[1] for o in list(self.block.ops)[:-1]]
        what = f"vector {' '.join(ops)} over {_shape(kern.maps.anchor)}"
        report = self.finish(new, what, plan.describe(), plan.blocks, plan.cycles, self.vector_bound(), plan.candidates)
        report.chosen = plan
        return report

    def empty_kernel(self) -> KernelReport:
        """Outputs without elements: nothing to compute (the body keeps one op)."""
        new, b, _ = self.new_kernel()
        b.block_idx()
        return self.finish(new, "empty outputs", "nothing to compute", 1, 0.0, Roofline(0.0, 0.0), 1)

    def move_kernel(self) -> KernelReport:
        plan = move.plan_move(self.block, self.mach)
        new, b, gm = self.new_kernel()
        move.emit_move(b, plan, gm)
        op = plan.op
        what = f"copy {op.name.split('.')[1]} {' '.join(_shape(v) for v in op.operands)} -> {_shape(op.results[0])}"
        report = self.finish(new, what, plan.describe(), plan.blocks, plan.cycles, self.vector_bound(), 1)
        report.chosen = plan
        return report

    def custom_kernel(self) -> KernelReport:
        """A plugin's `graph.custom` op: its own tile kernel builder writes the body."""
        new, b, gm = self.new_kernel()
        built = plugin_tile.build_custom_kernel(b, self.block, gm, self.mach, describe_kernel(self.kernel))
        return self.finish(new, built.what, built.plan, built.blocks, built.cycles, self.vector_bound(), 1)

    def vector_bound(self) -> Roofline:
        """GM traffic of the group at HBM speed; vector work of its ops over all cores."""
        mach = self.mach
        traffic = sum(_bytes(v) for v in self.block.args) + sum(_bytes(v) for v in set(self.block.last_op.operands))
        work = sum(mach.vector(max((_bytes(v) for v in (*o.operands, *o.results)), default=0), 1)
                   for o in list(self.block.ops)[:-1])
        return Roofline(work / mach.cores(cube=False), traffic / mach.hbm_bytes_per_cycle())

    def finish(self, new: t.KernelOp, what: str, plan: str, blocks: int, cycles: float, bound: Roofline,
               candidates: int) -> KernelReport:
        new.properties["block_dim"] = IntegerAttr(blocks, i64)
        new.attributes["tile.plan"] = StringAttr(plan)
        cycles += self.mach.launch()  # what the simulator charges each launch on top of its cores
        new.attributes["tile.cycles"] = IntegerAttr(math.ceil(cycles), i64)
        new.attributes["tile.bound"] = IntegerAttr(math.ceil(bound.bound), i64)
        self.module.body.block.insert_op_before(new, self.kernel)
        self.module.body.block.erase_op(self.kernel)
        self.kernel = new
        check_kernel(new, self.mach.target)
        return KernelReport(self.name, what, plan, blocks, cycles, bound, candidates, tuple(node_names(new)))


def _bytes(v: SSAValue) -> int:
    ty = v.type
    assert isinstance(ty, TensorType)
    from ge.dialects.dtypes import numpy_dtype

    return numpy_dtype(ty.element_type).itemsize * math.prod(ty.get_shape())


_TILE_ATTRS = ("tile.plan", "tile.cycles", "tile.bound")
_PLACEHOLDER = "getwin"
_VALUE = re.compile(_PLACEHOLDER + r"v(\d+)z")
_PLACE = re.compile(_PLACEHOLDER + r"l(\d+)z")


class _Names:
    """An untiled kernel's SSA name hints and op locations by position (what
    `structure_key` leaves out). `mask` puts placeholders in their place, so that the names
    and locations the tiler derives from them (`x` -> `x_ub`) say where they came from;
    `put` then writes a kernel's own into a tiling made under placeholders."""

    def __init__(self, kernel: t.KernelOp):
        self.values = list(defined_values(kernel))
        self.hints = [v.name_hint for v in self.values]
        self.ops = [op for op in kernel.walk() if op is not kernel]
        self.locs = [op.location for op in self.ops]

    def mask(self) -> None:
        for i, v in enumerate(self.values):
            if v.name_hint is not None:
                v.name_hint = f"{_PLACEHOLDER}v{i}z"
        for i, op in enumerate(self.ops):
            op.location = NameLoc(StringAttr(f"{_PLACEHOLDER}l{i}z"), NoneAttr())

    def restore(self) -> None:
        for v, hint in zip(self.values, self.hints):
            v.name_hint = hint
        for op, loc in zip(self.ops, self.locs):
            op.location = loc

    def put(self, kernel: Operation) -> None:
        for v in defined_values(kernel):
            if v.name_hint is not None and _PLACEHOLDER in v.name_hint:
                v.name_hint = _VALUE.sub(lambda m: self.hints[int(m[1])], v.name_hint)
        for op in kernel.walk():
            if isinstance(op.location, NameLoc) and (m := _PLACE.fullmatch(op.location.desc.data)):
                op.location = self.locs[int(m[1])]


def _twin_key(kernel: t.KernelOp, launch: t.LaunchOp | None) -> Hashable | None:
    """What a kernel's tiling depends on: its structure (not its kind and fusion rules,
    which the tiler only copies: a fusion probe's kernel has none), which of its inputs are
    constant (weights the Cube reads rebuilt), which of its values have no name, and the
    order of its ops' properties and attributes (a copy keeps its template's). None: tiled
    on its own (a plugin's kernel, placeholder text in a name or location)."""
    if plugin_tile.is_custom_group(kernel.body.block.first_op.body.block):
        return None
    hints = tuple(v.name_hint is None for v in defined_values(kernel))
    ops = list(kernel.walk())
    if any(_PLACEHOLDER in v.name_hint for v in defined_values(kernel) if v.name_hint) or any(
            isinstance(op.location, NameLoc) and _PLACEHOLDER in op.location.desc.data for op in ops):
        return None
    consts = None if launch is None else tuple(isinstance(v.owner, t.ConstOp) for v in launch.operands)
    order = tuple((tuple(op.properties), tuple(op.attributes)) for op in ops[1:])
    return structure_key(kernel, PROBE_BLIND), consts, hints, order


# Tilings by `_twin_key` -> (the tiled kernel under placeholder names, its report).
Tilings = dict[Hashable, tuple[t.KernelOp, KernelReport]]
# Tilings shared by the `tile` runs of one compile (fuse's probes and the tile stage; a
# `ProbeScope` sets it, lowering/fusion_legality.py), None outside one.
SHARED_TILINGS: ContextVar[Tilings | None] = ContextVar("ge_shared_tilings", default=None)


class _Twins:
    """Tilings by structure (ResNet repeats its blocks): the first kernel of a structure
    that occurs again in the module -- or, with `keep_all`, every kernel -- is tiled under
    placeholder names (`_Names`) and a copy of its tiling is kept (in `store`, shared with
    the compile's other tile runs, when given); a kernel of a kept structure gets that copy
    with its own names and locations put in, the same kernel `tile` would build for it
    (`test_compile_speed.py` compares)."""

    def __init__(self, kernels: list[t.KernelOp], launches: dict[str, t.LaunchOp], store: Tilings | None = None,
                 keep_all: bool = False):
        self.keys = {k: _twin_key(k, launches.get(k.sym_name.data)) for k in kernels}
        counts = Counter(key for key in self.keys.values() if key is not None)
        self.keep = set(counts) if keep_all else {key for key, n in counts.items() if n > 1}
        self.templates: Tilings = {} if store is None else store

    def tile(self, tiler: _KernelTiler) -> KernelReport:
        key = self.keys[tiler.kernel]
        if key is None or (key not in self.keep and key not in self.templates):
            return tiler.run()
        names = _Names(tiler.kernel)
        if key in self.templates:
            return tiler.copy_of(*self.templates[key], names)
        original = tiler.kernel
        names.mask()
        try:
            report = tiler.run()
        except Exception:
            if original.parent is None:  # refused after it was replaced (capacity: no names in that message)
                raise
            names.restore()
            return tiler.run()  # refused: again under its own names, for the message
        self.templates[key] = (clone_kernel(tiler.kernel), report)
        names.put(tiler.kernel)
        return report


_RECORDED: ContextVar[dict[str, KernelReport] | None] = ContextVar("ge_tile_reports", default=None)


@contextmanager
def recorded_reports() -> Iterator[dict[str, KernelReport]]:
    """Every kernel's `KernelReport` tiled inside the block, by kernel name (fuse's probes
    tile too: the last report of a kernel wins) -- what the tuner (ge/aoe.py) and the
    cost-model benchmarks pair with the simulator's per-kernel cycles."""
    reports: dict[str, KernelReport] = {}
    token = _RECORDED.set(reports)
    try:
        yield reports
    finally:
        _RECORDED.reset(token)


def tile_module(module: ModuleOp, target: targets.Target, copy_twins: bool = True,
                keep_all: bool = False) -> list[KernelReport]:
    """Tile every untiled kernel of `module` for `target`; returns what was chosen.
    `copy_twins`: a kernel structurally equal to one tiled before (in this module, or in
    the compile's `SHARED_TILINGS`) gets a renamed copy of its tiling (`_Twins`; the same
    module as tiling it again); `keep_all` keeps every kernel's tiling there (a fusion
    probe's, for the tile stage)."""
    mach = Machine(target)
    launches = {op.callee.root_reference.data: op for op in module.walk() if isinstance(op, t.LaunchOp)}
    untiled = [k for k in module.ops if isinstance(k, t.KernelOp) and isinstance(k.body.block.first_op, t.UntiledOp)]
    twins = _Twins(untiled, launches, SHARED_TILINGS.get(), keep_all) if copy_twins else None
    reports = []
    for kernel in untiled:
        tiler = _KernelTiler(module, kernel, mach, launches.get(kernel.sym_name.data))
        try:
            report = tiler.run() if twins is None else twins.tile(tiler)
        except vec.Unsupported as e:
            raise PassFailedException(f"tile: {describe_kernel(kernel)}: cannot tile: {e}") from None
        except vec.CapacityShortfall as e:
            raise TileCapacityError(
                overflow_message(kernel, t.MemSpace(e.space), e.need, e.have, target) + " (smallest tiling)"
                + (f": {e.why}" if e.why else "")
            ) from None
        reports.append(report)
    if (recorded := _RECORDED.get()) is not None:
        recorded.update((r.name, r) for r in reports)
    return reports


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Tile every kernel for the target's buffers (see the module docstring)."""

    name = "tile"

    target: str | None = None
    debug: bool = False
    op_bank: str | None = None  # a directory of tuned Cube plans (lowering/op_bank.py; ge-aoe writes one)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            current = targets.target_of(op)
            if current is not None and self.target is not None and current.name != self.target:
                raise PassFailedException(f"tile: the module targets '{current.name}' but the pass was given target={self.target}")
            target = current or targets.set_target(op, self.target or targets.DEFAULT_TARGET)
        except targets.TargetError as e:
            raise PassFailedException(f"tile: {e}") from None
        bank = None
        if self.op_bank is not None:
            try:
                bank = op_bank.OpBank.load(self.op_bank, target.soc_version)
            except op_bank.OpBankError as e:
                raise PassFailedException(f"tile: {e}") from None
        with op_bank.using(bank):
            reports = tile_module(op, target)
        if self.debug:
            for r in reports:
                print(f"[tile] @{r.name} block_dim {r.blocks} {r.line()}", file=sys.stderr)
            total = sum(r.cycles for r in reports)
            print(f"[tile] {len(reports)} kernels on {target.name}: {total:.0f} modeled cycles", file=sys.stderr)
