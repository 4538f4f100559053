"""Capacity of the on-chip buffers at the tile level (Ascend's "UB overflow" check).

A kernel's live buffers in each local memory are its `tile.alloc`s there (each aligned to
the memory's alignment and counted `buffers` times) plus, in UB, the peak of the
temporaries of its `tile.vector` bodies (every value a body computes lives in UB until its
last use) and of its `tile.vpool`s (the scratch lowering/isa_pool.py declares: a clean copy
of the source window, f32 sums and count maps -- as large as the source tile itself). They must fit the target's capacity; otherwise compilation stops with an error
that names the kernel (its ONNX nodes), the memory, and the bytes needed and available --
never a kernel that silently overwrites itself.

`tile` runs this check on every kernel it builds; `check-tile-capacity` runs it on any
tile-level module (hand-written kernels included).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FusedLoc, MemRefType, ModuleOp, NameLoc, TensorType
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.errors import GeError


class TileCapacityError(PassFailedException, GeError):
    """The live buffers of a kernel do not fit a local memory of the target."""


def node_names(op: Operation) -> list[str]:
    """The ONNX node names an op's location carries (a fused group carries several)."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return [loc.desc.data]
    if isinstance(loc, FusedLoc):
        return [n for inner in loc.locations.data if isinstance(inner, NameLoc) for n in [inner.desc.data]]
    return []


def describe_kernel(kernel: t.KernelOp) -> str:
    """`kernel @k3_conv1 (nodes conv1, relu1)` for messages and logs."""
    names = node_names(kernel)
    if not names:
        return f"kernel @{kernel.sym_name.data}"
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"kernel @{kernel.sym_name.data} (node{'s' if len(names) > 1 else ''} {shown})"


def nbytes(ty) -> int:
    assert isinstance(ty, MemRefType | TensorType)
    n = numpy_dtype(ty.element_type).itemsize
    for d in ty.get_shape():
        n *= d
    return n


def body_peak_bytes(block: Block, skipped: frozenset[Operation] = frozenset()) -> int:
    """The peak bytes of the values a tile.vector body computes that are live at once
    (except the results of `skipped`: ops the read-out computes into its own tile, and a
    constant only yielded: to-isa writes it into the out buffer with a dup)."""
    last: dict = {}
    ops = list(block.ops)
    for i, op in enumerate(ops):
        for v in op.operands:
            last[v] = i
    live: dict = {}
    peak = 0
    for i, op in enumerate(ops):
        dup = op.has_trait(ConstantLike) and all(isinstance(u.operation, t.YieldOp) for r in op.results for u in r.uses)
        for r in op.results:
            live[r] = 0 if op in skipped or dup else nbytes(r.type)
        peak = max(peak, sum(live.values()))
        for v in op.operands:
            if last.get(v) == i:
                live.pop(v, None)
    return peak


def usage(kernel: t.KernelOp, target: targets.Target) -> dict[t.MemSpace, int]:
    """Bytes of each local memory the kernel's live buffers take, as to-isa lowers them: on
    a chip without FixPipe an epilogue head the L0C read-out computes (`to_isa.L0cBias`:
    the bias in L0C, the f32 -> f16 cast [and ReLU] on the way) keeps no f32 accumulator
    tile in UB -- the tile holds the converted f16 values, or is not kept at all when the
    read-out writes the output tile -- and its ops make no temporaries."""
    from ge.lowering.to_isa import read_out_plans

    used = {space: 0 for space in t.LOCAL_SPACES}
    temps = 0
    plans = read_out_plans(kernel, target)
    accs = {id(q.acc): q for q in plans}
    skipped = frozenset(op for q in plans for op in q.ops)
    for op in kernel.walk():
        if isinstance(op, t.AllocOp):
            space = t.space_of(op.result.type)
            if space in used:
                size = nbytes(op.result.type)
                if (q := accs.get(id(op.result))) is not None:
                    size = 0 if q.into is not None else size // 4 * numpy_dtype(q.elem).itemsize
                align = getattr(target.alignment, space.value)
                used[space] += -(-size // align) * align * op.count.value.data
        elif isinstance(op, t.VectorOp):
            temps = max(temps, body_peak_bytes(op.body.block, skipped))
        elif isinstance(op, t.VPoolOp):
            from ge.lowering.isa_pool import scratch_bytes

            temps = max(temps, scratch_bytes(op, target))
    used[t.MemSpace.UB] += temps
    return used


def capacity(target: targets.Target, space: t.MemSpace) -> int:
    return getattr(target.memory, space.value)


def overflow_message(kernel: t.KernelOp, space: t.MemSpace, need: int, have: int, target: targets.Target) -> str:
    return (
        f"{describe_kernel(kernel)}: {space.value.upper()} overflow on {target.name}: the live buffers need "
        f"{need} bytes, {space.value.upper()} holds {have} bytes"
    )


def check_kernel(kernel: t.KernelOp, target: targets.Target) -> None:
    """Raise TileCapacityError if a local memory of `target` cannot hold the kernel's buffers."""
    for space, need in usage(kernel, target).items():
        have = capacity(target, space)
        if need > have:
            raise TileCapacityError(overflow_message(kernel, space, need, have, target))


def module_target(module: ModuleOp, name: str | None = None) -> targets.Target:
    try:
        current = targets.target_of(module)
        if current is not None and name is not None and current.name != name:
            raise PassFailedException(f"the module targets '{current.name}' but the pass was given target={name}")
        return current or targets.load_target(name or targets.DEFAULT_TARGET)
    except targets.TargetError as e:
        raise PassFailedException(str(e)) from None


@dataclass(frozen=True)
class CheckTileCapacityPass(ModulePass):
    """Fail if a kernel's live buffers exceed a local memory of the target."""

    name = "check-tile-capacity"

    target: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        for kernel in op.ops:
            if isinstance(kernel, t.KernelOp):
                check_kernel(kernel, target)
