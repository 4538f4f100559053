"""The analytic cost model the `tile` pass chooses tiles with (a roofline per tile).

Every figure comes from the target (`ge.targets`), the same ones the simulator's timing
(`ge.runtime.sim_timing`) reads: the Cube's fractal per element type, cycles per vector
repeat of `bytes_per_repeat` bytes, GM bandwidth per path (GB/s at the chip's clock) and
on-chip bandwidth per path (bytes per cycle), and the start-up cycles of each instruction
kind. A tile's work is split over the AI Core's pipes
as the Ascend C paradigms run it:

- MTE2 (GM -> L1 / UB), MTE1 (L1 -> L0A / L0B, incl. img2col), M (Cube: one cycle per
  m0 x k0 x n0 fractal, the start-up once per chain of mmads: the Cube is pipelined), FIX
  (L0C -> UB: FixPipe, or the Vector-unit route on a chip without one), V (the table's
  default cycles per repeat of every vector op), MTE3 (UB -> GM); each transfer costs
  start-up + bytes / bandwidth, and a core's GM bandwidth is at most its share of the
  chip's HBM bandwidth when `blocks` cores stream.
  Reads and writes of GM share that bandwidth: their sum at the core's HBM share is a
  throughput limit of the loop (the `port` of `pipelined`), not one more stage: the
  DMAs that move those bytes overlap it, as in the simulator.
- With double buffering (buffer count 2) the stages of consecutive tiles overlap: a
  loop of n iterations costs n * (slowest stage) + the other stages once (fill and
  drain); with single buffers the stages of an iteration run one after another. The
  Cube kernels (lowering/tile_cube.py `cube_cost`) pipeline their tiles' L1 loads, K
  loop and epilogue this way; a weight read after the first hits the L2.

- A vector op costs what the simulator charges for the instructions `to-isa` emits for
  it (`op_program`): a row reduction (Softmax, LayerNorm) is a handful of f32
  instructions plus the steps of its group-reduction plan; the per-instruction cost
  (start-up + repeats x the op's cycles per repeat for its element type) is the
  simulator's own (`ge.runtime.sim_timing.CostModel.vector`); an op with a one-value
  constant operand costs its scalar form (`scalar_form`: vadds / vmuls / vmaxs / vmins),
  the constant nothing.
- A kernel pays the chip's launch overhead once (`launch`, added by `tile`).

The model ignores bank conflicts, L2 hits, scalar overhead and instruction issue limits;
it is a ranking device (which tiling is better) and an estimate calibrated against the
simulator (bench/tile_cost_accuracy.py). The roofline (`Roofline`, `tile.bound`) takes the Cube at one
fractal per cycle and the Vector unit at one repeat per cycle on every core, and the GM
bytes at the chip's HBM rate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ge.dialects.dtypes import numpy_dtype
from ge.dialects.layout import Format, layout_of
from ge.runtime.sim_timing import CostModel
from ge.targets import Target

# DMA path -> (target.dma field (GB/s) for GM paths, target.onchip field (bytes / cycle) for
# on-chip ones, target.startup field)
PATHS = {
    "gm_to_l1": ("gm_to_l1", "mte2"),
    "gm_to_l0b": ("gm_to_l1", "mte2"),  # MTE2's GM path into the Cube's buffers, as GM -> L1 (ascend.md §6.1)
    "gm_to_ub": ("gm_to_ub", "mte2"),
    "ub_to_gm": ("ub_to_gm", "mte3"),
    "l1_to_l0a": ("l1_to_l0a", "mte1"),
    "l1_to_l0b": ("l1_to_l0b", "mte1"),
    "l0c_to_ub": ("l0c_out", "fixpipe"),  # the L0C read-out: FixPipe, or the Vector-unit route
    "l1_to_ub": ("l1_to_ub", "mte1"),
}
GM_PATHS = ("gm_to_l1", "gm_to_l0b", "gm_to_ub", "ub_to_gm")


@dataclass(frozen=True)
class Machine:
    """The target's figures in the units the model uses (bytes per cycle, cycles). It
    memoizes what the tile searches ask per candidate (instruction cycles, a path's
    start-up and rate, the Cube's fractal): a figure is a pure function of the target."""

    target: Target

    _bpc: dict = field(default_factory=dict, compare=False, repr=False)  # memo of bytes_per_cycle
    _sim: list = field(default_factory=list, compare=False, repr=False)  # the simulator's CostModel, made once
    _memo: dict = field(default_factory=dict, compare=False, repr=False)  # `memo`, instruction, dma, fractal

    def memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """`compute()`, once per `key` on this machine (a figure of the target and `key`)."""
        try:
            return self._memo[key]
        except KeyError:
            hit = self._memo[key] = compute()
            return hit

    def launch(self) -> float:
        """Cycles every kernel launch costs on top of its slowest core."""
        return float(self.target.overhead.launch)

    def instruction(self, op: str, elem: str, repeats: int) -> float:
        """Cycles of one vector instruction, as the simulator charges it."""
        key = ("instruction", op, elem, repeats)
        try:
            return self._memo[key]
        except KeyError:
            pass
        if not self._sim:
            self._sim.append(CostModel(self.target))
        startup, busy, _ = self._sim[0].vector(repeats, op, elem)
        hit = self._memo[key] = startup + busy
        return hit

    def program(self, instrs: Sequence[tuple[str, str, int]]) -> float:
        """Cycles of vector instructions (op, element type, repeats) run one after another."""
        return sum(self.instruction(op, elem, reps) for op, elem, reps in instrs)

    def bytes_per_cycle(self, path: str, blocks: int = 1) -> float:
        key = (path, blocks)
        if (hit := self._bpc.get(key)) is None:
            hit = self._bpc[key] = _bytes_per_cycle(self.target, path, blocks)
        return hit

    def dma(self, path: str, nbytes: float, blocks: int = 1, count: int = 1) -> float:
        """Cycles of `count` transfers moving `nbytes` in total on `path`."""
        if nbytes <= 0:
            return 0.0
        try:
            startup, rate = self._memo[("dma", path, blocks)]
        except KeyError:
            startup, rate = self._memo[("dma", path, blocks)] = self._dma_figures(path, blocks)
        return count * startup + nbytes / rate

    def _dma_figures(self, path: str, blocks: int) -> tuple[float, float]:
        """(start-up cycles, bytes per cycle) of one transfer on `path` with `blocks` cores streaming."""
        _, startup = PATHS[path]
        if path == "l0c_to_ub" and not self.target.isa.fixpipe:
            startup = "vector"
        return getattr(self.target.startup, startup), self.bytes_per_cycle(path, blocks)

    def fractal(self, elem: str) -> tuple[int, int, int]:
        """The Cube's (m0, k0, n0) for inputs of element type `elem`. A type without an
        entry in the target (f32) reads the same 32-byte K rows as the f16 fractal:
        k0 = k0(f16) * 2 / element size."""
        try:
            return self._memo[("fractal", elem)]
        except KeyError:
            pass
        frac = self.target.cube_fractal(elem)
        if frac is None:
            m, k, n = self.target.cube_fractal("f16") or (16, 16, 16)
            frac = m, max(1, k * 2 // numpy_dtype_size(elem)), n
        self._memo[("fractal", elem)] = frac
        return frac

    def cube(self, tm: int, tk: int, tn: int, elem: str, count: int = 1) -> float:
        """Cycles of a chain of `count` mmad instructions on a tm x tk x tn tile (pipelined:
        one start-up)."""
        m0, k0, n0 = self.fractal(elem)
        return self.target.startup.cube + count * math.ceil(tm / m0) * math.ceil(tk / k0) * math.ceil(tn / n0)

    def vector(self, nbytes: float, ops: int = 1) -> float:
        """Cycles of `ops` vector instructions over `nbytes` each (the default cycles per
        repeat of the target's `[vector_cost]`)."""
        if ops <= 0:
            return 0.0
        return ops * self.instruction("default", "f16", math.ceil(nbytes / self.target.vector.bytes_per_repeat))

    def cores(self, cube: bool) -> int:
        return self.target.cores.cube if cube else self.target.cores.vector

    def peak_macs(self, elem: str, cores: int) -> float:
        m0, k0, n0 = self.fractal(elem)
        return m0 * k0 * n0 * cores

    def hbm_bytes_per_cycle(self) -> float:
        return self.target.bytes_per_cycle(self.target.dma.hbm_total)

    def hbm(self, nbytes: float, blocks: int) -> float:
        """Cycles one of `blocks` streaming cores needs to move `nbytes` to or from GM at its
        share of the chip's HBM bandwidth (reads and writes together)."""
        return nbytes * max(blocks, 1) / self.hbm_bytes_per_cycle()


def machine_memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(mach, *args)` (hashable args), computed once per args on each `Machine`: for the
    figures the tile searches ask for every candidate."""

    @functools.wraps(fn)
    def memoized(mach: Machine, *args: Any) -> Any:
        key = (fn, *args)
        try:
            return mach._memo[key]
        except KeyError:
            hit = mach._memo[key] = fn(mach, *args)
            return hit

    return memoized


def _bytes_per_cycle(target: Target, path: str, blocks: int) -> float:
    field, _ = PATHS[path]
    if path not in GM_PATHS:
        return getattr(target.onchip, field)
    return target.bytes_per_cycle(min(getattr(target.dma, field), target.dma.hbm_total / max(blocks, 1)))


def numpy_dtype_size(elem: str) -> int:
    sizes = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "ui8": 1}
    return sizes.get(elem, 4)


_ELEM_NAMES: dict = {}  # element type attribute -> its name (a numpy dtype's `name` is slow to build)


def elem_name(attr) -> str:
    """"f16", "f32", "i8", ... for an element type attribute."""
    try:
        return _ELEM_NAMES[attr]
    except KeyError:
        pass
    dt = numpy_dtype(attr)
    name = _ELEM_NAMES[attr] = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
                                "int32": "i32", "int64": "i64", "uint8": "ui8", "bool": "i1"}.get(dt.name, dt.name)
    return name


def pipelined(iterations: int, stages: Sequence[float], double: bool, port: float = 0.0) -> float:
    """Cycles of a loop whose iterations run `stages` (one per pipe): overlapped across
    iterations with double buffering (slowest stage per iteration + fill/drain), one after
    another without. `port` (the cycles of an iteration's bytes at the core's HBM share)
    is a throughput limit, not a stage: the DMAs that move those bytes overlap it, so the
    loop takes at least `iterations` x `port` but the port adds no fill or drain."""
    if iterations <= 0:
        return 0.0
    total = sum(stages)
    if not double:
        return max(iterations * total, iterations * port)
    slowest = max(stages, default=0.0)
    return max(iterations * slowest + (total - slowest), iterations * port)


def align(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment


@dataclass(frozen=True)
class Roofline:
    """The chip-level bound of one kernel: max(compute at peak, GM traffic at HBM speed)."""

    compute: float
    memory: float

    @property
    def bound(self) -> float:
        return max(self.compute, self.memory)


# graph op -> the isa vector instruction that computes it elementwise (others: "default")
ELEMENTWISE = {
    "add": "vadd", "sub": "vsub", "mul": "vmul", "div": "vdiv", "max": "vmax", "min": "vmin", "exp": "vexp",
    "log": "vln", "sqrt": "vsqrt", "abs": "vabs", "relu": "vrelu", "cast": "vconv", "erf": "verf",
    "tanh": "vtanh", "reciprocal": "vrec", "where": "vsel",
}

# graph binary op with a one-value constant operand -> the scalar-operand instruction
# isa_vector emits for it (`SCALAR`: 1 cycle per repeat on the 910 against 2 for the
# tensor form): x - c is x + (-c), a float x / c is x * (1 / c) (`by_reciprocal`).
SCALAR_FORMS = {"add": "vadds", "sum": "vadds", "mul": "vmuls", "max": "vmaxs", "min": "vmins",
                "sub": "vadds", "div": "vmuls"}
COMMUTATIVE = frozenset({"add", "sum", "mul", "max", "min"})  # a constant on the left is swapped


def one_value_constant(v) -> bool:
    """Is `v` a one-element `graph.constant` (an immediate of its vector kernel: fuse's
    `fusion_rules.scalar_operands` copies such constants into the group)?"""
    owner = v.owner
    shape = getattr(v.type, "get_shape", lambda: (0,))()
    return getattr(owner, "name", None) == "graph.constant" and math.prod(shape) == 1


def scalar_form(op) -> str | None:
    """The scalar-operand instruction (vadds / vmuls / vmaxs / vmins) `to-isa` runs graph
    op `op` as -- one of its two operands a one-value constant (on the right for Sub and
    Div; Div on floats only) -- or None."""
    name = op.name.split(".", 1)[1]
    if name not in SCALAR_FORMS or len(op.operands) != 2:
        return None
    left, right = (one_value_constant(v) for v in op.operands)
    if left == right or (left and name not in COMMUTATIVE):
        return None
    if name == "div" and numpy_dtype(op.results[0].type.element_type).kind != "f":
        return None
    return SCALAR_FORMS[name]


def l0c_epilogue_program(mach: Machine, program: Sequence[tuple]) -> tuple:
    """A Cube epilogue's vector program (tile_cube's (op, element type, bytes per output
    element, per-channel) entries) as `to-isa` runs it on a chip without FixPipe
    (to_isa.L0cBias): a leading f32 bias add followed by the accumulator's f32 -> f16 cast
    becomes one `broadcast_ub_to_l0c` pass over the tile's fractals (1 "byte" per element:
    one repeat per 16 x 16 fractal, at the target's cycles per fractal), the cast alone
    (no bias) and a ReLU right after it go to the converting L0C read-out. Other programs
    (and FixPipe chips) are unchanged. tile_cube._epilogue_stages charges it for an
    epilogue in one row slice (a sliced one keeps its vector program)."""
    split = None if mach.target.isa.fixpipe else l0c_epilogue_rest(program)
    if split is None:
        return tuple(program)
    bias, rest = split
    return (("broadcast_ub_to_l0c", "f32", 1, False),) * bias + rest


def l0c_epilogue_rest(program: Sequence[tuple]) -> tuple[bool, tuple] | None:
    """(does a bias go into L0C, the program left for the Vector unit) of a Cube epilogue
    program whose head `to_isa.L0cBias` takes -- [f32 bias add,] f32 -> f16 cast [, ReLU]
    -- else None (`l0c_epilogue_program`; tile_cube's UB sizes)."""
    out = tuple(program)
    bias = len(out) > 1 and out[0][:3] == ("vadd", "f32", 4) and out[1][:3] == ("vconv", "f32", 4)
    if not bias and not (out and out[0][:3] == ("vconv", "f32", 4)):
        return None
    rest = out[2:] if bias else out[1:]
    if rest and rest[0][0] == ELEMENTWISE["relu"]:
        rest = rest[1:]
    return bias, rest


def op_program(mach: Machine, op, tile_shape: Sequence[int], widened: bool = False) -> list[tuple[str, str, int]]:
    """The vector instructions (op, element type, repeats) `to-isa` emits for graph op `op`
    on a tile of `tile_shape` (its largest operand or result): one instruction over the
    tile for an elementwise op; for Softmax / LogSoftmax / LayerNorm the row program of
    lowering/isa_vector.py (conversions; each reduction on the group-reduction plan the
    lowering takes, `isa_vector.row_plan`: one entry per dependent step -- else rows wider
    than a repeat folded by halving and a `vreduce` per row; `vbrcb` broadcasts, the
    elementwise steps; Softmax divides by one `vrec` per row and a `vmul`; dense f16 Softmax
    rows stay f16 but for their sum, `isa_vector.softmax_centred_f16`). A conversion is
    priced on its source type. `widened`: an f16 LayerNorm computed in f32 straight into
    the result of the cast to f32 after it (tile_vector.widened; the cast costs nothing).
    A global pool over an NC1HWC0 tile: its halvings (`_block_pool_program`)."""
    name = op.name.split(".", 1)[1]
    if name in ("global_avg_pool", "global_max_pool") and _is_nc1hwc0(op.operands[0]):
        return _block_pool_program(mach, op, tile_shape)
    ty = op.operands[0].type if op.operands else op.results[0].type
    elem = elem_name(ty.element_type)
    size = numpy_dtype_size(elem)
    n = math.prod(tile_shape)
    bpr = mach.target.vector.bytes_per_repeat
    if name == "constant" and op.results and one_value_constant(op.results[0]):
        # an immediate: nothing when every reader takes it as one (`scalar_form`), else one
        # block written by vdup (isa_vector.tensor)
        users = {u.operation for u in op.results[0].uses}
        return [] if all(scalar_form(u) for u in users) else [("default", elem, 1)]
    if name not in ("softmax", "log_softmax", "layer_norm") or not tile_shape:
        if (form := scalar_form(op)) is not None:
            return [(form, elem, math.ceil(n * size / bpr))]
        return [(ELEMENTWISE.get(name, "default"), elem, math.ceil(n * size / bpr))]
    axis = op.properties["axis"].value.data % len(tile_shape)
    row = math.prod(tile_shape[axis:]) if name == "layer_norm" else tile_shape[axis]
    rows = max(n // max(row, 1), 1)
    per = bpr // 4  # f32 per repeat
    nb8 = bpr // mach.target.vector.block_bytes  # blocks per repeat: a vbrcb repeat spreads 8 values
    whole = ("f32", rows * math.ceil(row / per))  # an f32 row op: one repeat per slice of each row
    one = ("f32", math.ceil(rows * 4 / bpr))  # an op on one value per row
    conv = [("vconv", elem, whole[1])] if elem != "f32" else []  # the rows widened to f32
    back = [("vconv", "f32", whole[1])] if elem != "f32" else []  # and narrowed back (costed on their source)

    def reduce(kind: str, sides: int = 1, on: str = "f32", scratch: int = 0, consume: bool = False):
        # the group reductions' plan when isa_vector takes one (`grouped`), else:
        grouped = _grouped(mach, kind, rows, row, sides, on, scratch, consume)
        if grouped is not None:
            return grouped + [("default", "f32", sides * -(-rows // nb8))]
        # rows wider than a repeat fold by halving their slice count: per halving, h folds
        # issued back to back (one dependent step), then a vreduce per row -- or, when
        # cheaper (isa_vector.transposed_pays), the blocks of 8 rows at a time halved, one
        # transposing copy and three halvings of the block column -- and a vbrcb; `sides`
        # reductions in lockstep (isa_vector.row_reduces): one step with all their repeats
        steps, slices = [], math.ceil(row / per)
        while slices > 1:
            h = slices // 2
            steps.append((kind, "f32", sides * rows * h))
            slices -= h
        red = (f"vreduce_{'max' if kind == 'vmax' else 'sum'}", "f32", sides * rows)
        blocks, groups = math.ceil(min(row, per) / 8), sides * math.ceil(rows / 8)
        cols = []
        while blocks > 1:
            h = blocks // 2
            cols.append((kind, "f32", groups * h))
            blocks -= h
        cols += [("default", "f32", 2 * groups)] + [(kind, "f32", math.ceil(groups / 2))] * 3
        cheaper = row % 8 == 0 and mach.program(cols) < mach.program([red])
        return steps + (cols if cheaper else [red]) + [("default", "f32", sides * -(-rows // nb8))]

    if name == "layer_norm" and elem == "f16":  # one pass: the sums of x and x^2 side by side (isa_vector)
        steps = [("vmul", *whole), *reduce("vadd", 2, scratch=n), ("vmuls", "f32", 2 * one[1]), ("vmul", *one),
                 ("vsub", *one), ("vmaxs", *one), ("vrsqrt", *one), ("vsub", *whole), ("vmul", *whole),
                 ("vmul", *whole), ("vadd", *whole)]
    elif name == "layer_norm":
        steps = [*reduce("vadd"), ("vmuls", *one), ("vsub", *whole), ("vmul", *whole), *reduce("vadd"),
                 ("vmuls", *one), ("vadds", *one), ("vsqrt", *one), ("vrec", *one), ("default", *one),
                 ("vmul", *whole), ("vmul", *whole), ("vadd", *whole)]
    if name == "layer_norm":
        params = [("vconv", elem, math.ceil(row * 2 / bpr))] * 2 if elem != "f32" else []
        if elem == "f16" and widened:  # scale and bias on the f32 rows, into the cast's result
            return conv + params + steps
        if elem == "f16":  # normalized rows rounded into the f16 result, scale and bias on f16 (isa_vector)
            return conv + steps[:-2] + back + [(op, "f16", math.ceil(whole[1] / 2)) for op in ("vmul", "vadd")]
        return conv + params + steps + back
    # the sum's reciprocal once per row, then one multiply (isa_vector: no vdiv per repeat)
    half = ("f16", math.ceil(n * 2 / bpr))
    if name == "softmax" and elem == "f16" and rows > 1 and row % 16 == 0:
        # dense f16 rows (isa_vector.softmax_centred_f16): the max of the f16 values (the result's
        # buffer its scratch), subtracted and exponentiated on f16, only the exponentials
        # converted to f32 for their sum, one reciprocal per row, the multiply on f16
        return [*reduce("vmax", on="f16", scratch=n), ("vsub", *half), ("vexp", *half), ("vconv", elem, whole[1]),
                *reduce("vadd", consume=True), ("vrec", *one), ("vconv", "f32", one[1]), ("vmul", *half)]
    if name == "softmax" and elem == "f16":  # exponentials rounded into the f16 result, the multiply on f16
        # (rows of at most one repeat: the max subtracted on the f16 rows before their conversion)
        sub = ("vsub", "f16", math.ceil(whole[1] / 2)) if row * 2 <= bpr and row % 32 == 0 else ("vsub", *whole)
        return conv + [*reduce("vmax"), sub, ("vexp", *whole), ("vconv", elem, whole[1]),
                       *reduce("vadd"), ("vrec", *one), ("vmul", "f16", math.ceil(whole[1] / 2))]
    steps = [*reduce("vmax"), ("vsub", *whole), ("vexp", *whole), *reduce("vadd"), ("vrec", *one), ("vmul", *whole)]
    if name == "log_softmax":
        steps[-2:] = [("vln", *one), ("vsub", *whole)]
    return conv + steps + back


def _grouped(mach: Machine, kind: str, rows: int, row: int, sides: int, elem: str, scratch: int,
             consume: bool) -> list[tuple[str, str, int]] | None:
    """The instructions (one entry per dependent step, `sides` reductions' repeats together)
    of isa_vector's group-reduction plan for `rows` dense rows of `row` elements of `elem`
    (`isa_vector.row_plan`), None when it takes none; its block-column tail as the halvings
    it costs."""
    from ge.lowering.isa_vector import row_plan

    if elem != "f32" and elem != "f16":
        return None
    vec = mach.target.vector
    epb, nb8 = vec.block_bytes // numpy_dtype_size(elem), vec.bytes_per_repeat // vec.block_bytes
    red = {"vmax": "max", "vadd": "sum", "vmin": "min"}[kind]
    return _group_steps(mach, kind, rows, row, sides, elem, epb, nb8,
                        row_plan(mach.target, red, rows, row, scratch, consume, sides, elem))


def _group_steps(mach: Machine, kind: str, r: int, row: int, sides: int, elem: str, epb: int, nb8: int, plan):
    if plan is None or row % epb:
        return None
    fold, cg = kind, {"vmax": "vcgmax", "vadd": "vcgadd", "vmin": "vcgmin"}[kind]
    red = f"vreduce_{'max' if kind == 'vmax' else 'sum'}"
    b, out = row // epb, []
    for step in plan:
        if step.startswith("fold"):
            keep = int(step[4:])
            h = b - keep
            out.append((fold, elem, sides * min(r * -(-h // nb8), h * -(-r // nb8))))
            b = keep
        elif step == "cg":
            out.append((cg, elem, sides * r * b // nb8))
            b //= epb
        elif step == "rows":
            out.append((cg, elem, sides * -(-r // nb8)))
        elif step == "vreduce":
            out.append((red, elem, sides * r))
        else:  # "tail": a transposing copy and a halving per bit of the block's values
            out += [("default", elem, sides * -(-r * epb // (nb8 * epb)))] * epb.bit_length()
    return out


def _is_nc1hwc0(v) -> bool:
    enc = layout_of(v.type)
    return enc is not None and enc.fmt == Format.NC1HWC0


def _block_pool_program(mach: Machine, op, tile: Sequence[int]) -> list[tuple[str, str, int]]:
    """The instructions isa_vector's `block_pool` runs for a global pool over an NC1HWC0
    tile [n, c1, h, w, c0]: the tile copied (an average: converted to f32), the pixel
    blocks of every (n, c1) halved pairwise until one is left (one dependent step per
    halving), an average scaled by 1 / (h w), the result copied out (and narrowed back).
    (One instruction over the tile, as for an elementwise op, priced squeezenet's last
    global average pool at 57 Vector cycles a tile against 601 simulated: its 8 halvings
    of 169 pixels alone take 372.)"""
    n, c1, h, w, c0 = tile
    rows, left = n * c1, h * w
    elem = elem_name(op.operands[0].type.element_type)
    avg = op.name == "graph.global_avg_pool"
    work = "f32" if avg else elem
    size, bpr = (4 if avg else numpy_dtype(op.operands[0].type.element_type).itemsize), mach.target.vector.bytes_per_repeat
    out = [("vconv" if work != elem else "default", elem, math.ceil(rows * left * c0 * size / bpr))]
    while left > 1:
        half = left // 2
        out.append(("vadd" if avg else "vmax", work, rows * math.ceil(half * c0 * size / bpr)))
        left -= half
    reps = math.ceil(rows * c0 * size / bpr)
    if avg and h * w > 1:
        out.append(("vmuls", work, reps))
    out.append(("default", work, reps))
    if work != elem:
        out.append(("vconv", work, reps))
    return out


def pool_program(mach: Machine, pool, out_tile: Sequence[int], positions: int,
                 padded: bool = False) -> list[tuple[str, str, int]]:
    """The instructions lowering/isa_pool.py emits for a max / average pool over an
    NC1HWC0 output tile [n, c1, OH, OW, c0]: a clean copy of the source, a `vdup` of the
    accumulator, then per kernel position one pass of `vmax` / `vadd` whose repeats (8
    output pixels of a row or of a column each, `isa_pool.chunk_instructions`) run over
    rows, planes or chunks, whichever gives the fewest instructions (f16 averages run on
    f32: twice the repeats, and a `vconv` at the end); a separable max window (isa_pool.separable) runs kw - 1 passes over the rows the windows
    read, then kh - 1 over the output, without the vdup."""
    from ge.lowering import isa_pool
    n, c1, oh, ow, _ = (list(out_tile) + [1] * 5)[:5] if len(out_tile) == 5 else (1, 1, 1, math.prod(out_tile), 1)
    elem = elem_name(pool.operands[0].type.element_type)
    is_max = pool.name.endswith("max_pool")
    planes, chunks = n * c1, math.ceil(ow / 8)
    total = planes * oh * chunks
    op, width = ("vmax", elem) if is_max else ("vadd", "f32")
    halves = 2 if not is_max and elem != "f32" else 1  # an f16 average's f32 pixels: two blocks
    if halves > 1:
        total *= 2
    dilations = pool.properties.get("dilations")
    kernel, strides = tuple(pool.kernel_shape.get_values()), tuple(pool.strides.get_values())
    dil = (1, 1) if dilations is None else tuple(dilations.get_values())
    need = tuple((o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip((oh, ow), strides, kernel, dil))

    def passes(rows: int, pitch: int, times: int) -> list[tuple[str, str, int]]:
        """`times` pixel passes over (planes, rows, ow) whose widest row is `pitch` pixels
        (NCHW: one contiguous pass of the whole tile per gathered window position)."""
        if len(out_tile) != 5:
            return [(op, width, total)] * times
        shape = (planes, rows, ow * halves)
        instrs = isa_pool.chunk_instructions(mach.target, op, width, shape, pitch * halves)
        return [(op, width, reps) for count, reps in instrs for _ in range(count)] * times

    if oh == ow == 1 and positions > 2 and (dilations is None or set(dilations.get_values()) == {1}):
        # one output pixel: the window's pixels fold as a tree (isa_pool.tree_pass), a step's
        # instructions overlapping: ceil(log2 positions) dependent steps of half the pixels
        blocks = planes * (2 if width != elem else 1)
        out, left = [("default", elem, total)], positions
        while left > 1:
            half = left // 2
            out.append((op, width, math.ceil(blocks * half / 8)))
            left -= half
    elif is_max and len(out_tile) == 5 and isa_pool.separable("max", kernel, (oh, ow), need):
        out = [] if padded else [("default", elem, total)]  # the clean copy
        out += passes(need[0], need[1], kernel[1] - 1)  # the row pass: every row the windows read
        out += passes(oh, max(ow, strides[0] * ow), kernel[0] - 1)  # the column pass over the row maxima
    else:
        clean = [] if padded and halves == 1 and len(out_tile) == 5 else [("default", elem, total)]
        out = [*clean, ("default", width, total)]  # the clean copy, the accumulator's vdup
        out += passes(oh, strides[0] * need[1], positions)
    if not is_max:
        out += [("vmuls", "f32", total)] + ([("vconv", "f16", total)] if elem != "f32" else [])
    return out
