"""The AI Core simulator: runs `isa` kernels functionally, times them, and checks them.

Decoding. A kernel arrives as kernel code (`ge.runtime.kernel_code`: the plain program an
`isa.kernel` encodes to, which the model file stores) and is decoded once (`KernelProgram`)
into a flat list of Python closures: scalar ops write integer registers, `scf.for` runs its
body's list in a Python loop, every instruction becomes one closure with its static operand
layout precomputed. Dispatch is a table, `SEMANTICS` (op name -> decoder). Adding an
instruction is one function and one table entry: `def _gather(self, rec) -> Step` (a
KernelProgram method or any function of (program, record)) that reads the generic record
kernel_code writes for every `isa.InstructionOp` -- `rec["opnds"]` (buffer operands by
role, `self.operand(rec, role)`), `rec["regs"]` (index operands' registers by name),
`rec["results"]`, `rec["props"]` (each absent when empty) -- and returns a closure that calls `st.begin` / `st.touch`
/ `st.commit` / `st.timed` when `st.check` and computes when `st.compute`; then
`SEMANTICS["isa.gather"] = KernelProgram._gather`.

Function. Each core has its local memories as byte arrays (sizes from the target); GM is
one byte array per kernel argument. An instruction gathers its operands as numpy views of
those bytes (strided views, no element loops), computes with `ge.runtime.isa_kernels`
and writes its destination: what the instructions say is what happens, so a wrong offset
gives a wrong answer.

Timing. Cycles per instruction from the target; one in-order queue per pipe; flags and
barriers (`ge.runtime.sim_timing`). The `block_dim` blocks go round-robin over the target's
cores (Cube cores for kernels that use the Cube, Vector cores otherwise); a core runs its
blocks one after another, the kernel takes as long as its slowest core. The blocks are
simulated one after another too, but on one time axis: their GM transfers share the
launch's L2 (a block fetched by one core is a hit for the others once it has arrived) and
the chip's HBM and L2 bandwidth in time (`sim_timing.CostModel`). The L2 outlives a
launch (`Simulator.l2`, `sim_timing.ChipL2`): a launch starts with the blocks of its
inputs that earlier launches of the run wrote or read and that are still there, and
leaves what it wrote (dirty: written back to HBM when pushed out) and read.

Checks. Program order is what the kernel means; the pipes run concurrently. Every pipe
keeps a vector clock of the instructions it knows have finished (through set_flag /
wait_flag pairs, pipe barriers, and the in-order Cube and scalar pipes); every memory an
access log (`ge.runtime.sim_memory`). An access meeting a logged access its pipe does not
know finished is a hazard -- RAW, WAR or WAW -- reported with both instructions, whatever
the cycle counts happen to be. The blocks of a launch run on different cores with nothing
ordering them: a GM byte written by one block and written or read by another is a race.
Also reported: reads of bytes never written, accesses outside their buffer, wait_flag with
no set_flag before it (the core would hang), a set_flag that fires while its event is
still set (the signal is lost), and events still set when a block ends.

Once per kernel. Timing and checks depend on the kernel and its launch, not on the data
(the addresses are static, except in kernels whose `isa.load_scalar` feeds an address)
and on which of its input blocks the L2 holds when it starts: `Simulator` keeps them per
(decoded body, block_dim, those blocks as runs) in `analyses`, with what the launch left
in the L2 (`sim_timing.LaunchL2`), and later launches of the same body finding the same
L2 -- in the same run or a later one sharing the dict: every run starts cold, so a rerun
finds them all -- only compute (`RunState.check` false) and replay what they leave in
the L2. `timing_only` skips the numerics.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from ge import targets
from ge.dialects import isa
from ge.dialects.dtypes import numpy_dtype
from ge.errors import GeError, InputError
from ge.runtime import isa_kernels as K
from ge.runtime import kernel_code
from ge.runtime.index_arith import CMPI, IndexOutOfRange, wrap_index
from ge.runtime.kernel_code import GM_BASE, INT_BINARY_NAMES, SimulatorError
from ge.runtime.sim_memory import NO_VIEW, Entry, Pattern, Region, byte_ranges, overlap, pattern
from ge.runtime.sim_timing import (
    NPIPES,
    PIPE_INDEX,
    PIPE_ORDER,
    PIPELINED,
    ChipL2,
    CostModel,
    LaunchL2,
    PipeState,
    Trace,
    unpack,
)

# what a launch did, counted from its instructions (independent of the timing model):
# GM bytes read, of them bytes no earlier read of the launch touched, GM bytes written,
# Cube fractals, vector repeats
# Cube fractals, vector repeats, and of the new GM bytes read those the L2 may hold: in
# blocks it held when the launch started (`ChipL2`: written or read by an earlier launch)
# or written by the launch itself
WORK = ("gm_read", "gm_read_new", "gm_write", "fractals", "repeats", "gm_read_warm")
GM_READ, GM_READ_NEW, GM_WRITE, FRACTALS, REPEATS, GM_READ_WARM = range(len(WORK))
PIPE_OF = {p.value: i for p, i in PIPE_INDEX.items()}
L0C_OUT = {isa.FixpipeOp.name, isa.CopyL0cToUbOp.name}  # the accumulator's read-outs
LOG_LIMIT = 16  # entries of a buffer's access log before pruning the finished ones
# Does the L2 keep its contents across launches (`ChipL2`)? Off: every launch starts with a
# cold L2, as the tiler's cost model (lowering/tile_cube.py) still assumes -- its accuracy
# tests compare against that.
L2_ACROSS_LAUNCHES = True


class HazardError(GeError):
    """A kernel run reported problems; the message lists them."""


@dataclass
class Problem:
    """One reported problem: `kind` is RAW / WAR / WAW / race (hazards), uninitialized,
    out-of-bounds, misaligned, deadlock, lost-signal, unbalanced or max-trips; `count` how
    often the same pair of instructions hit it."""

    kind: str
    message: str
    count: int = 1

    HAZARDS = ("RAW", "WAR", "WAW", "race")

    @property
    def is_hazard(self) -> bool:
        return self.kind in self.HAZARDS

    def __str__(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.kind}: {self.message}{times}"


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
    slot: int = 0  # the buffer's access log (KernelProgram.aliases)
    itemsize: int = 0
    first: int = 0  # the buffer's first element in the region's typed view
    aligned: bool = True  # the buffer starts on a whole element (its accesses stay inside it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "itemsize", self.dtype.itemsize)
        object.__setattr__(self, "first", self.base // self.dtype.itemsize)
        object.__setattr__(self, "aligned", self.base % self.dtype.itemsize == 0)


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
            r.forget_writes()


class RunState:
    """Everything one kernel launch mutates: registers, regions, clocks, timing, problems.
    `check`: time the pipes and check every access; `compute`: run the numerics."""

    def __init__(self, program: KernelProgram, regions: list[Region], cost: CostModel, trace: Trace | None,
                 problems: dict, name: str, check: bool = True, compute: bool = True):
        self.program = program
        self.name = name
        self.regions = regions
        self.cost = cost
        self.trace = trace
        self.problems = problems
        self.check, self.compute = check, compute
        self.regs: list = list(program.registers)
        self.counters = [0] * NPIPES  # instructions issued per pipe
        self.vc = [[0] * NPIPES for _ in range(NPIPES)]  # vc[q][p]: p's instructions q knows finished
        self.flags: dict[tuple[int, int, int], deque] = {}
        self.pipes = PipeState()
        self.work = [0] * len(WORK)
        self.races = program.block_dim > 1
        self.aliases = program.aliases
        self.logs: list[list[Entry]] = [[] for _ in program.aliases]  # per buffer: accesses maybe unfinished
        self.limits = [LOG_LIMIT] * len(program.aliases)
        self.full = [False] * len(program.aliases)  # per buffer: every byte written in this block
        self.core = 0
        self.block = 0

    def start_block(self, block: int, core: int, pipes: PipeState) -> None:
        """Everything issued so far counts as finished; local memory as never written."""
        self.block, self.core, self.pipes = block, core, pipes
        self.vc = [list(self.counters) for _ in range(NPIPES)]
        self.regs = list(self.program.registers)
        for r in self.regions[:GM_BASE]:
            r.forget_writes()
        for log in self.logs:
            log.clear()
        self.full = [False] * len(self.logs)

    # -- problems ------------------------------------------------------------------------

    def report(self, kind: str, instr: int, message: str, other: int | None = None) -> None:
        key = (kind, instr, other)
        p = self.problems.get(key)
        if p is not None:
            p.count += 1
            return
        where = f"{self.program.describe(instr)}: " if instr >= 0 else ""
        self.problems[key] = Problem(kind, f"{where}{message} [kernel @{self.name}, block {self.block}]")

    # -- clocks --------------------------------------------------------------------------

    def begin(self, p: int, instr: int) -> int:
        """Number the next instruction of pipe p (the in-order pipes finish the previous
        one before starting)."""
        i = self.counters[p]
        if not PIPELINED[p]:
            self.vc[p][p] = i
        self.counters[p] = i + 1
        return i

    def timed(self, p: int, instr: int, startup: float, busy: float, gm: object = 0.0) -> None:
        start, end = self.pipes.issue(p, startup, busy, gm)
        if self.trace is not None:
            self.trace.add(self.core, p, self.program.names[instr], start, end, instr)

    # -- memory --------------------------------------------------------------------------

    def touch(self, instr: int, p: int, opnd: Operand, elem: int, pat: Pattern, write: bool,
              pending: list) -> np.ndarray | None:
        """The typed view of `opnd`'s elements `elem + pattern`; with `check`, after bounds,
        hazard and race checks (against the accesses `p` does not know have finished), the
        access queued in `pending` for the log (see `commit`)."""
        k = opnd.itemsize
        lo, hi = elem + pat.lo, elem + pat.hi
        if lo < 0 or hi * k > opnd.limit:
            if self.check:
                self.report("out-of-bounds", instr, f"{'writes' if write else 'reads'} elements [{lo}, {hi}) of "
                            f"{opnd.name}, which holds {opnd.limit // k}")
            return None
        region = self.regions[opnd.region]
        first = opnd.first + elem
        if not self.compute:
            view = NO_VIEW
        elif pat.contiguous:
            view = region.typed(opnd.dtype)[first:first + pat.count].reshape(pat.shape)
        else:
            view = pat.view(region.typed(opnd.dtype), first)
        if not self.check:
            return view
        start = first * k
        blo, bhi = pat.span
        blo += start
        bhi += start
        slot = opnd.slot
        gm = opnd.region >= GM_BASE
        if gm:
            self.count_gm(region, start, k, pat, write)
        if not write and not self.full[slot] and region.written is not None and not self._full(region, opnd):
            seen = pat.bytes_of(region.written, start)
            if not seen.all():
                at = start + int(Region._byte_offsets(pat, np.nonzero(~seen.reshape(-1))[0][:1])[0])
                self.report("uninitialized", instr, f"reads {opnd.name} at byte {at:#x}, which nothing has written")
        vq = self.vc[p]
        logs = self.logs
        contiguous = pat.contiguous
        for s in self.aliases[slot]:
            for e_lo, e_hi, e_start, e_pat, e_pipe, e_index, e_write, e_instr in logs[s]:
                if not (write or e_write) or e_hi <= blo or bhi <= e_lo or e_index < vq[e_pipe] or not (
                        (contiguous and e_pat.contiguous) or overlap(e_pat, pat, start - e_start)):
                    continue
                if e_write:
                    self.report("WAW" if write else "RAW", instr, f"{'writes' if write else 'reads'} {opnd.name} "
                                f"while {self.program.describe(e_instr)} may still be writing it: no flag orders them",
                                e_instr)
                else:
                    self.report("WAR", instr, f"writes {opnd.name} while {self.program.describe(e_instr)} may still "
                                "be reading it: no flag orders them", e_instr)
        if gm and self.races and opnd.region in self.program.written_regions:
            found = region.race(self.block, start, pat, write)
            if found is not None:
                other, where = found
                by = f"block {other}" if other >= 0 else "other blocks"
                self.report("race", instr, f"{'writes' if write else 'reads'} bytes {byte_ranges(where)} of "
                            f"{opnd.name}, which {by} of the launch {'accessed' if write else 'wrote'}: the blocks "
                            "run on different cores and nothing orders them")
        pending.append((region, slot, blo, bhi, start, pat, write, instr, opnd.aligned))
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
        view = pat.bytes_once(region.read_mask, first_byte)
        new = view.size - int(np.count_nonzero(view))
        self.work[GM_READ_NEW] += new
        if region.written is not None:  # an output: the launch wrote what it reads (or it is reported)
            self.work[GM_READ_WARM] += new
        view[...] = True

    def _full(self, region: Region, opnd: Operand) -> bool:
        """Whether every byte of `opnd`'s buffer has been written (then reads of it need
        no check until the next block)."""
        full = bool(region.written[opnd.base:opnd.base + opnd.limit].all())
        self.full[opnd.slot] = full
        return full

    def commit(self, p: int, i: int, pending: list) -> None:
        """Log an instruction's accesses (after all its checks). A write drops the entries
        of its buffer whose bytes it covers, a read the earlier reads of its pipe it covers
        (what a per-byte last-writer / last-reader shadow would forget); past `limits`
        entries, those every memory pipe knows finished go."""
        logs, full = self.logs, self.full
        for region, slot, lo, hi, start, pat, write, instr, aligned in pending:
            log = logs[slot]
            if write:
                if region.written is not None:
                    if not (full[slot] and aligned):  # a full buffer's bytes are all marked already
                        pat.bytes_once(region.written, start)[...] = True
                    if hi > region.dirty:
                        region.dirty = hi
                if not log:
                    pass
                elif pat.contiguous:
                    log[:] = [x for x in log if not (lo <= x[0] and x[1] <= hi)]
                else:
                    log[:] = [x for x in log if not (x[2] == start and x[3] is pat)]
            elif len(log) > 4:
                if pat.contiguous:
                    log[:] = [x for x in log if x[6] or x[4] != p or not (lo <= x[0] and x[1] <= hi)]
                else:
                    log[:] = [x for x in log if x[6] or x[4] != p or not (x[2] == start and x[3] is pat)]
            log.append((lo, hi, start, pat, p, i, write, instr))
            if len(log) > self.limits[slot]:
                finished = self.finished()
                log[:] = [x for x in log if x[5] >= finished[x[4]]]
                self.limits[slot] = max(LOG_LIMIT, 2 * len(log))

    def finished(self) -> list[int]:
        """Per pipe q, the first instruction of q some memory pipe may not know finished."""
        pipes = self.program.mem_pipes
        return [min(self.vc[m][q] for m in pipes) for q in range(NPIPES)]

    def offset(self, opnd: Operand) -> int:
        return 0 if opnd.offset_reg is None else self.regs[opnd.offset_reg]


# --------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------

Step = Callable[[RunState], None]
Record = dict


class KernelProgram:
    """One kernel body (kernel code, `ge.runtime.kernel_code`), decoded once;
    `Simulator.run_kernel` executes it. `from_kernel` encodes an `isa.kernel` first."""

    def __init__(self, code: Record, target: targets.Target, name: str = "kernel"):
        self.code = code
        self.target = target
        self.name = name
        self.block_dim = int(code["block_dim"])
        self.num_ins = int(code["num_ins"])
        self.args = [(np.dtype(d), int(n)) for d, n, _ in code["args"]]
        self.data_dependent = bool(code.get("data_dependent", False))
        self.registers: list = list(code["registers"])
        self.buffers: list[list] = code["buffers"]
        self.instrs: list[list[str]] = code["instrs"]
        self.names = [n.removeprefix("isa.") for n, _ in self.instrs]
        self.uses_cube = False
        self.analysis_key: object = self  # what shares this program's timing and checks (Simulator.analyses)
        self.mem_pipes: set[int] = set()  # pipes that access memory
        self.written_regions: set[int] = set()  # regions some instruction writes
        self.slots: dict[tuple[int, int, int], int] = {}  # buffer (region, base, bytes) -> access log
        self._cost: CostModel | None = None
        self.steps = self._block(code["code"])
        if not self.mem_pipes:
            self.mem_pipes.add(0)
        # per buffer, the buffers sharing a byte with it (itself included): where to look for hazards
        spans = list(self.slots)
        self.aliases = [tuple(self.slots[b] for b in spans if b[0] == a[0] and b[1] < a[1] + a[2] and a[1] < b[1] + b[2])
                        for a in spans]

    @classmethod
    def from_kernel(cls, kernel: isa.KernelOp, target: targets.Target) -> KernelProgram:
        return cls(kernel_code.encode(kernel, target), target, kernel.sym_name.data)

    # -- helpers ---------------------------------------------------------------------------

    def describe(self, instr: int) -> str:
        name, loc = self.instrs[instr]
        return f"{name} #{instr}{loc}"

    def _fail(self, rec: Record, message: str) -> SimulatorError:
        return SimulatorError(f"kernel @{self.name}: {rec['op']}: {message}")

    def operand(self, rec: Record, role: str) -> Operand:
        index, offset_reg = rec["opnds"][role]
        region, base, size, dtype, label = self.buffers[index]
        self.mem_pipes.add(PIPE_OF[rec["pipe"]])
        if role in WRITTEN_ROLES.get(rec["op"], ("dst",)):
            self.written_regions.add(region)
        slot = self.slots.setdefault((region, base, size), len(self.slots))
        return Operand(role, region, base, size, np.dtype(dtype), offset_reg, label, slot)

    @property
    def cost(self) -> CostModel:
        """Costs that do not depend on the launch (vector, Cube)."""
        if self._cost is None:
            self._cost = CostModel(self.target)
        return self._cost

    def _block(self, records: list[Record]) -> list[Step]:
        steps = []
        for rec in records:
            decode = SEMANTICS.get(rec["op"])
            if decode is None:
                raise self._fail(rec, "the simulator has no semantics for this op")
            step = decode(self, rec)
            if step is not None:
                steps.append(step)
        return steps

    # -- scalar ops ---------------------------------------------------------------------------

    def _binary(self, rec: Record) -> Step:
        fn, (a, b), r = INT_BINARY_NAMES[rec["op"]], rec["args"], rec["result"]

        def binary(st: RunState) -> None:
            regs = st.regs
            regs[r] = fn(regs[a], regs[b])

        return binary

    def _cmpi(self, rec: Record) -> Step:
        fn, (a, b), r = CMPI[rec["predicate"]], rec["args"], rec["result"]

        def cmp(st: RunState) -> None:
            st.regs[r] = bool(fn(st.regs[a], st.regs[b]))

        return cmp

    def _select(self, rec: Record) -> Step:
        (c, a, b), r = rec["args"], rec["result"]

        def select(st: RunState) -> None:
            st.regs[r] = st.regs[a] if st.regs[c] else st.regs[b]

        return select

    def _cast(self, rec: Record) -> Step:
        (a,), r = rec["args"], rec["result"]

        def cast(st: RunState) -> None:
            st.regs[r] = st.regs[a]

        return cast

    def _block_idx(self, rec: Record) -> Step:
        r = rec["result"]

        def block_idx(st: RunState) -> None:
            st.regs[r] = st.block

        return block_idx

    def _for(self, rec: Record) -> Step:
        (lb, ub, step), iv = rec["args"], rec["iv"]
        body = self._block(rec["body"])
        bound, instr = rec["max_trips"], rec["id"]

        def loop(st: RunState) -> None:
            regs = st.regs
            trips = range(regs[lb], regs[ub], regs[step])
            if bound is not None and len(trips) > bound and st.check:
                st.report("max-trips", instr, f"runs {len(trips)} iterations, more than its {isa.MAX_TRIPS_ATTR} = {bound} "
                          "(insert-sync relied on it)")
            if st.check:
                pipes, cost = st.pipes, st.pipes.loop_cost
                for v in trips:
                    regs[iv] = v
                    pipes.issued += cost  # one loop iteration on the scalar unit (PipeState.iteration)
                    for s in body:
                        s(st)
            else:
                for v in trips:
                    regs[iv] = v
                    for s in body:
                        s(st)

        return loop

    # -- sync ------------------------------------------------------------------------------------

    def _barrier(self, rec: Record) -> Step:
        if rec["pipe"] == isa.Pipe.ALL.value:
            def barrier_all(st: RunState) -> None:
                if not st.check:
                    return
                st.vc = [list(st.counters) for _ in range(NPIPES)]
                t = max(st.pipes.barrier(p) for p in range(NPIPES))
                for p in range(NPIPES):
                    st.pipes.hold[p] = t

            return barrier_all
        p = PIPE_OF[rec["pipe"]]

        def barrier(st: RunState) -> None:
            if not st.check:
                return
            st.vc[p][p] = st.counters[p]
            st.pipes.barrier(p)

        return barrier

    def _set_flag(self, rec: Record) -> Step:
        instr, ps, pd, event = rec["id"], PIPE_OF[rec["src"]], PIPE_OF[rec["dst"]], rec["event"]
        key = (ps, pd, event)

        def set_flag(st: RunState) -> None:
            if not st.check:
                return
            clock = st.vc[ps][:]
            clock[ps] = st.counters[ps]
            queue = st.flags.get(key)
            if queue is None:
                queue = st.flags[key] = deque()
            pipes = st.pipes  # PipeState.fire_time, inlined
            end, hold = pipes.last_end[ps], pipes.hold[ps]
            queue.append((hold if hold > end else end, clock, instr))

        return set_flag

    def _wait_flag(self, rec: Record) -> Step:
        instr, src, dst, event = rec["id"], rec["src"], rec["dst"], rec["event"]
        key = (PIPE_OF[src], pd := PIPE_OF[dst], event)

        def wait_flag(st: RunState) -> None:
            if not st.check:
                return
            queue = st.flags.get(key)
            if not queue:
                st.report("deadlock", instr, f"waits for event {event} of {src} -> {dst}, which no earlier "
                          "set_flag sets: the core would hang here")
                return
            fire, clock, _ = queue.popleft()
            vc = st.vc
            vc[pd] = list(map(max, vc[pd], clock))
            pipes = st.pipes  # PipeState.wait, inlined
            t = pipes.next_issue[pd]
            if pipes.hold[pd] > t:
                t = pipes.hold[pd]
            if fire > t:
                t = fire
            pipes.hold[pd] = t
            if queue and queue[0][0] < t:
                st.report("lost-signal", queue[0][2], f"sets event {event} of {src} -> {dst} at cycle "
                          f"{queue[0][0]:.0f} while it is still set ({st.program.describe(instr)} clears it only at "
                          f"cycle {t:.0f}): the signal is lost", instr)

        return wait_flag

    # -- instructions ------------------------------------------------------------------------------

    def _move(self, rec: Record) -> Step:
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        src, dst = self.operand(rec, "src"), self.operand(rec, "dst")
        sizes, ss, ds = tuple(rec["sizes"]), tuple(rec["src_strides"]), tuple(rec["dst_strides"])
        window = rec.get("regs", {}).get("window") or []
        bounds = [(window[2 * d], window[2 * d + 1], n) for d, n in enumerate(sizes)] if window else []
        props = rec.get("props", {})
        pad = props.get("pad")
        name = rec["op"]
        fix = name in L0C_OUT  # FixPipe or the Vector unit's copy_l0c_to_ub: convert (and ReLU) on the way
        relu = fix and bool(props.get("relu"))
        quant = props if props.get("quant_pre") else None  # FixPipe's quant mode: dequantize [ReLU] [requantize]
        scl = self.operand(rec, "scale") if "scale" in rec["opnds"] else None
        bia = self.operand(rec, "bias") if "bias" in rec["opnds"] else None
        sstr, bstr = tuple(props.get("scale_strides") or ()), tuple(props.get("bias_strides") or ())
        scale_bytes = sum(4 * math.prod(d for d, st_ in zip(sizes, strides) if st_)
                          for o, strides in ((scl, sstr), (bia, bstr)) if o is not None)
        src_gm, dst_gm = src.region >= GM_BASE, dst.region >= GM_BASE
        vector_unit = name == isa.CopyUbToUbOp.name

        ks, kd = src.itemsize, dst.itemsize
        full_src, full_dst = pattern(sizes, ss, ks), pattern(sizes, ds, kd)
        static_cost = None
        local_costs: dict = {}  # window sizes -> timing of a move that does not touch GM (no launch state)
        src_reg, dst_reg = src.offset_reg, dst.offset_reg

        def cost(st: RunState, sub: tuple[int, ...], empty: bool, src_elem: int,
                 dst_elem: int = 0) -> tuple[float, float, float]:
            srect = None if empty else (sub, ss, ks)
            drect = (sizes if pad is not None else sub, ds, kd)
            if vector_unit:
                return st.cost.vector_copy(max(0 if empty else math.prod(sub) * ks, math.prod(drect[0]) * kd))
            read_at = (src.region, (src.first + src_elem) * ks) if src_gm and not empty else None
            write_at = (dst.region, (dst.first + dst_elem) * kd) if dst_gm else None
            return st.cost.move(name, srect, drect, read_at, dst_gm, scale_bytes, write_at)

        def move(st: RunState) -> None:
            nonlocal static_cost
            check = st.check
            scale = bias = None
            i = st.begin(p, instr) if check else 0
            regs = st.regs
            so = 0 if src_reg is None else regs[src_reg]
            do = 0 if dst_reg is None else regs[dst_reg]
            pending: list = []
            if window:
                regs = st.regs
                lo, sub = [], []
                for a, b, n in bounds:  # the window clamped to [0, sizes)
                    a, b = regs[a], regs[b]
                    a = a if a > 0 else 0
                    b = b if b < n else n
                    lo.append(a)
                    sub.append(b - a if b > a else 0)
                sub = tuple(sub)
                empty = 0 in sub
                src_elem = so + sum(a * b for a, b in zip(lo, ss))
                sview = None if empty else st.touch(instr, p, src, src_elem, pattern(sub, ss, ks), False, pending)
                if scl is not None and not empty:
                    scale = st.touch(instr, p, scl, st.offset(scl) + sum(a * b for a, b in zip(lo, sstr)),
                                     pattern(sub, sstr, scl.itemsize), False, pending)
                if bia is not None and not empty:
                    bias = st.touch(instr, p, bia, st.offset(bia) + sum(a * b for a, b in zip(lo, bstr)),
                                    pattern(sub, bstr, bia.itemsize), False, pending)
                if pad is not None:
                    dview = st.touch(instr, p, dst, do, full_dst, True, pending)
                    target = None if dview is None or empty else dview[tuple(slice(a, a + n) for a, n in zip(lo, sub))]
                else:
                    dview = target = None if empty else st.touch(
                        instr, p, dst, do + sum(a * b for a, b in zip(lo, ds)), pattern(sub, ds, kd), True, pending)
                if not check:
                    timing = None
                elif src_gm or dst_gm:
                    timing = cost(st, sub, empty, src_elem,
                                  do if pad is not None else do + sum(a * b for a, b in zip(lo, ds)))
                else:
                    timing = local_costs.get(sub)
                    if timing is None:
                        timing = local_costs[sub] = cost(st, sub, empty, src_elem)
            else:
                sview = st.touch(instr, p, src, so, full_src, False, pending)
                if scl is not None:
                    scale = st.touch(instr, p, scl, st.offset(scl), pattern(sizes, sstr, scl.itemsize), False, pending)
                if bia is not None:
                    bias = st.touch(instr, p, bia, st.offset(bia), pattern(sizes, bstr, bia.itemsize), False, pending)
                dview = target = st.touch(instr, p, dst, do, full_dst, True, pending)
                if not check:
                    timing = None
                elif src_gm or dst_gm:  # GM traffic: L2 state and the HBM budget of this launch
                    timing = cost(st, sizes, False, so, do)
                else:
                    if static_cost is None:
                        static_cost = cost(st, sizes, False, so)
                    timing = static_cost
            if check:
                st.commit(p, i, pending)
            if st.compute:
                if pad is not None and dview is not None:
                    dview[...] = pad
                if target is not None and sview is not None:
                    if quant is not None:
                        target[...] = K.fixpipe_quant(sview, props.get("deq_value") if scl is None else scale, quant,
                                                      bias)
                    else:
                        target[...] = K.fixpipe(sview, dst.dtype, relu) if fix else sview
            if check:
                if st.trace is None:
                    st.pipes.issue(p, *timing)
                else:
                    st.timed(p, instr, *timing)

        return move

    def _load_scalar(self, rec: Record) -> Step:
        """S reads one index into a register (negative values wrap; out of range is a
        run-time error). The scalar unit waits for the value before it issues anything
        else: the moves whose address it feeds cannot start earlier."""
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        src = self.operand(rec, "src")
        r, bound = rec["results"]["result"], rec["props"]["bound"]
        one = pattern((1,), (1,), src.itemsize)
        # one scalar issue cycle from the target; a target without the figure leaves the
        # scalar unit untimed, as its index arithmetic is
        overhead = getattr(self.target, "overhead", None)
        cost = float(overhead.issue) if overhead is not None else 0.0
        where = self.describe(instr)

        def load_scalar(st: RunState) -> None:
            check = st.check
            i = st.begin(p, instr) if check else 0
            pending: list = []
            view = st.touch(instr, p, src, st.offset(src), one, False, pending)
            if check:
                st.commit(p, i, pending)
            if view is not None:
                if view is NO_VIEW:  # timing only: the index still decides the addresses
                    view = st.regions[src.region].typed(src.dtype)[src.first + st.offset(src):]
                try:
                    st.regs[r] = wrap_index(int(view[0]), bound)
                except IndexOutOfRange as e:
                    raise IndexOutOfRange(f"kernel @{st.name}: {where}: {e}") from None
            if not check:
                return
            _, end = st.pipes.issue(p, 0.0, cost)
            for q in range(NPIPES):
                st.pipes.hold[q] = max(st.pipes.hold[q], end)
            if st.trace is not None:
                st.trace.add(st.core, p, self.names[instr], end - cost, end, instr)

        return load_scalar

    def _mmad(self, rec: Record) -> Step:
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        self.uses_cube = True
        a, b, c = self.operand(rec, "a"), self.operand(rec, "b"), self.operand(rec, "c")
        m, k, n = mkn = tuple(rec["mkn"])
        fractal = tuple(rec["fractal"])
        init = rec.get("regs", {}).get("init")
        one = (1,)

        pa, pb, pc = pattern((m * k,), one, a.itemsize), pattern((k * n,), one, b.itemsize), pattern((m * n,), one, c.itemsize)
        timing = self.cost.mmad(mkn, fractal)
        fractals = -(-m // fractal[0]) * -(-k // fractal[1]) * -(-n // fractal[2])

        def mmad(st: RunState) -> None:
            check = st.check
            i = st.begin(p, instr) if check else 0
            pending: list = []
            first = init is not None and bool(st.regs[init])
            av = st.touch(instr, p, a, st.offset(a), pa, False, pending)
            bv = st.touch(instr, p, b, st.offset(b), pb, False, pending)
            co = st.offset(c)
            cin = None if first else st.touch(instr, p, c, co, pc, False, pending)
            cv = st.touch(instr, p, c, co, pc, True, pending)
            if check:
                st.work[FRACTALS] += fractals
                st.commit(p, i, pending)
            if st.compute and av is not None and bv is not None and cv is not None and (first or cin is not None):
                cv[...] = K.mmad(av, bv, None if first else cin, mkn, fractal)
            if check:
                if st.trace is None:
                    st.pipes.issue(p, *timing)
                else:
                    st.timed(p, instr, *timing)

        return mmad

    def _img2col(self, rec: Record) -> Step:
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        self.uses_cube = True
        src, dst = self.operand(rec, "src"), self.operand(rec, "dst")
        regs = [rec["regs"][v] for v in ("m", "k", "c", "h")]
        props = rec["props"]
        fm = tuple(props["fm"])
        tm, tk = sizes = tuple(props["sizes"])
        m0, k0, _ = rec["fractal"]
        params = dict(kernel=tuple(props["kernel"]), strides=tuple(props["strides"]),
                      dilations=tuple(props["dilations"]), pads=tuple(props["pads"]),
                      out_size=tuple(props["out_size"]), channels=props["channels"], c0=props["c0"])
        one = (1,)
        count = math.prod(fm)
        nbytes = tm * tk * dst.itemsize

        ps, pd = pattern((count,), one, src.itemsize), pattern((tm * tk,), one, dst.itemsize)

        def img2col(st: RunState) -> None:
            check = st.check
            i = st.begin(p, instr) if check else 0
            pending: list = []
            sv = st.touch(instr, p, src, st.offset(src), ps, False, pending)
            dv = st.touch(instr, p, dst, st.offset(dst), pd, True, pending)
            if check:
                st.commit(p, i, pending)
            if st.compute and sv is not None and dv is not None:
                m, k, c, h = (st.regs[r] for r in regs)
                dv[...] = K.img2col(sv.reshape(fm), sizes, m, k, c, h, (m0, k0), **params)
            if check:
                st.timed(p, instr, *st.cost.img2col(nbytes))

        return img2col

    def _broadcast(self, rec: Record) -> Step:
        """isa.broadcast_ub_to_l0c: `count` blocks of `len` 16-element groups in UB, each group
        the 16 rows of one L0C fractal (the op's docstring); timed by `CostModel.broadcast`."""
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        src, dst = self.operand(rec, "src"), self.operand(rec, "dst")
        props = rec["props"]
        count, n, sgap, dgap = props["count"], props["len"], props["src_gap"], props["dst_gap"]
        rows, frac = isa.FRACTAL_ROWS, isa.FRACTAL_ELEMS
        epb = max(1, self.target.vector.block_bytes // src.itemsize)
        ps = pattern((count, n * rows), (n * rows + sgap * epb, 1), src.itemsize)
        pd = pattern((count, n * frac), ((n + dgap) * frac, 1), dst.itemsize)
        elem = {"float16": "f16", "float32": "f32"}.get(dst.dtype.name, dst.dtype.name)
        timing = self.cost.broadcast(count * n, elem, count * n * frac * dst.itemsize)

        def broadcast(st: RunState) -> None:
            check = st.check
            i = st.begin(p, instr) if check else 0
            pending: list = []
            sv = st.touch(instr, p, src, st.offset(src), ps, False, pending)
            dv = st.touch(instr, p, dst, st.offset(dst), pd, True, pending)
            if check:
                st.commit(p, i, pending)
            if st.compute and sv is not None and dv is not None:
                dv[...] = K.broadcast_ub_to_l0c(sv, rows)
            if check:
                if st.trace is None:
                    st.pipes.issue(p, *timing)
                else:
                    st.timed(p, instr, *timing)

        return broadcast

    def _vector(self, rec: Record) -> Step:
        instr, p = rec["id"], PIPE_OF[rec["pipe"]]
        roles = tuple(rec["opnds"])
        opnds = {r: self.operand(rec, r) for r in roles}
        repeat = rec["repeats"]
        name = rec["op"]
        props = rec.get("props", {})
        reads = [r for r in roles if r != "dst"]
        kind = opnds[reads[0] if reads else "dst"].dtype
        timing = self.cost.vector(repeat, name.removeprefix("isa."),
                                  {"float16": "f16", "float32": "f32"}.get(kind.name, kind.name))

        pats = {r: [(base, pattern(tuple(shape), tuple(strides), opnds[r].itemsize))
                    for base, shape, strides in rec["rects"][r]] for r in roles}

        block = self.target.vector.block_bytes

        specs = {r: (opnds[r], opnds[r].offset_reg, opnds[r].base, opnds[r].itemsize, pats[r]) for r in roles}

        def gather(st: RunState, role: str, write: bool, pending: list) -> list[np.ndarray] | None:
            o, reg, obase, size, rects = specs[role]
            off = 0 if reg is None else st.regs[reg]
            if st.check and (obase + off * size) % block:
                st.report("misaligned", instr, f"{role} {o.name} at element offset {off} does not start on a "
                          f"{block}-byte block")
            views = []
            touch = st.touch
            for base, pat in rects:
                v = touch(instr, p, o, off + base, pat, write, pending)
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

        if name in VECTOR_BINARY:
            def compute(x):
                return K.binary(name, x["src0"], x["src1"])
        elif name == isa.VConvOp.name:
            mode = props.get("round")
            out_dtype = opnds["dst"].dtype

            def compute(x):
                return K.convert(x["src"], out_dtype, mode)
        elif name in VECTOR_UNARY:
            def compute(x):
                return K.unary(name, x["src"])
        elif name in VECTOR_SCALAR:
            value = props["scalar"]

            def compute(x):
                return K.scalar(name, x["src"], value)
        elif name == isa.VDupOp.name:
            value = props["scalar"]

            def compute(x):
                return np.asarray(value)
        elif name in VECTOR_REDUCE:
            def compute(x):
                return K.reduce(name, x["src"])[:, None]
        elif name in VECTOR_GROUP_REDUCE:
            group_epb = max(1, block // opnds["src"].itemsize)

            def compute(x):
                return K.group_reduce(name, x["src"], group_epb)
        elif name == isa.VBrcbOp.name:
            def compute(x):
                return x["src"]
        elif name == isa.VCmpOp.name:
            mode = props["mode"]

            def compute(x):
                return K.compare(mode, x["src0"], x["src1"])
        elif name == isa.VSelOp.name:
            def compute(x):
                return K.select(x["cond"], x["src0"], x["src1"])
        else:
            raise self._fail(rec, "no vector semantics")
        brcb = name == isa.VBrcbOp.name
        dst_dtype = opnds["dst"].dtype

        def vector(st: RunState) -> None:
            check = st.check
            i = st.begin(p, instr) if check else 0
            pending: list = []
            inputs = {}
            ok = True
            for role in reads:
                views = gather(st, role, False, pending)
                if views is None:
                    ok = False
                    continue
                if st.compute:
                    inputs[role] = rows(views)
            out = gather(st, "dst", True, pending)
            if check:
                st.commit(p, i, pending)
            if st.compute and ok and out is not None:
                with np.errstate(all="ignore"):
                    result = compute(inputs)
                if brcb:
                    out[0][...] = result[:, :, None]
                else:
                    store(out, np.asarray(result).astype(dst_dtype, copy=False))
            if check:
                st.work[REPEATS] += repeat
                if st.trace is None:
                    st.pipes.issue(p, *timing)
                else:
                    st.timed(p, instr, *timing)

        return vector


VECTOR_BINARY = {c.name for c in isa.VECTOR_BINARY}
VECTOR_UNARY = {c.name for c in isa.VECTOR_UNARY}
VECTOR_SCALAR = {c.name for c in isa.VECTOR_SCALAR}
VECTOR_REDUCE = {c.name for c in isa.VECTOR_REDUCE}
VECTOR_GROUP_REDUCE = {c.name for c in isa.VECTOR_GROUP_REDUCE}
# the buffer roles an instruction writes, where not just "dst"
WRITTEN_ROLES: dict[str, tuple[str, ...]] = {isa.MmadOp.name: ("c",), "isa.load_scalar": ()}

# op name -> decoder (module docstring: adding an instruction)
SEMANTICS: dict[str, Callable[[KernelProgram, Record], Step | None]] = {
    **dict.fromkeys(INT_BINARY_NAMES, KernelProgram._binary),
    "arith.cmpi": KernelProgram._cmpi, "arith.select": KernelProgram._select,
    "arith.index_cast": KernelProgram._cast, "scf.for": KernelProgram._for,
    isa.BlockIdxOp.name: KernelProgram._block_idx, isa.PipeBarrierOp.name: KernelProgram._barrier,
    isa.SetFlagOp.name: KernelProgram._set_flag, isa.WaitFlagOp.name: KernelProgram._wait_flag,
    **{c.name: KernelProgram._move for c in isa.MOVE_OPS},
    "isa.load_scalar": KernelProgram._load_scalar,
    isa.MmadOp.name: KernelProgram._mmad, isa.Img2colOp.name: KernelProgram._img2col,
    isa.BroadcastUbToL0cOp.name: KernelProgram._broadcast,
    **{c.name: KernelProgram._vector for c in isa.VECTOR_OPS},
}


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
    hbm_bytes: float = 0.0  # bytes the timing model sent to / from HBM (written_back included)
    l2_bytes: float = 0.0  # bytes it served from or wrote to the L2
    written_back: float = 0.0  # dirty L2 blocks the launch evicted, written back to HBM
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


@dataclass
class Analysis:
    """What a launch's timing and checks found (it does not depend on the data, only on
    the L2 it started with), and what it left in the L2."""

    stats: KernelStats
    problems: list[Problem]
    left: LaunchL2 | None = None


class Simulator:
    """Runs decoded kernels on a target; `trace=True` records a timeline. `analyses`
    (shared between simulators to reuse them across runs) holds the timing and problems of
    each (`KernelProgram.analysis_key`, block_dim, the input blocks the L2 held when it
    started) already checked. `l2` is the chip's L2 across the launches (`ChipL2`: a
    launch finds what earlier ones left; `reset_l2` makes it cold); `clock` is when the
    next launch starts unless `run_kernel` is told (one after another)."""

    def __init__(self, target: targets.Target | str | None = None, trace: bool = False,
                 analyses: dict | None = None):
        if target is None or isinstance(target, str):
            target = targets.load_target(target or targets.DEFAULT_TARGET)
        self.target = target
        self.core = Core(target)
        self.trace = Trace(target.clock_hz) if trace else None
        self.report = Report()
        self.analyses: dict = {} if analyses is None else analyses
        self._reported: set = set()  # (analysis key, block_dim) whose problems this report already lists
        self._programs: dict[int, tuple[isa.KernelOp, KernelProgram]] = {}
        self.reset_l2()

    def reset_l2(self) -> None:
        """A cold L2 and the clock at 0 (the start of a run)."""
        self.l2 = ChipL2(self.target.memory.l2, self.target.vector.block_bytes)
        self.clock = 0.0

    def program(self, kernel: isa.KernelOp) -> KernelProgram:
        """The decoded kernel (encoded and decoded once per simulator)."""
        hit = self._programs.get(id(kernel))
        if hit is None or hit[0] is not kernel:
            hit = self._programs[id(kernel)] = (kernel, KernelProgram.from_kernel(kernel, self.target))
        return hit[1]

    def run_kernel(self, kernel: isa.KernelOp | KernelProgram, buffers: Sequence[np.ndarray], name: str | None = None,
                   timing_only: bool = False, start: float | None = None) -> KernelStats:
        """Run a kernel on GM buffers (numpy arrays, one per kernel argument, in order);
        the `outs` arrays receive the results (not with `timing_only`). `name` names the
        launch's kernel in messages (default: the program's); `start`: when the launch
        starts in the run (default: when the previous one ended), which decides what it
        finds in the L2."""
        prog = kernel if isinstance(kernel, KernelProgram) else self.program(kernel)
        name = name or prog.name
        if len(buffers) != len(prog.args):
            raise InputError(f"kernel @{name} takes {len(prog.args)} buffers, got {len(buffers)}")
        if not L2_ACROSS_LAUNCHES:
            self.reset_l2()
        start = self.clock if start is None else start
        block = self.target.vector.block_bytes
        nblocks = [-(-count * dtype.itemsize // block) for dtype, count in prog.args]
        where = [self.l2.locate(b) if isinstance(b, np.ndarray) else None for b in buffers]
        warm = tuple(self.l2.warm(where[i], nblocks[i], start) if i < prog.num_ins else b""
                     for i in range(len(buffers)))
        if not any(warm):
            warm = ()
        key = (prog.analysis_key, prog.block_dim, warm)
        known = None if prog.data_dependent or self.trace is not None else self.analyses.get(key)
        if known is not None and timing_only:
            return self._launched(known, key, name, where, warm, start)
        regions = [*self.core.regions]
        outs = []
        for i, ((dtype, count), buf) in enumerate(zip(prog.args, buffers)):
            if (buf.dtype, buf.size) != (dtype, count):
                raise InputError(f"kernel @{name} argument #{i} is {count} x {dtype}, got {buf.size} x {buf.dtype}")
            data = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
            if not timing_only:
                data = data.copy()  # the outputs appear when the launch ends
            regions.append(Region(f"gm#{i}", data, initialized=i < prog.num_ins))
            outs.append((buf, data))
        problems: dict = {}
        ncores = self.target.cores.cube if prog.uses_cube else self.target.cores.vector
        active = max(1, min(prog.block_dim, ncores))
        st = RunState(prog, regions, CostModel(self.target, active), self.trace, problems, name,
                      check=known is None, compute=not timing_only)
        first_gm = len(self.core.regions)
        if st.check:
            for i, packed in enumerate(warm):
                st.cost.l2.preload(first_gm + i, packed)
        self.core.reset()
        core_pipes = [st.cost.pipes(c) for c in range(active)] if st.check else []
        for block_index in range(prog.block_dim):
            if st.check:
                core = block_index % active
                pipes = core_pipes[core]
                pipes.shift(pipes.end)
                if block_index >= active and core == 0:  # every core has started: forget the bandwidths' past
                    st.cost.forget_before(min(c.earliest for c in core_pipes))
                st.cost.start_block(core, min(active, prog.block_dim - block_index + core) - 1 - core)
                st.start_block(block_index, core, pipes)
            else:
                st.block, st.regs = block_index, list(prog.registers)
            for step in prog.steps:
                step(st)
            for (ps, pd, e), queue in st.flags.items():
                if queue:
                    st.report("unbalanced", queue[0][2], f"event {e} of {_pipe(ps)} -> {_pipe(pd)} is still set when "
                              "the block ends (no wait_flag consumed it)")
            st.flags.clear()
        if not timing_only:
            for i, (buf, data) in enumerate(outs):
                if i >= prog.num_ins:
                    buf.reshape(-1)[...] = data.view(buf.dtype)
        if known is not None:
            return self._launched(known, key, name, where, warm, start)
        for i, packed in enumerate(warm):  # new bytes read from blocks resident at the start
            read = regions[first_gm + i].read_mask
            if read is not None and packed:
                per_block = np.zeros(nblocks[i] * block, dtype=bool)
                per_block[:read.size] = read
                held = unpack(packed, nblocks[i])
                st.work[GM_READ_WARM] += int(np.count_nonzero(per_block.reshape(-1, block)[held]))
        cycles = st.cost.launch_cycles([p.end for p in core_pipes])
        busy = {_pipe(p): sum(c.busy[p] for c in core_pipes) for p in range(NPIPES)}
        counts = {_pipe(p): sum(c.instructions[p] for c in core_pipes) for p in range(NPIPES)}
        stats = KernelStats(name, cycles, busy, counts, active, prog.block_dim, [c.end for c in core_pipes],
                            st.cost.hbm_bytes, st.cost.l2_bytes, st.cost.written_back, dict(zip(WORK, st.work)))
        if self.trace is not None:
            self.trace.offset += cycles
        left = LaunchL2.of(st.cost.l2, [(first_gm + i, n) for i, n in enumerate(nblocks)])
        analysis = Analysis(stats, list(problems.values()), left)
        if not prog.data_dependent:
            self.analyses[key] = analysis
        self._reported.add(key[:2])
        self.report.problems.extend(problems.values())
        return self._launched(analysis, key, name, where, warm, start)

    def _launched(self, known: Analysis, key: tuple, name: str, where: list, warm: tuple, start: float) -> KernelStats:
        """A launch analysed (now or before): its stats (its problems once per report); what
        it left goes into the L2, and the dirty blocks that pushes out are written back
        within the launch -- at most at the HBM rate: the launch takes at least its HBM
        bytes at that rate."""
        stats = replace(known.stats, name=name, pipe_busy=dict(known.stats.pipe_busy),
                        instructions=dict(known.stats.instructions), work=dict(known.stats.work))
        if key[:2] not in self._reported:
            self._reported.add(key[:2])
            self.report.problems.extend(known.problems)
        if known.left is not None:
            nbytes = self.l2.commit(where, warm, known.left, start)
            if nbytes:
                stats.hbm_bytes += nbytes
                stats.written_back += nbytes
                floor = self.target.overhead.launch + stats.hbm_bytes / self.target.bytes_per_cycle(
                    self.target.dma.hbm_total)
                stats.cycles = max(stats.cycles, floor)
        self.clock = start + stats.cycles
        self.report.kernels.append(stats)
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
        self.sim.reset_l2()  # a run starts with a cold L2
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
