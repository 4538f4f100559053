"""Compile each distinct kernel once: structural keys for kernels and the copies of a
lowered twin that a repeated kernel gets instead of its own lowering.

Why: resnet50's 57 tile kernels are far fewer distinct ones (its repeated bottleneck
blocks), and `to-isa`, `plan-local-memory` and `insert-sync` give structurally identical
tile kernels structurally identical isa kernels. `ge.compile` lowers one representative per
`structure_key` and gives every other kernel of that key a clone of the representative's
isa kernel, renamed as its own lowering would have named it: its symbol, location,
attributes and the SSA name hints `to-isa` copies from the tile kernel (`rename`). The
result is the same module, op for op and name for name, as lowering every kernel.

A key is a nested tuple, not printed text: each op's name, properties and attributes
(hashable xDSL attributes, compared exactly), result types, its operands as numbers
(block arguments and results numbered in order of definition) and its regions' block
argument types, recursively. The kernel's own `sym_name` and its location are left out;
SSA names are left out (they are restored by `rename`).

The fusion probes (lowering/fusion_legality.py) have already tiled, lowered and planned
most multi-op kernels on their way: given the kernels they kept, a representative whose key
one of them has is not lowered again; the probe's kernel, renamed for it, joins the others
before `insert-sync` (which the probes do not run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue, SSAValues, Use

from ge import targets
from ge.dialects import tile as t

KERNEL_OWN = frozenset({"sym_name"})  # kernel properties that name it, not what it computes


# What a fusion probe's kernel lacks (it is outlined as group "probe" with no rules): the
# kind and the fusion rules are only copied onto the isa kernel, not lowered.
PROBE_BLIND = (frozenset({"kind"}), frozenset({"rules"}))


def structure_key(kernel: Operation, blind: tuple[frozenset, frozenset] = (frozenset(), frozenset())) -> Hashable:
    """What the kernel computes, without its names: equal keys, identical lowering.
    `blind`: kernel properties and attributes also left out (`PROBE_BLIND`)."""
    numbers: dict[SSAValue, int] = {}

    def number(v: SSAValue) -> int:
        n = numbers.get(v)
        if n is None:  # a value from outside the kernel (should not happen): by identity
            return -1 - id(v)
        return n

    def define(values) -> None:
        for v in values:
            numbers[v] = len(numbers)

    def op_key(op: Operation, skip: frozenset = frozenset(), skip_attrs: frozenset = frozenset()) -> tuple:
        regions = []
        for r in op.regions:
            blocks = []
            for b in r.blocks:
                define(b.args)
                blocks.append((tuple(a.type for a in b.args), tuple(op_key(o) for o in b.ops)))
            regions.append(tuple(blocks))
        key = (op.name,
               tuple(sorted((k, v) for k, v in op.properties.items() if k not in skip)),
               tuple(sorted((k, v) for k, v in op.attributes.items() if k not in skip_attrs)),
               tuple(number(v) for v in op.operands),
               tuple(r.type for r in op.results),
               len(op.successors),
               tuple(regions))
        define(op.results)
        return key

    return op_key(kernel, KERNEL_OWN | blind[0], blind[1])


def blind_key(key: tuple, blind: tuple[frozenset, frozenset]) -> tuple:
    """`structure_key(kernel, blind)` from `structure_key(kernel)` (`key`): the same tuple
    without the top-level properties and attributes `blind` names (the sorted pairs stay
    sorted), instead of a second walk of the kernel."""
    name, props, attrs, *rest = key
    return (name, tuple(kv for kv in props if kv[0] not in blind[0]),
            tuple(kv for kv in attrs if kv[0] not in blind[1]), *rest)


def defined_values(op: Operation):
    """The SSA values defined inside `op`, in the order `structure_key` numbers them."""
    for r in op.regions:
        for b in r.blocks:
            yield from b.args
            for o in b.ops:
                yield from defined_values(o)
                yield from o.results


def name_map(representative: Operation, twin: Operation) -> dict[str, str] | None:
    """Representative's SSA name hint -> the twin's at the same place; None when one name
    of the representative stands for two different names of the twin (then a clone cannot
    be renamed reliably and the twin is lowered itself)."""
    return hint_map([v.name_hint for v in defined_values(representative)], twin)


def hint_map(hints: list[str | None], twin: Operation) -> dict[str, str] | None:
    """`name_map` from a kernel's name hints (in `defined_values` order)."""
    out: dict[str, str] = {}
    for a, b in zip(hints, (v.name_hint for v in defined_values(twin)), strict=True):
        if a is None and b is None:
            continue
        if a is None or b is None:
            return None
        if out.setdefault(a, b) != b:
            return None
    return out


class _ForwardUse(Exception):
    """An operand used before its definition (or from outside the kernel): not `clone_kernel`'s case."""


