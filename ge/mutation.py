"""Sync mutation: the kernels insert-sync synchronized, with one sync op (or one set/wait
pair) deleted at a time.

The simulator's hazard checks are only worth something if every flag matters: a test runs
each mutant and expects a reported problem (tests of the simulator and of compiled
kernels, and `bench/kernels.py` quote the counts).
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

from ge.dialects import isa
from ge.ir import parse_module, print_module

SYNC = (isa.SetFlagOp, isa.WaitFlagOp, isa.PipeBarrierOp)


def mutants(module: ModuleOp) -> Iterator[tuple[str, str, ModuleOp]]:
    """(description, module) for each sync op of `module` deleted in turn."""
    text = print_module(module)
    count = sum(isinstance(op, SYNC) for op in parse_module(text).walk())
    for k in range(count):
        mutant = parse_module(text)
        victim = [op for op in mutant.walk() if isinstance(op, SYNC)][k]
        desc = f"#{k} {str(victim).strip()}"
        victim.detach()
        victim.erase()
        yield victim.name, desc, mutant


def pairs(module: ModuleOp) -> list[list[isa.SetFlagOp | isa.WaitFlagOp]]:
    """The set/wait pairs insert-sync placed: a forward pair (a set, the next wait of its
    event in the same block) or a loop-carried one (the wait and the set in the body, the
    set before the loop and the wait after it)."""
    out, used = [], set()
    for op in module.walk():
        if not isinstance(op, isa.WaitFlagOp) or op in used:
            continue
        ops = list(op.parent_block().ops)
        at = ops.index(op)

        def same(o, kind, key=op.key):
            return isinstance(o, kind) and o.key == key and o not in used

        earlier = [o for o in ops[:at] if same(o, isa.SetFlagOp)]
        later = [o for o in ops[at:] if same(o, isa.SetFlagOp)]
        loop = op.parent_op()
        if earlier:
            group = [earlier[-1], op]
        elif later and isinstance(loop, scf.ForOp):
            outer = list(loop.parent_block().ops)
            i = outer.index(loop)
            group = [later[0], op, [o for o in outer[:i] if same(o, isa.SetFlagOp)][-1],
                     next(o for o in outer[i + 1:] if same(o, isa.WaitFlagOp))]
        else:
            continue
        used.update(group)
        out.append(group)
    return out


def pair_mutants(module: ModuleOp) -> Iterator[tuple[str, ModuleOp]]:
    """(description, module) for each set/wait pair of `module` deleted in turn."""
    text = print_module(module)
    for k in range(len(pairs(parse_module(text)))):
        mutant = parse_module(text)
        group = pairs(mutant)[k]
        desc = " + ".join(str(o).strip() for o in group)
        for o in group:
            o.detach()
            o.erase()
        yield desc, mutant
