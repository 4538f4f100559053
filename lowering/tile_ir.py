"""Building tile-level kernel bodies: index arithmetic, buffers, copies and loops.

Shared by the kernel emitters of the `tile` pass (lowering/tile_vector.py,
lowering/tile_cube.py). `KernelBuilder` appends ops at an insertion block and folds the
index arithmetic of constants while it builds, so a kernel stays tens of ops: constants are
created once at the top of the kernel, `x * 1`, `x + 0` and `c1 * c2` never reach the IR.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, BoolAttr, MemRefType, TensorType, i1
from xdsl.ir import Attribute, Block, SSAValue

from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.dialects.layout import Format
from ge.lowering.index_builder import Index, IndexBuilder


def written_inputs(block: Block) -> frozenset[int]:
    """The argument numbers of an untiled kernel body `block` that an earlier kernel of the
    run wrote: its kernel's `l2_inputs` (`bufferize`; a fusion probe's kernel carries them
    too). The tilers' cost models read those from the L2."""
    untiled = block.parent_op()
    kernel = untiled.parent_op() if untiled is not None else None
    warm = kernel.attributes.get("l2_inputs") if isinstance(kernel, t.KernelOp) else None
    return frozenset(i.value.data for i in warm.data) if isinstance(warm, ArrayAttr) else frozenset()


class KernelBuilder(IndexBuilder):
    """Appends ops to a tile kernel body; `at` is the current insertion block."""

    MEMOIZE = True

    def __init__(self, kernel: t.KernelOp):
        super().__init__(kernel.body.block)
        self.kernel = kernel

    def is_zero(self, a: Index) -> SSAValue:
        if isinstance(a, int):
            op = self.add(arith.ConstantOp(BoolAttr(a == 0, i1)))
            op.result.name_hint = "first" if a == 0 else "later"
            return op.result
        op = self.add(arith.CmpiOp(self.value(a), self.const(0), "eq"))
        op.result.name_hint = "first"
        return op.result

    def block_idx(self) -> SSAValue:
        op = self.add(t.BlockIdxOp())
        op.result.name_hint = "block"
        return op.result

    def alloc(self, space: t.MemSpace, shape: Sequence[int], elem: Attribute, count: int, name: str) -> SSAValue:
        op = self.add(t.AllocOp(t.buffer_type(shape, elem, space), count))
        op.result.name_hint = name
        return op.result

    def view(self, buf: SSAValue, shape: Sequence[int], name: str | None = None) -> SSAValue:
        ty = buf.type
        assert isinstance(ty, MemRefType)
        if tuple(ty.get_shape()) == tuple(shape):
            return buf
        op = self.add(t.ViewOp(buf, shape))
        if name:
            op.result.name_hint = name
        return op.result

    def copy(self, src: SSAValue, src_offsets: Sequence[Index], dst: SSAValue, dst_offsets: Sequence[Index] | None,
             sizes: Sequence[int], *, strides: Sequence[int] | None = None, perm: Sequence[int] | None = None,
             pad: float | None = None) -> None:
        ty = dst.type
        assert isinstance(ty, MemRefType)
        dst_offsets = dst_offsets if dst_offsets is not None else [0] * ty.get_num_dims()
        self.add(t.CopyOp(src, [self.value(o) for o in src_offsets], dst, [self.value(o) for o in dst_offsets],
                          sizes, strides, perm, pad))

    def block_range(self, total: int, blocks: int) -> tuple[Index, Index]:
        """The [lo, hi) share of `total` items of this core when `blocks` cores split them."""
        if blocks == 1:
            return 0, total
        per = -(-total // blocks)
        bid = self.block_idx()
        lo = self.mul(bid, per, "lo")
        hi = self.min_(self.add_(lo, per), total, "hi")
        return lo, hi

    def unravel(self, index: Index, counts: Sequence[int], names: Sequence[str]) -> list[Index]:
        """Mixed-radix digits of `index` over `counts` (the last digit varies fastest)."""
        digits: list[Index] = []
        stride = 1
        strides = []
        for c in reversed(counts):
            strides.append(stride)
            stride *= c
        strides.reverse()
        outermost = True
        for i, (c, s) in enumerate(zip(counts, strides)):
            if c == 1:
                digits.append(0)
                continue
            q = self.div(index, s, names[i] if outermost else None)
            digits.append(q if outermost else self.rem(q, c, names[i]))
            outermost = False
        return digits


# --------------------------------------------------------------------------------------
# Tile types: a tensor type of a tile, keeping the value's storage format
# --------------------------------------------------------------------------------------


def tile_type(full: Attribute, shape: Sequence[int]) -> TensorType:
    """The type of a tile of storage shape `shape` cut from a tensor of type `full`; a
    storage-formatted type keeps its format, with the origin shape the tile holds."""
    assert isinstance(full, TensorType)
    enc = lt.layout_of(full)
    if enc is None:
        return TensorType(full.element_type, list(shape))
    fmt, origin, rank = enc.fmt, enc.origin_fmt, len(enc.shape)
    if fmt == Format.NC1HWC0:
        n, c1, h, w, c0 = shape
        dims = [n, h, w, c1 * c0] if origin == Format.NHWC else [n, c1 * c0, h, w]
        origin_shape = dims[4 - rank:]
    elif fmt == Format.FRACTAL_NZ:
        *batch, n1, m1, m0, c0 = shape
        origin_shape = [*batch, m1 * m0, n1 * c0]
    elif fmt in lt.PLAIN_FORMATS:
        perm = lt.plain_perm(fmt, origin) or tuple(range(len(shape)))
        origin_shape = [0] * len(shape)
        for i, p in enumerate(perm):
            origin_shape[p] = shape[i]
    else:
        raise ValueError(f"no tiles of {fmt} tensors")
    new = lt.FormatAttr(fmt, origin, origin_shape)
    return TensorType(full.element_type, list(shape), new)
