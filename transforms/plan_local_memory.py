"""`plan-local-memory`: byte offsets for the local buffers of isa kernels (AscendNPU-IR's
PlanMemory, ascend.md §1.6).

Every `isa.buffer` without an offset gets one in its memory (l1, l0a, l0b, l0c, ub),
aligned to the target's alignment for that memory. A buffer lives from its first to its
last use in program order, and across the whole of every loop that uses it (its value may
be needed in the next iteration); two buffers whose lifetimes do not overlap may share
bytes. The slots of a multi-buffer (`slots 2`) are one allocation, so ping-pong copies
never share bytes with each other or with anything live in the same loop.

Two levels, as PlanMemory's: first sharing only between buffers used by one and the same
pipe (sharing across pipes adds dependencies between pipes that `insert-sync` then has to
order), then, if that does not fit, any sharing the lifetimes allow. If neither fits, the
pass fails with the kernel, the memory and the bytes needed and available (Ascend's "ub
overflow"). Buffers that already have an offset keep it; `reuse=false` gives every buffer
bytes of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NameLoc, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import isa
from ge.dialects.interning import int_attr
from ge.errors import GeError


class LocalMemoryOverflowError(PassFailedException, GeError):
    """A kernel's buffers do not fit a local memory of the target."""


def describe_kernel(kernel: isa.KernelOp) -> str:
    """`kernel @k3 (nodes conv1, relu1)`: the kernel and the ONNX nodes its location names."""
    loc = kernel.location
    names = [loc.desc.data] if isinstance(loc, NameLoc) else [
        n.desc.data for n in loc.locations.data if isinstance(n, NameLoc)] if isinstance(loc, FusedLoc) else []
    if not names:
        return f"kernel @{kernel.sym_name.data}"
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"kernel @{kernel.sym_name.data} (node{'s' if len(names) > 1 else ''} {shown})"


def module_target(module: ModuleOp) -> targets.Target:
    try:
        t = targets.target_of(module)
    except targets.TargetError as e:
        raise PassFailedException(str(e)) from None
    return t or targets.load_target(targets.DEFAULT_TARGET)


