"""Vector kernels of the `tile` pass: elementwise chains, reductions (Softmax, LayerNorm,
Reduce*, LRN), pools, BatchNorm, Transpose and TransData (data-movement ops such as
Concat are lowering/tile_move.py's).

The Ascend C vector paradigm: CopyIn (GM -> UB), Compute (vector ops on UB), CopyOut
(UB -> GM), with double-buffered UB tiles. A kernel iterates over the tiles of one
*iteration space* -- the storage shape of its output (or of the formatted side of a
TransData) -- and every value of the group gets a *dim map* saying which rectangle of it a
tile needs: a dim follows an iteration dim (`offset = tile offset * scale - shift`,
`size = (tile size - 1) * scale + extent`: identity, a pool's halo, the C1 -> C of a
format conversion), or is a fixed span from 0 (a reduced dim, a broadcast dim of size 1).
Maps propagate from the output backwards through the group's ops (rules below); a dim
that a reduction or a storage block (C0) needs whole is never split.

The tile loop is one flattened `scf.for` over the tiles, split into contiguous ranges over
`block_dim` cores. Each iteration copies the input rectangles into UB (out-of-bounds
elements read as 0, or -inf before a max pool that reads its input as stored), runs the group's ops on the tiles in one
`tile.vector` (a max/avg pool first runs as `tile.vpool`) and copies the results out.
Tile sizes come from the cost model (lowering/tile_cost.py) among the shapes that fit UB,
with GM traffic priced as the simulator moves it (`GmPaths`: reads from the HBM, or from
the L2 when an earlier launch wrote them, `l2_resident`; writes into the L2).
When no tile holds a whole reduced extent (a GlobalAveragePool over a 112x112 plane, a
ReduceSum over 200k elements), a kernel with one reduction visits that extent in chunks
and accumulates (`Chunk`, `emit_chunked`); a normalization (Softmax, LayerNorm) still
needs its whole row and is refused by name.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.layout import Format
from ge.lowering import fusion_rules as fr
from ge.lowering import to_isa
from ge.lowering.isa_vector import relu_after
from ge.lowering.tile_cost import Machine, align, op_program, pipelined, pool_program
from ge.lowering.tile_ir import KernelBuilder, tile_type, written_inputs
from ge.targets import Target
from ge.transforms.graph_utils import make_constant
from ge.transforms.tile_capacity import node_names


class Unsupported(Exception):
    """The group has a structure the tile level cannot tile (the pass names the kernel)."""


@dataclass(frozen=True)
class Dim:
    """How one dim of a value follows the iteration space (see the module docstring)."""

    it: int = -1  # iteration dim; -1: a fixed span [-shift, extent - shift)
    scale: int = 1
    shift: int = 0
    extent: int = 1

    @property
    def fixed(self) -> bool:
        return self.it < 0

    def size(self, tiles: Sequence[int]) -> int:
        return self.extent if self.fixed else (tiles[self.it] - 1) * self.scale + self.extent

    def scaled(self, k: int) -> Dim:
        """This dim measured in units k times smaller (C1 blocks -> channels)."""
        if self.fixed:
            return Dim(extent=self.extent * k)
        if self.shift or self.extent != 1:
            raise Unsupported("a format conversion after a windowed op")
        return Dim(self.it, self.scale * k, 0, k)


def span(n: int) -> Dim:
    return Dim(extent=n)


def shape_of(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def fmt_of(v: SSAValue) -> Format | None:
    enc = lt.layout_of(v.type)
    return None if enc is None else enc.fmt


def block_dims(v: SSAValue) -> tuple[int, ...]:
    """Storage dims that hold one block of a format (never split)."""
    f = fmt_of(v)
    rank = len(shape_of(v))
    if f == Format.NC1HWC0:
        return (4,)
    if f in (Format.FRACTAL_NZ, Format.FRACTAL_Z):
        return (rank - 2, rank - 1)
    return ()


# --------------------------------------------------------------------------------------
# Dim-map propagation
# --------------------------------------------------------------------------------------


class Maps:
    """Dim maps of the values of one group body, and the iteration dims kept whole."""

    def __init__(self, anchor: SSAValue):
        self.anchor = anchor
        self.extents = shape_of(anchor)
        self.full: set[int] = set()
        self.maps: dict[SSAValue, list[Dim]] = {}
        self.set(anchor, [Dim(i) if d > 1 else span(1) for i, d in enumerate(self.extents)])

    def set(self, v: SSAValue, dims: list[Dim]) -> None:
        shape = shape_of(v)
        if len(dims) != len(shape):
            raise Unsupported(f"rank mismatch for {v.name_hint or 'a value'}")
        # a dim of size 1 is one element in every tile, unless it is a scaled view of a
        # block dim (the C of a 1-channel tensor converted to NC1HWC0 reads C0 channels)
        dims = [span(1) if n == 1 and d.scale == 1 and d.extent == 1 and not d.shift else d for d, n in zip(dims, shape)]
        old = self.maps.get(v)
        if old is None:
            self.maps[v] = dims
            return
        merged = []
        for a, b, n in zip(old, dims, shape):
            merged.append(self._merge(a, b, n))
        self.maps[v] = merged

    def _merge(self, a: Dim, b: Dim, n: int) -> Dim:
        if a == b:
            return a
        for x, y in ((a, b), (b, a)):
            if x.fixed and x.extent == n and not x.shift and not y.fixed and y == Dim(y.it) and self.extents[y.it] == n:
                self.full.add(y.it)
                return span(n)
        raise Unsupported("two ops of the group need different tiles of one value")

    def keep_whole(self, dims: list[Dim], which: Sequence[int]) -> None:
        for i in which:
            if not dims[i].fixed:
                if dims[i] != Dim(dims[i].it):
                    raise Unsupported("a reduced dim is also windowed")
                self.full.add(dims[i].it)


def _aligned(operand: SSAValue, result_dims: list[Dim], result: SSAValue) -> list[Dim]:
    """An elementwise operand's dims: right-aligned to the result's, size-1 dims broadcast."""
    s, r = shape_of(operand), shape_of(result)
    off = len(r) - len(s)
    if off < 0:
        raise Unsupported("an operand of higher rank than the result")
    return [span(1) if n == 1 and r[off + j] != 1 else result_dims[off + j] for j, n in enumerate(s)]


def fine_to_plain(fine: SSAValue, dims: list[Dim], plain: SSAValue) -> list[Dim]:
    """Dims of the plain side of a TransData from those of its formatted side."""
    enc = lt.layout_of(fine.type)
    if enc is None or lt.layout_of(plain.type) is not None:
        raise Unsupported("a conversion between two storage formats")
    rank = len(enc.shape)
    if enc.fmt == Format.NC1HWC0:
        n, c1, h, w, _ = dims
        k = shape_of(fine)[4]
        nchw = [n, h, w, c1.scaled(k)] if enc.origin_fmt == Format.NHWC else [n, c1.scaled(k), h, w]
        return nchw[4 - rank:]
    if enc.fmt == Format.FRACTAL_NZ:
        *batch, n1, m1, _, _ = dims
        s = shape_of(fine)
        return [*batch, m1.scaled(s[-2]), n1.scaled(s[-1])]
    raise Unsupported(f"TransData from {enc.fmt}")


def _channel_dims(v: SSAValue) -> tuple[int, ...]:
    if fmt_of(v) == Format.NC1HWC0:
        return (1, 4)
    if fmt_of(v) is None and len(shape_of(v)) >= 2:
        return (1,)
    raise Unsupported(f"channel ops on {fmt_of(v)}")


def backward(op: Operation, m: Maps) -> None:
    """Give the operands of `op` their dims from its results' dims."""
    if not all(r in m.maps for r in op.results):
        if any(r in m.maps for r in op.results) or not op.results:
            raise Unsupported(f"{op.name} with a result the kernel does not compute")
        return
    res = op.results[0]
    rd = m.maps[res]
    if isinstance(op, g.BatchNormOp):
        m.set(op.input, rd)
        if fmt_of(res) == Format.NC1HWC0:
            m.keep_whole(rd, [4])
            c = rd[1].scaled(shape_of(res)[4])
        elif fmt_of(res) is None:
            c = rd[1]
        else:
            raise Unsupported(f"batch_norm on {fmt_of(res)}")
        for p in op.operands[1:]:
            m.set(p, [c])
    elif isinstance(op, g.DequantizeOp):  # the scale follows the tile along `axis` (or is one value)
        m.set(op.input, rd)
        if math.prod(shape_of(op.scale)) == 1:  # one value (rank 0 or [1]): read once per tile
            m.set(op.scale, [span(1)] * len(shape_of(op.scale)))
        elif shape_of(op.scale):
            if fmt_of(res) is not None:
                raise Unsupported(f"a standalone dequantize on {fmt_of(res)}")
            m.set(op.scale, [rd[op.axis.value.data]])
    elif isinstance(op, g.ConstantOp):  # a one-value constant inside the kernel: an immediate
        if math.prod(shape_of(res)) != 1:
            raise Unsupported("a constant tensor inside a kernel")
    elif fr.is_elementwise(op):  # the Elementwise interface: operand tiles follow the result's
        for v in op.operands:
            m.set(v, _aligned(v, rd, res))
    elif isinstance(op, g.SoftmaxOp | g.LogSoftmaxOp):
        if fmt_of(res) is not None:
            raise Unsupported(f"{op.name} on a storage format")
        m.keep_whole(rd, [op.axis.value.data])
        m.set(op.input, rd)
    elif isinstance(op, g.LayerNormOp):
        if fmt_of(res) is not None:
            raise Unsupported(f"{op.name} on a storage format")
        axis = op.axis.value.data
        m.keep_whole(rd, range(axis, len(rd)))
        m.set(op.input, rd)
        for p in op.operands[1:]:
            m.set(p, _aligned(p, rd, res))
    elif g.has_trait(op, g.Reduction):  # reduced dims whole, the others follow the result
        if fmt_of(res) is not None:
            raise Unsupported(f"{op.name} on a storage format")
        axes = set(g.get_ints(op.properties, "axes"))
        xs = shape_of(op.input)
        keep = op.keepdims is not None
        dims, j = [], 0
        for i, n in enumerate(xs):
            if i in axes:
                dims.append(span(n))
                j += keep
            else:
                dims.append(rd[j])
                j += 1
        m.set(op.input, dims)
    elif isinstance(op, g.LrnOp):
        m.keep_whole(rd, _channel_dims(res))
        m.set(op.input, rd)
    elif isinstance(op, g.GlobalPoolOp):
        xs = shape_of(op.input)
        m.set(op.input, [rd[i] if i not in (2, 3) else span(xs[i]) for i in range(len(xs))])
    elif isinstance(op, g.MaxPoolOp | g.AvgPoolOp):
        kernel, strides = g.get_ints(op.properties, "kernel_shape"), g.get_ints(op.properties, "strides")
        pads, dil = g.get_ints(op.properties, "pads"), g.get_ints(op.properties, "dilations", (1, 1))
        dims = list(rd)
        for k, i in enumerate((2, 3)):
            d = rd[i]
            window = (kernel[k] - 1) * dil[k] + 1
            if d.fixed:  # the whole output extent (e.g. one pixel) in every tile
                if d.shift:
                    raise Unsupported("a pool after a windowed op")
                dims[i] = Dim(shift=pads[k], extent=(d.extent - 1) * strides[k] + window)
                continue
            if d != Dim(d.it):
                raise Unsupported("a pool after a windowed op")
            dims[i] = Dim(d.it, strides[k], pads[k], window)
        m.set(op.input, dims)
    elif isinstance(op, g.TransposeOp):
        perm = g.get_ints(op.properties, "perm")
        dims = [span(1)] * len(perm)
        for i, p in enumerate(perm):
            dims[p] = rd[i]
        m.set(op.input, dims)
    elif isinstance(op, lt.TransDataOp):
        if lt.layout_of(res.type) is None:
            raise Unsupported("TransData to a plain tensor, away from the kernel's output")
        m.set(op.input, fine_to_plain(res, rd, op.input))
    elif isinstance(op, fr.VIEW_OPS):
        raise Unsupported(f"{op.name} inside a kernel")
    else:
        raise Unsupported(f"{op.name} has no vector tiling")