def _new_op(op: Operation, operands: list[SSAValue]) -> Operation:
    """A detached copy of `op` (no regions yet) on `operands`: the fields `Operation.create`
    sets, set directly. Why: `create` goes through the operand, successor and region setters
    and IRDL's default filling, which a copy of a verified op does not need -- they were half
    of a clone's time (xdsl 0.75's fields; `test_clone_kernel_is_xdsls_clone` checks them)."""
    cls = type(op)
    clone = cls.__new__(cls)
    uses = tuple([Use(clone, i) for i in range(len(operands))])
    for v, use in zip(operands, uses):
        v.add_use(use)
    clone._operands = SSAValues(operands)
    clone._operand_uses = uses
    clone.results = SSAValues([OpResult(r.type, clone, i) for i, r in enumerate(op.results)])
    clone.properties = dict(op.properties)
    clone.attributes = dict(op.attributes)
    clone.location = op.location
    clone._successors = ()
    clone._successor_uses = ()
    clone.regions = ()
    return clone


def _copy_name(old: SSAValue, new: SSAValue, names: dict[str, str]) -> None:
    hint = old._name  # valid already: set without the setter's check unless renamed
    if hint is not None and hint in names:
        new.name_hint = names[hint]
    else:
        new._name = hint


def _clone_op(op: Operation, mapper: dict[SSAValue, SSAValue], made: list[Operation], names: dict[str, str],
              root: bool = False) -> Operation:
    operands = []
    for v in op._operands:
        new = mapper.get(v)
        if new is None:
            if not root:
                raise _ForwardUse
            new = v
        operands.append(new)
    if op._successors:
        raise _ForwardUse
    clone = _new_op(op, operands)
    made.append(clone)
    for old, new in zip(op.results, clone.results):
        mapper[old] = new
        _copy_name(old, new, names)
    for region in op.regions:
        into = Region()
        clone.add_region(into)
        blocks = [Block() for _ in region.blocks]
        into.insert_block(blocks, 0)
        for block, new_block in zip(region.blocks, blocks):
            for i, arg in enumerate(block.args):
                new_arg = new_block.insert_arg(arg.type, i, arg.location)
                mapper[arg] = new_arg
                _copy_name(arg, new_arg, names)
            # the ops linked as `Block.add_op` links them, without its checks (a fresh op, a fresh block)
            prev = None
            child = block._first_op
            while child is not None:
                new = _clone_op(child, mapper, made, names)
                new.parent = new_block
                if prev is None:
                    new_block._first_op = new
                else:
                    prev._next_op = new
                    new._prev_op = prev
                prev = new
                child = child._next_op
            new_block._last_op = prev
    return clone


def clone_kernel(kernel: Operation, names: dict[str, str] | None = None) -> Operation:
    """`kernel.clone()` -- the same ops, operands, uses (in the same order), names and
    locations -- in one pass; with `names`, each SSA name hint in it renamed on the way.
    Why: xDSL's clone creates every op without operands and sets them in a second walk (for
    uses before definitions, which a kernel's SSA bodies do not have); the copies of twin
    kernels were most of `kernel-copies`. A kernel that has such a use (or a successor) is
    cloned by xDSL (and renamed after)."""
    made: list[Operation] = []
    try:
        return _clone_op(kernel, {}, made, names or {}, root=True)
    except _ForwardUse:
        pass
    for op in made:  # the partial copy's uses go
        op.drop_all_references()
    clone = kernel.clone()
    if names:
        _rename(clone, names)
    return clone


def _rename(kernel: Operation, names: dict[str, str]) -> None:
    for v in defined_values(kernel):
        if v.name_hint is not None and v.name_hint in names:
            v.name_hint = names[v.name_hint]


def renamed_clone(lowered: Operation, names: dict[str, str], twin: Operation, copy: bool = True) -> Operation:
    """A clone of `lowered` (the representative's lowering) named for `twin`: its symbol
    and location, and every SSA name hint that came from the representative's tile kernel
    mapped to the twin's (the attributes are the same: they are part of the key).
    `copy=False` renames `lowered` itself (a detached kernel nobody else uses)."""
    if copy:
        clone = clone_kernel(lowered, names)
    else:
        clone = lowered
        _rename(clone, names)
    clone.properties["sym_name"] = StringAttr(twin.properties["sym_name"].data)
    clone.location = twin.location
    return clone