@dataclass
class Buffer:
    op: isa.BufferOp
    size: int  # bytes of all slots
    start: int = 1 << 60  # lifetime in linear positions, inclusive
    end: int = -1
    pipes: set[isa.Pipe] = field(default_factory=set)
    offset: int | None = None

    def lives_with(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end

    def shares_pipe(self, other: Buffer) -> bool:
        """Used by one and the same pipe (or not used at all)."""
        return not self.pipes or not other.pipes or (len(self.pipes) == 1 and self.pipes == other.pipes)


def lifetimes(kernel: isa.KernelOp, target: targets.Target) -> dict[isa.BufferOp, Buffer]:
    """Each buffer of the kernel with its lifetime and the pipes that use it."""
    bufs = {op: Buffer(op, op.total_bytes(target)) for op in kernel.body.block.ops if isinstance(op, isa.BufferOp)}
    by_id = {id(op): b for op, b in bufs.items()}
    for op, number, span in _spans(kernel):
        if not isinstance(op, isa.InstructionOp):
            continue
        lo, hi = (number, number) if span is None else span
        pipe = op.PIPE
        for buffer in _buffers(op, target):
            b = by_id.get(id(buffer.owner))
            if b is not None:
                if lo < b.start:
                    b.start = lo
                if hi > b.end:
                    b.end = hi
                b.pipes.add(pipe)
    return bufs


def _spans(kernel: isa.KernelOp) -> list[tuple[Operation, int, list[int] | None]]:
    """Each op inside the kernel in pre-order with its number (`isa_analysis.Linear`'s) and,
    inside a loop, the [first, last] numbers of the outermost `scf.for` around it (a loop
    repeats all of its body): one walk, instead of a walk up the parents of every op."""
    out: list[tuple[Operation, int, list[int] | None]] = []
    count = 0

    def walk(block: Block, span: list[int] | None) -> None:
        nonlocal count
        op = block.first_op
        while op is not None:
            out.append((op, count, span))
            count += 1
            if op.regions:
                inner = [count - 1, -1] if span is None and isinstance(op, scf.ForOp) else span
                for r in op.regions:
                    for b in r.blocks:
                        walk(b, inner)
                if inner is not span:
                    inner[1] = count - 1
            op = op.next_op

    walk(kernel.body.block, None)
    return out


# The `accesses` whose buffers are the buffer operands (the elements each touches are not
# needed here): computing the vector rectangles was half of planning a kernel.
_OPERAND_ACCESSES = (isa.InstructionOp.accesses, isa.MmadOp.accesses)


def _buffers(op: isa.InstructionOp, target: targets.Target) -> list[SSAValue]:
    """The buffers `op.accesses(target)` names (the same set; mmad's C once)."""
    if type(op).accesses in _OPERAND_ACCESSES:
        return [op.buffer(r) for r in op.BUFFERS]
    return [a.buffer for a in op.accesses(target)]


def place(bufs: list[Buffer], alignment: int, shares) -> int:
    """First-fit offsets for the unplaced buffers (largest first); returns the bytes used."""
    placed = [b for b in bufs if b.offset is not None]
    for b in sorted((b for b in bufs if b.offset is None), key=lambda b: (-b.size, b.start)):
        blockers = sorted((o for o in placed if not shares(b, o)), key=lambda o: o.offset)
        at = 0
        for o in blockers:
            if at + b.size <= o.offset:
                break
            at = max(at, isa.align_up(o.offset + o.size, alignment))
        b.offset = at
        placed.append(b)
    return max((b.offset + b.size for b in placed), default=0)


def plan_kernel(kernel: isa.KernelOp, target: targets.Target, reuse: bool = True) -> None:
    bufs = lifetimes(kernel, target)
    if all(op.byte_offset is not None for op in bufs):
        return
    by_space: dict[isa.MemSpace, list[Buffer]] = {}
    for b in bufs.values():
        by_space.setdefault(b.op.space, []).append(b)
    for space in isa.LOCAL_SPACES:
        group = by_space.get(space, [])
        if all(b.op.byte_offset is not None for b in group):
            continue
        align, cap = isa.alignment_of(target, space), isa.capacity_of(target, space)

        def strict(a: Buffer, b: Buffer) -> bool:
            return reuse and not a.lives_with(b) and a.shares_pipe(b)

        def relaxed(a: Buffer, b: Buffer) -> bool:
            return reuse and not a.lives_with(b)

        used = 0
        for shares in (strict, relaxed):
            for b in group:
                b.offset = b.op.byte_offset
            used = place(group, align, shares)
            if used <= cap:
                break
        else:
            raise LocalMemoryOverflowError(
                f"plan-local-memory: {describe_kernel(kernel)}: {space.value} overflow, the buffers need {used} bytes "
                f"while {cap} are available on {target.name}"
            )
        for b in group:
            if b.op.byte_offset is None:
                b.op.properties["offset"] = int_attr(b.offset, i64)


@dataclass(frozen=True)
class PlanLocalMemoryPass(ModulePass):
    """Give every isa.buffer an aligned byte offset in its memory, sharing bytes between
    buffers whose lifetimes do not overlap (`reuse=false`: never)."""

    name = "plan-local-memory"
    reuse: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op)
        for kernel in isa_kernels(op):
            plan_kernel(kernel, target, self.reuse)


def isa_kernels(op: Operation) -> list[isa.KernelOp]:
    """The isa kernels in `op`, in `walk` order, without walking their bodies (most of a
    module's ops)."""
    out: list[isa.KernelOp] = []
    for r in op.regions:
        for b in r.blocks:
            for inner in b.ops:
                if isinstance(inner, isa.KernelOp):
                    out.append(inner)
                elif inner.regions:
                    out += isa_kernels(inner)
    return out