def analyze(block: Block) -> Maps:
    """Dim maps of every value of a group body, from one of its outputs (the largest, the
    last computed first) so that every output is covered."""
    yielded = list(dict.fromkeys(block.last_op.operands))
    order = {op: i for i, op in enumerate(block.ops)}
    ranked = sorted(yielded, key=lambda v: (-math.prod(shape_of(v)), -order.get(v.owner, -1)))
    error: Unsupported | None = None
    for anchor in ranked:
        try:
            return _analyze_from(block, anchor, yielded)
        except Unsupported as e:
            error = error or e
    assert error is not None
    raise error


def _analyze_from(block: Block, anchor: SSAValue, yielded: list[SSAValue]) -> Maps:
    owner = anchor.owner
    if isinstance(owner, lt.TransDataOp) and lt.layout_of(anchor.type) is None:
        # TransData to a plain tensor: iterate over its formatted input, the finer side.
        m = Maps(owner.input)
        m.set(anchor, fine_to_plain(owner.input, m.maps[owner.input], anchor))
    else:
        m = Maps(anchor)
    for op in reversed(list(block.ops)[:-1]):
        if isinstance(op, lt.TransDataOp) and op.input is m.anchor:
            continue
        backward(op, m)
    for v in yielded:
        if v not in m.maps:
            raise Unsupported("an output the kernel's tiles do not cover")
    for v in list(m.maps):
        m.keep_whole(m.maps[v], block_dims(v))
    _check_reductions_exact(block, m)
    return m


def _check_reductions_exact(block: Block, m: Maps) -> None:
    """A reduction's tile must hold exactly the reduced dims: a tile that reaches past one
    (the channels of a plain tensor converted to NC1HWC0 in the same kernel, rounded up to
    C0) would fold the padding into the result."""
    for op in block.ops:
        if isinstance(op, g.SoftmaxOp | g.LogSoftmaxOp):
            axes = [op.axis.value.data % len(shape_of(op.input))]
        elif isinstance(op, g.LayerNormOp):
            axes = list(range(op.axis.value.data % len(shape_of(op.input)), len(shape_of(op.input))))
        elif isinstance(op, g.ReduceOp):
            axes = list(g.get_ints(op.properties, "axes")) or list(range(len(shape_of(op.input))))
        else:
            continue
        dims, shape = m.maps.get(op.input), shape_of(op.input)
        if dims is None:
            continue
        for i in axes:
            d = dims[i % len(shape)]
            if d.shift or d.size(m.extents) > shape[i % len(shape)]:
                raise Unsupported(f"{op.name} over a dim its tile pads past the tensor (to a storage block)")


