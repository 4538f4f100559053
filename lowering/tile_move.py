"""Data-movement kernels of the `tile` pass: Slice, Split, Concat, Expand, Tile, Pad,
DepthToSpace / SpaceToDepth, Trilu and Gather, as DMA copies (GM -> UB -> GM).

A mover computes nothing: every output element is one input element (or a pad value).
Each op is described as *pieces*; a piece fills a rectangle of one output with an affine
map of one input: output dim e of the rectangle walks input dim `axes[e].src` from
`axes[e].start` by `axes[e].step` (a step of 0 repeats one element: a broadcast; a
negative step walks backwards). Both sides may be row-major views of the buffers (a
DepthToSpace reads [N, b, b, C', H, W] and writes [N, C', H, b, W, b]), so one copy with a
permutation and strides moves a whole tile. Source positions outside the input read as the
piece's pad value (a constant Pad is one piece over the whole output).

A piece's loop walks its rectangle in tiles that fit UB, split into contiguous ranges over
`block_dim` cores; per tile, one GM -> UB copy (strided, permuted) and one UB -> GM copy,
double buffered. Dims with a step <= 0 are walked one element per iteration. Tile sizes
divide the rectangle, so no tile spills into a neighbouring piece.

Gather (an embedding lookup): the indices are copied to UB in chunks; for every index the
scalar unit reads it (`tile.load_index`: negative indices wrap, an out-of-range index is a
run-time error) and one DMA moves the selected row GM -> UB, another UB -> GM: the cost is
the bytes moved, not the elements.

Trilu: per row, one copy whose window keeps the columns on the kept side of the diagonal
and writes 0 elsewhere (`tile.copy` with an explicit window).

What each op computes is `ge.runtime.reference`; the tests compare against it and against
onnxruntime.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.layout import Format
from ge.lowering.tile_cost import Machine, align, pipelined
from ge.lowering.tile_ir import KernelBuilder
from ge.lowering.tile_vector import CapacityShortfall, GmPaths, Unsupported, l2_resident

MOVE_OPS = (g.SliceOp, g.SplitOp, g.ConcatOp, g.ExpandOp, g.TileOp, g.PadOp, g.DepthToSpaceOp,
            g.SpaceToDepthOp, g.GatherOp, g.TriluOp)

INDEX_CHUNK = 4096  # indices per UB chunk of a Gather at most


def is_move_group(block: Block) -> bool:
    """Is the group body one data-movement op (what this module tiles)?"""
    ops = list(block.ops)[:-1]
    return len(ops) == 1 and isinstance(ops[0], MOVE_OPS)


def shape_of(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def itemsize(v: SSAValue) -> int:
    return numpy_dtype(v.type.element_type).itemsize


# --------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """Output dim -> input dim `src`, from `start` by `step` (0: broadcast, < 0: reversed)."""

    src: int
    start: int = 0
    step: int = 1


@dataclass
class Piece:
    """Output rectangle [dst_lo, dst_lo + extent) of `dst` (seen as `dst_shape`) from `src`
    (seen as `src_shape`) through `axes` (one per output dim); reads outside `src` give `pad`."""

    src: SSAValue
    dst: SSAValue
    src_shape: tuple[int, ...]
    dst_shape: tuple[int, ...]
    dst_lo: tuple[int, ...]
    extent: tuple[int, ...]
    axes: tuple[Axis, ...]
    pad: float | None = None
    tiles: tuple[int, ...] = ()
    buffers: int = 1
    blocks: int = 1
    cycles: float = 0.0

    @property
    def perm(self) -> tuple[int, ...]:
        return tuple(a.src for a in self.axes)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(n // s for n, s in zip(self.extent, self.tiles))

    def walked(self, e: int) -> bool:
        """Is output dim e walked one element per iteration (a broadcast or reversed dim)?"""
        return self.extent[e] > 1 and self.axes[e].step <= 0

    def reads_outside(self) -> bool:
        for e, a in enumerate(self.axes):
            n = self.extent[e]
            first, last = a.start, a.start + a.step * (n - 1)
            if min(first, last) < 0 or max(first, last) >= self.src_shape[a.src]:
                return True
        return False

    def describe(self) -> str:
        return f"tile [{', '.join(map(str, self.tiles))}] x{math.prod(self.counts)} on {self.blocks} cores"


def identity(rank: int, starts: Sequence[int] = (), steps: Sequence[int] = ()) -> tuple[Axis, ...]:
    starts = list(starts) or [0] * rank
    steps = list(steps) or [1] * rank
    return tuple(Axis(d, starts[d], steps[d]) for d in range(rank))


def _piece(src: SSAValue, dst: SSAValue, axes: Sequence[Axis], dst_lo: Sequence[int] | None = None,
           extent: Sequence[int] | None = None, src_shape: Sequence[int] | None = None,
           dst_shape: Sequence[int] | None = None, pad: float | None = None) -> Piece:
    dshape = tuple(dst_shape or shape_of(dst))
    return Piece(src, dst, tuple(src_shape or shape_of(src)), dshape, tuple(dst_lo or (0,) * len(dshape)),
                 tuple(extent or dshape), tuple(axes), pad)


def storage_axis(op: g.ConcatOp | g.SplitOp) -> int:
    """The storage dim a concat joins (a split cuts) along."""
    axis = op.axis.value.data
    v = op.results[0] if isinstance(op, g.ConcatOp) else op.input
    enc = lt.layout_of(v.type)
    if enc is None:
        return axis
    if enc.fmt != Format.NC1HWC0 or len(enc.shape) != 4:
        raise Unsupported(f"{op.name} in {enc.fmt}")
    return ({0: 0, 1: 1, 2: 2, 3: 3} if enc.origin_fmt == Format.NCHW else {0: 0, 3: 1, 1: 2, 2: 3})[axis]


def _plain(op) -> None:
    for v in (*op.operands, *op.results):
        enc = lt.layout_of(v.type)
        if enc is not None:
            raise Unsupported(f"{op.name} on a {enc.fmt} tensor")


def _along(values, axis: int):
    """Each value with its origin when the values lie one after another along `axis`."""
    pos = 0
    for v in values:
        lo = [0] * len(shape_of(v))
        lo[axis] = pos
        pos += shape_of(v)[axis]
        yield v, lo


def pieces_of(op, outputs: set[SSAValue]) -> list[Piece]:
    """The pieces of mover `op`; only results in `outputs` (those with a buffer) are filled."""
    if isinstance(op, g.ConcatOp):
        return [_piece(v, op.output, identity(len(lo)), lo, shape_of(v)) for v, lo in _along(op.inputs, storage_axis(op))]
    if isinstance(op, g.SplitOp):
        return [_piece(op.input, r, identity(len(lo), lo)) for r, lo in _along(op.outputs, storage_axis(op)) if r in outputs]
    _plain(op)
    x, y = op.operands[0], op.results[0]
    xs, ys = shape_of(x), shape_of(y)
    if isinstance(op, g.SliceOp):
        return [_piece(x, y, identity(len(xs), g.get_ints(op.properties, "starts"), g.get_ints(op.properties, "steps")))]
    if isinstance(op, g.ExpandOp):
        view = (1,) * (len(ys) - len(xs)) + xs
        axes = [Axis(d, 0, 0 if view[d] == 1 and ys[d] > 1 else 1) for d in range(len(ys))]
        return [_piece(x, y, axes, src_shape=view)]
    if isinstance(op, g.TileOp):
        reps = g.get_ints(op.properties, "repeats")
        src_view, dst_view, axes = [], [], []
        for n, r in zip(xs, reps):
            if r > 1:
                axes.append(Axis(len(src_view), 0, 0))
                src_view.append(1)
                dst_view.append(r)
            axes.append(Axis(len(src_view)))
            src_view.append(n)
            dst_view.append(n)
        return [_piece(x, y, axes, src_shape=src_view, dst_shape=dst_view)]
    if isinstance(op, g.PadOp):
        return _pad_pieces(op, x, y)
    if isinstance(op, g.DepthToSpaceOp | g.SpaceToDepthOp):
        return [_depth_space_piece(op, x, y)]
    raise Unsupported(f"{op.name} has no copy pieces")


def _pad_pieces(op: g.PadOp, x: SSAValue, y: SSAValue) -> list[Piece]:
    pads = g.get_ints(op.properties, "pads")
    xs = shape_of(x)
    rank = len(xs)
    mode = g.get_str(op.properties, "mode", "constant")
    begin, end = pads[:rank], pads[rank:]
    if mode == "constant":
        value = 0.0 if op.value is None else float(op.value.value.data)
        return [_piece(x, y, identity(rank, [-b for b in begin]), pad=value)]
    if any(p < 0 for p in pads):
        raise Unsupported(f"pad mode '{mode}' with negative pads")
    segments = []
    for n, b, e in zip(xs, begin, end):
        if (mode == "reflect" and max(b, e) > n - 1) or (mode == "wrap" and max(b, e) > n) or n == 0:
            raise Unsupported(f"pad mode '{mode}' with pads {list(pads)} wider than the input {list(xs)}")
        seg = [(b, n, 0, 1)]  # (output lo, extent, input start, step)
        if b:
            seg.append((0, b, *{"edge": (0, 0), "reflect": (b, -1), "wrap": (n - b, 1)}[mode]))
        if e:
            seg.append((b + n, e, *{"edge": (n - 1, 0), "reflect": (n - 2, -1), "wrap": (0, 1)}[mode]))
        segments.append(seg)
    out = []
    for combo in itertools.product(*segments):
        axes = [Axis(d, s, st) for d, (_, _, s, st) in enumerate(combo)]
        out.append(_piece(x, y, axes, [c[0] for c in combo], [c[1] for c in combo]))
    return out


def _depth_space_piece(op, x: SSAValue, y: SSAValue) -> Piece:
    b = op.blocksize.value.data
    mode = g.get_str(op.properties, "mode", "DCR")
    if isinstance(op, g.DepthToSpaceOp):
        n, c, h, w = shape_of(x)
        cc = c // (b * b)
        # output [N, C', H, b1, W, b2]
        if mode == "DCR":
            src, perm = (n, b, b, cc, h, w), (0, 3, 4, 1, 5, 2)
        else:
            src, perm = (n, cc, b, b, h, w), (0, 1, 4, 2, 5, 3)
        dst = (n, cc, h, b, w, b)
    else:
        n, c, h, w = shape_of(x)
        src = (n, c, h // b, b, w // b, b)
        if mode == "DCR":
            dst, perm = (n, b, b, c, h // b, w // b), (0, 3, 5, 1, 2, 4)
        else:
            dst, perm = (n, c, b, b, h // b, w // b), (0, 1, 3, 5, 2, 4)
    return _piece(x, y, [Axis(p) for p in perm], src_shape=src, dst_shape=dst)


# --------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------


def spread(n: int, mach: Machine) -> int:
    """Cores for `n` iterations in contiguous shares: every core gets at least one (a core
    whose share started past the end would still run a pipelined loop's leftover)."""
    if n <= 1:
        return 1
    per = math.ceil(n / mach.cores(cube=False))
    return math.ceil(n / per)


def share(b: KernelBuilder, total: int, blocks: int) -> tuple:
    """This core's [lo, hi) of `total` iterations split over `blocks` cores, empty on the
    kernel's other cores (its block_dim is the largest of its loops')."""
    if blocks == 1 and total <= 1:
        return b.min_(b.block_idx(), 1), 1
    per = -(-total // blocks)
    lo = b.min_(b.mul(b.block_idx(), per), total, "lo")
    return lo, b.min_(b.add_(lo, per), total, "hi")


def _largest_divisor(n: int, limit: int) -> int:
    best = 1
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            for q in (d, n // d):
                if q <= limit and q > best:
                    best = q
    return best


def _fit(extent: Sequence[int], fixed: Sequence[bool], elems: int) -> tuple[int, ...]:
    """Tile sizes from the innermost dim out, whole dims while `elems` elements fit, then
    the largest divisor of the next dim; `fixed` dims (and those outside) take 1."""
    tiles = [1] * len(extent)
    room = max(elems, 1)
    for e in reversed(range(len(extent))):
        if fixed[e]:
            continue
        n = extent[e]
        if n <= room:
            tiles[e] = n
            room //= n
            continue
        tiles[e] = _largest_divisor(n, room)
        break
    return tuple(tiles)


def plan_piece(p: Piece, mach: Machine, parts: int, resident: frozenset = frozenset()) -> Piece:
    """Tiles of one piece in `1 / parts` of UB (double-buffered when two copies fit); its
    source is read from the L2 when it is in `resident` (tile_vector.l2_resident)."""
    target = mach.target
    cap, al = target.memory.ub // parts, target.alignment.ub
    k = numpy_dtype(p.dst.type.element_type).itemsize
    walked = [p.walked(e) for e in range(len(p.extent))]
    one = align(k, al)
    if one > cap:
        raise CapacityShortfall("ub", one * parts, target.memory.ub)
    buffers = 2 if 2 * one <= cap else 1
    most = (cap // buffers - al) // k
    # the tile that fills UB, or smaller ones that spread the piece over all cores (the
    # cheaper under the cost model): a piece UB holds whole would otherwise run on one core
    whole, cores = math.prod(p.extent), mach.cores(cube=False)
    best = None
    # (never below one UB block: a DMA moves whole 32-byte blocks, so a smaller tile costs
    # as much and only multiplies the per-copy start-ups)
    block = max(1, al // k)
    for elems in sorted({most} | {min(most, max(block, -(-whole // m))) for m in (2, 4, 8, 16, cores, 2 * cores, 4 * cores)},
                        reverse=True):
        p.tiles = _fit(p.extent, walked, elems)
        n = math.prod(p.counts)
        bufs = buffers if n > 1 else 1
        tile_bytes = math.prod(p.tiles) * k
        blocks = spread(n, mach)
        cycles = _copy_loop(mach, math.ceil(n / blocks), tile_bytes, blocks, bufs == 2, p.src in resident)
        if best is None or cycles < best[0]:
            best = (cycles, p.tiles, bufs, blocks)
    p.cycles, p.tiles, p.buffers, p.blocks = best
    return p


def _copy_loop(mach: Machine, n: int, tile_bytes: float, blocks: int, double: bool, hit: bool) -> float:
    """A loop of n GM -> UB -> GM copies of `tile_bytes`, timed as tile_vector's kernels
    (`GmPaths`): the loads from the HBM (from the L2 when `hit`), the stores into the L2,
    double-buffered loads paying their start-up once. (Charging the stores at the HBM
    share and every start-up priced squeezenet's first concat at 2,248 cycles against
    1,924 simulated with a cold L2 and 1,679 in a run: two pieces of 2 tiles of 8.8 KB per
    core, loads of 161 cycles at a 22-core share of the HBM, stores of 40 + 61.)"""
    gm = GmPaths.of(mach, blocks)
    load = gm.hit(tile_bytes, not double) if hit else gm.load(tile_bytes, tile_bytes, not double)
    port = gm.port(0.0, tile_bytes, tile_bytes) if hit else gm.port(tile_bytes, tile_bytes)
    return pipelined(n, [load, gm.store(tile_bytes)], double, port=port) + gm.startup2 * double


@dataclass
class GatherPlan:
    """A Gather over x as [P, A, Q] with N indices: chunks of `chunk` indices, rows moved
    as [pt, 1, qt] tiles."""

    p: int
    a: int
    q: int
    n: int
    chunk: int
    pt: int
    qt: int
    buffers: int
    blocks: int
    cycles: float

    def describe(self) -> str:
        return (f"gather {self.n} rows of [{self.p}, {self.q}] from {self.a}: index chunks of {self.chunk} on "
                f"{self.blocks} cores, row tiles [{self.pt}, 1, {self.qt}] (buffers {self.buffers})")


def plan_gather(op: g.GatherOp, mach: Machine) -> GatherPlan:
    target = mach.target
    xs = shape_of(op.input)
    axis = op.axis.value.data
    p, a, q = math.prod(xs[:axis]), xs[axis], math.prod(xs[axis + 1:])
    n = math.prod(shape_of(op.indices))
    k = itemsize(op.input)
    cores = mach.cores(cube=False)
    chunk = _largest_divisor(n, min(INDEX_CHUNK, max(1, math.ceil(n / cores)))) if n else 1
    idx_bytes = align(chunk * itemsize(op.indices), target.alignment.ub)
    room = target.memory.ub - idx_bytes
    buffers = 2
    elems = (room // 2 - target.alignment.ub) // k
    if elems < 1:
        raise CapacityShortfall("ub", idx_bytes + 2 * align(k, target.alignment.ub), target.memory.ub)
    pt, _, qt = _fit((p, 1, q), (False, True, False), elems)
    chunks = n // chunk if n else 0
    blocks = spread(chunks, mach)
    row = pt * qt * k
    per_row = (p // pt) * (q // qt)
    rows = math.ceil(chunks / blocks) * chunk * per_row
    cycles = mach.dma("gm_to_ub", chunk * itemsize(op.indices), blocks) * math.ceil(chunks / blocks)
    cycles += pipelined(rows, [mach.dma("gm_to_ub", row, blocks), mach.dma("ub_to_gm", row, blocks)], True)
    return GatherPlan(p, a, q, n, chunk, pt, qt, buffers, blocks, cycles)


@dataclass
class MovePlan:
    """What `tile` chose for a mover: its pieces (or its gather plan)."""

    op: object
    pieces: list[Piece] = field(default_factory=list)
    gather: GatherPlan | None = None

    @property
    def blocks(self) -> int:
        if self.gather is not None:
            return self.gather.blocks
        return max((p.blocks for p in self.pieces), default=1)

    @property
    def cycles(self) -> float:
        if self.gather is not None:
            return self.gather.cycles
        return sum(p.cycles for p in self.pieces)

    def describe(self) -> str:
        if self.gather is not None:
            return self.gather.describe()
        return "; ".join(f"piece {i}: {p.describe()}" for i, p in enumerate(self.pieces)) or "nothing to move"


def plan_move(block: Block, mach: Machine) -> MovePlan:
    op = next(iter(block.ops))
    if isinstance(op, g.GatherOp):
        _plain(op)
        return MovePlan(op, gather=plan_gather(op, mach))
    if isinstance(op, g.TriluOp):
        _plain(op)
        return MovePlan(op, [_trilu_piece(op, mach)] if math.prod(shape_of(op.output)) else [])
    pieces = [p for p in pieces_of(op, set(block.last_op.operands)) if math.prod(p.extent)]
    resident = l2_resident(block)
    return MovePlan(op, [plan_piece(p, mach, max(1, len(pieces)), resident) for p in pieces])


# --------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------


def emit_move(b: KernelBuilder, plan: MovePlan, gm: dict[SSAValue, SSAValue]) -> None:
    if plan.gather is not None:
        _emit_gather(b, plan.op, plan.gather, gm)
        return
    for i, p in enumerate(plan.pieces):
        if isinstance(plan.op, g.TriluOp):
            _emit_trilu(b, plan.op, p, gm)
        else:
            _emit_piece(b, p, gm, i)
    if not plan.pieces:  # an empty output: nothing moves (the body keeps one op, so it prints as a body)
        b.block_idx()


def _emit_piece(b: KernelBuilder, p: Piece, gm: dict[SSAValue, SSAValue], i: int) -> None:
    rank = len(p.extent)
    src = b.view(gm[p.src], p.src_shape, f"{p.src.name_hint or 'x'}_view")
    dst = b.view(gm[p.dst], p.dst_shape, f"{p.dst.name_hint or 'y'}_view")
    buf = b.alloc(t.MemSpace.UB, p.tiles, p.dst.type.element_type, p.buffers, f"part{i}_ub")
    pad = p.pad if p.reads_outside() else None
    lo, hi = share(b, math.prod(p.counts), p.blocks)
    with b.loop(lo, hi, name=f"tile{i}") as it:
        coords = b.unravel(it, p.counts, [f"t{d}" for d in range(rank)])
        src_off: list = [0] * rank
        sizes, strides = [1] * rank, [1] * rank
        dst_off = []
        for e, a in enumerate(p.axes):
            pos = b.mul(coords[e], p.tiles[e])
            dst_off.append(b.add_(pos, p.dst_lo[e]))
            src_off[a.src] = b.add_(b.mul(pos, a.step), a.start)
            sizes[a.src] = p.tiles[e]
            strides[a.src] = a.step if p.tiles[e] > 1 else 1
        b.copy(src, src_off, buf, None, sizes, strides=strides, perm=p.perm, pad=pad)
        b.copy(buf, [0] * rank, dst, dst_off, p.tiles)


def _emit_gather(b: KernelBuilder, op: g.GatherOp, gp: GatherPlan, gm: dict[SSAValue, SSAValue]) -> None:
    x = b.view(gm[op.input], (gp.p, gp.a, gp.q), "table")
    idx = b.view(gm[op.indices], (gp.n,), "indices")
    out = b.view(gm[op.output], (gp.p, gp.n, gp.q), "rows")
    idx_ub = b.alloc(t.MemSpace.UB, (gp.chunk,), op.indices.type.element_type, 1, "indices_ub")
    row_ub = b.alloc(t.MemSpace.UB, (gp.pt, 1, gp.qt), op.input.type.element_type, gp.buffers, "row_ub")
    lo, hi = share(b, gp.n // gp.chunk, gp.blocks)
    with b.loop(lo, hi, name="chunk") as c:
        first = b.mul(c, gp.chunk, "first")
        b.copy(idx, [first], idx_ub, None, (gp.chunk,))
        with b.loop(0, gp.chunk, name="j") as j:
            load = b.add(t.LoadIndexOp(idx_ub, [j], gp.a))
            load.result.name_hint = "row"
            slot = b.add_(first, j, "slot")
            tiles = list(itertools.product(range(gp.p // gp.pt), range(gp.q // gp.qt)))
            for pi, qi in tiles:
                p0, q0 = pi * gp.pt, qi * gp.qt
                b.copy(x, [p0, load.result, q0], row_ub, None, (gp.pt, 1, gp.qt))
                b.copy(row_ub, [0, 0, 0], out, [p0, slot, q0], (gp.pt, 1, gp.qt))


# --------------------------------------------------------------------------------------
# Trilu: one windowed copy per row
# --------------------------------------------------------------------------------------


def _trilu_piece(op: g.TriluOp, mach: Machine) -> Piece:
    """Trilu over x as [B, H, W]: one row per iteration (each row has its own window),
    the B * H rows split over the cores."""
    xs = shape_of(op.input)
    bsz, h, w = math.prod(xs[:-2]), xs[-2], xs[-1]
    p = Piece(op.input, op.output, (bsz, h, w), (bsz, h, w), (0, 0, 0), (bsz, h, w), identity(3))
    k = itemsize(op.input)
    al = mach.target.alignment.ub
    if 2 * align(w * k, al) > mach.target.memory.ub:
        raise CapacityShortfall("ub", 2 * align(w * k, al), mach.target.memory.ub)
    p.tiles = (1, 1, w)
    n = bsz * h
    p.buffers = 2 if n > 1 else 1
    p.blocks = spread(n, mach)
    row = w * k
    p.cycles = pipelined(math.ceil(n / p.blocks), [mach.dma("gm_to_ub", row, p.blocks), mach.dma("ub_to_gm", row, p.blocks)],
                         p.buffers == 2)
    return p


def _emit_trilu(b: KernelBuilder, op: g.TriluOp, p: Piece, gm: dict[SSAValue, SSAValue]) -> None:
    bsz, h, w = p.extent
    k = op.k.value.data
    upper = op.upper is not None
    x = b.view(gm[op.input], p.extent, "matrices")
    y = b.view(gm[op.output], p.extent, "result")
    buf = b.alloc(t.MemSpace.UB, (1, 1, w), op.input.type.element_type, p.buffers, "row_ub")
    lo, hi = share(b, bsz * h, p.blocks)
    with b.loop(lo, hi, name="row") as it:
        m, r = b.unravel(it, (bsz, h), ["m", "r"])
        # kept columns: j >= r + k (upper) or j < r + k + 1 (lower), clamped to [0, w]
        shift = k if upper else k + 1
        edge = b.add_(r, shift)
        if shift < 0:
            edge = b._binary(arith.MaxSIOp, edge, b.const(0))
        if h - 1 + shift > w:
            edge = b._binary(arith.MinSIOp, edge, b.const(w))
        window = [0, 1, 0, 1, *((edge, w) if upper else (0, edge))]
        b.add(t.CopyOp(x, [b.value(v) for v in (m, r, 0)], buf, [b.const(0)] * 3, (1, 1, w), pad=0.0,
                       window=[b.value(v) for v in window]))
        b.copy(buf, [0, 0, 0], y, [m, r, 0], (1, 1, w))
