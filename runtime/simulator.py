"""The AI Core simulator: runs `isa` kernels functionally, times them, and checks them.

Decoding. A kernel is decoded once (`KernelProgram`) into a flat list of Python closures:
scalar ops write integer registers, `scf.for` runs its body's list in a Python loop, every
instruction becomes one closure with its static operand layout precomputed. Nothing is
re-parsed or re-verified while a loop runs.

Function. Each core has its local memories as byte arrays (sizes from the target); GM is
one byte array per kernel argument. An instruction gathers its operands as numpy views of
those bytes (strided views, no element loops), computes with `ge.runtime.isa_kernels`
and writes its destination: what the instructions say is what happens, so a wrong offset
gives a wrong answer.

Timing. Cycles per instruction from the target; one in-order queue per pipe; flags and
barriers (`ge.runtime.sim_timing`). The `block_dim` blocks go round-robin over the target's
cores (Cube cores for kernels that use the Cube, Vector cores otherwise); a core runs its
blocks one after another, the kernel takes as long as its slowest core.

Checks. Program order is what the kernel means; the pipes run concurrently. Every byte
remembers its last writer and, per pipe, its last reader (instruction indices), and every
pipe keeps a vector clock of the instructions it knows have finished (through set_flag /
wait_flag pairs, pipe barriers, and the in-order Cube and scalar pipes). An access to a
byte whose last writer (or, for a write, last readers) is not known finished is a hazard
-- RAW, WAR or WAW -- reported with both instructions, whatever the cycle counts happen
to be. Also reported: reads of bytes never written, accesses outside their buffer,
wait_flag with no set_flag before it (the core would hang), a set_flag that fires while its
event is still set (the signal is lost), and events still set when a block ends.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, NameLoc
from xdsl.ir import Block, Operation, SSAValue

from ge import targets
from ge.dialects import isa
from ge.dialects.dtypes import numpy_dtype
from ge.errors import GeError, InputError
from ge.runtime import isa_kernels as K
from ge.runtime.index_arith import CMPI, INT_BINARY, IndexOutOfRange, wrap_index
from ge.runtime.sim_timing import NPIPES, PIPE_INDEX, PIPE_ORDER, PIPELINED, CostModel, PipeState, Trace

HOST = NPIPES  # pseudo pipe of the bytes a launch binds (kernel inputs): always finished
NCOLS = NPIPES + 1  # shadow columns: last write, then the last read of each pipe
LOCAL_IDS = {s: i for i, s in enumerate(isa.LOCAL_SPACES)}
GM_BASE = len(isa.LOCAL_SPACES)  # region id of kernel argument 0
# what a launch did, counted from its instructions (independent of the timing model):
# GM bytes read, of them bytes no earlier read of the launch touched, GM bytes written,
# Cube fractals, vector repeats
WORK = ("gm_read", "gm_read_new", "gm_write", "fractals", "repeats")
GM_READ, GM_READ_NEW, GM_WRITE, FRACTALS, REPEATS = range(len(WORK))


class SimulatorError(GeError):
    """The simulator cannot run this kernel (unplanned buffers, unsupported ops)."""


class HazardError(GeError):
    """A kernel run reported problems; the message lists them."""


@dataclass
class Problem:
    """One reported problem: `kind` is RAW / WAR / WAW (hazards), uninitialized,
    out-of-bounds, misaligned, deadlock, lost-signal, unbalanced or max-trips; `count` how often the
    same pair of instructions hit it."""

    kind: str
    message: str
    count: int = 1

    HAZARDS = ("RAW", "WAR", "WAW")

    @property
    def is_hazard(self) -> bool:
        return self.kind in self.HAZARDS

    def __str__(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.kind}: {self.message}{times}"


# --------------------------------------------------------------------------------------
# Memory: byte regions with shadow state
# --------------------------------------------------------------------------------------


class Region:
    """A tracked byte range: one local memory of a core, or one GM kernel argument.

    `shadow[:, b]` = [last writer (index << 3 | pipe, -1 never written), last reader index
    of each pipe (-1 none)] (one row per column, so each is contiguous). A GM input has
    no shadow until written: its bytes count as written by the host before the launch.
    """

    def __init__(self, name: str, data: np.ndarray, initialized: bool):
        self.name = name
        self.data = data
        self.initialized = initialized
        self.shadow: np.ndarray | None = None
        self.dirty = 0  # bytes [0, dirty) may have shadow state to clear
        self.read_mask: np.ndarray | None = None  # GM: bytes some read of the launch touched
        self._typed: dict[np.dtype, np.ndarray] = {}
        if not initialized:
            self.shadow = np.full((NCOLS, data.size), -1, dtype=np.int32)

    def typed(self, dtype: np.dtype) -> np.ndarray:
        view = self._typed.get(dtype)
        if view is None:
            usable = self.data.size - self.data.size % dtype.itemsize
            view = self._typed[dtype] = self.data[:usable].view(dtype)
        return view

    def ensure_shadow(self) -> np.ndarray:
        if self.shadow is None:
            self.shadow = np.full((NCOLS, self.data.size), -1, dtype=np.int32)
            self.shadow[0] = HOST  # index 0 of the host pipe: written before the launch
        return self.shadow

    def forget_writes(self) -> None:
        """Every byte becomes never-written (a new block on this core)."""
        if self.shadow is not None and self.dirty:
            self.shadow[0, : self.dirty] = -1

    def clear(self) -> None:
        if self.shadow is not None and self.dirty:
            self.shadow[:, : self.dirty] = -1
        self.dirty = 0


_PIPE_IDS = np.arange(NCOLS, dtype=np.int64)


class Pattern:
    """Elements `idx . strides` for idx < shape (relative to an operand's offset), with
    what `touch` needs precomputed: the span [lo, hi), whether it is one contiguous run,
    and the byte-level views of the shadow."""

    __slots__ = ("byte_strides", "contiguous", "count", "hi", "lo", "shadow_shape", "shadow_strides", "shape",
                 "strides")

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], k: int):
        self.shape, self.strides = shape, strides
        self.lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
        self.hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides)) + 1
        self.count = math.prod(shape)
        self.contiguous = self.lo == 0 and self.hi == self.count and (
            tuple(st for n, st in zip(shape, strides) if n > 1) == tuple(isa.row_major([n for n in shape if n > 1])))
        self.byte_strides = tuple(st * k for st in strides)
        self.shadow_shape = (NCOLS, *shape, k)  # as_strided over shadow[:, first byte:]
        self.shadow_strides = (0, *(b * 4 for b in self.byte_strides), 4)  # row stride filled in by touch


@functools.lru_cache(maxsize=4096)
def pattern(shape: tuple[int, ...], strides: tuple[int, ...], k: int) -> Pattern:
    return Pattern(shape, strides, k)


@dataclass(frozen=True)
class Operand:
    """A decoded buffer operand: where its buffer lives and how to find its offset."""

    role: str
    region: int  # index into the run's regions
    base: int  # byte offset of the buffer (slot) in its region
    limit: int  # bytes of the buffer
    dtype: np.dtype
    offset_reg: int | None  # register of the element offset (None: 0)
    name: str  # for messages: "%x (ub @ 0x400)"
    itemsize: int = 0
    first: int = 0  # the buffer's first element in the region's typed view

    def __post_init__(self) -> None:
        object.__setattr__(self, "itemsize", self.dtype.itemsize)
        object.__setattr__(self, "first", self.base // self.dtype.itemsize)


# --------------------------------------------------------------------------------------
# Run state
# --------------------------------------------------------------------------------------


class Core:
    """One AI Core's memories (reused for every block it runs)."""

    def __init__(self, target: targets.Target):
        self.regions = [Region(s.value, np.zeros(isa.capacity_of(target, s), dtype=np.uint8), False)
                        for s in isa.LOCAL_SPACES]

    def reset(self) -> None:
        for r in self.regions:
            r.clear()


class RunState:
    """Everything one kernel launch mutates: registers, regions, clocks, timing, problems."""

    def __init__(self, program: KernelProgram, regions: list[Region], cost: CostModel, trace: Trace | None,
                 problems: dict):
        self.program = program
        self.regions = regions
        self.cost = cost
        self.trace = trace
        self.problems = problems
        self.regs: list = list(program.registers)
        self.counters = np.zeros(NCOLS, dtype=np.int64)  # instructions issued per pipe (HOST: 1)
        self.counters[HOST] = 1
        self.vc = np.zeros((NPIPES, NCOLS), dtype=np.int64)  # vc[q][p]: p's instructions q knows finished
        self.vc[:, HOST] = 1
        self.issued: list[list[int]] = [[] for _ in range(NPIPES)]
        self.flags: dict[tuple[int, int, int], deque] = {}
        self.pipes = PipeState()
        self.work = [0] * len(WORK)
        self.core = 0
        self.block = 0

    def start_block(self, block: int, core: int, pipes: PipeState) -> None:
        """Everything issued so far counts as finished; local memory as never written."""
        self.block, self.core, self.pipes = block, core, pipes
        self.vc[:, :] = self.counters
        self.regs = list(self.program.registers)
        for r in self.regions[:GM_BASE]:
            r.forget_writes()

    # -- problems ------------------------------------------------------------------------

    def report(self, kind: str, instr: int, message: str, other: int | None = None) -> None:
        key = (kind, instr, other)
        p = self.problems.get(key)
        if p is not None:
            p.count += 1
            return
        where = f"{self.program.describe(instr)}: " if instr >= 0 else ""
        self.problems[key] = Problem(kind, f"{where}{message} [kernel @{self.program.name}, block {self.block}]")

    # -- clocks --------------------------------------------------------------------------

    def begin(self, p: int, instr: int) -> int:
        """Number the next instruction of pipe p (the in-order pipes finish the previous
        one before starting)."""
        i = int(self.counters[p])
        if not PIPELINED[p]:
            self.vc[p, p] = i
        self.counters[p] = i + 1
        self.issued[p].append(instr)
        return i

    def timed(self, p: int, instr: int, startup: float, busy: float, port: float = 0.0) -> None:
        start, end = self.pipes.issue(p, startup, busy, port)
        if self.trace is not None:
            self.trace.add(self.core, p, self.program.names[instr], start, end, instr)

    # -- memory --------------------------------------------------------------------------

    def touch(self, instr: int, p: int, opnd: Operand, elem: int, pat: Pattern, write: bool,
              pending: list) -> np.ndarray | None:
        """The typed view of `opnd`'s elements `elem + pattern` after bounds and hazard
        checks (against the instructions `p` does not know have finished); the shadow
        update is queued in `pending` (see `commit`)."""
        k = opnd.itemsize
        lo, hi = elem + pat.lo, elem + pat.hi
        if lo < 0 or hi * k > opnd.limit:
            self.report("out-of-bounds", instr, f"{'writes' if write else 'reads'} elements [{lo}, {hi}) of "
                        f"{opnd.name}, which holds {opnd.limit // k}")
            return None
        region = self.regions[opnd.region]
        first = opnd.first + elem
        if opnd.region >= GM_BASE:
            self.count_gm(region, first * k, k, pat, write)
        typed = region.typed(opnd.dtype)
        if pat.contiguous:
            view = typed[first:first + pat.count].reshape(pat.shape)
        else:
            view = as_strided(typed[first:], pat.shape, pat.byte_strides)
        if region.shadow is None and not write:
            return view  # a GM input nothing has written yet
        shadow = region.ensure_shadow()
        if pat.contiguous:
            sh = shadow[:, first * k:(first + pat.count) * k]
        else:
            strides = (shadow.strides[0], *pat.shadow_strides[1:])
            sh = as_strided(shadow[:, first * k:], pat.shadow_shape, strides)
        vq = self.vc[p]
        last = sh[0]
        if not write and (last < 0).any():
            at = self._first(last < 0, pat, first, k)
            self.report("uninitialized", instr, f"reads {opnd.name} at byte {at:#x}, which nothing has written")
        bad = last >= (vq * 8 + _PIPE_IDS)[last & 7]  # writer index >= what p knows finished of its pipe
        if bad.any():
            w = int(last.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
            other = self.issued[w & 7][w >> 3]
            self.report("WAW" if write else "RAW", instr, f"{'writes' if write else 'reads'} {opnd.name} while "
                        f"{self.program.describe(other)} may still be writing it: no flag orders them", other)
        if write:
            reads = sh[1:]
            bad = reads >= vq[:NPIPES].reshape((NPIPES,) + (1,) * (reads.ndim - 1))
            if bad.any():
                rp = int(np.argmax(bad.reshape(NPIPES, -1).any(axis=1)))
                other = self.issued[rp][int(reads[rp].max())]
                self.report("WAR", instr, f"writes {opnd.name} while {self.program.describe(other)} may still be "
                            "reading it: no flag orders them", other)
        end = (opnd.first + hi) * k
        if end > region.dirty:
            region.dirty = end
        pending.append((sh, write))
        return view

    def count_gm(self, region: Region, first_byte: int, k: int, pat: Pattern, write: bool) -> None:
        """Count a GM access's bytes in `work` (reads: also the bytes no earlier read touched)."""
        nbytes = pat.count * k
        if write:
            self.work[GM_WRITE] += nbytes
            return
        self.work[GM_READ] += nbytes
        if region.read_mask is None:
            region.read_mask = np.zeros(region.data.size, dtype=bool)
        dims = [(n, b) for n, b in zip(pat.shape, pat.byte_strides) if n > 1 and b != 0]  # each byte once
        view = as_strided(region.read_mask[first_byte:], (*(n for n, _ in dims), k), (*(b for _, b in dims), 1))
        self.work[GM_READ_NEW] += view.size - int(np.count_nonzero(view))
        view[...] = True

    @staticmethod
    def _first(mask: np.ndarray, pat: Pattern, first: int, k: int) -> int:
        """The region byte of the first masked shadow entry (for messages)."""
        flat = int(np.argmax(mask.reshape(-1)))
        if pat.contiguous:
            return first * k + flat
        idx = np.unravel_index(flat, mask.shape)
        return first * k + sum(int(j) * st * k for j, st in zip(idx[:-1], pat.strides)) + int(idx[-1])

    @staticmethod
    def commit(p: int, i: int, pending: list) -> None:
        """Record an instruction's accesses in the shadow (after all its checks)."""
        for sh, write in pending:
            if write:
                sh[0] = (i << 3) | p
                sh[1:] = -1
        for sh, write in pending:
            if not write:
                sh[1 + p] = i

    def offset(self, opnd: Operand) -> int:
        return 0 if opnd.offset_reg is None else self.regs[opnd.offset_reg]


# --------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------

Step = Callable[[RunState], None]


def _loc(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, NameLoc):
        return f' loc("{loc.desc.data}")'
    return ""


class KernelProgram:
    """One `isa.kernel`, decoded once; `Simulator.run_kernel` executes it."""

    def __init__(self, kernel: isa.KernelOp, target: targets.Target):
        self.kernel = kernel
        self.target = target
        self.name = kernel.sym_name.data
        self.block_dim = kernel.block_dim.value.data
        self.args = tuple(kernel.body.block.args)
        self.num_ins = kernel.num_ins.value.data
        self.ops: list[Operation] = []  # instruction id -> op
        self.names: list[str] = []
        self.reg_of: dict[SSAValue, int] = {}
        self.registers: list = []
        self.buffers: dict[SSAValue, tuple[int, int, int, str]] = {}  # value -> region, base, bytes, name
        self.uses_cube = False
        for i, a in enumerate(self.args):
            t = a.type
            assert isinstance(t, MemRefType)
            self.buffers[a] = (GM_BASE + i, 0, isa.nbytes(t), f"%{a.name_hint or f'arg{i}'} (gm argument #{i})")
        self.steps = self._block(kernel.body.block)

    # -- helpers ---------------------------------------------------------------------------

    def describe(self, instr: int) -> str:
        op = self.ops[instr]
        return f"{op.name} #{instr}{_loc(op)}"

    def _reg(self, v: SSAValue) -> int:
        r = self.reg_of.get(v)
        if r is None:
            r = self.reg_of[v] = len(self.registers)
            self.registers.append(0)
        return r

    def _id(self, op: Operation) -> int:
        self.ops.append(op)
        self.names.append(op.name.removeprefix("isa."))
        return len(self.ops) - 1

    def _fail(self, op: Operation, message: str) -> SimulatorError:
        return SimulatorError(f"kernel @{self.name}: {op.name}: {message}")

    def operand(self, op: isa.InstructionOp, role: str) -> Operand:
        v = op.buffer(role)
        where = self.buffers.get(v)
        if where is None:
            raise self._fail(op, f"{role} is not an isa.buffer or a kernel argument")
        region, base, size, name = where
        off = op.offset_of(role)
        t = v.type
        assert isinstance(t, MemRefType)
        return Operand(role, region, base, size, numpy_dtype(t.element_type), None if off is None else self._reg(off), name)

    # -- ops ---------------------------------------------------------------------------------

    def _block(self, block: Block) -> list[Step]:
        steps = []
        for op in block.ops:
            step = self._op(op)
            if step is not None:
                steps.append(step)
        return steps

    def _op(self, op: Operation) -> Step | None:
        if isinstance(op, scf.YieldOp):
            if op.operands:
                raise self._fail(op, "loop-carried values are not supported")
            return None
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if not isinstance(value, IntegerAttr):
                raise self._fail(op, "only integer / index constants run on the scalar unit")
            self.registers[self._reg(op.result)] = int(value.value.data)
            return None
        if type(op) in INT_BINARY:
            fn, a, b, r = INT_BINARY[type(op)], self._reg(op.operands[0]), self._reg(op.operands[1]), self._reg(op.results[0])

            def binary(st: RunState) -> None:
                st.regs[r] = fn(st.regs[a], st.regs[b])

            return binary
        if isinstance(op, arith.CmpiOp):
            fn, a, b, r = CMPI[op.predicate.value.data], self._reg(op.lhs), self._reg(op.rhs), self._reg(op.result)

            def cmp(st: RunState) -> None:
                st.regs[r] = bool(fn(st.regs[a], st.regs[b]))

            return cmp
        if isinstance(op, arith.SelectOp):
            c, a, b, r = self._reg(op.cond), self._reg(op.lhs), self._reg(op.rhs), self._reg(op.result)

            def select(st: RunState) -> None:
                st.regs[r] = st.regs[a] if st.regs[c] else st.regs[b]

            return select
        if isinstance(op, arith.IndexCastOp):
            a, r = self._reg(op.input), self._reg(op.result)

            def cast(st: RunState) -> None:
                st.regs[r] = st.regs[a]

            return cast
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, isa.BlockIdxOp):
            r = self._reg(op.result)

            def block_idx(st: RunState) -> None:
                st.regs[r] = st.block

            return block_idx
        if isinstance(op, isa.BufferOp):
            self._bind(op)
            return None
        if isinstance(op, isa.SetFlagOp | isa.WaitFlagOp | isa.PipeBarrierOp):
            return self._sync(op)
        if isinstance(op, isa.LoadScalarOp):
            return self._load_scalar(op)
        if isinstance(op, isa.MOVE_OPS):
            return self._move(op)
        if isinstance(op, isa.MmadOp):
            return self._mmad(op)
        if isinstance(op, isa.Img2colOp):
            return self._img2col(op)
        if isinstance(op, isa.VECTOR_OPS):
            return self._vector(op)
        raise self._fail(op, "the simulator has no semantics for this op")

    def _for(self, op: scf.ForOp) -> Step:
        if op.iter_args:
            raise self._fail(op, "loop-carried values are not supported")
        lb, ub, step, iv = self._reg(op.lb), self._reg(op.ub), self._reg(op.step), self._reg(op.body.block.args[0])
        body = self._block(op.body.block)
        hint = op.attributes.get(isa.MAX_TRIPS_ATTR)
        bound = hint.value.data if isinstance(hint, IntegerAttr) else None
        instr = self._id(op) if bound is not None else -1

        def loop(st: RunState) -> None:
            regs = st.regs
            trips = range(regs[lb], regs[ub], regs[step])
            if bound is not None and len(trips) > bound:
                st.report("max-trips", instr, f"runs {len(trips)} iterations, more than its {isa.MAX_TRIPS_ATTR} = {bound} "
                          "(insert-sync relied on it)")
            for v in trips:
                regs[iv] = v
                st.pipes.iteration()
                for s in body:
                    s(st)

        return loop

    def _bind(self, op: isa.BufferOp) -> None:
        if op.byte_offset is None:
            raise self._fail(op, "the buffer has no offset: run plan-local-memory first")
        region = LOCAL_IDS[op.space]
        size = isa.nbytes(op.type)
        for k, v in enumerate(op.slots):
            base = op.slot_offset(k, self.target)
            slot = f" slot {k}" if len(op.slots) > 1 else ""
            self.buffers[v] = (region, base, size, f"%{v.name_hint or 'buf'}{slot} ({op.space.value} @ {base:#x})")

    # -- sync ------------------------------------------------------------------------------------

    def _sync(self, op: isa.SetFlagOp | isa.WaitFlagOp | isa.PipeBarrierOp) -> Step:
        instr = self._id(op)
        if isinstance(op, isa.PipeBarrierOp):
            if op.pipe == isa.Pipe.ALL:
                def barrier_all(st: RunState) -> None:
                    st.vc[:, :NPIPES] = st.counters[:NPIPES]
                    t = max(st.pipes.barrier(p) for p in range(NPIPES))
                    for p in range(NPIPES):
                        st.pipes.hold[p] = t

                return barrier_all
            p = PIPE_INDEX[op.pipe]

            def barrier(st: RunState) -> None:
                st.vc[p, p] = st.counters[p]
                st.pipes.barrier(p)

            return barrier
        src, dst, event = op.key
        ps, pd = PIPE_INDEX[src], PIPE_INDEX[dst]
        key = (ps, pd, event)
        if isinstance(op, isa.SetFlagOp):
            def set_flag(st: RunState) -> None:
                clock = st.vc[ps].copy()
                clock[ps] = st.counters[ps]
                st.flags.setdefault(key, deque()).append((st.pipes.fire_time(ps), clock, instr))

            return set_flag

        def wait_flag(st: RunState) -> None:
            queue = st.flags.get(key)
            if not queue:
                st.report("deadlock", instr, f"waits for event {event} of {src.value} -> {dst.value}, which no earlier "
                          "set_flag sets: the core would hang here")
                return
            fire, clock, _ = queue.popleft()
            np.maximum(st.vc[pd], clock, out=st.vc[pd])
            t = st.pipes.wait(pd, fire)
            if queue and queue[0][0] < t:
                st.report("lost-signal", queue[0][2], f"sets event {event} of {src.value} -> {dst.value} at cycle "
                          f"{queue[0][0]:.0f} while it is still set ({st.program.describe(instr)} clears it only at "
                          f"cycle {t:.0f}): the signal is lost", instr)

        return wait_flag

    # -- instructions ------------------------------------------------------------------------------

    def _move(self, op: isa._MoveOp) -> Step:
        instr, p = self._id(op), PIPE_INDEX[op.PIPE]
        src, dst = self.operand(op, "src"), self.operand(op, "dst")
        sizes, ss, ds = op.static_sizes, op.static_src_strides, op.static_dst_strides
        rank = len(sizes)
        window = [self._reg(v) for v in op.window]
        pad = op.pad_value
        fix = isinstance(op, isa.FixpipeOp)
        relu = fix and op.relu is not None
        src_gm, dst_gm = src.region >= GM_BASE, dst.region >= GM_BASE
        name = op.name
        vector_unit = isinstance(op, isa.CopyUbToUbOp)

        ks, kd = src.itemsize, dst.itemsize
        full_src, full_dst = pattern(sizes, ss, ks), pattern(sizes, ds, kd)
        static_cost = None

        def cost(st: RunState, sub: tuple[int, ...], empty: bool, src_elem: int) -> tuple[float, float, float]:
            srect = None if empty else (sub, ss, ks)
            drect = (sizes if pad is not None else sub, ds, kd)
            if vector_unit:
                return st.cost.vector_copy(max(0 if empty else math.prod(sub) * ks, math.prod(drect[0]) * kd))
            read_at = (src.region, (src.first + src_elem) * ks) if src_gm and not empty else None
            return st.cost.move(name, srect, drect, read_at, dst_gm)

        def move(st: RunState) -> None:
            nonlocal static_cost
            i = st.begin(p, instr)
            so, do = st.offset(src), st.offset(dst)
            pending: list = []
            if window:
                regs = st.regs
                lo = [max(0, regs[window[2 * d]]) for d in range(rank)]
                hi = [min(sizes[d], regs[window[2 * d + 1]]) for d in range(rank)]
                sub = tuple(max(0, b - a) for a, b in zip(lo, hi))
                empty = 0 in sub
                src_elem = so + sum(a * b for a, b in zip(lo, ss))
                sview = None if empty else st.touch(instr, p, src, src_elem, pattern(sub, ss, ks), False, pending)
                if pad is not None:
                    dview = st.touch(instr, p, dst, do, full_dst, True, pending)
                    target = None if dview is None or empty else dview[tuple(slice(a, a + n) for a, n in zip(lo, sub))]
                else:
                    dview = target = None if empty else st.touch(
                        instr, p, dst, do + sum(a * b for a, b in zip(lo, ds)), pattern(sub, ds, kd), True, pending)
                timing = cost(st, sub, empty, src_elem)
            else:
                sview = st.touch(instr, p, src, so, full_src, False, pending)
                dview = target = st.touch(instr, p, dst, do, full_dst, True, pending)
                if src_gm or dst_gm:  # GM traffic: L2 state and the HBM budget of this launch
                    timing = cost(st, sizes, False, so)
                else:
                    if static_cost is None:
                        static_cost = cost(st, sizes, False, so)
                    timing = static_cost
            st.commit(p, i, pending)
            if pad is not None and dview is not None:
                dview[...] = pad
            if target is not None and sview is not None:
                target[...] = K.fixpipe(sview, dst.dtype, relu) if fix else sview
            st.timed(p, instr, *timing)

        return move

    def _load_scalar(self, op: isa.LoadScalarOp) -> Step:
        """S reads one index into a register (negative values wrap; out of range is a
        run-time error). The scalar unit waits for the value before it issues anything
        else: the moves whose address it feeds cannot start earlier."""
        instr, p = self._id(op), PIPE_INDEX[op.PIPE]
        src = self.operand(op, "src")
        r, bound = self._reg(op.result), op.bound.value.data
        one = pattern((1,), (1,), src.itemsize)
        # one scalar issue cycle from the target; a target without the figure leaves the
        # scalar unit untimed, as its index arithmetic is
        overhead = getattr(self.target, "overhead", None)
        cost = float(overhead.issue) if overhead is not None else 0.0
        where = self.describe(instr)

        def load_scalar(st: RunState) -> None:
            i = st.begin(p, instr)
            pending: list = []
            view = st.touch(instr, p, src, st.offset(src), one, False, pending)
            st.commit(p, i, pending)
            if view is not None:
                try:
                    st.regs[r] = wrap_index(int(view[0]), bound)
                except IndexOutOfRange as e:
                    raise IndexOutOfRange(f"kernel @{self.name}: {where}: {e}") from None
            _, end = st.pipes.issue(p, 0.0, cost)
            for q in range(NPIPES):
                st.pipes.hold[q] = max(st.pipes.hold[q], end)
            if st.trace is not None:
                st.trace.add(st.core, p, self.names[instr], end - cost, end, instr)

        return load_scalar

    def _mmad(self, op: isa.MmadOp) -> Step:
        instr, p = self._id(op), PIPE_INDEX[op.PIPE]
        self.uses_cube = True
        a, b, c = self.operand(op, "a"), self.operand(op, "b"), self.operand(op, "c")
        m, k, n = mkn = op.mkn
        fractal = isa.cube_fractal(self.target, op.a.type.element_type)
        init = None if op.init is None else self._reg(op.init)
        one = (1,)

        pa, pb, pc = pattern((m * k,), one, a.itemsize), pattern((k * n,), one, b.itemsize), pattern((m * n,), one, c.itemsize)
        timing = CostModel(self.target).mmad(mkn, fractal)
        fractals = -(-m // fractal[0]) * -(-k // fractal[1]) * -(-n // fractal[2])

        def mmad(st: RunState) -> None:
            i = st.begin(p, instr)
            pending: list = []
            first = init is not None and bool(st.regs[init])
            av = st.touch(instr, p, a, st.offset(a), pa, False, pending)
            bv = st.touch(instr, p, b, st.offset(b), pb, False, pending)
            co = st.offset(c)
            cin = None if first else st.touch(instr, p, c, co, pc, False, pending)
            st.work[FRACTALS] += fractals
            cv = st.touch(instr, p, c, co, pc, True, pending)
            st.commit(p, i, pending)
            if av is not None and bv is not None and cv is not None and (first or cin is not None):
                cv[...] = K.mmad(av, bv, None if first else cin, mkn, fractal)
            st.timed(p, instr, *timing)

        return mmad

    def _img2col(self, op: isa.Img2colOp) -> Step:
        instr, p = self._id(op), PIPE_INDEX[op.PIPE]
        self.uses_cube = True
        src, dst = self.operand(op, "src"), self.operand(op, "dst")
        regs = [self._reg(v) for v in (op.m, op.k, op.c, op.h)]
        fm = isa.ints(op.fm)
        tm, tk = sizes = isa.ints(op.sizes)
        m0, k0, _ = isa.cube_fractal(self.target, op.src.type.element_type)
        params = dict(kernel=isa.ints(op.kernel), strides=isa.ints(op.strides), dilations=isa.ints(op.dilations),
                      pads=isa.ints(op.pads), out_size=isa.ints(op.out_size), channels=op.channels.value.data,
                      c0=op.c0.value.data)
        one = (1,)
        count = math.prod(fm)
        nbytes = tm * tk * dst.itemsize

        ps, pd = pattern((count,), one, src.itemsize), pattern((tm * tk,), one, dst.itemsize)

        def img2col(st: RunState) -> None:
            i = st.begin(p, instr)
            pending: list = []
            sv = st.touch(instr, p, src, st.offset(src), ps, False, pending)
            dv = st.touch(instr, p, dst, st.offset(dst), pd, True, pending)
            st.commit(p, i, pending)
            if sv is not None and dv is not None:
                m, k, c, h = (st.regs[r] for r in regs)
                dv[...] = K.img2col(sv.reshape(fm), sizes, m, k, c, h, (m0, k0), **params)
            st.timed(p, instr, *st.cost.img2col(nbytes))

        return img2col

    def _vector(self, op: isa._VectorOp) -> Step:
        instr, p = self._id(op), PIPE_INDEX[op.PIPE]
        rects = op.rects(self.target)
        roles = op.BUFFERS
        opnds = {r: self.operand(op, r) for r in roles}
        repeat = op.repeats
        name = op.name
        reads = [r for r in roles if r not in op.WRITES]
        kind = opnds[reads[0] if reads else "dst"].dtype
        timing = CostModel(self.target).vector(repeat, name.removeprefix("isa."),
                                               {"float16": "f16", "float32": "f32"}.get(kind.name, kind.name))

        pats = {r: [(rect.base, pattern(rect.shape, rect.strides, opnds[r].itemsize)) for rect in rects[r]]
                for r in roles}

        block = self.target.vector.block_bytes

        def gather(st: RunState, role: str, write: bool, pending: list) -> list[np.ndarray] | None:
            o = opnds[role]
            off = st.offset(o)
            if (o.base + off * o.itemsize) % block:
                st.report("misaligned", instr, f"{role} {o.name} at element offset {off} does not start on a "
                          f"{block}-byte block")
            views = []
            for base, pat in pats[role]:
                v = st.touch(instr, p, o, off + base, pat, write, pending)
                if v is None:
                    return None
                views.append(v)
            return views

        def rows(views: list[np.ndarray]) -> np.ndarray:
            if len(views) == 1:
                return views[0].reshape(repeat, -1)
            return np.concatenate([v.reshape(repeat, -1) for v in views], axis=1)

        def store(views: list[np.ndarray], value: np.ndarray) -> None:
            value = np.broadcast_to(value, (repeat, sum(v.size for v in views) // repeat))
            col = 0
            for v in views:
                w = v.size // repeat
                v[...] = value[:, col:col + w].reshape(v.shape)
                col += w

        if isinstance(op, isa.VECTOR_BINARY):
            def compute(x):
                return K.binary(name, x["src0"], x["src1"])
        elif isinstance(op, isa.VConvOp):
            mode = None if op.round_mode is None else op.round_mode.data
            out_dtype = opnds["dst"].dtype

            def compute(x):
                return K.convert(x["src"], out_dtype, mode)
        elif isinstance(op, isa.VECTOR_UNARY):
            def compute(x):
                return K.unary(name, x["src"])
        elif isinstance(op, isa.VECTOR_SCALAR):
            value = op.value

            def compute(x):
                return K.scalar(name, x["src"], value)
        elif isinstance(op, isa.VDupOp):
            value = op.value

            def compute(x):
                return np.asarray(value)
        elif isinstance(op, isa.VECTOR_REDUCE):
            def compute(x):
                return K.reduce(name, x["src"])[:, None]
        elif isinstance(op, isa.VBrcbOp):
            def compute(x):
                return x["src"]
        elif isinstance(op, isa.VCmpOp):
            mode = op.mode.data

            def compute(x):
                return K.compare(mode, x["src0"], x["src1"])
        elif isinstance(op, isa.VSelOp):
            def compute(x):
                return K.select(x["cond"], x["src0"], x["src1"])
        else:
            raise self._fail(op, "no vector semantics")
        brcb = isinstance(op, isa.VBrcbOp)
        dst_dtype = opnds["dst"].dtype

        def vector(st: RunState) -> None:
            i = st.begin(p, instr)
            pending: list = []
            inputs = {}
            ok = True
            for role in reads:
                views = gather(st, role, False, pending)
                if views is None:
                    ok = False
                    continue
                inputs[role] = rows(views)
            out = gather(st, "dst", True, pending)
            st.commit(p, i, pending)
            if ok and out is not None:
                with np.errstate(all="ignore"):
                    result = compute(inputs)
                if brcb:
                    out[0][...] = result[:, :, None]
                else:
                    store(out, np.asarray(result).astype(dst_dtype, copy=False))
            st.work[REPEATS] += repeat
            st.timed(p, instr, *timing)

        return vector


# --------------------------------------------------------------------------------------
# Running kernels
# --------------------------------------------------------------------------------------


@dataclass
class KernelStats:
    """One launch: cycles (the slowest core), per-pipe busy cycles summed over cores,
    instructions per pipe, cores used and blocks."""

    name: str
    cycles: float
    pipe_busy: dict[str, float]
    instructions: dict[str, int]
    cores: int
    blocks: int
    core_cycles: list[float] = field(default_factory=list)
    hbm_bytes: float = 0.0  # bytes the timing model sent to / from HBM
    l2_bytes: float = 0.0  # bytes it served from the L2
    work: dict[str, int] = field(default_factory=dict)  # WORK, counted from the instructions

    def utilization(self) -> dict[str, float]:
        span = self.cycles * self.cores
        return {p: (b / span if span else 0.0) for p, b in self.pipe_busy.items()}

    def table(self) -> str:
        lines = [f"kernel @{self.name}: {self.cycles:.0f} cycles, {self.blocks} blocks on {self.cores} cores"]
        for p, b in self.pipe_busy.items():
            if self.instructions[p]:
                lines.append(f"  {p:5s} busy {b:12.0f}  idle {self.cycles * self.cores - b:12.0f}  "
                             f"instructions {self.instructions[p]}")
        return "\n".join(lines)


@dataclass
class Report:
    """What a run found: the stats of each launch and every problem."""

    kernels: list[KernelStats] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def cycles(self) -> float:
        return sum(k.cycles for k in self.kernels)

    @property
    def hazards(self) -> list[Problem]:
        return [p for p in self.problems if p.is_hazard]

    def check(self) -> None:
        """Raise HazardError when anything was reported."""
        if self.problems:
            shown = "\n".join(f"  {p}" for p in self.problems[:20])
            more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
            raise HazardError(f"the simulator reported {len(self.problems)} problem(s):\n{shown}{more}")


class Simulator:
    """Runs decoded kernels on a target; `trace=True` records a timeline."""

    def __init__(self, target: targets.Target | str | None = None, trace: bool = False):
        if target is None or isinstance(target, str):
            target = targets.load_target(target or targets.DEFAULT_TARGET)
        self.target = target
        self.core = Core(target)
        self.trace = Trace(target.clock_hz) if trace else None
        self.report = Report()
        self._programs: dict[int, KernelProgram] = {}

    def program(self, kernel: isa.KernelOp) -> KernelProgram:
        """The decoded kernel (decoded once per simulator)."""
        prog = self._programs.get(id(kernel))
        if prog is None or prog.kernel is not kernel:
            prog = self._programs[id(kernel)] = KernelProgram(kernel, self.target)
        return prog

    def run_kernel(self, kernel: isa.KernelOp | KernelProgram, buffers: Sequence[np.ndarray]) -> KernelStats:
        """Run a kernel on GM buffers (numpy arrays, one per kernel argument, in order);
        the `outs` arrays receive the results."""
        prog = kernel if isinstance(kernel, KernelProgram) else self.program(kernel)
        if len(buffers) != len(prog.args):
            raise InputError(f"kernel @{prog.name} takes {len(prog.args)} buffers, got {len(buffers)}")
        regions = [*self.core.regions]
        outs = []
        for i, (a, buf) in enumerate(zip(prog.args, buffers)):
            t = a.type
            assert isinstance(t, MemRefType)
            want = (numpy_dtype(t.element_type), isa.num_elements(t))
            if (buf.dtype, buf.size) != want:
                raise InputError(f"kernel @{prog.name} argument #{i} is {t}, got {buf.dtype} x {buf.size}")
            data = np.ascontiguousarray(buf).reshape(-1).view(np.uint8).copy()
            regions.append(Region(f"gm#{i}", data, initialized=i < prog.num_ins))
            outs.append((buf, data))
        problems: dict = {}
        ncores = self.target.cores.cube if prog.uses_cube else self.target.cores.vector
        active = max(1, min(prog.block_dim, ncores))
        st = RunState(prog, regions, CostModel(self.target, active), self.trace, problems)
        self.core.reset()
        core_pipes = [st.cost.pipes() for _ in range(active)]
        for block in range(prog.block_dim):
            core = block % active
            pipes = core_pipes[core]
            pipes.shift(pipes.end)
            st.start_block(block, core, pipes)
            for step in prog.steps:
                step(st)
            for (ps, pd, e), queue in st.flags.items():
                if queue:
                    st.report("unbalanced", queue[0][2], f"event {e} of {_pipe(ps)} -> {_pipe(pd)} is still set when "
                              "the block ends (no wait_flag consumed it)")
            st.flags.clear()
        for i, (buf, data) in enumerate(outs):
            if i >= prog.num_ins:
                buf.reshape(-1)[...] = data.view(buf.dtype)
        cycles = st.cost.launch_cycles([p.end for p in core_pipes])
        busy = {_pipe(p): sum(c.busy[p] for c in core_pipes) for p in range(NPIPES)}
        counts = {_pipe(p): sum(c.instructions[p] for c in core_pipes) for p in range(NPIPES)}
        stats = KernelStats(prog.name, cycles, busy, counts, active, prog.block_dim, [c.end for c in core_pipes],
                            st.cost.hbm_bytes, st.cost.l2_bytes, dict(zip(WORK, st.work)))
        if self.trace is not None:
            self.trace.offset += cycles
        self.report.kernels.append(stats)
        self.report.problems.extend(problems.values())
        return stats


def _pipe(p: int) -> str:
    return PIPE_ORDER[p].value


def find_kernel(module: ModuleOp, name: str | None = None) -> isa.KernelOp:
    kernels = [op for op in module.walk() if isinstance(op, isa.KernelOp)]
    for k in kernels:
        if name is None or k.sym_name.data == name:
            return k
    raise KeyError(f"the module has no isa.kernel{'' if name is None else ' @' + name}")


def run_kernel(module: ModuleOp, buffers: Sequence[np.ndarray], name: str | None = None,
               trace: bool = False) -> tuple[Report, Simulator]:
    """Simulate one kernel of `module` on the module's target; returns the report (call
    `.check()` to raise on problems) and the simulator (for its timeline)."""
    sim = Simulator(targets.target_of(module), trace=trace)
    sim.run_kernel(find_kernel(module, name), buffers)
    return sim.report, sim


# --------------------------------------------------------------------------------------
# Running a module: the graph function's launches
# --------------------------------------------------------------------------------------


class IsaProgram:
    """A module at the isa level: `func.func @main` with GM buffers (`tile.alloc` in gm,
    `tile.const`, `tile.view`) and `isa.launch`es. `run(inputs)` returns the outputs; the
    simulator's report has the cycles and problems of every launch."""

    def __init__(self, module: ModuleOp, entry: str = "main", trace: bool = False):
        from ge.runtime.reference import find_function

        self.sim = Simulator(targets.target_of(module), trace=trace)
        self.function = find_function(module, entry)
        self.kernels = {op.sym_name.data: op for op in module.walk() if isinstance(op, isa.KernelOp)}

    def run(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
        from ge.dialects.blobs import attr_array
        from ge.dialects.graph import argument_names

        block = self.function.body.block
        if isinstance(inputs, Mapping):
            inputs = [inputs[n] for n in argument_names(self.function)]
        if len(inputs) != len(block.args):
            raise InputError(f"@{self.function.sym_name.data} takes {len(block.args)} inputs, got {len(inputs)}")
        env: dict[SSAValue, np.ndarray] = {}
        for a, x in zip(block.args, inputs):
            env[a] = np.array(x, dtype=numpy_dtype(a.type.element_type)).reshape(a.type.get_shape())
        for op in block.ops:
            if isinstance(op, isa.LaunchOp):
                kernel = self.kernels[op.callee.root_reference.data]
                self.sim.run_kernel(self.sim.program(kernel), [env[v] for v in op.operands])
            elif isinstance(op, func.ReturnOp):
                return [env[v] for v in op.arguments]
            elif op.name == "tile.alloc":
                t = op.results[0].type
                env[op.results[0]] = np.zeros(t.get_shape(), dtype=numpy_dtype(t.element_type))
            elif op.name == "tile.const":
                t = op.results[0].type
                env[op.results[0]] = np.ascontiguousarray(attr_array(op.value)).reshape(t.get_shape()).astype(
                    numpy_dtype(t.element_type))
            elif op.name == "tile.view":
                env[op.results[0]] = env[op.operands[0]].reshape(op.results[0].type.get_shape())
            else:
                raise SimulatorError(f"@{self.function.sym_name.data}: {op.name} does not run on the simulator")
        raise SimulatorError(f"@{self.function.sym_name.data} has no func.return")
