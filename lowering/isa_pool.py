"""`tile.vpool` -> isa Vector instructions: the pool part of `to-isa` (lowering/to_isa.py).

A `tile.vpool` is a sliding-window max or average over the H, W dims of a UB tile
(`ge.runtime.tile_interp.vpool` is what it computes). `lower_vpool(k, op)` is called by
the tile -> isa lowering with its context `k` (`b`, `target`, `buffer`, `index`, see
`KernelLowering` in to_isa.py) and appends the instructions at the builder's insertion
point. No sync: `insert-sync` orders everything afterwards.

How (NC1HWC0 tiles [n, c1, H, W, c0], each pixel one 32-byte block of c0 channels):

1. Clean copy. The source's element (.., 0, 0, ..) is input position (h, w), both known
   only at run time, and the op says nothing about source elements outside the input.
   One `copy_ub_to_ub` copies the rows and columns the windows read into a compact
   temporary, reading only the valid rectangle (its `window` is (-h, in_h - h) x
   (-w, in_w - w), computed on the scalar unit) and writing -inf (max) or 0 (avg) in the
   rest; afterwards every window position simply takes part. One V instruction of the
   source's bytes; skipped when h, w are constants and every position read is valid.
2. Window. The accumulator gets `vdup` -inf (max) / 0 (avg), then for each kernel position
   (a, b) -- two `scf.for` loops, so the IR does not grow with the kernel -- one pass of
   `vmax` / `vadd` acc, acc, clean[a * dh + i * sh, b * dw + j * sw]: a repeat covers 8
   output pixels of a row (dst block stride 1, src block stride stride_w), and the repeat
   count runs over output rows, planes or 8-pixel chunks of a row (whichever leaves the
   fewest instructions; the others are `scf.for` loops, a partial chunk one more
   instruction). A pass is at most two instructions in the IR and about min(planes,
   rows) x ceil(OW / 8) executed, each with up to 255 repeats: O(kernel positions x
   rows), never per element.
3. Average divisor. The count of positions inside the input (or inside input + pads with
   `count_include_pad`) varies at the edges with the dynamic h, w. It is separable, and
   computed the same way as the sum: an indicator plane [H', W', one block] is made by
   one `vdup` of 1 in a single block and one windowed `copy_ub_to_ub` (block stride 0,
   window = the counted rows / columns relative to h, w, pad 0), then the same window
   pass on it (one plane) gives the count map [OH, OW]; one `vdiv` pass divides every
   plane by it (plane stride 0), giving exactly out / count as the op defines. The count
   map costs one plane's worth of pooling, independent of the number of planes. When h,
   w are constants and every output counts the same, it is one `vmuls` by 1 / count.
4. f16 averages accumulate in f32: the clean copy is converted once (`vconv`, contiguous)
   to an f32 temporary whose pixels are two blocks; the window and divide passes run on
   the two halves of each pixel (block stride 2 x stride_w), and one `vconv` rounds the
   result to f16 once, as real kernels do.

NCHW tiles [n, c, H, W] (one element per pixel) cannot be addressed with block strides:
each kernel position is a strided `copy_ub_to_ub` gather of the window view into a
contiguous temporary followed by one contiguous `vmax` / `vadd`; the count map is
gathered once to every plane.

Temporaries are `isa.buffer`s of the kernel (placed by plan-local-memory, which reuses
bytes between buffers whose lifetimes do not overlap); `scratch_bytes(op, target)` says
how many UB bytes they take at most, for a tiling that wants to leave room for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from xdsl.dialects.builtin import FloatAttr, MemRefType, f32, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import dtypes, isa
from ge.dialects import tile as t
from ge.errors import GeError
from ge.lowering.index_builder import Index, create_op, int_attr
from ge.lowering.isa_builder import IsaBuilder, move_op
from ge.lowering.tile_cost import elem_name


class PoolLoweringError(PassFailedException, GeError):
    """A tile.vpool the Vector instructions cannot express (names the op and its location)."""


class Context(Protocol):
    """What `lower_vpool` needs from the tile -> isa lowering (to_isa.KernelLowering)."""

    b: IsaBuilder
    target: targets.Target

    def buffer(self, v: SSAValue) -> tuple[SSAValue, Index]: ...

    def index(self, v: SSAValue) -> Index: ...


def _fail(op: Operation, message: str) -> PoolLoweringError:
    return PoolLoweringError(f"{op.name} at {op.location}: {message}")


# --------------------------------------------------------------------------------------
# The op's geometry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A vpool's sizes: `planes` = n * c1 (or n * c), `c0` elements per pixel (1 in NCHW),
    `need` the source rows / columns the windows read."""

    mode: str
    planes: int
    c0: int
    src_hw: tuple[int, int]
    out_hw: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    in_size: tuple[int, int]
    pads: tuple[int, int, int, int]
    include_pad: bool

    @staticmethod
    def of(op: t.VPoolOp) -> Pool:
        src, dst = op.source.type, op.dest.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        s, d = tuple(src.get_shape()), tuple(dst.get_shape())
        c0 = s[4] if len(s) == 5 else 1
        pads = t._ints(op.pads)
        return Pool(op.mode.data, math.prod(s[:2]), c0, (s[2], s[3]), (d[2], d[3]), _pair(op.kernel),
                    _pair(op.strides), _pair(op.dilations), _pair(op.in_size),
                    (pads[0], pads[1], pads[2], pads[3]), op.count_include_pad is not None)

    @property
    def need(self) -> tuple[int, int]:
        return tuple((o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
                     zip(self.out_hw, self.strides, self.kernel, self.dilations))  # type: ignore[return-value]

    def counted(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The input rows and columns an average counts: [lo, hi) per dim."""
        (hn, wn), (pt, pl, pb, pr) = self.in_size, self.pads
        if self.include_pad:
            return (-pt, hn + pb), (-pl, wn + pr)
        return (0, hn), (0, wn)

    def static_counts(self, h: Index, w: Index) -> tuple[list[int], list[int]] | None:
        """Window positions counted per output row and per output column, when h, w are
        constants (the divisor of output (i, j) is their product)."""
        if not (isinstance(h, int) and isinstance(w, int)):
            return None
        out = []
        for start, (lo, hi), o, s, k, d in zip((h, w), self.counted(), self.out_hw, self.strides, self.kernel,
                                               self.dilations):
            out.append([sum(lo <= start + i * s + a * d < hi for a in range(k)) for i in range(o)])
        return out[0], out[1]

    def reads_only_valid(self, h: Index, w: Index) -> bool:
        """Every source position the windows read is inside the input (h, w constants)."""
        if not (isinstance(h, int) and isinstance(w, int)):
            return False
        return all(0 <= start and start + n <= size for start, n, size in zip((h, w), self.need, self.in_size))


def _pair(attr) -> tuple[int, int]:
    v = t._ints(attr)
    return v[0], v[1]


# --------------------------------------------------------------------------------------
# Emitting vector instructions with repeats, loops and tails
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operand:
    """A vector operand: buffer, element offset, elements per 32-byte block."""

    buf: SSAValue
    offset: Index
    epb: int


@dataclass(frozen=True)
class Dim:
    """One level of an iteration space: `count` steps of `strides[i]` blocks for operand i."""

    count: int
    strides: tuple[int, ...]


MAX_STRIDE = 255  # block and repeat strides are 8-bit fields of the vector instructions (Ascend C: uint8_t)


def _epb(target: targets.Target, elem: Attribute) -> int:
    return max(1, target.vector.block_bytes // isa.itemsize(elem))


def _operand(k: Context, buf: SSAValue, offset: Index) -> Operand:
    ty = buf.type
    assert isinstance(ty, MemRefType)
    return Operand(buf, offset, _epb(k.target, ty.element_type))


def _instruction(k: Context, cls: type[isa._VectorOp], operands: Sequence[Operand], repeat: int, mask: int,
                 blk: Sequence[int], rep: Sequence[int], props: dict[str, Attribute]) -> None:
    widest = max(isa.itemsize(o.buf.type) for o in operands)
    p: dict[str, Attribute] = {"repeat": int_attr(repeat, i64), **props}
    if mask != k.target.vector.bytes_per_repeat // widest:
        p["mask"] = int_attr(mask, i64)
    if any(s != 1 for s in blk):
        p["blk_stride"] = isa.int_array(blk)
    if repeat > 1:
        p["rep_stride"] = isa.int_array(rep)
    args: list = []
    for o in operands:
        args += [o.buf, [] if o.offset == 0 else [k.b.value(o.offset)]]
    k.b.add(create_op(cls, args, p))


def _shift(k: Context, operands: Sequence[Operand], step: Index, strides: Sequence[int]) -> list[Operand]:
    """Each operand moved by `step` x its stride (in blocks); equal moves share their ops."""
    done: dict[tuple, Index] = {}
    out = []
    for o, s in zip(operands, strides):
        key = (o.offset, s * o.epb)
        if key not in done:
            done[key] = k.b.add_(o.offset, k.b.mul(step, s * o.epb))
        out.append(replace(o, offset=done[key]))
    return out


def _repeat_dim(dims: Sequence[Dim], max_repeats: int) -> int:
    """The dim to run as the repeat count: the one that leaves the fewest instructions,
    among those whose strides fit the repeat-stride field when any does."""
    def executed(i: int) -> tuple[int, int]:
        others = math.prod(d.count for j, d in enumerate(dims) if j != i)
        return others * -(-dims[i].count // max_repeats), -dims[i].count

    fits = [i for i, d in enumerate(dims) if max(d.strides) <= MAX_STRIDE]
    return min(fits or range(len(dims)), key=executed)


def emit_strided(k: Context, cls: type[isa._VectorOp], operands: Sequence[Operand], dims: Sequence[Dim],
                 blk: Sequence[int], mask: int, props: dict[str, Attribute] | None = None) -> None:
    """`cls` over the iteration space `dims` (outer to inner) of `mask`-element repeats:
    one dim becomes the repeat count (split at max_repeats), the others `scf.for` loops."""
    props = props or {}
    live = [d for d in dims if d.count > 1]
    if not live:
        _instruction(k, cls, operands, 1, mask, blk, [0] * len(operands), props)
        return
    r = _repeat_dim(live, k.target.vector.max_repeats)
    loops = [d for i, d in enumerate(live) if i != r]

    def nest(ops: list[Operand], depth: int) -> None:
        if depth < len(loops):
            with k.b.loop(0, loops[depth].count, name=f"v{depth}") as iv:
                nest(_shift(k, ops, iv, loops[depth].strides), depth + 1)
            return
        most, rd = k.target.vector.max_repeats, live[r]
        for start in range(0, rd.count, most):
            _instruction(k, cls, _shift(k, ops, start, rd.strides), min(most, rd.count - start), mask, blk,
                         rd.strides, props)

    nest(list(operands), 0)


def emit_flat(k: Context, cls: type[isa._VectorOp], operands: Sequence[Operand], count: int,
              props: dict[str, Attribute] | None = None) -> None:
    """`cls` over `count` contiguous elements of every operand (full repeats, then a tail)."""
    widest = max(isa.itemsize(o.buf.type) for o in operands)
    per = k.target.vector.bytes_per_repeat // widest
    full, rest = divmod(count, per)
    ones = [1] * len(operands)
    if full:
        emit_strided(k, cls, operands, [Dim(full, tuple(per // o.epb for o in operands))], ones, per, props)
    if rest:
        tail = [replace(o, offset=k.b.add_(o.offset, full * per)) for o in operands]
        emit_strided(k, cls, tail, [], ones, rest, props)


def _scalar(value: float) -> dict[str, Attribute]:
    return {"scalar": FloatAttr(value, f64)}


# --------------------------------------------------------------------------------------
# Pixel views: NC1HWC0 tiles as [plane, row, column] of whole-block pixels
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """Pixels [plane, row, column] of a UB buffer: pixel (p, r, c) starts `(p * plane + r *
    row + c * col) * blocks` blocks after `at`; a pixel is `blocks` blocks (2 for f16
    channels held in f32). A view with fewer blocks per pixel than the others of a pass
    (a count map) is read once per half."""

    at: Operand
    plane: int
    row: int
    col: int
    blocks: int = 1

    def moved(self, k: Context, rows: Index, cols: Index) -> View:
        step = k.b.add_(k.b.mul(rows, self.row * self.blocks * self.at.epb),
                        k.b.mul(cols, self.col * self.blocks * self.at.epb))
        return replace(self, at=replace(self.at, offset=k.b.add_(self.at.offset, step)))

    def strided(self, rows: int, cols: int) -> View:
        return replace(self, row=self.row * rows, col=self.col * cols)


def _merge_halves(views: Sequence[View], cols: int) -> tuple[list[View], int]:
    """Multi-block pixels that follow each other in every view: a row is one run of
    single blocks, so no pass per half is needed."""
    halves = max(v.blocks for v in views)
    if halves > 1 and all(v.blocks == halves and v.col == 1 for v in views):
        return [View(v.at, v.plane * halves, v.row * halves, 1) for v in views], cols * halves
    return list(views), cols


def _row_chunks(k: Context, cls: type[isa._VectorOp], ops: list[Operand], views: Sequence[View],
                shape: tuple[int, int, int]) -> None:
    """One block of each pixel (p, r, c) < shape: 8 pixels of a row per repeat, the
    partial chunk of a row as one more pass."""
    planes, rows, cols = shape
    nb = k.target.vector.bytes_per_repeat // k.target.vector.block_bytes
    blk = [v.col * v.blocks for v in views]
    outer = [Dim(planes, tuple(v.plane * v.blocks for v in views)), Dim(rows, tuple(v.row * v.blocks for v in views))]
    full, rest = divmod(cols, nb)
    if full:
        emit_strided(k, cls, ops, [*outer, Dim(full, tuple(nb * b for b in blk))], blk, nb * views[0].at.epb)
    if rest:
        emit_strided(k, cls, _shift(k, ops, full * nb, blk), outer, blk, rest * views[0].at.epb)


def _column_chunks(k: Context, cls: type[isa._VectorOp], ops: list[Operand], views: Sequence[View],
                   shape: tuple[int, int, int]) -> None:
    """One block of each pixel (p, r, c) < shape: 8 rows of a column per repeat (block
    stride = the row pitch), the repeats along the row; the rows after the last whole
    group of 8 as row chunks (`_row_chunks`)."""
    planes, rows, cols = shape
    nb = k.target.vector.bytes_per_repeat // k.target.vector.block_bytes
    groups, left = divmod(rows, nb)
    blk = [v.row * v.blocks for v in views]
    dims = [Dim(planes, tuple(v.plane * v.blocks for v in views)), Dim(groups, tuple(nb * b for b in blk)),
            Dim(cols, tuple(v.col * v.blocks for v in views))]
    emit_strided(k, cls, ops, dims, blk, nb * views[0].at.epb)
    if left:
        _row_chunks(k, cls, _shift(k, ops, groups * nb, blk), views, (planes, left, cols))


def _executed(counts: Sequence[int], max_repeats: int) -> list[tuple[int, int]]:
    """(instructions, repeats each) `emit_strided` runs over dims of these counts (its
    `_repeat_dim` choice, the strides taken to fit)."""
    live = [c for c in counts if c > 1]
    if not live:
        return [(1, 1)]
    r = _repeat_dim([Dim(c, (0,)) for c in live], max_repeats)
    others, full, rest = math.prod(live) // live[r], *divmod(live[r], max_repeats)
    return [(others * full, max_repeats)] * bool(full) + [(others, rest)] * bool(rest)


def chunk_instructions(target: targets.Target, op: str, elem: str, shape: tuple[int, int, int],
                       pitch: int) -> list[tuple[int, int]]:
    """(instructions, repeats each) of a pixel pass over `shape` (planes, rows, cols),
    in the cheaper orientation (`_orientations`): row chunks of 8 pixels, or, when the
    widest row pitch (in blocks, `pitch`) fits a block stride, 8-row column chunks
    -- resnet's 3 x 3 / 2 pool's column pass on an 8 x 56 tile: one instruction of 56
    repeats instead of 7 of 8, a start-up each."""
    return _orientations(target, op, elem, shape, pitch)[1]


def _orientations(target: targets.Target, op: str, elem: str, shape: tuple[int, int, int],
                  pitch: int) -> tuple[bool, list[tuple[int, int]]]:
    """(columns?, the instructions) of the cheaper orientation of a pixel pass."""
    planes, rows, cols = shape
    nb, most = target.vector.bytes_per_repeat // target.vector.block_bytes, target.vector.max_repeats

    def by_rows(r: int) -> list[tuple[int, int]]:
        full, rest = divmod(cols, nb)
        return (_executed((planes, r, full), most) if full else []) + (_executed((planes, r), most) if rest else [])

    def cycles(instrs: list[tuple[int, int]]) -> float:
        per = target.vector_cycles(op, elem)
        return sum(n * (target.startup.vector + reps * per) for n, reps in instrs)

    rows_way = by_rows(rows)
    groups, left = divmod(rows, nb)
    if not groups or pitch > MAX_STRIDE:
        return False, rows_way
    cols_way = _executed((planes, groups, cols), most) + (by_rows(left) if left else [])
    if cycles(cols_way) < cycles(rows_way):
        return True, cols_way
    return False, rows_way


def pixel_pass(k: Context, cls: type[isa._VectorOp], views: Sequence[View], shape: tuple[int, int, int]) -> None:
    """`cls` on every pixel (p, r, c) < shape of the views (dst first), once per block of
    a multi-block pixel (a view with single-block pixels is read by each)."""
    views, cols = _merge_halves(views, shape[2])
    pitch = max(v.row * v.blocks for v in views)
    elem = elem_name(views[0].at.buf.type.element_type)
    columns, _ = _orientations(k.target, cls.name.removeprefix("isa."), elem, (shape[0], shape[1], cols), pitch)
    chunks = _column_chunks if columns else _row_chunks
    for half in range(max(v.blocks for v in views)):
        ops = [replace(v.at, offset=k.b.add_(v.at.offset, half * v.at.epb)) if v.blocks > 1 else v.at for v in views]
        chunks(k, cls, ops, views, (shape[0], shape[1], cols))


@contextmanager
def _positions(k: Context, n: int, name: str) -> Iterator[Index]:
    """0 .. n-1 as an scf.for (just 0 when n is 1)."""
    if n == 1:
        yield 0
        return
    with k.b.loop(0, n, name=name) as iv:
        yield iv


def _more(k: Context, n: int, name: str) -> Iterator[Index]:
    """0 .. n-1 as an scf.for (just 0 when n is 1, nothing when n is 0)."""
    if n > 0:
        with _positions(k, n, name) as iv:
            yield iv


def window_pass(k: Context, cls: type[isa._VectorOp], acc: View, src: View, pool: Pool, planes: int) -> None:
    """acc[p, i, j] = acc <cls> src[p, i * sh + a * dh, j * sw + b * dw] for every kernel
    position (a, b), as two loops around one pixel pass."""
    (kh, kw), (sh, sw), (dh, dw) = pool.kernel, pool.strides, pool.dilations
    with _positions(k, kh, "kh") as a, _positions(k, kw, "kw") as b:
        at = src.moved(k, k.b.mul(a, dh), k.b.mul(b, dw)).strided(sh, sw)
        pixel_pass(k, cls, [acc, acc, at], (planes, *pool.out_hw))


def separable(mode: str, kernel: Sequence[int], out_hw: Sequence[int], need: Sequence[int]) -> bool:
    """A max window done as a row pass then a column pass (`separable_pass`): max is
    separable, so (kw - 1) passes over the need_h x OW row maxima plus (kh - 1) over the
    output replace a vdup and kh * kw passes over the output -- 6 instead of 10 output
    passes for resnet's 3x3 stride-2 pool, 4 instead of 10 at stride 1."""
    (kh, kw), (oh, ow) = kernel, out_hw
    if mode != "max" or kh < 2 or kw < 2:
        return False
    return (kw - 1) * need[0] * ow + (kh - 1) * oh * ow < (1 + kh * kw) * oh * ow


def separable_pass(k: Context, acc: View, src: View, pool: Pool, planes: int, elem: Attribute) -> None:
    """acc[p, i, j] = max over (a, b) of src[p, i * sh + a * dh, j * sw + b * dw] as
    rows[p, r, j] = max_b src[p, r, j * sw + b * dw] for every row r the windows read, then
    acc[p, i, j] = max_a rows[p, i * sh + a * dh, j]; each side's first pass takes two taps
    (no vdup of -inf)."""
    (kh, kw), (sh, sw), (dh, dw) = pool.kernel, pool.strides, pool.dilations
    (nh, _), (_, ow) = pool.need, pool.out_hw
    buf = k.b.buffer(isa.MemSpace.UB, [planes * nh * ow * pool.c0], elem, name="pool_rows")[0]
    rows = View(Operand(buf, 0, src.at.epb), nh * ow, ow, 1)
    shape = (planes, nh, ow)
    pixel_pass(k, isa.VMaxOp, [rows, src.strided(1, sw), src.moved(k, 0, dw).strided(1, sw)], shape)
    for b in _more(k, kw - 2, "kw"):
        pixel_pass(k, isa.VMaxOp, [rows, rows, src.moved(k, 0, k.b.mul(k.b.add_(b, 2), dw)).strided(1, sw)], shape)
    shape = (planes, *pool.out_hw)
    pixel_pass(k, isa.VMaxOp, [acc, rows.strided(sh, 1), rows.moved(k, dh, 0).strided(sh, 1)], shape)
    for a in _more(k, kh - 2, "kh"):
        pixel_pass(k, isa.VMaxOp, [acc, acc, rows.moved(k, k.b.mul(k.b.add_(a, 2), dh), 0).strided(sh, 1)], shape)


def is_global(pool: Pool) -> bool:
    """One output pixel whose window is the whole (compact) source rectangle, of more than
    two pixels: its positions fold as a tree (`tree_pass`) instead of one dependent pass
    each."""
    return pool.out_hw == (1, 1) and pool.need == pool.kernel and pool.kernel[0] * pool.kernel[1] > 2


def _one_count(target: targets.Target, pool: Pool, elem: Attribute) -> bool:
    """A global window's run-time count: one value, the sum of an indicator of one
    element per position, when they fit one repeat (a vreduce instead of a fold tree)."""
    return is_global(pool) and pool.need[0] * pool.need[1] <= target.vector.bytes_per_repeat // isa.itemsize(elem)


def tree_pass(k: Context, cls: type[isa._VectorOp], acc: View, src: View, pixels: int, planes: int) -> None:
    """acc[p] = <cls> over the `pixels` contiguous pixels of each plane of src (written
    over): the upper half of the pixels folded onto the lower half, halving the count per
    step -- ceil(log2 pixels) dependent passes (a 7x7 window: 6, not 49) --, the last
    pair into acc. A step's instructions touch disjoint blocks and are emitted unrolled,
    so the pipe overlaps them (an scf.for would put a barrier between its iterations)."""
    left = pixels
    while left > 2:
        half = left // 2
        _fold_step(k, cls, src.at, src.at, src.at, (left - half) * src.blocks, half * src.blocks,
                   src.plane * src.blocks, planes)
        left -= half
    _fold_step(k, cls, acc.at, src.at, src.at, src.blocks, src.blocks, (acc.plane * acc.blocks, src.plane * src.blocks),
               planes)


def _fold_step(k: Context, cls: type[isa._VectorOp], dst: Operand, lo: Operand, hi: Operand, up: int, run: int,
               plane: int | tuple[int, int], planes: int) -> None:
    """dst[p, :run] = lo[p, :run] <cls> hi[p, up:up + run] for p < planes, in blocks, each
    plane `plane` blocks after the last (dst's and the sources' when a pair). Layouts: 8
    planes on the blocks of a repeat with the repeats along the run, the planes on the
    repeat axis with one instruction per 8-block column, or one instruction per plane
    with the repeats along its run -- the fewest repeats (no half-empty ones), then the
    fewest instructions; an scf.for over the planes when there are many of them."""
    most, nb = k.target.vector.max_repeats, k.target.vector.bytes_per_repeat // k.target.vector.block_bytes
    dp, sp = plane if isinstance(plane, tuple) else (plane, plane)
    epb, ones = lo.epb, [1, 1, 1]
    ops = [replace(o, offset=k.b.add_(o.offset, shift * epb)) for o, shift in ((dst, 0), (lo, 0), (hi, up))]
    cols, groups = -(-run // nb), -(-planes // nb)
    fits = max(dp, sp) <= MAX_STRIDE
    layouts = {"per_plane": (planes * cols, planes * (run // nb > 0) + planes * (run % nb > 0))}
    if fits and planes > 1:
        layouts["by_planes"] = (planes * cols, cols * -(-planes // most))
        layouts["on_blocks"] = (groups * run, groups * -(-run // most))
    best = min(layouts, key=lambda name: layouts[name])
    if best == "on_blocks":
        for g in range(groups):
            lanes = min(nb, planes - g * nb)
            at = _shift(k, ops, g * nb, (dp, sp, sp))
            emit_strided(k, cls, at, [Dim(run, (1, 1, 1))], [dp, sp, sp], lanes * epb)
        return
    if best == "by_planes":
        for c in range(cols):
            width = min(nb, run - c * nb)
            at = _shift(k, ops, c * nb, ones)
            for start in range(0, planes, most):
                _instruction(k, cls, _shift(k, at, start, (dp, sp, sp)), min(most, planes - start), width * epb,
                             ones, [dp, sp, sp], {})
        return
    full, rest = divmod(run, nb)
    if planes > nb:  # many planes of long runs: a loop over the planes (IR that does not grow with them)
        outer = [Dim(planes, (dp, sp, sp))]
        if full:
            emit_strided(k, cls, ops, [*outer, Dim(full, (nb, nb, nb))], ones, nb * epb)
        if rest:
            emit_strided(k, cls, _shift(k, ops, full * nb, ones), outer, ones, rest * epb)
        return
    for p in range(planes):
        at = _shift(k, ops, p, (dp, sp, sp))
        if full:
            emit_strided(k, cls, at, [Dim(full, (nb, nb, nb))], ones, nb * epb)
        if rest:
            emit_strided(k, cls, _shift(k, at, full * nb, ones), [], ones, rest * epb)


# --------------------------------------------------------------------------------------
# Building blocks shared by both layouts
# --------------------------------------------------------------------------------------


def _window(k: Context, bounds: Sequence[tuple[int, int]], starts: Sequence[Index], dims: Sequence[int | None]) -> list[SSAValue]:
    """A copy's `window` operands: dim d with `bounds[...]` (input [lo, hi)) relative to
    the start position, the others (None) whole."""
    out: list[SSAValue] = []
    it = iter(zip(bounds, starts))
    for size in dims:
        if size is not None:
            out += [k.b.const(0), k.b.const(size)]
            continue
        (lo, hi), start = next(it)
        out += [k.b.value(k.b.sub(lo, start)), k.b.value(k.b.sub(hi, start))]
    return out


def clean_copy(k: Context, pool: Pool, src: Operand, h: Index, w: Index, pad: float, elem: Attribute,
               force: bool, padded: bool = False) -> Operand | None:
    """The source rows / columns the windows read, compact [planes, rows, cols, c0], with
    positions outside the input set to `pad`; None (read the source itself) when h, w
    show that every position read is valid and `force` is off."""
    valid = padded or pool.reads_only_valid(h, w)
    if valid and not force:
        return None
    (sh_, sw_), (nh, nw), c0 = pool.src_hw, pool.need, pool.c0
    buf = k.b.buffer(isa.MemSpace.UB, [pool.planes * nh * nw * c0], elem, name="pool_in")[0]
    sizes = [pool.planes, nh, nw, c0]
    window = [] if valid else _window(k, [(0, pool.in_size[0]), (0, pool.in_size[1])], [h, w],
                                      [pool.planes, None, None, c0])
    k.b.add(move_op(isa.CopyUbToUbOp, src.buf, buf, sizes, src_offset=k.b.offset(src.offset),
                             src_strides=[sh_ * sw_ * c0, sw_ * c0, c0, 1], window=window,
                             pad=None if valid else pad))
    return Operand(buf, 0, src.epb)


def indicator(k: Context, pool: Pool, h: Index, w: Index, elem: Attribute, width: int, at_least: int = 0) -> SSAValue:
    """[rows, cols, width] of 1 where the average counts the input position, else 0 (in a
    buffer of at least `at_least` elements)."""
    (nh, nw), epb = pool.need, _epb(k.target, elem)
    one = k.b.buffer(isa.MemSpace.UB, [epb], elem, name="pool_one")[0]
    emit_strided(k, isa.VDupOp, [Operand(one, 0, epb)], [], [1], epb, _scalar(1.0))
    ind = k.b.buffer(isa.MemSpace.UB, [max(nh * nw * width, at_least)], elem, name="pool_ind")[0]
    window = _window(k, pool.counted(), [h, w], [None, None, width])
    k.b.add(move_op(isa.CopyUbToUbOp, one, ind, [nh, nw, width], src_strides=[0, 0, 1], window=window, pad=0.0))
    return ind


def divide_by_counts(k: Context, pool: Pool, acc: View, count: int, h: Index, w: Index, elem: Attribute,
                     blocked: bool) -> None:
    """acc /= the number of counted positions of each output's window."""
    counts = pool.static_counts(h, w)
    if counts is not None and len(set(counts[0])) == 1 and len(set(counts[1])) == 1:
        emit_flat(k, isa.VMulsOp, [acc.at, acc.at], count, _scalar(1.0 / (counts[0][0] * counts[1][0])))
        return
    oh, ow = pool.out_hw
    nw = pool.need[1]
    epb = _epb(k.target, elem)
    width = epb if blocked else 1
    one_count = blocked and _one_count(k.target, pool, elem)
    # (one window's indicator is then overwritten by its count spread over a block)
    ind = Operand(indicator(k, pool, h, w, elem, 1 if one_count else width, width if one_count else 0), 0, epb)
    cnt = Operand(k.b.buffer(isa.MemSpace.UB, [oh * ow * width], elem, name="pool_count")[0], 0, epb)
    if one_count:  # one window: its count is one vreduce of the indicator, spread over a block
        positions = pool.need[0] * nw
        _instruction(k, isa.VReduceSumOp, [cnt, ind], 1, positions, [1, 1], [1, 1], {})
        k.b.add(move_op(isa.CopyUbToUbOp, cnt.buf, ind.buf, [width], src_strides=[0]))
        pixel_pass(k, isa.VDivOp, [acc, acc, View(ind, 0, ow, 1)], (pool.planes, oh, ow))
        return
    if blocked:
        cview = View(cnt, 0, ow, 1)
        emit_flat(k, isa.VDupOp, [cnt], oh * ow * width, _scalar(0.0))
        window_pass(k, isa.VAddOp, cview, View(ind, 0, nw, 1), pool, 1)
        pixel_pass(k, isa.VDivOp, [acc, acc, cview], (pool.planes, oh, ow))
        return
    _gathered_window(k, pool, isa.VAddOp, cnt, ind, 1, 0.0)
    every = Operand(k.b.buffer(isa.MemSpace.UB, [count], elem, name="pool_counts")[0], 0, epb)
    k.b.add(move_op(isa.CopyUbToUbOp, cnt.buf, every.buf, [pool.planes, oh * ow], src_strides=[0, 1]))
    emit_flat(k, isa.VDivOp, [acc.at, acc.at, every], count)


def convert(k: Context, dst: Operand, src: Operand, count: int) -> None:
    emit_flat(k, isa.VConvOp, [dst, src], count)


# --------------------------------------------------------------------------------------
# NC1HWC0
# --------------------------------------------------------------------------------------


def _lower_blocked(k: Context, op: t.VPoolOp, pool: Pool, src: Operand, dst: Operand, h: Index, w: Index,
                   elem: Attribute, padded: bool = False) -> None:
    if pool.c0 != src.epb:
        raise _fail(op, f"an NC1HWC0 tile needs one {k.target.vector.block_bytes}-byte block per pixel "
                        f"(c0 = {src.epb} for {elem}), got c0 = {pool.c0}")
    (sh_, sw_), (nh, nw), (oh, ow) = pool.src_hw, pool.need, pool.out_hw
    out_count = pool.planes * oh * ow * pool.c0
    is_max = pool.mode == "max"
    wide = not is_max and isa.itemsize(elem) < 4
    tree = is_global(pool)  # folded in place: on the compact copy, never on the source tile
    # a source tile that is exactly the valid window needs no copy before its f32 conversion
    compact = pool.src_hw == pool.need and (padded or pool.reads_only_valid(h, w))
    clean = clean_copy(k, pool, src, h, w, -math.inf if is_max else 0.0, elem,
                       force=(wide and not compact) or (tree and not wide), padded=padded)
    source = View(src, sh_ * sw_, sw_, 1) if clean is None else View(clean, nh * nw, nw, 1)
    acc = View(dst, oh * ow, ow, 1)
    if wide:  # f16 average: f32 pixels of two blocks
        blocks = isa.itemsize(f32) // isa.itemsize(elem)
        wsrc = Operand(k.b.buffer(isa.MemSpace.UB, [pool.planes * nh * nw * pool.c0], f32, name="pool_in32")[0],
                       0, _epb(k.target, f32))
        convert(k, wsrc, source.at, pool.planes * nh * nw * pool.c0)
        source = View(wsrc, nh * nw, nw, 1, blocks)
        acc = View(Operand(k.b.buffer(isa.MemSpace.UB, [out_count], f32, name="pool_acc")[0], 0, wsrc.epb),
                   oh * ow, ow, 1, blocks)
    if tree:
        tree_pass(k, isa.VMaxOp if is_max else isa.VAddOp, acc, source, nh * nw, pool.planes)
    elif separable(pool.mode, pool.kernel, pool.out_hw, pool.need):
        separable_pass(k, acc, source, pool, pool.planes, elem)
    else:
        emit_flat(k, isa.VDupOp, [acc.at], out_count, _scalar(-math.inf if is_max else 0.0))
        window_pass(k, isa.VMaxOp if is_max else isa.VAddOp, acc, source, pool, pool.planes)
    if is_max:
        return
    divide_by_counts(k, pool, acc, out_count, h, w, f32 if wide else elem, blocked=True)
    if wide:
        convert(k, dst, acc.at, out_count)


# --------------------------------------------------------------------------------------
# NCHW: one element per pixel, gathered per kernel position
# --------------------------------------------------------------------------------------


def _gathered_window(k: Context, pool: Pool, cls: type[isa._VectorOp], acc: Operand, src: Operand, planes: int,
                     init: float) -> None:
    """acc (contiguous [planes, OH, OW]) = <cls> over the kernel positions of src (compact
    [planes, need_h, need_w]): each position is gathered to a contiguous temporary."""
    (kh, kw), (sh, sw), (dh, dw) = pool.kernel, pool.strides, pool.dilations
    (oh, ow), (nh, nw) = pool.out_hw, pool.need
    ty = acc.buf.type
    assert isinstance(ty, MemRefType)
    n = planes * oh * ow
    tmp = Operand(k.b.buffer(isa.MemSpace.UB, [n], ty.element_type, name="pool_tap")[0], 0, acc.epb)
    emit_flat(k, isa.VDupOp, [acc], n, _scalar(init))
    with _positions(k, kh, "kh") as a, _positions(k, kw, "kw") as b:
        off = k.b.add_(src.offset, k.b.add_(k.b.mul(a, dh * nw), k.b.mul(b, dw)))
        k.b.add(move_op(isa.CopyUbToUbOp, src.buf, tmp.buf, [planes, oh, ow], src_offset=k.b.offset(off),
                                 src_strides=[nh * nw, sh * nw, sw]))
        emit_flat(k, cls, [acc, acc, tmp], n)


def _lower_planar(k: Context, op: t.VPoolOp, pool: Pool, src: Operand, dst: Operand, h: Index, w: Index,
                  elem: Attribute) -> None:
    (nh, nw), (oh, ow) = pool.need, pool.out_hw
    is_max = pool.mode == "max"
    wide = not is_max and isa.itemsize(elem) < 4
    clean = clean_copy(k, pool, src, h, w, -math.inf if is_max else 0.0, elem, force=True)
    assert clean is not None
    n_in, n_out = pool.planes * nh * nw, pool.planes * oh * ow
    acc = dst
    if wide:
        wsrc = Operand(k.b.buffer(isa.MemSpace.UB, [n_in], f32, name="pool_in32")[0], 0, _epb(k.target, f32))
        convert(k, wsrc, clean, n_in)
        clean = wsrc
        acc = Operand(k.b.buffer(isa.MemSpace.UB, [n_out], f32, name="pool_acc")[0], 0, wsrc.epb)
    _gathered_window(k, pool, isa.VMaxOp if is_max else isa.VAddOp, acc, clean, pool.planes,
                     -math.inf if is_max else 0.0)
    if is_max:
        return
    divide_by_counts(k, pool, View(acc, 0, 0, 1), n_out, h, w, f32 if wide else elem, blocked=False)
    if wide:
        convert(k, dst, acc, n_out)


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def scratch_bytes(op: t.VPoolOp, target: targets.Target) -> int:
    """UB bytes of the temporaries `lower_vpool` declares for `op` (each aligned, none
    shared): what a tiling that fills UB has to leave free beside the source and dest."""
    src_ty, dst_ty = op.source.type, op.dest.type
    assert isinstance(src_ty, MemRefType) and isinstance(dst_ty, MemRefType)
    return pool_scratch_bytes(op.mode.data, tuple(src_ty.get_shape()), tuple(dst_ty.get_shape()), _pair(op.kernel),
                              _pair(op.strides), _pair(op.dilations), src_ty.element_type, target)


def pool_scratch_bytes(mode: str, src: Sequence[int], dst: Sequence[int], kernel: Sequence[int],
                       strides: Sequence[int], dilations: Sequence[int], elem: Attribute,
                       target: targets.Target) -> int:
    """`scratch_bytes` of a vpool with these UB tiles ([n, c1, H, W, c0] or [n, c, H, W]):
    the tiler sizes its plans with it before any vpool exists, so that the plan it picks is
    the one plan-local-memory can place."""
    c0 = src[4] if len(src) == 5 else 1
    planes = math.prod(src[:2])
    out_hw = (dst[2], dst[3])
    nh, nw = ((o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_hw, strides, kernel, dilations))
    (oh, ow) = out_hw
    size, wide_size = isa.itemsize(elem), isa.itemsize(f32)
    n_in, n_out = planes * nh * nw * c0, planes * oh * ow * c0
    wide = mode == "avg" and size < wide_size
    ct = wide_size if wide else size
    parts = [n_in * size]
    if wide:
        parts += [n_in * wide_size, n_out * wide_size]
    if c0 == 1:
        parts.append(n_out * ct)  # the gathered kernel position
    elif separable(mode, kernel, out_hw, (nh, nw)) and not (out_hw == (1, 1) and (nh, nw) == tuple(kernel)):
        parts.append(planes * nh * ow * c0 * size)  # the row maxima (separable_pass)
    if mode == "avg":
        width = _epb(target, f32 if wide else elem) if c0 > 1 else 1
        ind = width
        if c0 > 1 and oh == ow == 1 and (nh, nw) == tuple(kernel) and 2 < nh * nw <= target.vector.bytes_per_repeat // ct:
            ind = 1  # a global window's indicator: one element per position (_one_count)
        parts += [target.vector.block_bytes, nh * nw * ind * ct, oh * ow * width * ct]
        if c0 == 1:  # the count map's gathered position, and the map for every plane
            parts += [oh * ow * ct, n_out * ct]
    return sum(isa.align_up(p, target.alignment.ub) for p in parts)


def padded_by_copy(k: Context, op: t.VPoolOp, pool: Pool) -> bool:
    """Was the pool's source tile last written, in its block, by one copy from the
    pool's input in GM that starts at the window origin (h, w), covers every position the
    windows read, and reads positions outside the input as the pool's neutral value (-inf
    for max, 0 for a sum) or stays inside it? Then the source tile is already what the
    clean copy would make (tile_vector pads a max pool's input with -inf), and the windows
    read it directly: one V instruction of the source's bytes less per tile."""
    neutral = -math.inf if pool.mode == "max" else 0.0
    prev = op.prev_op
    while prev is not None and op.source not in prev.operands:
        prev = prev.prev_op
    if not isinstance(prev, t.CopyOp) or prev.dest != op.source or prev.window or prev.perm is not None:
        return False
    if prev.pad is not None and float(prev.pad.value.data) != neutral:
        return False
    src_ty, tile_ty = prev.source.type, op.source.type
    assert isinstance(src_ty, MemRefType) and isinstance(tile_ty, MemRefType)
    shape, sizes = src_ty.get_shape(), t._ints(prev.sizes)
    return (len(shape) == 5 and tuple(shape[2:4]) == pool.in_size and tuple(sizes) == tuple(tile_ty.get_shape())
            and (prev.strides is None or set(t._ints(prev.strides)) == {1})
            and all(k.index(v) == 0 for v in prev.dest_offsets)
            and (k.index(prev.source_offsets[2]), k.index(prev.source_offsets[3])) == (k.index(op.h), k.index(op.w))
            and all(n >= need for n, need in zip(sizes[2:4], pool.need)))


def lower_vpool(k: Context, op: t.VPoolOp) -> None:
    """Append the Vector instructions of `op` at `k.b`'s insertion point."""
    src_ty = op.source.type
    assert isinstance(src_ty, MemRefType)
    elem = src_ty.element_type
    if not dtypes.is_float(elem):
        raise _fail(op, f"pools on {elem} are not supported on the Vector unit (float tiles only)")
    pool = Pool.of(op)
    if pool.mode not in t.POOL_MODES:
        raise _fail(op, f"unknown pool mode '{pool.mode}'")
    src_buf, src_off = k.buffer(op.source)
    dst_buf, dst_off = k.buffer(op.dest)
    src, dst = _operand(k, src_buf, src_off), _operand(k, dst_buf, dst_off)
    h, w = k.index(op.h), k.index(op.w)
    if src_ty.get_num_dims() == 5:
        _lower_blocked(k, op, pool, src, dst, h, w, elem, padded_by_copy(k, op, pool))
    else:
        _lower_planar(k, op, pool, src, dst, h, w, elem)
