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
"""

from __future__ import annotations

from collections.abc import Hashable

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from ge import targets
from ge.dialects import tile as t

KERNEL_OWN = frozenset({"sym_name"})  # kernel properties that name it, not what it computes


def structure_key(kernel: Operation) -> Hashable:
    """What the kernel computes, without its names: equal keys, identical lowering."""
    numbers: dict[SSAValue, int] = {}

    def number(v: SSAValue) -> int:
        n = numbers.get(v)
        if n is None:  # a value from outside the kernel (should not happen): by identity
            return -1 - id(v)
        return n

    def define(values) -> None:
        for v in values:
            numbers[v] = len(numbers)

    def op_key(op: Operation, skip: frozenset = frozenset()) -> tuple:
        regions = []
        for r in op.regions:
            blocks = []
            for b in r.blocks:
                define(b.args)
                blocks.append((tuple(a.type for a in b.args), tuple(op_key(o) for o in b.ops)))
            regions.append(tuple(blocks))
        key = (op.name,
               tuple(sorted((k, v) for k, v in op.properties.items() if k not in skip)),
               tuple(sorted(op.attributes.items())),
               tuple(number(v) for v in op.operands),
               tuple(r.type for r in op.results),
               len(op.successors),
               tuple(regions))
        define(op.results)
        return key

    return op_key(kernel, KERNEL_OWN)


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
    out: dict[str, str] = {}
    for a, b in zip(defined_values(representative), defined_values(twin), strict=True):
        if a.name_hint is None and b.name_hint is None:
            continue
        if a.name_hint is None or b.name_hint is None:
            return None
        if out.setdefault(a.name_hint, b.name_hint) != b.name_hint:
            return None
    return out


def renamed_clone(lowered: Operation, names: dict[str, str], twin: Operation) -> Operation:
    """A clone of `lowered` (the representative's lowering) named for `twin`: its symbol
    and location, and every SSA name hint that came from the representative's tile kernel
    mapped to the twin's (the attributes are the same: they are part of the key)."""
    clone = lowered.clone()
    clone.properties["sym_name"] = StringAttr(twin.properties["sym_name"].data)
    clone.location = twin.location
    for v in defined_values(clone):
        if v.name_hint is not None and v.name_hint in names:
            v.name_hint = names[v.name_hint]
    return clone


class DistinctKernels:
    """The isa stages run on `work`: a module holding one clone of each distinct tile
    kernel of `module` (with `module`'s attributes: the target). `finish` then replaces
    every tile kernel of `module` by its isa kernel -- the lowered representative itself
    or a renamed clone of it -- and lowers the launches as `to-isa` does."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.kernels = [op for op in module.body.block.ops if isinstance(op, t.KernelOp)]
        self.rep: dict[t.KernelOp, t.KernelOp] = {}  # each kernel -> the one lowered for it
        self.names: dict[t.KernelOp, dict[str, str]] = {}  # a twin -> rep's name hints to its own
        firsts: dict[Hashable, t.KernelOp] = {}
        lowered: list[t.KernelOp] = []
        for k in self.kernels:
            first = firsts.setdefault(structure_key(k), k)
            names = None if first is k else name_map(first, k)
            if names is None:  # a representative (or a twin whose names do not map)
                self.rep[k] = k
                lowered.append(k)
            else:
                self.rep[k] = first
                self.names[k] = names
        self.work = ModuleOp([k.clone() for k in lowered])
        self.work.attributes.update(module.attributes)

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