# --------------------------------------------------------------------------------------
# Plan: tile sizes from the cost model
# --------------------------------------------------------------------------------------


def nbytes(v: SSAValue, shape: Sequence[int]) -> int:
    return numpy_dtype(v.type.element_type).itemsize * math.prod(shape)


@dataclass
class VectorPlan:
    tiles: tuple[int, ...]
    counts: tuple[int, ...]
    buffers: int
    blocks: int
    cycles: float
    ub_bytes: int
    candidates: int = 0
    chunk: int = 0  # the reduced extent visited in chunks of this length (0: whole)

    @property
    def ntiles(self) -> int:
        return math.prod(self.counts)

    def describe(self) -> str:
        chunks = f", reduced in chunks of {self.chunk}" if self.chunk else ""
        return (f"tile [{', '.join(map(str, self.tiles))}] x{self.ntiles} on {self.blocks} cores{chunks}, "
                f"UB {self.ub_bytes} B (buffers {self.buffers})")


@dataclass
class VectorKernel:
    """One group body, analyzed: what it reads, computes and writes per tile."""

    block: Block
    maps: Maps
    pool: Operation | None  # a max/avg pool run as tile.vpool before the body
    inputs: list[SSAValue]  # group arguments copied into UB
    region_args: list[SSAValue]  # values the tile.vector body takes
    region_ops: list[Operation]
    outputs: list[SSAValue] = field(default_factory=list)

    pool_source: SSAValue | None = None  # a plain input the pool's input is converted from in UB
    chunk: Chunk | None = None  # how the reduced extent would be visited in chunks (None: it cannot)
    chunk_size: int = 0  # the chunk length a plan is being sized or emitted for (0: whole extent)
    chunk_reason: str = ""  # why the reduced extent cannot be chunked (when chunk is None)
    resident: frozenset = frozenset()  # inputs an earlier launch of the run wrote (`l2_resident`)

    @classmethod
    def of(cls, block: Block) -> VectorKernel:
        ops = list(block.ops)[:-1]
        maps = analyze(block)
        lead = 0
        while lead < len(ops) and isinstance(ops[lead], lt.TransDataOp):
            lead += 1
        first = ops[lead] if lead < len(ops) else None
        pool = first if isinstance(first, g.MaxPoolOp | g.AvgPoolOp) else None
        if any(isinstance(o, g.MaxPoolOp | g.AvgPoolOp) for o in ops if o is not pool):
            raise Unsupported("a pool that is not the first op of its group")
        region_ops = [o for o in ops if o is not pool]
        source = None
        if pool is not None:
            x = pool.operands[0]
            conv = x.owner
            if isinstance(conv, lt.TransDataOp) and conv in ops[:lead] and all(u.operation is pool for u in x.uses):
                # the copy-in converts the plain NCHW input to the pool's NC1HWC0 tile
                enc = lt.layout_of(x.type)
                if enc is None or enc.fmt != Format.NC1HWC0 or lt.layout_of(conv.input.type) is not None or len(enc.shape) != 4:
                    raise Unsupported("a pool input converted from a format other than NCHW")
                source = conv.input
                region_ops.remove(conv)
        used = {v for o in region_ops for v in o.operands} | set(block.last_op.operands)
        pool_in = None if pool is None else (source or pool.operands[0])
        inputs = [a for a in block.args if a in used or a is pool_in]
        region_args = [a for a in block.args if a in used]
        if pool is not None and pool.results[0] in used:
            region_args.append(pool.results[0])
        for v in (*inputs, *region_args):
            if v not in maps.maps:
                raise Unsupported("an input the kernel's tiles do not cover")
        kern = cls(block, maps, pool, inputs, region_args, region_ops, list(block.last_op.operands), source)
        kern.resident = l2_resident(block)
        try:
            kern.chunk = Chunk.of(kern)
        except Unsupported as e:
            kern.chunk_reason = str(e)
        return kern

    def shape(self, v: SSAValue, tiles: Sequence[int], size: int | None = None) -> tuple[int, ...]:
        """The tile of v; a value the chunked reduction reads has `size` (default: the
        planned chunk length) along the chunked dim."""
        dims = [d.size(tiles) for d in self.maps.maps[v]]
        size = self.chunk_size if size is None else size
        if size and self.chunk is not None and v in self.chunk.axis:
            dims[self.chunk.axis[v]] = size
        return tuple(dims)

    def ub_bytes(self, tiles: Sequence[int], buffers: int, target: Target) -> int:
        alignment = target.alignment.ub
        bufs = [*self.inputs, *self.stored()]
        if self.pool is not None:
            bufs += [self.pool.operands[0], self.pool.results[0]]
        total = sum(align(nbytes(v, self.shape(v, tiles)), alignment) for v in dict.fromkeys(bufs)) * buffers
        if self.chunk_size and self.chunk is not None:  # remainder-chunk inputs, the partial and the accumulator
            red = self.chunk.red.results[0]
            total += sum(align(nbytes(v, self.shape(v, tiles)), alignment) for v in self.inputs if v in self.chunk.axis)
            total += align(nbytes(red, self.shape(red, tiles)), alignment) * 2
            if self.chunk.extent % self.chunk_size:  # the short chunk's body has scratch of its own
                total += self.scratch_bytes(tiles, target)
        return total + self.temp_bytes(tiles, target) + self.scratch_bytes(tiles, target) + \
            self.pool_scratch_bytes(tiles, target)

    def pool_scratch_bytes(self, tiles: Sequence[int], target: Target) -> int:
        """The UB the vpool's lowering declares beside its source and dest (not double
        buffered): the clean copy of the source window alone is as large as the source tile."""
        if self.pool is None:
            return 0
        from ge.lowering.isa_pool import pool_scratch_bytes

        x, y, props = self.pool.operands[0], self.pool.results[0], self.pool.properties
        return pool_scratch_bytes("max" if isinstance(self.pool, g.MaxPoolOp) else "avg", self.shape(x, tiles),
                                  self.shape(y, tiles), g.get_ints(props, "kernel_shape"), g.get_ints(props, "strides"),
                                  g.get_ints(props, "dilations", (1, 1)), x.type.element_type, target)

    def scratch_bytes(self, tiles: Sequence[int], target: Target) -> int:
        """UB the vector lowering of a reduction takes beside its operands and result (an
        estimate, from lowering/isa_vector.py): a reduction's input as f32 rows (its result
        is small); an f32 copy of a narrower input; a normalization's f32 rows (an f16
        input is converted straight into them) and one more f32 row buffer for the squares
        of a LayerNorm or the exponentials of a LogSoftmax (an f16 LayerNorm's in detail:
        `layer_norm_scratch`)."""
        need = 0
        for op in self.region_ops:
            norm = g.has_trait(op, g.Normalization)
            if not (norm or g.has_trait(op, g.Reduction) or isinstance(op, g.GlobalPoolOp)):
                continue
            x = op.operands[0]
            elems = math.prod(self.shape(x, tiles))
            wide = numpy_dtype(x.type.element_type).itemsize == 4
            copies = 1 + (not isinstance(op, g.SoftmaxOp)) if norm else (not wide) + 1
            if isinstance(op, g.LayerNormOp) and numpy_dtype(x.type.element_type).itemsize == 2:
                need = max(need, self.layer_norm_scratch(op, tiles, target))
                continue
            need = max(need, 4 * elems * copies)
        return need

    def layer_norm_scratch(self, op: g.LayerNormOp, tiles: Sequence[int], target: Target) -> int:
        """isa_vector's one-pass LayerNorm of f16 rows beside its operands: the f32 rows, their
        squares (in the f32 result of a widening cast, its only user, when there is one:
        `widened`), the rows' first halving when their sum's plan starts with one
        (isa_vector.row_plan), the two sums' group-reduction values (at most a seventh of
        the rows each) and the scale and bias as f32 rows."""
        from ge.lowering.isa_vector import row_plan

        shape = self.shape(op.operands[0], tiles)
        n = math.prod(shape[op.axis.value.data % len(shape):])
        r = math.prod(shape) // max(n, 1)
        f32_block = target.vector.block_bytes // 4
        ld = n if r == 1 else align(n, f32_block)
        need = 4 * r * ld * (1 if widened(op, r, n, f32_block) else 2)
        per = target.vector.bytes_per_repeat // 4
        if n > per:
            half = -(-n // per) - -(-n // per) // 2
            plan = row_plan(target, "sum", r, n, r * half * per, False, 2)
            if plan is None or plan[0].startswith("fold"):
                need += 4 * r * half * per
        return need + 2 * 4 * -(-r * ld // 7) + 2 * 4 * n

    def stored(self) -> list[SSAValue]:
        """Values copied out: the outputs, each once."""
        return list(dict.fromkeys(self.outputs))

    def temp_bytes(self, tiles: Sequence[int], target: Target) -> int:
        """The peak of the region's live intermediate values; a yielded Softmax / LayerNorm
        result is computed in its out buffer (isa_vector's row programs), already counted
        among the stored buffers. (Other yielded values keep their temporary: densenet121's
        BatchNorm + ReLU groups overflowed UB when counted without it.)"""
        stored = {v for v in self.outputs if isinstance(v, OpResult) and g.has_trait(v.op, g.Normalization)}
        for op in self.region_ops:  # an f16 LayerNorm computed straight into its widening cast's result
            if isinstance(op, g.LayerNormOp):
                shape = self.shape(op.operands[0], tiles)
                n = math.prod(shape[op.axis.value.data % len(shape):])
                if widened(op, math.prod(shape) // max(n, 1), n, target.vector.block_bytes // 4):
                    stored.add(op.results[0])
                    cast = next(iter(op.results[0].uses)).operation.results[0]
                    if cast in self.outputs:  # (computed in its out buffer)
                        stored.add(cast)
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(self.region_ops):
            for v in op.operands:
                last[v] = i
        live: dict[SSAValue, int] = {}
        peak = 0
        for i, op in enumerate(self.region_ops):
            for r in op.results:
                live[r] = nbytes(r, self.shape(r, tiles)) if r in self.maps.maps and r not in stored else 0
            peak = max(peak, sum(live.values()))
            for v in op.operands:
                if last.get(v) == i:
                    live.pop(v, None)
        return peak

    def invariant(self, plan: VectorPlan | None = None, counts: Sequence[int] | None = None) -> list[SSAValue]:
        """Inputs whose rectangle is the same in every tile (loaded once, before the loop)."""
        counts = plan.counts if plan is not None else counts
        chunked = self.chunk.axis if self.chunk_size and self.chunk is not None else {}
        return [v for v in self.inputs
                if v not in chunked and all(d.fixed or counts[d.it] == 1 for d in self.maps.maps[v])]

    def inside_bytes(self, v: SSAValue, tiles: Sequence[int], counts: Sequence[int]) -> float:
        """The bytes of v's tile inside the tensor, averaged over the tiles: what a copy in
        takes from GM (the rest of the rectangle -- a halo, the channels an NC1HWC0 tile
        pads to C0 -- is the pad value, written into UB at the DMA's rate but read from
        nowhere) or a copy out writes (clipped at the tensor's edge)."""
        size = float(numpy_dtype(v.type.element_type).itemsize)
        for d, n in zip(self.maps.maps[v], shape_of(v)):
            if d.fixed:
                size *= max(0, min(d.extent - d.shift, n) - max(-d.shift, 0))
                continue
            step, width, count = tiles[d.it] * d.scale, d.size(tiles), counts[d.it]
            size *= _inside(step, d.shift, width, n, count) / count
        return size

    def cost(self, mach: Machine, tiles: Sequence[int], blocks: int, double: bool) -> float:
        counts = [math.ceil(e / s) for e, s in zip(self.maps.extents, tiles)]
        once = self.invariant(counts=counts)
        gm = GmPaths.of(mach, blocks)
        tile = {v: self.nbytes_tile(v, tiles) for v in self.inputs}
        inside = {v: self.inside_bytes(v, tiles, counts) for v in (*self.inputs, *self.stored())}
        # the inputs loaded once, before the loop: one start-up (the loop's first load follows
        # their transfers on the same pipe, its own start-up hidden behind them). Every core
        # reads the same bytes: the first fetches them, the others hit the L2 (the 910B's
        # broadcast row of 2 KB: 46 cycles at 43 B/cycle on the 32nd core, not 74 at a
        # 32-core share of the HBM)
        shared = gm.l2 and blocks > 1
        hoisted = sum(gm.hit(tile[v], i == 0) if shared or v in self.resident else gm.load(tile[v], inside[v], i == 0)
                      for i, v in enumerate(once))
        loads = [v for v in self.inputs if v not in once]
        read = sum(inside[v] for v in loads if v not in self.resident)
        hits = sum(tile[v] for v in loads if v in self.resident)
        mte2 = sum(gm.hit(tile[v], False) if v in self.resident else gm.load(tile[v], inside[v], False) for v in loads)
        vec = 0.0
        if self.pool is not None:
            k = g.get_ints(self.pool.properties, "kernel_shape")
            vec += mach.program(pool_program(mach, self.pool, self.shape(self.pool.results[0], tiles), k[0] * k[1],
                                             padded=self.pool_source is None))
        absorbed: set[Operation] = set()  # casts an f16 LayerNorm computes on its way (`widened`)
        reads_in = vec  # the Vector cycles until the last instruction that reads an input tile
        loaded = set(loads)
        first_out = None  # ... and before the first that writes an output tile
        for op in self.region_ops:
            if op in absorbed:
                continue
            if first_out is None and any(r in self.outputs for r in op.results):
                first_out = vec
            shapes = [self.shape(v, tiles) for v in (*op.operands, *op.results) if v in self.maps.maps]
            wide = False
            if isinstance(op, g.LayerNormOp):
                shape = self.shape(op.operands[0], tiles)
                n = math.prod(shape[op.axis.value.data % len(shape):])
                if wide := widened(op, math.prod(shape) // max(n, 1), n, mach.target.vector.block_bytes // 4):
                    absorbed.add(next(iter(op.results[0].uses)).operation)
            program = op_program(mach, op, max(shapes, key=math.prod, default=()), wide)
            if (relu := relu_after(op)) is not None and [i[0] for i in program] == ["vadd"]:
                program = [("vaddrelu", *program[0][1:])]  # the ReLU on the add's pass (isa_vector)
                absorbed.add(relu)
            vec += mach.program(program)
            if any(v in loaded for v in op.operands):
                reads_in = vec
        written = sum(inside[v] for v in self.stored())
        # A DMA pipe issues its next transfer while the one before moves its bytes (the
        # simulator's pipelined pipes): double-buffered loads pay their start-up once (the
        # fill), not per tile (resnet50_b16's input cast + trans_data: loads of 50 + 142
        # cycles back to back every 154 Vector cycles, 17,556 simulated against 112 x 154 +
        # fill and drain); single-buffered, each waits for the stages before it. The stores
        # into one GM tensor have a pipe_barrier between them (insert-sync: their windows
        # may meet), so each pays its start-up (bert_base's head transposes: 81-cycle
        # stores of 4 KB back to back, 40 + 41).
        mte3 = sum(gm.store(inside[v]) for v in self.stored())
        fill = gm.startup2 if loads else 0.0
        if not double:
            mte2 += fill * len(loads)
        port = gm.port(read, written, hits)
        if double and self.chunk_size == 0:
            # Two buffers per tile: a slot is loaded again only once the Vector unit has read
            # it, and written again only once its store has left, so two tiles take at least
            # a load (start-up included) plus the Vector work up to the tile's last read of
            # it, and the Vector work from its first output plus a store (bert_base's f32 ->
            # f16 cast in 768-byte tiles: 66 + 41 cycles per two tiles, 53 per tile, not the
            # 41 of the slowest stage)
            port = max(port, (mte2 + fill + reads_in) / 2, (vec - (first_out or 0.0) + mte3) / 2)
        per_core = math.ceil(math.prod(counts) / blocks)
        if self.chunk_size and self.chunk is not None:  # every tile visits its chunks in turn
            k = math.ceil(self.chunk.extent / self.chunk_size)
            mte2, vec, port = mte2 * k, vec * k, port * k
        # an odd count's last tile: in the last round of the paired loop when the cores split
        # the tiles (isa_builder.pipelined, guarded), else after that loop (pipelined: one
        # core, or tiles that visit chunks -- a loop in the body), its Vector work then after
        # the stores before it; (a pool's coarser estimate keeps the term: without it
        # squeezenet's first pool took 220 tiles, 4,828 simulated cycles against 3,599 with 32)
        chunked = bool(self.chunk_size and self.chunk is not None)
        after = chunked or blocks == 1 or self.pool is not None or not to_isa.GUARDED_ROUNDS
        rest = mte3 if double and per_core > 1 and per_core % 2 and after else 0.0
        cost = hoisted + pipelined(per_core, [mte2, vec, mte3], double, port=port) + rest
        if double and per_core > 0 and not once:
            cost += fill
        return cost

    def nbytes_tile(self, v: SSAValue, tiles: Sequence[int]) -> int:
        """The bytes of v's UB tile (what a copy in moves at the DMA's rate, pad included)."""
        return nbytes(v, self.shape(v, tiles))


@dataclass(frozen=True)
class GmPaths:
    """What one of `blocks` streaming cores' copies to and from GM cost, as the simulator
    times them (runtime/sim_timing.py): a copy in moves its UB tile at the path's rate, and
    the bytes it reads from GM at the core's share of the HBM; a copy out writes into the
    L2 (write-back: its blocks are dirty there, nothing goes to HBM while they fit), at the
    path's rate or the core's share of the L2's bandwidth -- on a chip without an L2, to
    the HBM. So reads and writes are two budgets: the HBM's and the L2's. (The model
    charged the writes at the HBM share with the reads: bert_base's head transposes
    3,621 predicted against 2,138 simulated, resnet50_b16's input cast + trans_data 65,225
    against 18,556, whose f32 loads also counted 16 channels where the tensor has 3.)"""

    startup2: float
    startup3: float
    load_rate: float  # the path's bytes per cycle into UB
    read_share: float  # one core's share of the HBM
    store_rate: float  # min(path, the core's share of where writes go)
    write_share: float
    l2: bool
    hit_rate: float  # an L2 hit's bytes per cycle: min(path, the core's share of the L2)

    @staticmethod
    def of(mach: Machine, blocks: int) -> GmPaths:
        return mach.memo(("vector_gm_paths", blocks), lambda: GmPaths._make(mach.target, max(blocks, 1)))

    @staticmethod
    def _make(tg: Target, blocks: int) -> GmPaths:
        bpc = tg.bytes_per_cycle
        hbm = bpc(tg.dma.hbm_total) / blocks
        l2 = bool(tg.memory.l2 and tg.dma.l2_total)
        write = bpc(tg.dma.l2_total) / blocks if l2 else hbm
        return GmPaths(float(tg.startup.mte2), float(tg.startup.mte3), bpc(tg.dma.gm_to_ub), hbm,
                        min(bpc(tg.dma.ub_to_gm), write), write, l2,
                        min(bpc(tg.dma.l2_to_ub), write) if l2 else min(bpc(tg.dma.gm_to_ub), hbm))

    def load(self, moved: float, read: float, startup: bool = True) -> float:
        """A copy in of a `moved`-byte tile of which `read` bytes come from GM."""
        if moved <= 0:
            return 0.0
        return self.startup2 * startup + max(moved / self.load_rate, read / self.read_share)

    def hit(self, moved: float, startup: bool = True) -> float:
        """A copy in of a `moved`-byte tile that the L2 holds (`l2_resident`)."""
        return self.startup2 * startup + moved / self.hit_rate if moved > 0 else 0.0

    def store(self, nbytes: float, startup: bool = True) -> float:
        """A copy out of `nbytes` (into the L2 where there is one)."""
        return self.startup3 * startup + nbytes / self.store_rate if nbytes > 0 else 0.0

    def port(self, read: float, written: float, hits: float = 0.0) -> float:
        """A tile's reads from the HBM, its writes and its L2 hits at the core's shares of
        the two: the loop's throughput limit."""
        if not self.l2:
            return (read + written + hits) / self.read_share
        return max(read / self.read_share, (written + hits) / self.write_share)


def l2_resident(block: Block) -> frozenset[SSAValue]:
    """The arguments of group body `block` that an earlier launch of the run wrote
    (`bufferize` lists them on the kernel: `l2_inputs`, a fusion probe's kernel too, so a
    probe's tiling reused by the tile stage prices them the same) and that fit the L2 (as
    `tile_cube.WARM_INPUTS`): in a run they are still there, and a copy in hits (the
    simulator keeps the L2 across launches). bert_base's head transposes read the
    projection just written: 2,138 cycles simulated in 16 KB tiles, 2,265 in 4 KB ones,
    which a cold read from the HBM ranks the other way (2,653 against 2,558 with a cold
    L2). resnet50_b16's max pool reads conv1's 25.7 MB output (more than half the 32 MB L2,
    the bound before): modeled 24,769 cycles at the HBM share against 14,844 simulated,
    14,568 as hits."""
    written = written_inputs(block)
    untiled = block.parent_op()  # the kernel's tile.untiled body, inside the kernel, inside the module
    module = untiled.parent_op().parent_op() if written else None
    if module is None:
        return frozenset()
    from ge.targets import target_of

    target = target_of(module)
    if target is None:
        return frozenset()
    return frozenset(a for i, a in enumerate(block.args)
                     if i in written and nbytes(a, shape_of(a)) <= target.memory.l2)


@functools.lru_cache(maxsize=4096)
def _inside(step: int, shift: int, width: int, n: int, count: int) -> int:
    """The elements of [0, n) that `count` windows [t step - shift, + width) cover, summed."""
    if not shift and width == step:  # the tiles side by side: all of [0, n) they reach
        return min(n, count * step)
    return sum(max(0, min(t * step - shift + width, n) - max(t * step - shift, 0)) for t in range(count))


def _sizes(extent: int) -> list[int]:
    """Candidate tile sizes along one dim: the whole dim, powers of two and even splits."""
    out = {extent}
    p = 1
    while p < extent:
        out.add(p)
        p *= 2
    for k in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64):
        out.add(math.ceil(extent / k))
    return sorted(out, reverse=True)


def plan_vector(kern: VectorKernel, mach: Machine, share: int = 1) -> VectorPlan:
    """The cheapest tiling of `kern` whose buffers fit UB -- `1 / share` of it when other
    loops of the kernel hold their own buffers. When no tile holds a whole reduced extent,
    the reduction is visited in chunks (`Chunk`). Raises CapacityShortfall with the
    smallest need when nothing fits: the caller reports the overflow."""
    try:
        return _plan_tiles(kern, mach, share, [0])
    except CapacityShortfall as whole:
        if kern.chunk is None:
            raise CapacityShortfall(whole.space, whole.need, whole.have, _why_whole(kern)) from None
        try:
            n = kern.chunk.extent
            sizes = {c for c in _sizes(n) if c < n} | {d for d in range(1, math.isqrt(n) + 1) if n % d == 0} \
                | {n // d for d in range(2, math.isqrt(n) + 1) if n % d == 0}
            return _plan_tiles(kern, mach, share, sorted(sizes, reverse=True))
        except CapacityShortfall as e:
            raise CapacityShortfall(e.space, e.need, e.have, f"even chunks of 1 of the reduced extent of "
                                    f"{kern.chunk.red.name} {_node(kern.chunk.red)} do not fit") from None
        finally:
            kern.chunk_size = 0


def _node(op: Operation) -> str:
    names = node_names(op)
    return f"(node {names[0]})" if names else ""


def _why_whole(kern: VectorKernel) -> str:
    """What is missing when a kernel's reduced extent cannot be split (Chunk.of's reason)."""
    for op in kern.region_ops:
        if g.has_trait(op, g.Normalization):
            return (f"{op.name} {_node(op)} needs its whole normalized extent in UB; a chunked "
                    f"(two-pass) {op.name.split('.')[1]} is not implemented")
    return kern.chunk_reason


def _plan_tiles(kern: VectorKernel, mach: Machine, share: int, chunks: Sequence[int]) -> VectorPlan:
    """plan_vector over the tilings of the iteration space, each with the longest of
    `chunks` (0: the whole reduced extent) that fits."""
    target = mach.target
    ext = kern.maps.extents
    rank = len(ext)
    cap = target.memory.ub // share
    cores = mach.cores(cube=False)
    best: VectorPlan | None = None
    smallest = None
    seen: set[tuple[int, ...]] = set()
    n = 0
    for split in reversed(range(max(rank, 1))):
        for size in _sizes(ext[split]) if rank else [1]:
            tiles = tuple(
                e if (d > split or d in kern.maps.full) else (size if d == split else 1) for d, e in enumerate(ext)
            )
            if tiles in seen:
                continue
            seen.add(tiles)
            n += 1
            counts = tuple(math.ceil(e / s) for e, s in zip(ext, tiles))
            chunk = _longest_chunk(kern, tiles, chunks, cap, target)
            kern.chunk_size = chunk
            need1 = kern.ub_bytes(tiles, 1, target)
            if smallest is None or need1 < smallest:
                smallest = need1
            if need1 > cap:
                continue
            buffers = 2 if kern.ub_bytes(tiles, 2, target) <= cap else 1
            blocks = min(cores, math.prod(counts))
            cycles = kern.cost(mach, tiles, blocks, buffers == 2)
            if best is None or cycles < best.cycles:
                best = VectorPlan(tiles, counts, buffers, blocks, cycles, kern.ub_bytes(tiles, buffers, target), chunk=chunk)
    if best is None:  # (with a share: what all the loops' buffers would need of the whole UB)
        raise CapacityShortfall("ub", (smallest or 0) * share, target.memory.ub)
    best.candidates = n
    return best


def _longest_chunk(kern: VectorKernel, tiles: Sequence[int], chunks: Sequence[int], cap: int, target: Target) -> int:
    """The longest of `chunks` whose buffers fit twice (double buffering), else once, else
    the shortest; a length that divides the extent is preferred to one at most twice as
    long (no short last chunk with buffers of its own)."""
    for buffers in (2, 1):
        fit = []
        for c in chunks:
            kern.chunk_size = c
            if kern.ub_bytes(tiles, buffers, target) <= cap:
                fit.append(c)
        if fit:
            even = [c for c in fit if c and kern.chunk.extent % c == 0 and 2 * c >= fit[0]]
            return even[0] if even else fit[0]
    return chunks[-1]


class CapacityShortfall(Exception):
    """No tiling fits: the smallest tile needs `need` bytes of `space`, which holds `have`."""

    def __init__(self, space: str, need: int, have: int, why: str = ""):
        super().__init__(space, need, have)
        self.space, self.need, self.have, self.why = space, need, have, why


# --------------------------------------------------------------------------------------
# Chunked reductions
# --------------------------------------------------------------------------------------


@dataclass
class Chunk:
    """A reduction whose reduced extent does not fit UB whole, visited in chunks as a TBE
    reduce kernel does: per tile, the ops before it (`pre`, elementwise on the reduced
    tiles) and the reduction run on one chunk of the longest reduced dim at a time; each
    chunk's partial result is combined into an accumulator (add / mul / max / min; a mean
    adds each chunk's mean weighted by its share of the extent), and the ops after it
    (`post`) run once on the accumulator. The summation order changes (chunk by chunk)."""

    red: Operation
    pre: list[Operation]  # ops before the reduction (per chunk)
    post: list[Operation]  # ops after it (once per tile)
    axis: dict[SSAValue, int]  # the chunked dim of every value that carries it
    extent: int
    combiner: str
    mean: bool

    @staticmethod
    def of(kern: VectorKernel) -> Chunk:
        """The chunking of `kern`'s reduction; raises Unsupported saying why there is none."""
        ops = kern.region_ops
        reds = [o for o in ops if g.has_trait(o, g.Reduction) or isinstance(o, g.GlobalPoolOp)]
        if kern.pool is not None or len(reds) != 1:
            raise Unsupported("the kernel has no single reduction whose extent could be chunked")
        red = reds[0]
        x, xs = red.operands[0], shape_of(red.operands[0])
        if isinstance(red, g.GlobalPoolOp):
            combiner, mean = ("add", True) if isinstance(red, g.GlobalAvgPoolOp) else ("max", False)
            axes = [2, 3] if fmt_of(x) == Format.NC1HWC0 else list(range(2, len(xs)))
        else:
            tr = g.trait_of(red, g.Reduction)
            if tr.square_first or tr.sqrt_after:
                raise Unsupported(f"{red.name} is not decomposed into a plain reduction")
            combiner, mean = tr.combiner, tr.mean
            axes = list(g.get_ints(red.properties, "axes")) or list(range(len(xs)))
        axis = max(axes, key=lambda i: xs[i])
        i = ops.index(red)
        axis_of: dict[SSAValue, int] = {x: axis}
        for op in reversed(ops[:i]):
            hit = [r for r in op.results if r in axis_of]
            if not hit:
                continue
            if not fr.is_elementwise(op):
                raise Unsupported(f"{op.name} before {red.name} is not elementwise")
            r = hit[0]
            for v in op.operands:
                j = axis_of[r] - (len(shape_of(r)) - len(shape_of(v)))
                if j >= 0 and shape_of(v)[j] == shape_of(r)[axis_of[r]] > 1:
                    if axis_of.setdefault(v, j) != j:
                        raise Unsupported("a value read along two different chunked dims")
        for v, j in axis_of.items():
            d = kern.maps.maps[v][j]
            if not d.fixed or d.shift or d.extent != shape_of(v)[j]:
                raise Unsupported("a chunked dim that the tiles do not hold whole")
        pre = [o for o in ops[:i] if any(r in axis_of for r in o.results)]
        after = {v for o in ops[i + 1:] for v in o.operands} | set(kern.outputs)
        if any(r in after for o in pre for r in o.results) or any(v in after for v in axis_of):
            raise Unsupported(f"a value before {red.name} is also used after it (a normalization)")
        return Chunk(red, pre, ops[i + 1:], axis_of, xs[axis], combiner, mean)


COMBINE = {"add": g.AddOp, "mul": g.MulOp, "max": g.MaxOp, "min": g.MinOp}


def _needed(ops: Sequence[Operation], roots: Sequence[Operation]) -> list[Operation]:
    """`roots` and the ops of `ops` they read from, in order (constants a body needs)."""
    need = set(roots)
    for op in reversed(ops):
        if op in need:
            need |= {v.owner for v in op.operands if isinstance(v.owner, Operation)}
    return [o for o in ops if o in need]


def _retype_onto(body: Block, ops: Sequence[Operation], mapping: dict[SSAValue, SSAValue],
                 shape_of: Callable[[SSAValue], Sequence[int]], what: str) -> None:
    """Clone `ops` into `body` with their results retyped to `shape_of(result)` (a tile or a
    chunk of one), extending `mapping`; an op that does not verify there is Unsupported."""
    for op in ops:
        new = type(op).create(
            operands=[mapping[v] for v in op.operands],
            result_types=[tile_type(r.type, shape_of(r)) for r in op.results],
            properties=dict(op.properties), attributes=dict(op.attributes),
        )
        new.location = op.location  # the ONNX node, for messages from later levels
        for r, nr in zip(op.results, new.results):
            nr.name_hint = r.name_hint
            mapping[r] = nr
        body.add_op(new)
        try:
            new.verify_()
        except VerifyException as e:
            raise Unsupported(f"{op.name} does not verify on its {what}: {e}") from None


def _body(kern: VectorKernel, tiles: Sequence[int], size: int, ops: Sequence[Operation],
          given: dict[SSAValue, Attribute]) -> tuple[Block, dict[SSAValue, SSAValue], list[SSAValue]]:
    """A tile.vector body running `ops` on the tiles (chunks of `size`), reading the group
    values of `given` (value -> tile type) as its arguments; returns the body (no yield),
    the mapping and the arguments in order."""
    args = list(given)
    body = Block(arg_types=list(given.values()))
    mapping = dict(zip(args, body.args))
    for v, a in mapping.items():
        a.name_hint = v.name_hint
    _retype_onto(body, ops, mapping, lambda r: kern.shape(r, tiles, size), "chunk")
    return body, mapping, args


def _arg_types(kern: VectorKernel, tiles: Sequence[int], size: int, ops: Sequence[Operation],
               first: Sequence[SSAValue] = ()) -> dict[SSAValue, Attribute]:
    """The group arguments `ops` read (after `first`), with their tile types."""
    defined = {r for o in ops for r in o.results}
    vals = [*first, *(v for o in ops for v in o.operands if v not in defined)]
    return {v: tile_type(v.type, kern.shape(v, tiles, size)) for v in dict.fromkeys(vals)}


def emit_chunked(b: KernelBuilder, kern: VectorKernel, plan: VectorPlan, gm: dict[SSAValue, SSAValue]) -> None:
    """emit_vector for a plan that visits the reduced extent in chunks (see `Chunk`)."""
    ch = kern.chunk
    assert ch is not None and plan.chunk
    kern.chunk_size = size = plan.chunk
    tiles, dims = plan.tiles, kern.maps.maps
    red = ch.red.results[0]
    rest = ch.extent % size
    chunked = [v for v in kern.inputs if v in ch.axis]

    def alloc(v: SSAValue, shape: Sequence[int], count: int, name: str) -> SSAValue:
        return b.alloc(t.MemSpace.UB, shape, v.type.element_type, count, name)

    ub = {v: alloc(v, kern.shape(v, tiles), plan.buffers, f"{v.name_hint or 'v'}_ub")
          for v in dict.fromkeys([*kern.inputs, *kern.stored()])}
    last = {v: alloc(v, kern.shape(v, tiles, rest), 1, f"{v.name_hint or 'v'}_rest") for v in chunked} if rest else {}
    acc = ub[red] if red in ub else alloc(red, kern.shape(red, tiles), 1, "acc")
    part = alloc(red, kern.shape(red, tiles), 1, "partial")
    fixed = [v for v in kern.inputs if v in kern.invariant(plan)]
    for v in fixed:
        b.copy(gm[v], [-d.shift for d in dims[v]], ub[v], None, kern.shape(v, tiles))
    chunk_ops = _needed(kern.region_ops, [*ch.pre, ch.red])
    final = _needed([o for o in kern.region_ops if o not in ch.pre and o is not ch.red], ch.post)
    red_ty = tile_type(red.type, kern.shape(red, tiles))
    lo, hi = b.block_range(plan.ntiles, plan.blocks)
    with b.loop(lo, hi, name="tile") as it:
        coords = b.unravel(it, plan.counts, [f"t{d}" for d in range(len(kern.maps.extents))])
        offs = [b.mul(c, s) for c, s in zip(coords, tiles)]

        def offsets(v: SSAValue, start=0) -> list:
            out = [-d.shift if d.fixed else b.sub(b.mul(offs[d.it], d.scale), d.shift) for d in dims[v]]
            if v in ch.axis:
                out[ch.axis[v]] = start
            return out

        for v in kern.inputs:
            if v not in fixed and v not in ch.axis:
                b.copy(gm[v], offsets(v), ub[v], None, kern.shape(v, tiles),
                       pad=0.0 if _may_leave(dims[v], shape_of(v), plan) else None)

        def step(start, n: int, dst: SSAValue, bufs: dict[SSAValue, SSAValue]) -> None:
            for v in chunked:
                b.copy(gm[v], offsets(v, start), bufs[v], None, kern.shape(v, tiles, n),
                       pad=0.0 if _may_leave(dims[v], shape_of(v), plan) else None)
            body, mapping, args = _body(kern, tiles, n, chunk_ops, _arg_types(kern, tiles, n, chunk_ops))
            out = mapping[red]
            if ch.mean and n != ch.extent:  # this chunk's mean, weighted by its share
                w = make_constant(np.asarray(n / ch.extent), red.type.element_type, "share", like=ch.red)
                mul = g.MulOp.create(operands=[out, w.output], result_types=[red_ty])
                mul.location = ch.red.location
                body.add_ops([w, mul])
                out = mul.results[0]
            body.add_op(t.YieldOp(out))
            b.add(t.VectorOp([bufs.get(v, ub[v]) for v in args], [dst], Region(body)))

        def combine() -> None:
            body = Block(arg_types=[red_ty, red_ty])
            op = COMBINE[ch.combiner].create(operands=list(body.args), result_types=[red_ty])
            op.location = ch.red.location
            body.add_ops([op, t.YieldOp(op.results[0])])
            b.add(t.VectorOp([acc, part], [acc], Region(body)))

        whole = ch.extent // size
        if rest:  # the short last chunk first, straight into the accumulator
            step(whole * size, rest, acc, last)
        else:
            step(0, size, acc, ub)
        if whole > (0 if rest else 1):
            with b.loop(0 if rest else 1, whole, name="chunk") as j:
                step(b.mul(j, size), size, part, ub)
                combine()
        outs = [v for v in kern.stored() if v is not red]
        if outs:
            body, mapping, args = _body(kern, tiles, size, final, _arg_types(kern, tiles, size, final, [red]))
            body.add_op(t.YieldOp(*[mapping[v] for v in outs]))
            b.add(t.VectorOp([acc if v is red else ub[v] for v in args], [ub[v] for v in outs], Region(body)))
        for v in kern.stored():
            b.copy(ub[v], [0] * len(dims[v]), gm[v], offsets(v), kern.shape(v, tiles))


# --------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------


def pad_value(v: SSAValue, kern: VectorKernel) -> float:
    """Out-of-bounds elements: -inf before a max pool (never the maximum), else 0. Not for
    the plain source a max pool's NC1HWC0 input is converted from in UB (`pool_source`):
    its channels past C become the tile's pad lanes, which must read 0 -- a -inf there
    came out of the pool as -inf in the output's pad lanes, and the next conv's zero
    weight rows made it NaN (fuzz seed 734, f16) -- and the `tile.vpool` itself ignores the
    window positions outside the input."""
    pool = kern.pool
    if isinstance(pool, g.MaxPoolOp) and v is pool.operands[0]:
        return -math.inf
    return 0.0


def build_region(kern: VectorKernel, tiles: Sequence[int]) -> tuple[Block, list[SSAValue]]:
    """The tile.vector body: the group's ops retyped to their tiles. Returns the body and
    the region values it yields (one per stored output that the body computes)."""
    args = kern.region_args
    body = Block(arg_types=[tile_type(v.type, kern.shape(v, tiles)) for v in args])
    mapping: dict[SSAValue, SSAValue] = {}
    for v, a in zip(args, body.args):
        a.name_hint = v.name_hint
        mapping[v] = a
    _retype_onto(body, kern.region_ops, mapping, lambda r: kern.shape(r, tiles), "tile")
    computed = [v for v in kern.stored() if v not in args]
    body.add_op(t.YieldOp(*[mapping[v] for v in computed]))
    return body, computed


def emit_vector(b: KernelBuilder, kern: VectorKernel, plan: VectorPlan, gm: dict[SSAValue, SSAValue]) -> None:
    """The tiled body of a vector kernel; `gm` maps group values to kernel arguments."""
    if plan.chunk:
        emit_chunked(b, kern, plan, gm)
        return
    tiles, ext = plan.tiles, kern.maps.extents
    dims = kern.maps.maps
    ub: dict[SSAValue, SSAValue] = {}
    for v in dict.fromkeys([*kern.inputs, *kern.stored(), *((kern.pool.operands[0], kern.pool.results[0]) if kern.pool else ())]):
        shape = kern.shape(v, tiles)
        ub[v] = b.alloc(t.MemSpace.UB, shape, v.type.element_type, plan.buffers, f"{v.name_hint or 'v'}_ub")
    body, computed = build_region(kern, tiles)

    def load(v: SSAValue, offsets: list) -> None:
        needs_pad = _may_leave(dims[v], shape_of(v), plan)
        b.copy(gm[v], offsets, ub[v], None, kern.shape(v, tiles), pad=pad_value(v, kern) if needs_pad else None)

    fixed = [v for v in kern.inputs if v in kern.invariant(plan)]
    for v in fixed:  # the same rectangle for every tile: loaded once, before the loop
        load(v, [-d.shift for d in dims[v]])
    lo, hi = b.block_range(plan.ntiles, plan.blocks)
    with b.loop(lo, hi, name="tile") as it:
        coords = b.unravel(it, plan.counts, [f"t{d}" for d in range(len(ext))])
        offs = [b.mul(c, s) for c, s in zip(coords, tiles)]

        def offsets(v: SSAValue) -> list:
            return [-d.shift if d.fixed else b.sub(b.mul(offs[d.it], d.scale), d.shift) for d in dims[v]]

        for v in kern.inputs:
            if v not in fixed:
                load(v, offsets(v))
        if kern.pool_source is not None:  # NCHW tile -> NC1HWC0 tile
            x = kern.pool.operands[0]
            n, c1, h, w, c0 = kern.shape(x, tiles)
            src = b.view(ub[kern.pool_source], (n, c1, c0, h, w))
            b.copy(src, [0] * 5, ub[x], None, (n, c1, c0, h, w), perm=(0, 1, 3, 4, 2))
        if kern.pool is not None:
            _emit_vpool(b, kern, ub, offsets(kern.pool.operands[0]))
        if computed:
            vec = t.VectorOp([ub[v] for v in kern.region_args], [ub[v] for v in computed], Region(body))
            b.add(vec)
        for v in kern.stored():
            b.copy(ub[v], [0] * len(dims[v]), gm[v], offsets(v), kern.shape(v, tiles))


def widened(op: Operation, r: int, n: int, f32_block: int) -> bool:
    """Does isa_vector compute the f16 LayerNorm `op` (r rows of n) in f32 straight into the
    result of the cast to f32 that is its only user (isa_vector.widening_cast, on dense rows:
    one row, or rows of whole blocks of `f32_block` f32)?"""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, g.CastOp) or (r > 1 and n % f32_block):
        return False
    res, out = op.results[0].type.element_type, uses[0].operation.results[0].type.element_type
    return numpy_dtype(res).kind == "f" and numpy_dtype(res).itemsize < 4 and numpy_dtype(out) == np.float32


def _may_leave(dims: list[Dim], shape: Sequence[int], plan: VectorPlan) -> bool:
    """Can a tile's rectangle of this value reach outside it (edge tiles, halos)?"""
    for d, n in zip(dims, shape):
        if d.fixed:
            if d.shift > 0 or d.extent - d.shift > n:
                return True
            continue
        lo = -d.shift
        hi = (plan.counts[d.it] - 1) * plan.tiles[d.it] * d.scale - d.shift + d.size(plan.tiles)
        if lo < 0 or hi > n:
            return True
    return False


def _emit_vpool(b: KernelBuilder, kern: VectorKernel, ub: dict, src_offsets: list) -> None:
    op = kern.pool
    assert op is not None
    props = op.properties
    x = op.operands[0]
    in_hw = shape_of(x)[2:4]
    pads = g.get_ints(props, "pads")
    new = t.VPoolOp.build(
        operands=[ub[x], ub[op.results[0]], b.value(src_offsets[2]), b.value(src_offsets[3])],
        properties={
            "mode": g.StringAttr("max" if isinstance(op, g.MaxPoolOp) else "avg"),
            "kernel": t.int_array(g.get_ints(props, "kernel_shape")),
            "strides": t.int_array(g.get_ints(props, "strides")),
            "dilations": t.int_array(g.get_ints(props, "dilations", (1, 1))),
            "in_size": t.int_array(in_hw),
            "pads": t.int_array(pads),
            **({"count_include_pad": g.UnitAttr()} if "count_include_pad" in props else {}),
        },
    )
    b.add(new)
