"""Fusion legality: does a candidate group become a kernel the later stages can build?

A fusion rule only proposes a group; whether it is a kernel is for the tiler to say (its
tiling rules, its UB budget with scratch included) and for the isa lowering (the buffers
it really allocates). `group_tiles(ops)` asks them: it outlines the candidate ops into a
scratch module exactly as `bufferize` would (the same kernel, its constant weights
launched as constants), then runs `tile`, `to-isa` and `plan-local-memory` on it. The
answer is None when the group builds, else the reason it does not (the stage's message),
so that `fuse` forms the group or tries a smaller one (see lowering/fuse.py).

A probe costs one kernel's compile; `fuse` asks only about groups of two ops or more, once
per structure in one run. A probe that fails with a refusal (a GeError, a pass or verify
failure: capacity, an unsupported lowering) answers why; any other exception is a bug in a
later stage: the group is still refused, and the error is logged under `ge.fusion_legality`
and kept in `PROBE_BUGS` (the fuzzer reports it).

Inside a `ProbeScope` (`ge.compile` opens it around a gear) a probe that builds
also keeps its kernel after `plan-local-memory`, keyed by the `structure_key` of its tiled
kernel: the real pipeline's isa stages then take a kernel of the same key from there
instead of lowering and planning it a second time (lowering/kernel_dedup.py); it also keeps
its tiling, which the `tile` stage copies for a kernel of the same structure instead of
tiling it again (lowering/tile.py `SHARED_TILINGS`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Sequence
from contextvars import ContextVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

from ge import targets
from ge.dialects import fusion, isa
from ge.dialects import graph as g
from ge.dialects import tile as t
from ge.errors import GeError


def probe_group(ops: Sequence[Operation]) -> tuple[fusion.GroupOp, list[SSAValue]]:
    """A detached fusion.group holding clones of `ops` (in order): its inputs are the
    values the ops use from outside, its outputs the results used outside them."""
    from ge.lowering.fusion_rules import scalar_operands

    members = set(ops)
    inputs: list[SSAValue] = []
    inner = scalar_operands(ops)  # immediates inside the kernel, as fuse puts them
    for op in ops:
        for v in op.operands:
            if not (isinstance(v, OpResult) and v.op in members) and v not in inner and v not in inputs:
                inputs.append(v)
    block = ops[0].parent
    outputs = [r for op in ops for r in op.results
               if any(u.operation not in members and u.operation.parent is block for u in r.uses)]
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    for v, arg in zip(inputs, body.args):
        arg.name_hint = v.name_hint
    for op in ops:
        for v in op.operands:
            if v in inner and v not in mapping:  # as fuse places them: before the first reader
                body.add_op(scalar := inner[v].clone())
                mapping[v] = scalar.results[0]
        clone = op.clone(value_mapper=mapping)
        body.add_op(clone)
        for old, new in zip(op.results, clone.results):
            new.name_hint = old.name_hint
            mapping[old] = new
    body.add_op(fusion.YieldOp(*[mapping[r] for r in outputs]))
    group = fusion.GroupOp(list(inputs), [r.type for r in outputs], "probe", [], Region(body))
    group.location = ops[0].location
    for r, out in zip(group.results, outputs):  # named as fuse's group results are (outline names by them)
        r.name_hint = out.name_hint
    return group, inputs


def probe_module(ops: Sequence[Operation], target: targets.Target) -> ModuleOp:
    """A module with one kernel (the candidate group, outlined as `bufferize` does) and a
    function launching it on its constant weights and GM buffers."""
    from ge.lowering.bufferize import outline

    group, inputs = probe_group(ops)
    try:
        kernel = outline(group, "probe")
    finally:
        group.erase()  # its operands are the real values: drop those uses
    # the GM buffer types the kernel was outlined with (`gm_type` of its inputs, its outputs)
    in_types = [a.type for a in kernel.ins]
    consts = [isinstance(v, OpResult) and isinstance(v.op, g.ConstantOp) for v in inputs]
    fn = func.FuncOp("probe_main", ([ty for ty, c in zip(in_types, consts) if not c], []))
    block = fn.body.block
    args = iter(block.args)
    launch_ins = []
    for v, ty, const in zip(inputs, in_types, consts):
        if const:
            op = t.ConstOp(v.op.value, ty)
            op.result.name_hint = v.name_hint
            block.add_op(op)
            launch_ins.append(op.result)
        else:
            launch_ins.append(next(args))
    allocs = [t.AllocOp(a.type) for a in kernel.outs]
    block.add_ops(allocs)
    block.add_op(t.LaunchOp("probe", launch_ins, [a.result for a in allocs]))
    block.add_op(func.ReturnOp())
    module = ModuleOp([kernel, fn])
    targets.set_target(module, target.name)
    return module


def structure(ops: Sequence[Operation], printed: bool = False) -> tuple:
    """What a probe's answer depends on: each op's name, properties and types and where
    its operands come from (a member's result, an outside value, a constant). Equal
    structures (ResNet's repeated blocks) get one probe. The key holds the attributes
    themselves (xDSL attributes are immutable and compare by value; printing them cost
    more than the rest of the key); `printed` spells them as IR text instead, for an
    attribute that does not hash. Equal attributes print the same, so the key tells apart
    at least the groups the printed one does."""
    spell = str if printed else _same
    index = {r: (i, j) for i, op in enumerate(ops) for j, r in enumerate(op.results)}
    outside: dict[SSAValue, int] = {}
    members = set(ops)
    key = []
    for op in ops:
        refs = []
        for v in op.operands:
            if v in index:
                refs.append(index[v])
            else:
                const = isinstance(v, OpResult) and isinstance(v.op, g.ConstantOp)
                # a one-element constant is an immediate of the kernel: its value can matter (pow)
                value = str(v.op.value) if const and math.prod(g.shape_of(v.type)) == 1 else None
                refs.append(("in", outside.setdefault(v, len(outside)), spell(v.type), const, value))
        used_outside = tuple(any(u.operation not in members for u in r.uses) for r in op.results)
        key.append((op.name, tuple(sorted((k, spell(a)) for k, a in op.properties.items())),
                    tuple(spell(r.type) for r in op.results), tuple(refs), used_outside))
    return tuple(key)


def _same(attr: Attribute) -> Attribute:
    return attr


log = logging.getLogger("ge.fusion_legality")
# Internal errors a probe met (not refusals): each is logged and kept here, so the fuzzer
# (ge/fuzz.py) reports a compile during which one happened as a traceback.
PROBE_BUGS: list[str] = []


def group_tiles(ops: Sequence[Operation], target: targets.Target | None = None,
                verdicts: dict[tuple, str | None] | None = None) -> str | None:
    """None if the candidate group `ops` (in block order) tiles, lowers to isa and fits
    the local memories of `target`; else why not. `verdicts` (one `fuse` run's) keeps the
    answer per structure, so repeated blocks are probed once."""
    target = target or targets.load_target(targets.DEFAULT_TARGET)
    if verdicts is None:
        return _probe(ops, target)
    key = (target.name, structure(ops))
    try:
        hash(key)
    except TypeError:  # an attribute that does not hash: the key in IR text
        key = (target.name, structure(ops, printed=True))
    if key not in verdicts:
        verdicts[key] = _probe(ops, target)
    return verdicts[key]


# A kept probe kernel: (target name, structure_key of its tiled kernel blind to its kind and
# rules) -> (the tiled kernel's SSA name hints in `defined_values` order, its attribute
# names, its kernel after plan-local-memory).
ProbeKernels = dict[tuple[str, Hashable], tuple[list[str | None], list[str], Operation]]
_KEPT: ContextVar[ProbeKernels | None] = ContextVar("ge_probe_kernels", default=None)


class ProbeScope:
    """Probes run inside `with scope:` keep the kernels they build (with the default
    `to-isa` and `plan-local-memory` options) in `scope.kernels`, and their tilings in
    `scope.tilings`, which every `tile` run inside the scope copies from (lowering/tile.py
    `SHARED_TILINGS`); a disabled scope keeps none. `ge.compile` opens one around `fuse`
    and again around `tile`."""

    def __init__(self, enabled: bool = True):
        from ge.lowering.tile import Tilings

        self.enabled = enabled
        self.kernels: ProbeKernels = {}
        self.tilings: Tilings = {}
        self._tokens = None

    def __enter__(self) -> ProbeScope:
        from ge.lowering.tile import SHARED_TILINGS

        self._tokens = (_KEPT.set(self.kernels if self.enabled else None),
                        SHARED_TILINGS.set(self.tilings if self.enabled else None))
        return self

    def __exit__(self, *exc) -> None:
        from ge.lowering.tile import SHARED_TILINGS

        _KEPT.reset(self._tokens[0])
        SHARED_TILINGS.reset(self._tokens[1])


def _probe(ops: Sequence[Operation], target: targets.Target) -> str | None:
    from ge.lowering.kernel_dedup import PROBE_BLIND, defined_values, structure_key
    from ge.lowering.tile import tile_module
    from ge.transforms import get_all_ge_passes

    kept = _KEPT.get()
    try:
        module = probe_module(ops, target)
        passes = get_all_ge_passes()
        ctx = Context()
        for name in ("tile", "to-isa", "plan-local-memory"):
            if name == "to-isa" and kept is not None:
                tiled = next(op for op in module.body.block.ops if isinstance(op, t.KernelOp))
                key = (target.name, structure_key(tiled, PROBE_BLIND))
                hints = [v.name_hint for v in defined_values(tiled)]
                attrs = list(tiled.attributes)
            if name == "tile" and kept is not None:  # its tiling kept for the tile stage
                tile_module(module, target, keep_all=True)
            else:
                passes[name]()().apply(ctx, module)
    except (PassFailedException, DiagnosticException, VerifyException, GeError) as e:  # a refusal: the group does not build
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    except Exception as e:  # an internal error in a later stage: a bug; the group is not safe to form
        what = f"{type(e).__name__} in a later stage: {e}".splitlines()[0]
        log.warning("fusion probe of %s: %s", ", ".join(op.name for op in ops), what, exc_info=True)
        if len(PROBE_BUGS) < 1000:
            PROBE_BUGS.append(what)
        return what
    if kept is not None and key not in kept:
        kernel = next(op for op in module.body.block.ops if isinstance(op, isa.KernelOp))  # the probe's one kernel
        kernel.detach()
        kept[key] = (hints, attrs, kernel)
    return None
