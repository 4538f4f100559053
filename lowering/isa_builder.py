"""Building isa kernels from Python: index arithmetic that folds constants, buffers,
loops, and the double-buffered loop shape.

For the tile -> isa lowering and for tests. `IsaBuilder` appends ops at an insertion
block; constants are created once at the top of the kernel, and `x * 1`, `x + 0`,
`c1 * c2` never reach the IR.

`pipelined(lo, hi, slots, body)` is how a loop over tiles with multi-buffered buffers
(`tile.alloc buffers 2`) becomes isa: the body is emitted once per slot inside a loop of
step `slots` (slot k of every multi-buffer in copy k), then a loop over the 0 .. slots-1
leftover iterations runs the slot-0 copy (marked `isa.max_trips = slots - 1`, so that
insert-sync knows that a double buffer's leftover loop never repeats). Every copy has static buffers, so insert-sync
sees which copies share bytes and gives each slot its own set/wait pairs: the loads of
one slot overlap the compute on the other. `pipelined(..., guarded=True)` has no leftover
loop: the rounds run while they start before hi, each later slot in a loop of at most one
trip, so that a leftover iteration runs in the last round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, i1, i64
from xdsl.ir import Attribute, Block, Region, SSAValue

from ge.dialects import isa
from ge.dialects.interning import scope_cached
from ge.lowering.index_builder import INDEX, Index, IndexBuilder, create_op, int_attr


def move_op(cls: type[isa._MoveOp], src: SSAValue, dst: SSAValue, sizes: Sequence[int], *,
            src_offset: SSAValue | None = None, dst_offset: SSAValue | None = None,
            src_strides: Sequence[int] | None = None, dst_strides: Sequence[int] | None = None,
            window: Sequence[SSAValue] = (), pad: float | None = None,
            props: dict[str, Attribute] | None = None) -> isa._MoveOp:
    """`cls(src, dst, sizes, ...)`, the same op, built by `create_op` when `cls` is a plain
    move (the moves are a third of a kernel's instructions). `props`: the properties
    `move_props` gives for these sizes, strides and pad, when the caller has them."""
    if cls.__init__ is not isa._MoveOp.__init__:
        return cls(src, dst, sizes, src_offset=src_offset, dst_offset=dst_offset, src_strides=src_strides,
                   dst_strides=dst_strides, window=window, pad=pad)
    return create_op(cls, [src, [] if src_offset is None else [src_offset], dst,
                           [] if dst_offset is None else [dst_offset], list(window)],
                     props if props is not None else cls.move_props(sizes, src_strides, dst_strides, pad, {}))


def buffer_type(shape: Sequence[int], elem: Attribute, space: isa.MemSpace | str) -> MemRefType:
    """`isa.buffer_type`, one per (shape, element, memory) for the compile: a `MemRefType`
    checks its parameters on construction, and the kernels ask for the same few types."""
    return scope_cached("isa_buffer_types", (tuple(shape), elem, str(space)),
                        lambda: isa.buffer_type(shape, elem, space))


class IsaBuilder(IndexBuilder):
    """Appends ops to an isa kernel's body; `at` is the current insertion block."""

    def __init__(self, kernel: isa.KernelOp):
        super().__init__(kernel.body.block)
        self.kernel = kernel
        self._scratch: dict[tuple, list[SSAValue]] | None = None  # inside `scratch()`
        self._scratch_pool: dict[tuple, list[SSAValue]] = {}
        self._scratch_seen: dict[tuple, int] = {}
        self._index_consts: dict[int, SSAValue] = {}  # `constants`' index ones by value (no type to hash)

    @staticmethod
    def new_kernel(name: str, ins: Sequence[Attribute], outs: Sequence[Attribute], block_dim: int = 1,
                   names: Sequence[str] = ()) -> IsaBuilder:
        kernel = isa.KernelOp(name, ins, outs, block_dim)
        for a, n in zip(kernel.body.block.args, names):
            a.name_hint = n
        return IsaBuilder(kernel)

    def const(self, value: int, ty: Attribute | None = None) -> SSAValue:
        """`IndexBuilder.const`, the `arith.constant` built without IRDL's argument checks."""
        value = int(value)
        if ty is None or ty is INDEX:
            hit = self._index_consts.get(value)
            if hit is not None:
                return hit
        ty = ty or INDEX
        key = (value, ty)
        hit = self.constants.get(key)
        if hit is not None:
            return hit
        op = arith.ConstantOp.create(result_types=[ty], properties={"value": int_attr(value, ty)})
        if ty == INDEX:
            op.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            self._index_consts[value] = op.result
        self.insert_at_top(op, self._anchor)
        self._anchor = op
        self.constants[key] = op.result
        return op.result

    def value(self, x: Index) -> SSAValue:
        if isinstance(x, int):
            hit = self._index_consts.get(x)
            return hit if hit is not None else self.const(x)
        return x

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return tuple(self.top.args)

    def eq(self, a: Index, b: Index, name: str = "first") -> SSAValue:
        if isinstance(a, int) and isinstance(b, int):
            return self.const(int(a == b), i1)
        op = self.add(arith.CmpiOp(self.value(a), self.value(b), "eq"))
        op.result.name_hint = name
        return op.result

    def block_idx(self) -> SSAValue:
        op = self.add(isa.BlockIdxOp())
        op.result.name_hint = "block"
        return op.result

    @contextmanager
    def scratch(self) -> Iterator[None]:
        """Temporaries of one op: its values are dead when it ends, so the buffers it asks
        for are handed out again, in the same order, to the next op that asks for the same
        kinds (one set of temporaries per kernel, not one per emitted copy of an op)."""
        self._scratch_seen = {}
        self._scratch = self._scratch_pool
        try:
            yield
        finally:
            self._scratch = None

    def buffer(self, space: isa.MemSpace | str, shape: Sequence[int], elem: Attribute, slots: int = 1,
               name: str | None = None) -> list[SSAValue]:
        """A local buffer (its slots), declared at the top of the kernel after the constants."""
        if self._scratch is not None:
            key = (str(space), tuple(shape), elem, slots, name)
            nth = self._scratch_seen.get(key, 0)
            self._scratch_seen[key] = nth + 1
            pool = self._scratch.setdefault(key, [])
            if nth < len(pool):
                return [pool[nth]] if slots == 1 else list(pool[nth].owner.slots)
            made = self._declare(space, shape, elem, slots, name)
            pool.append(made[0])
            return made
        return self._declare(space, shape, elem, slots, name)

    def _declare(self, space: isa.MemSpace | str, shape: Sequence[int], elem: Attribute, slots: int,
                 name: str | None) -> list[SSAValue]:
        # `isa.BufferOp(type, slots)`, built without IRDL's argument checks
        op = isa.BufferOp.create(result_types=[buffer_type(shape, elem, space)] * slots)
        last = None
        for o in self.top.ops:
            if isinstance(o, arith.ConstantOp | isa.BufferOp):
                last = o
        self.insert_at_top(op, last)
        if name:
            for r in op.slots:
                r.name_hint = name
        return list(op.slots)

    def offset(self, x: Index) -> SSAValue | None:
        """An element offset operand: None for a static 0."""
        return None if x == 0 else self.value(x)

    # -- loops ------------------------------------------------------------------------------

    @contextmanager
    def loop(self, lo: Index, hi: Index, step: int = 1, name: str = "i",
             max_trips: int | None = None) -> Iterator[SSAValue]:
        """`scf.for` from lo to hi; ops built inside the `with` go into its body.
        `max_trips` records a bound on its iterations that the IR does not show."""
        body = Block(arg_types=[INDEX])
        iv = body.args[0]
        iv.name_hint = name
        # `scf.ForOp(lo, hi, step, [], Region(body))`, built without IRDL's argument checks
        op = scf.ForOp.create(operands=[self.value(lo), self.value(hi), self.const(step)], regions=[Region(body)],
                              attributes={} if max_trips is None else {isa.MAX_TRIPS_ATTR: int_attr(max_trips, i64)})
        self.add(op)
        outer = self.at
        self.at = body
        try:
            yield iv
        finally:
            body.add_op(scf.YieldOp.create())
            self.at = outer

    def pipelined(self, lo: Index, hi: Index, slots: int, body: Callable[[Index, int], None], name: str = "t", *,
                  guarded: bool = False) -> None:
        """Iterations lo .. hi-1 with `slots`-buffered buffers: `body(iteration, slot)` is
        emitted once per slot in a loop of step `slots`, then once more (slot 0) in a loop
        over the leftover iterations. `guarded` (unless lo .. hi is known to be whole
        rounds): no loop after the rounds; as many rounds as start before hi, each later
        slot in a loop of at most one trip (`_guarded_rounds`), so that the leftover
        iterations run in the last round."""
        if slots == 1:
            with self.loop(lo, hi, 1, name) as it:
                body(it, 0)
            return
        static = isinstance(lo, int) and isinstance(hi, int)
        if not static:
            lo = self.min_(lo, hi)  # a core whose share starts past the end (lo > hi) runs nothing
        if guarded and not (static and (hi - lo) % slots == 0):  # (whole rounds only: no guard needed)
            self._guarded_rounds(lo, hi, slots, body, name)
        else:
            self._rounds_then_rest(lo, hi, slots, body, name)

    def _rounds_then_rest(self, lo: Index, hi: Index, slots: int, body: Callable[[Index, int], None],
                          name: str) -> None:
        """The whole rounds of `slots` iterations from lo, then the 0 .. slots-1 leftover
        iterations in a loop of their own (slot 0, `isa.max_trips` slots - 1)."""
        n = self.sub(hi, lo)
        whole = self.add_(lo, self.mul(self.div(n, slots), slots), "pairs_end") if not isinstance(n, int) else (
            lo + (n // slots) * slots if isinstance(lo, int) else self.add_(lo, (n // slots) * slots, "pairs_end"))
        if not (isinstance(whole, int) and isinstance(lo, int) and whole == lo):
            with self.loop(lo, whole, slots, name) as it:
                for s in range(slots):
                    body(self.add_(it, s, f"{name}{s}") if s else it, s)
        if isinstance(whole, int) and isinstance(hi, int) and whole == hi:
            return
        with self.loop(whole, hi, 1, f"{name}_rest", max_trips=slots - 1) as it:
            body(it, 0)

    def _guarded_rounds(self, lo: Index, hi: Index, slots: int, body: Callable[[Index, int], None],
                        name: str) -> None:
        """Rounds of `slots` iterations from lo, as many as start before hi, slot s of a round
        emitted in a loop of at most one trip (round + s to min(round + s + 1, hi),
        `isa.max_trips` 1: insert-sync orders it within the rounds' loop, as if inline). A
        leftover in a loop of its own after the rounds waits for the drain at their loop's
        exit (insert-sync consumes every slot's flags there): bert_base's attention softmax,
        3 tiles a core, started its third tile's Vector work after the second tile's store."""
        with self.loop(lo, hi, slots, name) as it:
            body(it, 0)
            for s in range(1, slots):
                first = self.add_(it, s, f"{name}{s}")
                with self.loop(first, self.min_(self.add_(first, 1), hi), 1, f"{name}{s}_if", max_trips=1) as it_s:
                    body(it_s, s)