def as_lowered(probe: Operation, names: dict[str, str], probe_attrs: Sequence[str], kernel: Operation,
               copy: bool = True) -> Operation:
    """A probe's isa kernel as `to-isa` + `plan-local-memory` would have made `kernel`:
    renamed, and its attributes in the same order -- those set while lowering, the tile
    kernel's own (`probe_attrs` were the probe's), `ge.kind`, then the planner's."""
    clone = renamed_clone(probe, names, kernel, copy)
    items = list(clone.attributes.items())
    copied = [i for i, (k, _) in enumerate(items) if k in probe_attrs or k == "ge.kind"]
    first = copied[0] if copied else len(items)
    last = copied[-1] + 1 if copied else len(items)
    attrs = dict(items[:first])
    attrs.update(kernel.attributes)
    attrs["ge.kind"] = StringAttr(kernel.kind.data)
    attrs.update(items[last:])
    clone.attributes.clear()
    clone.attributes.update(attrs)
    return clone


class DistinctKernels:
    """The isa stages run on `work`: a module holding one clone of each distinct tile
    kernel of `module` (with `module`'s attributes: the target). `finish` then replaces
    every tile kernel of `module` by its isa kernel -- the lowered representative itself
    or a renamed clone of it -- and lowers the launches as `to-isa` does. With `probes`
    (a `ProbeScope`'s kernels, when the isa stages run with its default options), a
    representative a probe built stays out of `work` until `add_probe_kernels`, after
    `plan-local-memory`."""

    def __init__(self, module: ModuleOp, probes: dict | None = None):
        self.module = module
        self.kernels = [op for op in module.body.block.ops if isinstance(op, t.KernelOp)]
        self.rep: dict[t.KernelOp, t.KernelOp] = {}  # each kernel -> the one lowered for it
        self.names: dict[t.KernelOp, dict[str, str]] = {}  # a twin -> rep's name hints to its own
        self.probed: dict[t.KernelOp, tuple] = {}  # a rep -> its probe's kernel
        self.from_probe: list[tuple[Operation, Operation]] = []  # (isa kernel in `work`, the probe's kernel it copies)
        self.reps: list[t.KernelOp] = []
        firsts: dict[Hashable, t.KernelOp] = {}
        lowered: list[t.KernelOp] = []
        target = targets.target_of(module).name if probes else None
        for k in self.kernels:
            key = structure_key(k)
            first = firsts.setdefault(key, k)
            names = None if first is k else name_map(first, k)
            if names is None:  # a representative (or a twin whose names do not map)
                self.rep[k] = k
                self.reps.append(k)
                probe = probes.get((target, blind_key(key, PROBE_BLIND))) if probes else None
                probe_names = None if probe is None else hint_map(probe[0], k)
                if probe_names is None:
                    lowered.append(k)
                else:
                    self.probed[k] = (probe_names, probe[1:])
            else:
                self.rep[k] = first
                self.names[k] = names
        self.work = ModuleOp([clone_kernel(k) for k in lowered])
        self.work.attributes.update(module.attributes)

    def add_probe_kernels(self) -> None:
        """The probes' kernels, renamed for their representatives, into `work` in kernel
        order (`work` holds the other representatives' kernels after plan-local-memory)."""
        isa_of = {op.sym_name.data: op for op in self.work.body.block.ops}
        after = None  # the kernel the next one (walking backwards) goes before
        uses = Counter(id(kernel) for _, (_, kernel) in self.probed.values())  # the last use takes it, others copy
        for k in reversed(self.reps):
            if k not in self.probed:
                after = isa_of[k.sym_name.data]
                continue
            names, (attrs, kernel) = self.probed[k]
            uses[id(kernel)] -= 1
            new = as_lowered(kernel, names, attrs, k, copy=uses[id(kernel)] > 0)
            self.from_probe.append((new, kernel))
            if after is None:
                self.work.body.block.add_op(new)
            else:
                self.work.body.block.insert_op_before(new, after)
            after = new

    def twins(self) -> dict[str, str]:
        """Each kernel symbol that `finish` gives a renamed copy -> the symbol it copies
        (for the model file, `kernel_code.partition`: one encoding serves both)."""
        return {k.sym_name.data: rep.sym_name.data for k, rep in self.rep.items() if rep is not k}

    @property
    def distinct(self) -> int:
        return len(set(self.rep.values()))

    def finish(self) -> None:
        """Put the isa kernels in place of the tile kernels (in order) and lower the launches;
        verifies what is new in `module` (the clones are copies of verified kernels)."""
        from ge.dialects import isa
        from ge.lowering.to_isa import lower_module

        isa_of = {op.sym_name.data: op for op in self.work.body.block.ops if isinstance(op, isa.KernelOp)}
        block = self.module.body.block
        for k in self.kernels:
            rep = self.rep[k]
            done = isa_of[rep.sym_name.data]
            if rep is k:
                done.detach()
            new = done if rep is k else renamed_clone(done, self.names[k], k)
            block.insert_op_before(new, k)
            k.detach()
            k.erase()
        lower_module(self.module, targets.target_of(self.module))  # no tile kernels left: the launches
        for op in block.ops:
            if not isinstance(op, isa.KernelOp):
                op.verify()
