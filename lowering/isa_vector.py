"""`tile.vector` -> isa Vector instructions: part of the tile -> isa lowering (`to-isa`).

Level: tile (a `tile.vector` region of graph/layout ops on UB tiles) to isa (vector
instructions on flat UB buffers, `scf.for` loops, `arith` index arithmetic). `to-isa`
(lowering/to_isa.py) calls `lower_vector(k, op)` with its insertion point where the region
runs; `k` gives the builder (`k.b`), the target (`k.target`) and the isa buffer + element
offset of each UB operand (`k.buffer(v)`). Synchronization is `insert-sync`'s job and buffer
placement `plan-local-memory`'s: temporaries are `isa.buffer`s without offsets.

How the region's values become instructions:
- every value is a row-major tensor in a flat UB buffer (a `Tensor`): the `ins` buffers, the
  `outs` buffers (a yielded value is computed straight into its out buffer), or temporaries
  this module takes from a pool (a temporary whose value is dead is reused, and an
  elementwise op writes over an operand that dies with it);
- elementwise ops without broadcasting are *flat*: ceil(n / elements per repeat) repeats in
  as few instructions as the 255-repeat limit allows, the tail under a mask;
- numpy broadcasting maps onto block and repeat strides (`_Layout`): a per-channel
  [1, C1, 1, 1, C0] vector against [1, C1, P, 1, C0] reads its block with block stride 0, a
  row vector against a matrix with repeat stride 0; an operand broadcast along the
  innermost dim (a per-row scalar, a one-element tensor) is first spread to one block per
  row by a strided `copy_ub_to_ub`; what cannot be put on blocks (rows that do not start on
  a 32-byte block) is broadcast in full by one strided copy;
- reductions (Softmax, LogSoftmax, LayerNorm, Reduce*, global pools on plain tensors) run on
  f32 rows whose stride is a whole number of blocks. Rows of whole blocks take the cheapest
  chain of dependent steps on the target's costs (`group_plan`): group reductions
  (`vcgadd` / `vcgmax` / `vcgmin`, one value per 32-byte block: 8 blocks of a row per
  repeat, a value per block -- rows of 768 f32 become rows of 96 values in one instruction),
  elementwise folds of a row's upper blocks onto its lower ones (to half, or to whole
  repeats: 12 blocks -> 8), and at one block per row one group reduction whose repeat takes
  a block of each of 8 rows (one value per row); other rows are folded into one repeat by
  halving the chunk count, then either `vreduce_*` gives one value per row, or each row's
  blocks are folded onto its first block, that block column is transposed by one strided
  copy and folded by three elementwise halvings; `vbrcb` spreads the values back to one
  block per row; f16 data is converted to f32 first and back at the end. Softmax divides by one
  `vrec` per row and a `vmul`; a float Div by a constant is a `vmuls` by its reciprocal,
  by a one-element tensor a `vrec` of its block and a `vmul`; a constant on the left of a
  commutative Add / Mul / Max / Min is moved right (a vadds, not a vdup and a vadd); the row
  slices of a sliced Cube epilogue share what the first copied from their inputs (a one-value
  input spread over a block and its reciprocal, a bias row repeated: `blocks`,
  to_isa.slice_blocks), so the next slice starts with its first compute step;
- a row op (rows against rows, a per-row value, a per-column row) is one `grid` op: the
  cheapest of rows on the repeat axis, 8 rows on the blocks of a repeat with the repeats
  along the row, one block column per instruction, a row per instruction, or flat. The
  instructions of one step are independent (the pipe overlaps their start-ups), so what
  counts is the repeats -- no half-empty ones -- and the dependent steps;
- f16 Softmax / LayerNorm stored densely keep f16 where it is exact or is the result's own
  rounding: the softmax max on the f16 values, the max subtracted and the exponentials
  taken on f16 in the result's buffer (an f16 vexp is the f32 exp rounded once), only the
  exponentials converted to f32 for their sum, the last multiply, and LayerNorm's scale
  and bias on the f16 result (mean and variance in f32): half the repeats and no fold
  scratch (about one f16 ulp against the all-f32 sequence); an f16 LayerNorm whose only
  user casts it to f32 applies its scale and bias in f32 straight into the cast's result;
- global pools on NC1HWC0 add (max) pixel blocks pairwise, halving the pixel count per step;
- LRN moves the tile to channel-major rows padded with zero channels, so that the window
  over channels is a handful of whole-buffer adds;
- Transpose and TransData (NC1HWC0 <-> NCHW / NHWC, FRACTAL_NZ <-> ND) are strided
  `copy_ub_to_ub` moves on the Vector pipe.
What each op computes is ge.runtime.reference's definition; what each instruction does is
ge.runtime.isa_kernels'.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, f16, f32, f64, i1, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from ge.dialects import graph as g
from ge.dialects import isa
from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.interning import scope_memo
from ge.errors import GeError
from ge.lowering.index_builder import Index, create_op, int_attr
from ge.lowering.isa_builder import move_op

UB = isa.MemSpace.UB


class VectorLoweringError(PassFailedException, GeError):
    """A `tile.vector` region uses something the isa vector lowering cannot emit."""


# --------------------------------------------------------------------------------------
# Values: tensors in flat UB buffers, splat constants
# --------------------------------------------------------------------------------------


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    return isa.row_major(shape) if shape else ()


@dataclass(frozen=True)
class Tensor:
    """A row-major tensor of `shape` at element `off` of the flat UB buffer `buf`.
    `block_splat`: a one-element tensor whose whole block holds the value."""

    buf: SSAValue
    off: Index
    shape: tuple[int, ...]
    elem: Attribute
    block_splat: bool = False

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return isa.itemsize(self.elem)


@dataclass(frozen=True)
class Splat:
    """A graph.constant with one value everywhere (folded into scalar instructions)."""

    value: float
    shape: tuple[int, ...]
    elem: Attribute


def tensor_shape(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def broadcast_strides(shape: Sequence[int], result: Sequence[int]) -> list[int]:
    """Element strides of a row-major operand of `shape` read at the indices of `result`
    (numpy broadcasting: right-aligned, size-1 dims stride 0)."""
    own = row_major(shape)
    lead = len(result) - len(shape)
    out = []
    for i, n in enumerate(result):
        j = i - lead
        out.append(0 if j < 0 or (shape[j] == 1 and n != 1) else own[j])
    return out


def collapse(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> list[tuple[int, tuple[int, ...]]]:
    """(size, stride per operand) for each dim, size-1 dims dropped and adjacent dims merged
    where every operand steps through them as through one dim."""
    dims: list[tuple[int, tuple[int, ...]]] = []
    for i, n in enumerate(shape):
        if n == 1:
            continue
        st = tuple(s[i] for s in strides)
        if dims and all(o == n * s for o, s in zip(dims[-1][1], st)):
            dims[-1] = (dims[-1][0] * n, st)
        else:
            dims.append((n, st))
    return dims or [(1, tuple(0 for _ in strides))]


# --------------------------------------------------------------------------------------
# Block layouts: a strided elementwise op as vector instructions
# --------------------------------------------------------------------------------------


@dataclass
class _Instr:
    """One instruction shape repeated over loops: `mask` elements per repeat, block strides,
    a repeat axis (count, strides) and the outer dims looped over (count, strides), all
    strides in blocks per operand; `base` the block offset of each operand."""

    mask: int
    blk: tuple[int, ...]
    reps: int
    rep: tuple[int, ...]
    outer: list[tuple[int, tuple[int, ...]]]
    base: tuple[int, ...]

    def cost(self, startup: int, max_repeats: int) -> int:
        trips = math.prod(n for n, _ in self.outer)
        return trips * (-(-self.reps // max_repeats) * startup + self.reps)


def _layout_inner(dims: list[tuple[int, tuple[int, ...]]], inner_elems: int, epb: int, per_blocks: int,
                  nops: int) -> list[_Instr]:
    """Instructions with the innermost block dim on the blocks of a repeat."""
    n1, s1 = dims[-1]
    zero = (0,) * nops
    per = per_blocks * epb
    if n1 <= per_blocks:
        n2, s2 = dims[-2] if len(dims) > 1 else (1, zero)
        return [_Instr(inner_elems, s1, n2, s2, dims[:-2], zero)]
    full, rest = divmod(inner_elems, per)
    out = []
    step = tuple(per_blocks * s for s in s1)
    if full:
        out.append(_Instr(per, s1, full, step, dims[:-1], zero))
    if rest:
        out.append(_Instr(rest, s1, 1, step, dims[:-1], tuple(full * s for s in step)))
    return out


def _layout_columns(dims: list[tuple[int, tuple[int, ...]]], inner_elems: int, epb: int,
                    per_blocks: int) -> list[_Instr]:
    """Instructions over a column of whole repeats each, the next dim on the repeat axis: a
    row of 1.5 repeats (192 f16 + a bias row) over 128 rows is 2 instructions of 128
    repeats, not 128 of 2 (each paying the start-up)."""
    (n2, s2), (_, s1) = dims[-2], dims[-1]
    per = per_blocks * epb
    step = tuple(per_blocks * s for s in s1)
    full, rest = divmod(inner_elems, per)
    out = [_Instr(per, s1, n2, s2, dims[:-2], tuple(c * s for s in step)) for c in range(full)]
    if rest:
        out.append(_Instr(rest, s1, n2, s2, dims[:-2], tuple(full * s for s in step)))
    return out


def block_layout(dims: list[tuple[int, tuple[int, ...]]], inner_elems: int, epb: int, per_blocks: int,
                 startup: int, max_repeats: int) -> list[_Instr]:
    """The cheapest of: blocks of a repeat along the innermost dim (rows of more than a
    repeat: an instruction per row), the repeats of each column of a row on the next dim
    (when its strides fit a repeat stride), or (when the innermost dim is a few whole
    blocks) one instruction per inner block with the next dim on the blocks."""
    nops = len(dims[0][1])

    def cost(instrs: list[_Instr]) -> int:
        return sum(i.cost(startup, max_repeats) for i in instrs)

    best = _layout_inner(dims, inner_elems, epb, per_blocks, nops)
    n1 = dims[-1][0]
    if len(dims) > 1 and n1 > per_blocks and max(dims[-2][1]) <= MAX_REP_STRIDE:
        alt = _layout_columns(dims, inner_elems, epb, per_blocks)
        if cost(alt) < cost(best):
            best = alt
    if len(dims) > 1 and n1 < per_blocks and inner_elems == n1 * epb:
        swapped = [*dims[:-2], dims[-1], dims[-2]]
        alt = _layout_inner(swapped, dims[-2][0] * epb, epb, per_blocks, nops)
        if cost(alt) < cost(best):
            best = alt
    return best


# --------------------------------------------------------------------------------------
# The lowering of one tile.vector
# --------------------------------------------------------------------------------------

Value = Tensor | Splat

# The primitive set (transforms/decompose.py rewrites everything else into it) and the
# instruction sequence of each primitive. One instruction per element chunk:
UNARY = {
    g.ReluOp: isa.VReluOp, g.AbsOp: isa.VAbsOp, g.ExpOp: isa.VExpOp, g.LogOp: isa.VLnOp,
    g.SqrtOp: isa.VSqrtOp, g.ReciprocalOp: isa.VRecOp, g.TanhOp: isa.VTanhOp, g.ErfOp: isa.VErfOp,
}
BINARY = {
    g.AddOp: isa.VAddOp, g.SubOp: isa.VSubOp, g.MulOp: isa.VMulOp, g.DivOp: isa.VDivOp,
    g.MaxOp: isa.VMaxOp, g.MinOp: isa.VMinOp, g.SumOp: isa.VAddOp, g.MeanOp: isa.VAddOp,
    g.AndOp: isa.VAndOp, g.OrOp: isa.VOrOp,  # on booleans (one byte 0 / 1 per element)
}
SCALAR = {g.AddOp: isa.VAddsOp, g.MulOp: isa.VMulsOp, g.MaxOp: isa.VMaxsOp, g.MinOp: isa.VMinsOp,
          g.SumOp: isa.VAddsOp}
# vcmp modes: a boolean (i1, one byte per element) result; xor of booleans is "not equal".
COMPARE = {g.EqualOp: "eq", g.LessOp: "lt", g.LessOrEqualOp: "le", g.GreaterOp: "gt",
           g.GreaterOrEqualOp: "ge", g.XorOp: "ne"}
# vconv rounding modes (float -> i32 in that mode -> float; |x| >= 2^23 is already whole).
ROUNDING = {g.FloorOp: "floor", g.CeilOp: "ceil", g.RoundOp: "rint"}
# Reduction combiner -> (whole-repeat reduction or None, elementwise fold).
REDUCE = {"sum": (isa.VReduceSumOp, isa.VAddOp), "max": (isa.VReduceMaxOp, isa.VMaxOp),
          "min": (isa.VReduceMinOp, isa.VMinOp), "mul": (None, isa.VMulOp)}
# Reduction combiner -> group reduction (one result per 32-byte block).
GROUP_REDUCE = {"sum": isa.VCGAddOp, "max": isa.VCGMaxOp, "min": isa.VCGMinOp}
COMBINER = {"add": "sum"}  # a Reduction interface's combiner -> its REDUCE row
# Primitives with a sequence of their own: VectorLowering.op_<name>.
SEQUENCES = (
    g.NegOp, g.SigmoidOp, g.LeakyReluOp, g.ClipOp, g.GeluOp, g.SoftplusOp, g.SoftsignOp, g.HardSigmoidOp,
    g.HardSwishOp, g.NotOp, g.WhereOp, g.ConstantOp, g.CastOp, g.PowOp, g.BatchNormOp, g.SoftmaxOp,
    g.LogSoftmaxOp, g.LayerNormOp, g.LrnOp, g.GlobalAvgPoolOp, g.GlobalMaxPoolOp, g.TransposeOp, lt.TransDataOp,
    g.IdentityOp, g.QuantizeOp, g.DequantizeOp,
)
PRIMITIVES = frozenset((*UNARY, *BINARY, *COMPARE, *ROUNDING, *SEQUENCES))
ROUND_LIMIT = 2.0**23  # f32 values of this magnitude are integers
MAX_REP_STRIDE = 255  # a repeat stride is an 8-bit field of the vector instructions (Ascend C: uint8_t repeat strides)
SMALL_SCRATCH = 16384  # bytes: a row fold may take this much UB beyond the tiler's estimate
# Does an Add whose only use is a ReLU run as one `vaddrelu` (`relu_after`)?
VADDRELU = True


def relu_after(o: Operation) -> Operation | None:
    """The ReLU that is the only use of float Add (or two-operand Sum) `o`'s result, of the same type: the
    lowering runs the two as one `vaddrelu` when both operands are tensors (`binary`), and
    the tiler's costs charge them so (tile_vector, tile_cube's epilogue program)."""
    if not VADDRELU or not isinstance(o, g.AddOp | g.SumOp) or len(o.operands) != 2:
        return None
    (r,) = o.results
    uses = list(r.uses)
    if len(uses) != 1 or not isinstance(relu := uses[0].operation, g.ReluOp):
        return None
    if not isinstance(r.type, TensorType) or numpy_dtype(r.type.element_type).kind != "f" \
            or relu.results[0].type != r.type:
        return None
    return relu if relu.parent_block() is o.parent_block() else None


def is_primitive(op: Operation) -> bool:
    """Whether the vector lowering has an instruction sequence for `op`: a table row, or a
    reduction whose combiner has one (squares and roots are decompose's)."""
    red = g.trait_of(op, g.Reduction)
    if red is not None:
        return COMBINER.get(red.combiner, red.combiner) in REDUCE and not (red.square_first or red.sqrt_after)
    return type(op) in PRIMITIVES


SUPPORTED = frozenset(cls.name for cls in PRIMITIVES)


def describe_op(op: Operation) -> str:
    """`graph.lrn %r2 (node norm1)` for messages: the op, its result and its ONNX node."""
    from ge.transforms.tile_capacity import node_names

    name = f"{op.name}"
    if op.results and op.results[0].name_hint:
        name += f" %{op.results[0].name_hint}"
    nodes = node_names(op)
    if not nodes:
        kernel = op.parent_op()
        while kernel is not None and not hasattr(kernel, "sym_name"):
            kernel = kernel.parent_op()
        nodes = node_names(kernel) if kernel is not None else []
        if kernel is not None and not nodes:
            return f"{name} in kernel @{kernel.sym_name.data}"
    return f"{name} (node {', '.join(nodes)})" if nodes else name


def check_supported(op: t.VectorOp) -> None:
    """Every op of the region has a lowering, or one error lists all that do not."""
    bad = [o for o in op.body.block.ops if not isinstance(o, t.YieldOp) and not is_primitive(o)]
    if bad:
        raise VectorLoweringError(
            f"no isa vector lowering for {len(bad)} op(s) of a tile.vector: "
            + "; ".join(describe_op(o) for o in bad)
        )


@dataclass
class _Pool:
    """Temporary UB buffers of this region, reused once their value is dead."""

    free: list[Tensor] = field(default_factory=list)
    count: int = 0


class VectorLowering:
    """Emits the instructions of one `tile.vector` (see the module docstring)."""

    def __init__(self, k, op: t.VectorOp, fixed=None, blocks: dict | None = None):
        self.k, self.b, self.op = k, k.b, op
        self.take_target(k.target)
        # scratch buffer -> (source input buffer, its offset, copy sizes, copy strides, "copy" | "rec"):
        # what a copy from an input (`input_copy`) left there, maybe in the previous row slice
        # of a sliced Cube epilogue (to_isa.slice_blocks); updated for the next one
        self.blocks: dict = {} if blocks is None else blocks
        self.fixed = fixed  # a to_isa.FixQuant: the region's head that FixPipe computed on the way out of L0C
        self.env: dict[SSAValue, Value] = {}
        self.owned: dict[SSAValue, Tensor] = {}  # values in temporaries of the pool
        self.pool = _Pool()
        self.current: Operation | None = None
        self.recips: dict[SSAValue, Tensor] = {}  # reciprocal blocks of one-element divisors (hoist_one_values)
        self.absorbed: set[Operation] = set()  # ops an earlier op computed on its way (a LayerNorm's widening cast)

    def take_target(self, target) -> None:
        """The target's Vector figures the plans and emitters read (one place for them: the
        lowering and `_PlanOnly`, the tiler's region-less planner, set the same fields)."""
        vec = target.vector
        self.target, self.startup = target, target.startup.vector
        self.bpr, self.block, self.max_rep = vec.bytes_per_repeat, vec.block_bytes, vec.max_repeats
        self.per_blocks = self.bpr // self.block

    # -- errors --------------------------------------------------------------------------

    def fail(self, message: str) -> VectorLoweringError:
        where = describe_op(self.current) if self.current is not None else "tile.vector"
        return VectorLoweringError(f"{where}: {message}")

    # -- buffers -------------------------------------------------------------------------

    def epb(self, elem: Attribute) -> int:
        return max(1, self.block // isa.itemsize(elem))

    def temp(self, shape: Sequence[int], elem: Attribute, keep: bool = False) -> Tensor:
        """A temporary row-major tensor (a dead temporary's buffer when one is big enough);
        what it held is forgotten (`blocks`) unless `keep` (`input_copy` checks it)."""
        n = max(1, math.prod(shape))
        fits = [x for x in self.pool.free if x.elem == elem and x.size >= n]
        if fits:
            best = min(fits, key=lambda x: x.size)
            self.pool.free.remove(best)
            buf = best.buf
        else:
            size = isa.align_up(n, self.epb(elem))
            self.pool.count += 1
            (buf,) = self.b.buffer(UB, [size], elem, name=f"vt{self.pool.count}")
        if not keep:
            self.blocks.pop(buf, None)
        return Tensor(buf, 0, tuple(shape), elem)

    def input_copy(self, x: Tensor, shape: Sequence[int], sizes: Sequence[int], strides: Sequence[int],
                   want: str = "copy") -> Tensor:
        """A temporary of `shape` filled from `x` by one strided copy (`copy` with
        `strides`), or the same temporary with no copy when it already holds that (a region
        input, unchanged since the previous row slice copied it: `blocks`; `want` "rec": or
        its reciprocal, made in place by that slice)."""
        y = self.temp(shape, x.elem, keep=True)
        held = (x.buf, x.off, tuple(sizes), tuple(strides))
        if x.buf in self.inputs and isinstance(x.off, int) and self.blocks.get(y.buf) == (*held, want):
            return y
        self.blocks.pop(y.buf, None)
        self.copy(x, y, sizes, strides)
        if x.buf in self.inputs and isinstance(x.off, int):
            self.blocks[y.buf] = (*held, "copy")
        return y

    def release(self, x: Tensor) -> None:
        if not any(f.buf is x.buf for f in self.pool.free):
            ty = x.buf.type
            self.pool.free.append(Tensor(x.buf, 0, (isa.num_elements(ty),), x.elem))

    def shifted(self, x: Tensor, delta: Index, shape: Sequence[int] | None = None) -> Tensor:
        return replace(x, off=self.b.add_(x.off, delta), shape=tuple(x.shape if shape is None else shape))

    # -- instructions --------------------------------------------------------------------

    def vec(self, cls, operands: Sequence[tuple[Tensor, Index]], repeat: int, mask: int | None = None,
            blk: Sequence[int] | None = None, rep: Sequence[int] | None = None, **props) -> None:
        """One vector instruction; operands as (tensor, extra element offset)."""
        ops: list = []
        for x, delta in operands:
            off = self.b.offset(self.b.add_(x.off, delta))
            ops += [x.buf, [] if off is None else [off]]
        p: dict[str, Attribute] = {"repeat": int_attr(repeat, i64)}
        if mask is not None:
            p["mask"] = int_attr(mask, i64)
        if blk is not None:
            p["blk_stride"] = isa.int_array(blk)
        if rep is not None:
            p["rep_stride"] = isa.int_array(rep)
        for key, v in props.items():
            p[key] = FloatAttr(float(v), f64) if key == "scalar" else StringAttr(v) if key in ("round", "mode") else v
        self.b.add(create_op(cls, ops, p))

    def copy(self, src: Tensor, dst: Tensor, sizes: Sequence[int], src_strides: Sequence[int] | None = None,
             dst_strides: Sequence[int] | None = None) -> None:
        """A strided UB -> UB move (Vector pipe)."""
        self.b.add(move_op(isa.CopyUbToUbOp, src.buf, dst.buf, list(sizes), src_offset=self.b.offset(src.off),
                                    dst_offset=self.b.offset(dst.off), src_strides=src_strides,
                                    dst_strides=dst_strides))

    def flat(self, cls, dst: Tensor, srcs: Sequence[Tensor], n: int | None = None, **props) -> None:
        """dst[i] = f(srcs[i]) for i < n over contiguous elements: full repeats in chunks of
        the repeat limit, then the tail under a mask."""
        n = dst.size if n is None else n
        size = max(x.itemsize for x in (dst, *srcs))
        per = self.bpr // size
        full, rest = divmod(n, per)
        done = 0
        while full:
            r = min(full, self.max_rep)
            self.vec(cls, [(x, done) for x in (dst, *srcs)], r, **props)
            done, full = done + r * per, full - r
        if rest:
            self.vec(cls, [(x, done) for x in (dst, *srcs)], 1, mask=rest, **props)

    def dup(self, dst: Tensor, value: float, n: int | None = None) -> None:
        self.flat(isa.VDupOp, dst, [], n, scalar=value)

    def move(self, src: Tensor, dst: Tensor) -> None:
        """dst = src (same element count), converting the element type when they differ."""
        if src.elem == dst.elem:
            self.copy(src, dst, [src.size])
        else:
            self.convert(src, dst)

    def convert(self, src: Tensor, dst: Tensor) -> None:
        kind = numpy_dtype(dst.elem).kind
        rnd = {"round": "trunc"} if kind in "iu" and numpy_dtype(src.elem).kind == "f" else {}
        self.flat(isa.VConvOp, dst, [src], src.size, **rnd)

    # -- strided elementwise ---------------------------------------------------------------

    def strided(self, cls, dst: Tensor, srcs: Sequence[Tensor], shape: Sequence[int],
                strides: Sequence[Sequence[int]], **props) -> None:
        """dst[i . strides[0]] = f(srcs[j][i . strides[j + 1]]) over the indices i of `shape`
        (element strides; one element type; operands with stride 0 on the innermost dim
        must be block splats)."""
        tensors = [dst, *srcs]
        dims = collapse(shape, strides)
        if len(dims) == 1 and all(s == 1 for s in dims[0][1]):
            return self.flat(cls, dst, srcs, dims[0][0], **props)
        epb = self.epb(dst.elem)
        n_k, s_k = dims[-1]
        inner_ok = all(s in (0, 1) for s in s_k) and (n_k % epb == 0 or len(dims) == 1)
        outer_ok = all(s % epb == 0 for _, st in dims[:-1] for s in st)
        if not (inner_ok and outer_ok):
            raise self.fail(f"a strided access the vector unit cannot address (shape {list(shape)})")
        bdims = [(n, tuple(s // epb for s in st)) for n, st in dims[:-1]]
        bdims.append((-(-n_k // epb), tuple(1 if s == 1 else 0 for s in s_k)))
        bdims = collapse([n for n, _ in bdims], [[st[j] for _, st in bdims] for j in range(len(tensors))])
        inner_elems = n_k if len(dims) == 1 else bdims[-1][0] * epb
        widened = self.widen_rows(tensors, bdims, inner_elems, epb)
        if widened is not None:
            tensors, bdims, inner_elems, temps = widened
        for ins in block_layout(bdims, inner_elems, epb, self.per_blocks, self.startup, self.max_rep):
            self._emit(cls, tensors, ins, epb, props)
        for x in temps if widened is not None else ():
            self.release(x)

    def widen_rows(self, tensors: list[Tensor], bdims: list[tuple[int, tuple[int, ...]]], inner_elems: int,
                   epb: int):
        """Dense rows of a whole-block fraction of a repeat (a [128, 64] f16 tile: 4 of 8
        blocks) against a row read by every row (a bias) take half-empty repeats; with that
        row repeated k = 8 / blocks times in a temporary (one copy), k rows make one full
        repeat: half the repeats. Returns (tensors, block dims, inner elements, temporaries)
        or None unless that saves more than the copy's start-up."""
        if len(bdims) < 2:
            return None
        (n2, s2), (n1, s1) = bdims[-2], bdims[-1]
        nb8 = self.per_blocks
        if not (1 < n1 < nb8 and nb8 % n1 == 0 and inner_elems == n1 * epb and all(s == 1 for s in s1)):
            return None
        k = nb8 // n1
        if n2 % k or s2[0] != n1 or not all(s in (0, n1) for s in s2) or 0 not in s2:
            return None
        if any(s for _, st in bdims[:-2] for s, r in zip(st, s2) if not r):
            return None  # (a broadcast row that changes along an outer dim: one temporary row is not enough)
        new = [*bdims[:-2], (n2 // k, tuple(nb8 if s else 0 for s in s2)), (nb8, s1)]
        old_cost = sum(i.cost(self.startup, self.max_rep)
                       for i in block_layout(bdims, inner_elems, epb, nb8, self.startup, self.max_rep))
        new_cost = sum(i.cost(self.startup, self.max_rep)
                       for i in block_layout(new, nb8 * epb, epb, nb8, self.startup, self.max_rep))
        if new_cost + self.startup >= old_cost:  # (the copy may be a dependent step of its own)
            return None
        out, temps = [], []
        for x, s in zip(tensors, s2):
            if s:
                out.append(x)
                continue
            y = self.input_copy(x, [k * n1 * epb], [k, n1 * epb], [0, 1])
            temps.append(y)
            out.append(y)
        return out, new, nb8 * epb, temps

    def _emit(self, cls, tensors: list[Tensor], ins: _Instr, epb: int, props: dict) -> None:
        def run(depth: int, offs: list[Index]) -> None:
            if depth == len(ins.outer):
                done = 0
                while done < ins.reps:
                    r = min(ins.reps - done, self.max_rep)
                    ops = [(x, self.b.add_(o, (ins.base[j] + done * ins.rep[j]) * epb)) for j, (x, o) in
                           enumerate(zip(tensors, offs))]
                    self.vec(cls, ops, r, mask=ins.mask, blk=ins.blk, rep=ins.rep, **props)
                    done += r
                return
            n, st = ins.outer[depth]
            if n <= 4:
                for i in range(n):
                    run(depth + 1, [self.b.add_(o, i * s * epb) for o, s in zip(offs, st)])
                return
            with self.b.loop(0, n, name=f"v{depth}") as i:
                run(depth + 1, [self.b.add_(o, self.b.mul(i, s * epb)) for o, s in zip(offs, st)])

        run(0, [0] * len(tensors))

    def block_of(self, x: Tensor, want: str = "copy") -> Tensor:
        """A one-element tensor spread over one block (its value in every lane; `want`:
        `input_copy`'s)."""
        if x.block_splat:
            return x
        epb = self.epb(x.elem)
        blk = self.input_copy(x, [epb], [epb], [0], want)
        return replace(blk, shape=(1,), block_splat=True)

    def ewise(self, cls, dst: Tensor, srcs: Sequence[Tensor], **props) -> None:
        """dst = f(srcs) with numpy broadcasting of the sources to dst's shape."""
        shape = dst.shape
        strides = [row_major(shape), *(broadcast_strides(s.shape, shape) for s in srcs)]
        if all(list(s) == list(strides[0]) for s in strides[1:]):
            return self.flat(cls, dst, srcs, dst.size, **props)
        dims = collapse(shape, strides)
        epb = self.epb(dst.elem)
        sizes = [n for n, _ in dims]
        n_k = sizes[-1]
        temps: list[Tensor] = []
        new_srcs, new_strides = [], [list(row_major(sizes))]
        for j, x in enumerate(srcs):
            st = [d[1][j + 1] for d in dims]
            if st[-1] != 0 or (len(dims) > 1 and n_k % epb):
                new_srcs.append(x)
                new_strides.append(st)
                continue
            new_srcs.append(self.spread(x, sizes, st, temps))
            kept = [n if s else 1 for n, s in zip(sizes[:-1], st[:-1])]
            own = row_major([*kept, epb])
            new_strides.append([own[i] if st[i] else 0 for i in range(len(sizes) - 1)] + [0])
        if len(dims) > 1 and n_k % epb:  # rows off the block grid: broadcast in full, then flat
            full = []
            for x, st in zip(new_srcs, new_strides[1:]):
                if list(st) == list(row_major(sizes)):
                    full.append(x)
                    continue
                y = self.temp(sizes, x.elem)
                temps.append(y)
                self.copy(x, y, sizes, st)
                full.append(y)
            self.flat(cls, dst, full, dst.size, **props)
        else:
            self.strided(cls, dst, new_srcs, sizes, new_strides, **props)
        for x in temps:
            self.release(x)

    def spread(self, x: Tensor, sizes: Sequence[int], st: Sequence[int], temps: list[Tensor]) -> Tensor:
        """An operand broadcast along the innermost dim, with each of its values spread over
        one block (rows of `epb` equal elements)."""
        epb = self.epb(x.elem)
        if x.size == 1:
            y = self.block_of(x)
            if y is not x:
                temps.append(y)
            return y
        kept = [(n, s) for n, s in zip(sizes[:-1], st[:-1]) if s]
        y = self.temp([*(n for n, _ in kept), epb], x.elem)
        temps.append(y)
        self.copy(x, y, [*(n for n, _ in kept), epb], [*(s for _, s in kept), 0])
        return y

    # -- region walk -----------------------------------------------------------------------

    def run(self) -> None:
        check_supported(self.op)
        block = self.op.body.block
        yield_op = block.last_op
        assert isinstance(yield_op, t.YieldOp)
        self.inputs: set[SSAValue] = set()  # the region's input buffers (`input_copy`)
        for arg, v in zip(block.args, self.op.ins):
            if self.fixed is not None and arg is self.fixed.arg:
                continue  # the i32 accumulator never reached UB
            buf, off = self.k.buffer(v)
            self.env[arg] = Tensor(buf, off, tensor_shape(arg), arg.type.element_type)
            self.inputs.add(buf)
        self.outs: dict[SSAValue, Tensor] = {}
        for val, v in zip(yield_op.values, self.op.outs):
            if val not in self.outs and val not in block.args:
                buf, off = self.k.buffer(v)
                self.outs[val] = Tensor(buf, off, tensor_shape(val), val.type.element_type)
        done = set()
        if self.fixed is not None:  # FixPipe wrote its last value into the (retyped) accumulator or the out buffer
            q = self.fixed
            buf, off = self.k.buffer(q.into if q.into is not None else q.acc)
            self.env[q.value] = Tensor(buf, off, tensor_shape(q.value), q.elem)
            done = set(q.ops)
        ops = [o for o in block.ops if o is not yield_op and o not in done]
        divisors = self.hoist_one_values(ops, yield_op)
        last: dict[SSAValue, int] = {}
        for i, o in enumerate(ops):
            for v in o.operands:
                last[v] = i
        for i, o in enumerate(ops):
            self.current = o
            if o not in self.absorbed:
                self.lower_op(o)
            if i == 0:  # after the first step: (a vrec at the start would be a step of its own)
                for arg in divisors:  # in place: a buffer that died here would be reused, and its reuse wait
                    blk = self.env[arg]
                    self.flat(isa.VRecOp, blk, [blk], self.epb(blk.elem))
                    self.recips[arg] = blk
                    if blk.buf in self.blocks:
                        self.blocks[blk.buf] = (*self.blocks[blk.buf][:4], "rec")
            for v in set(o.operands):
                if last.get(v) == i and v in self.owned and v not in yield_op.values:
                    self.release(self.owned.pop(v))
        self.current = None
        for val, v in zip(yield_op.values, self.op.outs):
            buf, off = self.k.buffer(v)
            out = Tensor(buf, off, tensor_shape(val), val.type.element_type)
            self.store_value(self.env[val], out)

    def hoist_one_values(self, ops: Sequence[Operation], yield_op: Operation) -> list[SSAValue]:
        """One-element float inputs that only binary ops read (a Cube epilogue's constants:
        BERT's GELU divides by sqrt(2), adds 1, multiplies by 0.5) spread over a block each,
        and the reciprocal of a divisor's block, at the start of the region: their copies and
        vrec run beside the region's first steps instead of as steps of their own where they
        are used (each divisor: a copy, then a vrec, then the vmul). Returns the divisors,
        whose reciprocal blocks `run` makes after the region's first op."""
        arith = (g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.MaxOp, g.MinOp)
        one: list[SSAValue] = []
        for arg in self.op.body.block.args:
            x = self.env.get(arg)
            if (not isinstance(x, Tensor) or x.size != 1 or x.block_splat or numpy_dtype(x.elem).kind != "f"
                    or not arg.uses or any(u.operation is yield_op for u in arg.uses)):
                continue
            users = [u.operation for u in arg.uses]
            if all(isinstance(u, arith) and u in ops for u in users):
                one.append(arg)
        divisors = [arg for arg in one if all(  # divisors only (their block becomes the reciprocal)
            isinstance(u.operation, g.DivOp) and u.index == 1 and math.prod(tensor_shape(u.operation.operands[0])) > 1
            and u.operation.operands[0].type.element_type == self.env[arg].elem and u.operation is not ops[0]
            for u in arg.uses)]
        for arg in one:
            # a divisor's block may still hold the reciprocal the previous row slice made
            want = "rec" if arg in divisors else "copy"
            self.env[arg] = blk = self.block_of(self.env[arg], want)
            if want == "rec" and self.blocks.get(blk.buf, ("",))[-1] == "rec":
                self.recips[arg] = blk
        return [arg for arg in divisors if arg not in self.recips]

    def store_value(self, x: Value, out: Tensor) -> None:
        if isinstance(x, Splat):
            self.dup(out, x.value)
        elif x.buf is not out.buf or x.off != out.off:
            self.move(x, out)

    def dest(self, result: SSAValue, reuse: Sequence[SSAValue] = ()) -> Tensor:
        """Where `result` is computed: its out buffer when yielded, else a dying operand's
        temporary of the same type and size (elementwise ops only), else a new temporary."""
        shape, elem = tensor_shape(result), result.type.element_type
        if result in self.outs:
            return self.outs[result]
        for v in reuse:
            x = self.owned.get(v)
            if x is not None and x.elem == elem and x.size == math.prod(shape) and self._dies_here(v):
                del self.owned[v]
                self.owned[result] = replace(x, shape=shape)
                return self.owned[result]
        x = self.temp(shape, elem)
        self.owned[result] = x
        return x

    def _dies_here(self, v: SSAValue) -> bool:
        later = False
        for use in v.uses:
            user = use.operation
            if user is not self.current and (isinstance(user, t.YieldOp) or self._after(user)):
                later = True
        return not later

    def _after(self, user: Operation) -> bool:
        block = self.current.parent_block()
        return block is not None and block.get_operation_index(user) > block.get_operation_index(self.current)

    def tensor(self, v: SSAValue) -> Tensor:
        """The operand `v` as a tensor in UB (a splat constant is written to one block)."""
        x = self.env[v]
        if isinstance(x, Splat):
            blk = self.temp([self.epb(x.elem)], x.elem)
            self.dup(blk, x.value)
            y = replace(blk, shape=(1,), block_splat=True)
            self.env[v] = y
            self.owned.setdefault(v, y)
            return y
        return x

    def lower_op(self, o: Operation) -> None:
        name = o.name
        if all(isinstance(self.env.get(v), Splat) for v in o.operands) and o.results:
            return self.fold(o)
        kind = type(o)
        if kind in UNARY:
            x = self.tensor(o.operands[0])
            dst = self.dest(o.results[0], o.operands)
            self.flat(UNARY[kind], dst, [x])
            self.env[o.results[0]] = dst
            return None
        if kind in BINARY:
            return self.binary(o)
        if kind in COMPARE:
            return self.compare(o, COMPARE[kind])
        if kind in ROUNDING:
            return self.rounding(o, ROUNDING[kind])
        if (red := g.trait_of(o, g.Reduction)) is not None:
            return self.op_reduce(o, COMBINER.get(red.combiner, red.combiner), red.mean)
        handler: Callable[[Operation], None] = getattr(self, "op_" + name.split(".", 1)[1])
        handler(o)

    def fold(self, o: Operation) -> None:
        """An op on constants: evaluated now; a splat result stays a constant."""
        from ge.runtime.reference import evaluate

        args = [np.full(x.shape, x.value, numpy_dtype(x.elem)) for x in (self.env[v] for v in o.operands)]
        for r, value in zip(o.results, evaluate(o, args)):
            flat = np.asarray(value).reshape(-1)
            if flat.size and not np.all(flat == flat[0]):
                raise self.fail("a constant that is not one value everywhere (non-splat) has no vector lowering")
            self.env[r] = Splat(float(flat[0]) if flat.size else 0.0, tensor_shape(r), r.type.element_type)

    # -- elementwise -------------------------------------------------------------------------

    def op_constant(self, o: Operation) -> None:
        self.fold(o)

    def op_identity(self, o: Operation) -> None:
        self.op_cast(o)

    def op_cast(self, o: Operation) -> None:
        x = self.tensor(o.operands[0])
        r = o.results[0]
        if x.elem == r.type.element_type and r not in self.outs and o.operands[0] not in self.owned:
            self.env[r] = x  # an input buffer: never released, safe to share
            return
        dst = self.dest(r, o.operands)
        self.move(x, dst) if x.elem == dst.elem else self.convert(x, dst)
        self.env[r] = dst

    def full(self, v: SSAValue, shape: Sequence[int], temps: list[Tensor]) -> Tensor:
        """Operand v as a row-major tensor of the whole `shape` (a splat written out, a
        broadcast operand copied out in full: compare and select have no stride tricks)."""
        x = self.env[v]
        shape = tuple(shape) or (1,)
        if isinstance(x, Tensor) and x.size == math.prod(shape):
            return x
        y = self.temp(shape, x.elem)
        temps.append(y)
        if isinstance(x, Splat):
            self.dup(y, x.value)
        else:
            self.copy(x, y, list(shape), broadcast_strides(x.shape, shape))
        return y

    def compare(self, o: Operation, mode: str) -> None:
        """vcmp: one byte 1 / 0 per element into the boolean result."""
        temps: list[Tensor] = []
        shape = tensor_shape(o.results[0])
        a, b = (self.full(v, shape, temps) for v in o.operands)
        dst = self.dest(o.results[0])
        self.flat(isa.VCmpOp, dst, [a, b], mode=mode)
        for x in temps:
            self.release(x)
        self.env[o.results[0]] = dst

    def op_not(self, o: Operation) -> None:
        """not x == (x == 0) on a boolean."""
        temps: list[Tensor] = []
        shape = tensor_shape(o.results[0])
        x = self.full(o.operands[0], shape, temps)
        zero = self.temp(shape or (1,), x.elem)
        self.dup(zero, 0.0)
        dst = self.dest(o.results[0])
        self.flat(isa.VCmpOp, dst, [x, zero], mode="eq")
        for y in (*temps, zero):
            self.release(y)
        self.env[o.results[0]] = dst

    def op_where(self, o: Operation) -> None:
        """vsel on the boolean condition (operands broadcast out in full)."""
        temps: list[Tensor] = []
        shape = tensor_shape(o.results[0])
        c, a, b = (self.full(v, shape, temps) for v in o.operands)
        dst = self.dest(o.results[0])
        self.flat(isa.VSelOp, dst, [c, a, b])
        for x in temps:
            self.release(x)
        self.env[o.results[0]] = dst

    def rounding(self, o: Operation, mode: str) -> None:
        """Round to a whole number in f32: vconv to i32 in `mode` and back, and the input
        itself where |x| >= 2^23 (already whole, also inf and NaN: the compare is false)."""
        x = self.tensor(o.operands[0])
        xf = self.as_f32(x)
        n = x.shape
        whole = self.temp(n, i32)
        self.flat(isa.VConvOp, whole, [xf], round=mode)
        back = self.temp(n, f32)
        self.flat(isa.VConvOp, back, [whole])
        self.release(whole)
        mag, limit, small = self.temp(n, f32), self.temp(n, f32), self.temp(n, i1)
        self.flat(isa.VAbsOp, mag, [xf])
        self.dup(limit, ROUND_LIMIT)
        self.flat(isa.VCmpOp, small, [mag, limit], mode="lt")
        self.release(mag)
        self.release(limit)
        dst = self.dest(o.results[0])
        out = dst if dst.elem == f32 else self.temp(n, f32)
        self.flat(isa.VSelOp, out, [small, back, xf])
        for tmp in (small, back):
            self.release(tmp)
        if out is not dst:
            self.convert(out, dst)
            self.release(out)
        if xf is not x:
            self.release(xf)
        self.env[o.results[0]] = dst

    def binary(self, o: Operation) -> None:
        name, r = type(o), o.results[0]
        vals = [self.env[v] for v in o.operands]
        if name is g.SubOp and isinstance(vals[1], Splat):
            vals, name = [vals[0], replace(vals[1], value=-vals[1].value)], g.AddOp
        operands = list(o.operands)
        if name in SCALAR and len(vals) == 2 and isinstance(vals[0], Splat) and isinstance(vals[1], Tensor):
            vals, operands = vals[::-1], operands[::-1]  # c + x as x + c: one vadds, not a vdup and a vadd
        made: list[Tensor] = []
        if name is g.DivOp and o.operands[1] in self.recips:  # (its block holds 1 / c: hoist_one_values)
            vals, name = [vals[0], self.recips[o.operands[1]]], g.MulOp
        elif name is g.DivOp and self.by_reciprocal(vals):  # x / c as x * (1 / c): a vmuls, not a vdiv
            vals, name = [vals[0], replace(vals[1], value=1.0 / vals[1].value)], g.MulOp
        elif name is g.DivOp and self.by_one_value(vals):  # a one-value tensor (a Cube epilogue's constant)
            made.append(self.reciprocal_block(vals[1]))
            vals, name = [vals[0], made[0]], g.MulOp
        # only the first two operands may be overwritten: a third is read after the first step
        firsts = list(zip(operands, vals))[:2]
        relu = relu_after(o)  # (an Add or Sum as it came: a Sub turned Add above is not one)
        if relu is not None and all(isinstance(x, Tensor) for x in vals):  # one vaddrelu: ReLU(a + b)
            dst = self.dest(relu.results[0], [v for v, x in firsts if x.shape == tensor_shape(r)])
            self.ewise(isa.VAddReluOp, dst, list(vals))
            self.absorbed.add(relu)
            self.env[r] = self.env[relu.results[0]] = dst
            return
        dst = self.dest(r, [v for v, x in firsts if isinstance(x, Tensor) and x.shape == tensor_shape(r)])
        acc: Tensor | None = None
        for x in vals:
            if isinstance(x, Splat) and acc is not None and name in SCALAR:
                self.flat(SCALAR[name], dst, [acc], dst.size, scalar=x.value)
            else:
                x = self.block_of_splat(x)
                if acc is None:
                    acc = x
                    continue
                self.ewise(BINARY[name], dst, [acc, x])
            acc = dst
        if acc is None:  # a one-operand sum / max / min
            acc = self.block_of_splat(vals[0])
        if acc is not dst:
            self.ewise(isa.VAddsOp, dst, [acc], scalar=0.0)
        if name is g.MeanOp:
            self.flat(isa.VMulsOp, dst, [dst], scalar=1.0 / len(vals))
        for x in made:
            self.release(x)
        self.env[r] = dst

    @staticmethod
    def by_reciprocal(vals: Sequence[Value]) -> bool:
        """A float Div by a nonzero finite constant, computed as a multiply by its reciprocal:
        vdiv costs 2-4x a vmul per repeat; the product is within an ulp of the quotient (exact
        for powers of two), inside the f16 / f32 tolerances against onnxruntime."""
        a, c = vals
        return (isinstance(a, Tensor) and isinstance(c, Splat) and numpy_dtype(a.elem).kind == "f"
                and c.value != 0 and math.isfinite(c.value) and math.isfinite(1.0 / c.value))

    @staticmethod
    def by_one_value(vals: Sequence[Value]) -> bool:
        """A float Div by a one-element tensor: one vrec of a block (its reciprocal rounded
        once more, in the data's type) and a vmul instead of a vdiv per repeat."""
        a, c = vals
        return (isinstance(a, Tensor) and isinstance(c, Tensor) and c.size == 1 and a.size > 1
                and c.elem == a.elem and numpy_dtype(a.elem).kind == "f")

    def reciprocal_block(self, c: Tensor) -> Tensor:
        """1 / c in every lane of a block (c: one element)."""
        blk = self.block_of(c)
        rec = self.temp([self.epb(c.elem)], c.elem)
        self.flat(isa.VRecOp, rec, [blk], self.epb(c.elem))
        if blk is not c:
            self.release(blk)
        return replace(rec, shape=(1,), block_splat=True)

    def block_of_splat(self, x: Value) -> Tensor:
        if isinstance(x, Tensor):
            return x
        blk = self.temp([self.epb(x.elem)], x.elem)
        self.dup(blk, x.value)
        return replace(blk, shape=(1,), block_splat=True)

    def op_pow(self, o: Operation) -> None:
        x, e = self.env[o.operands[0]], self.env[o.operands[1]]
        if not isinstance(e, Splat) or not isinstance(x, Tensor):
            raise self.fail("pow needs a constant exponent (one value) on a computed base (run decompose first)")
        p = e.value
        if p == int(p) and p not in (1, 2, 3, -1):
            raise self.fail(f"pow by the integer {p:g} (decompose makes it multiplications)")
        dst = self.dest(o.results[0])  # x is read again after dst is first written
        if p == 2:
            self.ewise(isa.VMulOp, dst, [x, x])
        elif p == 1:
            self.ewise(isa.VAddsOp, dst, [x], scalar=0.0)
        elif p == 0.5:
            self.flat(isa.VSqrtOp, dst, [x])
        elif p == -1:
            self.flat(isa.VRecOp, dst, [x])
        elif p == 3:
            self.flat(isa.VMulOp, dst, [x, x])
            self.flat(isa.VMulOp, dst, [dst, x])
        else:
            def body(w: Tensor) -> None:
                self.flat(isa.VLnOp, w, [w])
                self.flat(isa.VMulsOp, w, [w], scalar=p)
                self.flat(isa.VExpOp, w, [w])
            self.in_f32(x, dst, body)
        self.env[o.results[0]] = dst

    def in_f32(self, x: Tensor, dst: Tensor, body: Callable[[Tensor], None]) -> None:
        """dst = body(x) computed in f32 (in place on an f32 working copy of x); f16 data is
        converted in and out once, so the result rounds to f16 once."""
        if x.elem == f32 and dst.elem == f32:
            if dst.buf is not x.buf or dst.off != x.off:
                self.copy(x, dst, [x.size])
            body(dst)
            return
        w = self.temp(x.shape, f32)
        self.move(x, w)
        body(w)
        self.move(w, dst)
        self.release(w)

    def op_neg(self, o: Operation) -> None:
        self.unary_scalar(o, isa.VMulsOp, -1.0)

    def unary_scalar(self, o: Operation, cls, value: float) -> None:
        x = self.tensor(o.operands[0])
        dst = self.dest(o.results[0], o.operands)
        self.flat(cls, dst, [x], scalar=value)
        self.env[o.results[0]] = dst

    def op_clip(self, o: Operation) -> None:
        from ge.dialects.graph import get_float

        x = self.tensor(o.operands[0])
        dst = self.dest(o.results[0], o.operands)
        lo, hi = get_float(o.properties, "min", -math.inf), get_float(o.properties, "max", math.inf)
        src = x
        if lo > -math.inf:
            self.flat(isa.VMaxsOp, dst, [src], scalar=lo)
            src = dst
        if hi < math.inf:
            self.flat(isa.VMinsOp, dst, [src], scalar=hi)
            src = dst
        if src is x:
            self.move(x, dst)
        self.env[o.results[0]] = dst

    def op_leaky_relu(self, o: Operation) -> None:
        from ge.dialects.graph import get_float

        x = self.tensor(o.operands[0])
        alpha = get_float(o.properties, "alpha", 0.01)
        dst = self.dest(o.results[0])
        # x >= 0: x; else alpha * x  ==  max(x, alpha x) for alpha <= 1, min(...) above
        self.flat(isa.VMulsOp, dst, [x], scalar=alpha)
        self.flat(isa.VMaxOp if alpha <= 1 else isa.VMinOp, dst, [x, dst])
        self.env[o.results[0]] = dst

    def composite(self, o: Operation, body: Callable[[Tensor, Tensor], None]) -> None:
        """A unary op made of several instructions, in f32: body(work, f32 copy of x)."""
        x = self.tensor(o.operands[0])
        dst = self.dest(o.results[0])
        xf = x
        keep = None
        if x.elem != f32:
            keep = xf = self.temp(x.shape, f32)
            self.convert(x, xf)
        w = self.temp(x.shape, f32)
        body(w, xf)
        self.move(w, dst)
        self.release(w)
        if keep is not None:
            self.release(keep)
        self.env[o.results[0]] = dst

    def op_sigmoid(self, o: Operation) -> None:
        def body(w: Tensor, x: Tensor) -> None:
            self.flat(isa.VMulsOp, w, [x], scalar=-1.0)
            self.flat(isa.VExpOp, w, [w])
            self.flat(isa.VAddsOp, w, [w], scalar=1.0)
            self.flat(isa.VRecOp, w, [w])
        self.composite(o, body)

    def op_softplus(self, o: Operation) -> None:
        def body(w: Tensor, x: Tensor) -> None:  # max(x, 0) + log(1 + exp(-|x|))
            self.flat(isa.VAbsOp, w, [x])
            self.flat(isa.VMulsOp, w, [w], scalar=-1.0)
            self.flat(isa.VExpOp, w, [w])
            self.flat(isa.VAddsOp, w, [w], scalar=1.0)
            self.flat(isa.VLnOp, w, [w])
            r = self.temp(x.shape, f32)
            self.flat(isa.VReluOp, r, [x])
            self.flat(isa.VAddOp, w, [w, r])
            self.release(r)
        self.composite(o, body)

    def op_softsign(self, o: Operation) -> None:
        def body(w: Tensor, x: Tensor) -> None:
            self.flat(isa.VAbsOp, w, [x])
            self.flat(isa.VAddsOp, w, [w], scalar=1.0)
            self.flat(isa.VDivOp, w, [x, w])
        self.composite(o, body)

    def op_hard_sigmoid(self, o: Operation) -> None:
        from ge.dialects.graph import get_float

        a, b = get_float(o.properties, "alpha", 0.2), get_float(o.properties, "beta", 0.5)

        def body(w: Tensor, x: Tensor) -> None:
            self.flat(isa.VMulsOp, w, [x], scalar=a)
            self.flat(isa.VAddsOp, w, [w], scalar=b)
            self.flat(isa.VMaxsOp, w, [w], scalar=0.0)
            self.flat(isa.VMinsOp, w, [w], scalar=1.0)
        self.composite(o, body)

    def op_hard_swish(self, o: Operation) -> None:
        def body(w: Tensor, x: Tensor) -> None:
            self.flat(isa.VMulsOp, w, [x], scalar=1 / 6)
            self.flat(isa.VAddsOp, w, [w], scalar=0.5)
            self.flat(isa.VMaxsOp, w, [w], scalar=0.0)
            self.flat(isa.VMinsOp, w, [w], scalar=1.0)
            self.flat(isa.VMulOp, w, [w, x])
        self.composite(o, body)

    def op_gelu(self, o: Operation) -> None:
        from ge.dialects.graph import get_str

        tanh = get_str(o.properties, "approximate", "none") == "tanh"

        def body(w: Tensor, x: Tensor) -> None:
            if tanh:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
                self.flat(isa.VMulOp, w, [x, x])
                self.flat(isa.VMulOp, w, [w, x])
                self.flat(isa.VMulsOp, w, [w], scalar=0.044715)
                self.flat(isa.VAddOp, w, [w, x])
                self.flat(isa.VMulsOp, w, [w], scalar=math.sqrt(2 / math.pi))
                self.flat(isa.VTanhOp, w, [w])
            else:  # 0.5 x (1 + erf(x / sqrt 2))
                self.flat(isa.VMulsOp, w, [x], scalar=1 / math.sqrt(2))
                self.flat(isa.VErfOp, w, [w])
            self.flat(isa.VAddsOp, w, [w], scalar=1.0)
            self.flat(isa.VMulOp, w, [w, x])
            self.flat(isa.VMulsOp, w, [w], scalar=0.5)
        self.composite(o, body)

    # -- batch norm -----------------------------------------------------------------------

    def op_batch_norm(self, o: Operation) -> None:
        """y = x * inv + shift with inv = scale / sqrt(var + eps), shift = bias - mean * inv,
        both per channel in f32, then two broadcast instructions on the tile."""
        from ge.dialects.graph import get_float

        x = self.tensor(o.operands[0])
        params = [self.tensor(v) for v in o.operands[1:5]]
        c = params[0].size
        scale, bias, mean, var = (self.as_f32(p) for p in params)
        eps = get_float(o.properties, "epsilon", 1e-5)
        inv, shift = self.temp([c], f32), self.temp([c], f32)
        self.flat(isa.VAddsOp, inv, [var], scalar=eps)
        self.flat(isa.VSqrtOp, inv, [inv])
        self.flat(isa.VDivOp, inv, [scale, inv])
        self.flat(isa.VMulOp, shift, [mean, inv])
        self.flat(isa.VSubOp, shift, [bias, shift])
        for p in (scale, bias, mean, var):
            if p.elem == f32 and p.buf not in [q.buf for q in params]:
                self.release(p)
        if x.elem != f32:
            inv, shift = self.narrow(inv, x.elem), self.narrow(shift, x.elem)
        shape = self.channel_shape(o.operands[0], c)
        dst = self.dest(o.results[0], o.operands[:1])
        self.ewise(isa.VMulOp, dst, [x, replace(inv, shape=shape)])
        self.ewise(isa.VAddOp, dst, [dst, replace(shift, shape=shape)])
        self.release(inv)
        self.release(shift)
        self.env[o.results[0]] = dst

    # -- int8 quantization (AscendQuant / AscendDequant) ---------------------------------

    def op_quantize(self, o: Operation) -> None:
        """q = saturate_int8(rint(x / scale) + offset): f32 vdiv by the scale (the
        reference's x / scale, bit for bit), then with offset 0 one vconv to i8 in CAST_RINT
        (saturating); else vconv to i32 in CAST_RINT, the zero point added and the int8 range
        clamped in i32 (vadds, vmaxs, vmins), vconv to i8. (Ascend C's AscendQuant multiplies
        by 1 / scale in f16 and converts f16 -> s8 instead: within one step of this.)"""
        from ge.dialects.graph import get_float, get_int

        x = self.tensor(o.operands[0])
        n = x.shape
        xf = self.as_f32(x)
        scale = self.temp([self.epb(f32)], f32)
        self.dup(scale, get_float(o.properties, "scale"))
        q = xf if xf is not x else self.temp(n, f32)
        self.ewise(isa.VDivOp, q, [xf, replace(scale, shape=(1,), block_splat=True)])
        self.release(scale)
        offset = get_int(o.properties, "offset")
        if not offset:  # vconv rounds (CAST_RINT) and saturates to the int8 range itself
            dst = self.dest(o.results[0])
            self.flat(isa.VConvOp, dst, [q], round="rint")
            if q is not x:
                self.release(q)
            self.env[o.results[0]] = dst
            return
        whole = self.temp(n, i32)
        self.flat(isa.VConvOp, whole, [q], round="rint")
        if q is not x:
            self.release(q)
        self.flat(isa.VAddsOp, whole, [whole], scalar=float(offset))
        self.flat(isa.VMaxsOp, whole, [whole], scalar=-128.0)
        self.flat(isa.VMinsOp, whole, [whole], scalar=127.0)
        dst = self.dest(o.results[0])
        self.convert(whole, dst)
        self.release(whole)
        self.env[o.results[0]] = dst

    def op_dequantize(self, o: Operation) -> None:
        """y = (x - offset) * scale: vconv to f32, vadds of -offset, vmul by the scale
        broadcast along `axis` (one value, or a per-channel tile), vconv to the result type:
        the reference's order of roundings."""
        from ge.dialects.graph import get_int

        x = self.tensor(o.operands[0])
        n = x.shape
        xf = self.temp(n, f32)
        self.convert(x, xf)
        if offset := get_int(o.properties, "offset"):
            self.flat(isa.VAddsOp, xf, [xf], scalar=float(-offset))
        if isinstance(splat := self.env[o.operands[1]], Splat):  # a constant scale: vmuls by an immediate
            self.flat(isa.VMulsOp, xf, [xf], scalar=float(np.float32(splat.value)))
            return self.dequantized(o, xf)
        s = self.tensor(o.operands[1])
        sf = self.as_f32(s)
        if len(sf.shape) == 1 and sf.size > 1 and len(n) > 1:  # [C] along `axis` of the tile
            axis = get_int(o.properties, "axis")
            sf = replace(sf, shape=(sf.size, *([1] * (len(n) - 1 - axis))))
        elif sf.size == 1:
            sf = self.block_of(replace(sf, shape=(1,)))
        self.ewise(isa.VMulOp, xf, [xf, sf])
        if sf is not s and sf.buf is not s.buf:
            self.release(sf)
        self.dequantized(o, xf)

    def dequantized(self, o: Operation, xf: Tensor) -> None:
        """The dequantize's f32 product into its result (converted to f16 if it is)."""
        dst = self.dest(o.results[0])
        if dst.elem == f32:
            self.move(xf, dst)
        else:
            self.convert(xf, dst)
        self.release(xf)
        self.env[o.results[0]] = dst

    def channel_shape(self, v: SSAValue, c: int) -> tuple[int, ...]:
        """The shape a per-channel vector of `c` values broadcasts with over tile `v`."""
        shape = tensor_shape(v)
        enc = lt.layout_of(v.type)
        if enc is not None and enc.fmt == lt.Format.NC1HWC0:
            c0 = shape[4]
            if c != shape[1] * c0:
                raise self.fail(f"{c} channel parameters for a tile of {shape[1]} x {c0} channels")
            return (1, shape[1], 1, 1, c0)
        if enc is not None or len(shape) < 2 or shape[1] != c:
            raise self.fail(f"per-channel parameters on a {enc.fmt if enc else 'plain'} tile of shape {list(shape)}")
        return (1, c, *([1] * (len(shape) - 2)))

    def as_f32(self, x: Tensor) -> Tensor:
        if x.elem == f32:
            return x
        y = self.temp(x.shape, f32)
        self.convert(x, y)
        return y

    def narrow(self, x: Tensor, elem: Attribute) -> Tensor:
        y = self.temp(x.shape, elem)
        self.convert(x, y)
        self.release(x)
        return y

    # -- rows: reductions on f32 rows whose stride is whole blocks ---------------------------

    def load_rows(self, x: Tensor, sizes: Sequence[int], strides: Sequence[int], row_dims: int) -> Rows:
        """The elements of x at the indices of `sizes` (element `strides`) as f32 rows: the
        last `row_dims` dims form a row of n elements, stored every `ld` elements."""
        n = math.prod(sizes[len(sizes) - row_dims:])
        r = math.prod(sizes[:len(sizes) - row_dims])
        ld = n if r == 1 else isa.align_up(n, self.epb(f32))
        w = self.temp([r * ld], f32)
        rows = Rows(w, r, n, ld)
        if ld == n and list(strides) == list(row_major(sizes)):
            self.move(x, replace(w, shape=x.shape))
            return rows
        src = x
        if x.elem != f32:
            src = self.temp(x.shape, f32)
            self.convert(x, src)
        self.copy(src, w, sizes, strides, self.row_strides(sizes, row_dims, ld))
        if src is not x:
            self.release(src)
        return rows

    @staticmethod
    def row_strides(sizes: Sequence[int], row_dims: int, ld: int) -> list[int]:
        k = len(sizes) - row_dims
        inner = list(row_major(sizes[k:]))
        outer = [s * ld for s in row_major(sizes[:k])]
        return outer + inner

    def store_rows(self, rows: Rows, dst: Tensor, sizes: Sequence[int], strides: Sequence[int], row_dims: int) -> None:
        """The inverse of load_rows: the rows written to dst's elements at (sizes, strides)."""
        w = rows.buf
        if rows.ld == rows.n and list(strides) == list(row_major(sizes)):
            self.move(replace(w, shape=dst.shape), dst)
            return
        mid = dst if dst.elem == f32 else self.temp(dst.shape, f32)
        self.copy(w, mid, sizes, self.row_strides(sizes, row_dims, rows.ld), strides)
        if mid is not dst:
            self.convert(mid, dst)
            self.release(mid)

    def row_op(self, cls, dst: Rows, srcs: Sequence[Rows | tuple[str, Tensor]], n: int | None = None,
               **props) -> None:
        """dst row = f(src rows) over the first n elements of each row. A source is Rows,
        ("bcast", t) with t one block per row (a per-row value), or ("vec", t) one row for
        all rows; `grid` picks the instruction layout."""
        n = dst.n if n is None else n
        epb = self.epb(dst.buf.elem)  # f32 rows, or a max pool's f16 (block_pool)
        ops = [(dst.buf, dst.ld, 1)]
        for s in srcs:
            if isinstance(s, Rows):
                ops.append((s.buf, s.ld, 1))
            else:
                ops.append((s[1], epb, 0) if s[0] == "bcast" else (s[1], 0, 1))
        self.grid(cls, ops, dst.r, n, **props)

    def grid_layouts(self, ops: Sequence[tuple[Tensor, int, int]], r: int, w: int) -> dict[str, list[tuple]]:
        """The instruction layouts of an r x w grid op (see `grid`), each a list of
        (operand element offsets, repeats, mask, block strides, repeat strides)."""
        epb = self.epb(ops[0][0].elem)
        nb8, mr = self.per_blocks, self.max_rep
        per = epb * nb8
        rs = [s for _, s, _ in ops]
        cs = [c for _, _, c in ops]
        out: dict[str, list[tuple]] = {}

        def split(reps: int, base: Sequence[int], step: Sequence[int], mask: int, blk, rep) -> list[tuple]:
            return [(tuple(b + d * s for b, s in zip(base, step)), min(mr, reps - d), mask, blk, rep)
                    for d in range(0, reps, mr)]

        if all(c == 1 and s == w for s, c in zip(rs, cs)) or (r == 1 and all(c == 1 for c in cs)):
            full, rest = divmod(r * w if r > 1 else w, per)
            ins = split(full, [0] * len(ops), [per] * len(ops), per, None, None) if full else []
            if rest:
                ins.append(((full * per,) * len(ops), 1, rest, None, None))
            out["flat"] = ins
        if all(s % epb == 0 and s // epb <= MAX_REP_STRIDE for s in rs):  # rows on the repeat axis
            ins = []
            for c0 in range(0, w, per):
                ins += split(r, [c0 * c for c in cs], rs, min(per, w - c0), cs, [s // epb for s in rs])
            out["rows"] = ins
        if r <= nb8 or "rows" not in out:  # a row at a time, repeats along it
            ins = []
            full, rest = divmod(w, per)
            for i in range(r):
                base = [i * s for s in rs]
                ins += split(full, base, [per * c for c in cs], per, cs, [nb8 * c for c in cs]) if full else []
                if rest:
                    ins.append((tuple(b + full * per * c for b, c in zip(base, cs)), 1, rest, cs,
                                [nb8 * c for c in cs]))
            out["each"] = ins
        if w % epb == 0 and all(s % epb == 0 and s // epb <= MAX_REP_STRIDE for s in rs):
            blk = [s // epb for s in rs]
            ins = []  # 8 rows on the blocks of a repeat, the repeats along the row
            for g0 in range(0, r, nb8):
                ins += split(w // epb, [g0 * s for s in rs], [epb * c for c in cs], min(nb8, r - g0) * epb, blk, cs)
            out["row_blocks"] = ins
            if all(nb8 * b <= MAX_REP_STRIDE for b in blk):
                ins = []  # 8 rows on the blocks, the repeats over groups of 8 rows: one per block column
                full, part = divmod(r, nb8)
                for k in range(w // epb):
                    base = [k * epb * c for c in cs]
                    ins += split(full, base, [nb8 * s for s in rs], per, blk, [nb8 * b for b in blk]) if full else []
                    if part:
                        ins.append((tuple(b + full * nb8 * s for b, s in zip(base, rs)), 1, part * epb, blk,
                                    [nb8 * b for b in blk]))
                out["columns"] = ins
        return out

    def grid(self, cls, ops: Sequence[tuple[Tensor, int, int]], r: int, w: int, **props) -> None:
        """dst = f(srcs) over r rows of w elements; an operand is (tensor, row stride in
        elements, column step 1 or 0): rows (ld, 1), a per-row value spread over one block
        (epb, 0), a row read by every row (0, 1); ops[0] is the destination. The layouts:
        one instruction per repeat-wide column (rows on the repeat axis), per row, per 8
        rows (their blocks on a repeat's blocks, repeats along the row: a 16 x 768 f32 row op
        is 2 instructions of 96 repeats, not 12 of 16), per block column (8 rows on the
        blocks, full lanes where a column is narrower than a repeat), or flat when every
        operand is dense. The instructions are independent, so the pipe overlaps their
        start-ups: the cheapest layout is the one with the fewest repeats (no half-empty
        ones), then the fewest instructions."""
        layouts = self.grid_layouts(ops, r, w)
        name = cls.name.split(".", 1)[1]
        elem = "f16" if isa.itemsize(ops[0][0].elem) == 2 else "f32"
        cyc = self.target.vector_cycles(name, elem)

        def cost(ins: list[tuple]) -> float:  # independent: their start-ups overlap; then fewer instructions
            return sum(reps * cyc for _, reps, _, _, _ in ins) + len(ins) / (len(ins) + 1)

        best = min(layouts.values(), key=cost)
        for offs, reps, mask, blk, rep in best:
            full = mask == self.bpr // isa.itemsize(ops[0][0].elem) and blk is None
            self.vec(cls, [(x, o) for (x, _, _), o in zip(ops, offs)], reps, mask=None if full else mask,
                     blk=blk, rep=rep, **props)

    def row_reduce(self, kind: str, rows: Rows, scratch: Tensor | None = None, consume: bool = False) -> Tensor:
        """One value per row, in the rows' element type (f32; the exact max of f16 rows in
        f16) -- a tensor of the row count rounded up to a repeat of blocks; the padding is
        zero. Rows wider than a repeat are folded to one repeat by
        halving (fold_rows: log2 dependent steps, not one per repeat of the row); `consume`:
        the rows may be overwritten (they die here); `scratch`: a free buffer for the first
        halving when they may not (the rows' size, or the rows' first halving compact)."""
        red_cls, fold_cls = REDUCE[kind]
        if red_cls is None:
            return self.row_tree(fold_cls, rows)
        return drive(self.row_reduce_steps(kind, rows, scratch, consume))

    def row_reduces(self, kind: str, items: Sequence[tuple[Rows, Tensor | None, bool]]) -> list[Tensor]:
        """Independent row reductions (rows, scratch, consume) with their dependent steps
        emitted in lockstep: step k of each side by side, so that the pipe overlaps them and
        the reductions pay one start-up per step between them (a LayerNorm's sums of x and
        of x^2: one chain, not two)."""
        if REDUCE[kind][0] is None:
            return [self.row_reduce(kind, *it) for it in items]
        return lockstep([self.row_reduce_steps(kind, *it, sides=len(items)) for it in items])

    def row_reduce_steps(self, kind: str, rows: Rows, scratch: Tensor | None, consume: bool, sides: int = 1):
        """row_reduce as a generator that yields after each dependent step and returns the
        per-row values."""
        red_cls, fold_cls = REDUCE[kind]
        elem = rows.buf.elem
        epb, per = self.epb(elem), self.bpr // isa.itemsize(elem)
        r8 = isa.align_up(rows.r, self.per_blocks)
        plan = self.group_plan(kind, rows, scratch, consume, sides)
        out = self.temp([r8], elem)
        if r8 != rows.r:
            self.dup(out, 0.0)
        if plan is not None:
            yield from self.group_reduce_steps(kind, rows, scratch, consume, plan, out)
            return out
        chunks = -(-rows.n // per)
        keep = chunks - chunks // 2
        acc = None
        if rows.n <= per:
            src = rows
        elif consume:
            src = yield from self.fold_rows_steps(fold_cls, rows, rows)
        elif scratch is not None:
            ld = rows.ld if scratch.size >= rows.r * rows.ld else keep * per  # (a compact first halving)
            src = yield from self.fold_rows_steps(fold_cls, rows, Rows(scratch, rows.r, rows.n, ld))
        elif keep == 1 or rows.r * keep * self.bpr <= SMALL_SCRATCH:
            acc = Rows(self.temp([rows.r * keep * per], elem), rows.r, keep * per, keep * per)
            src = yield from self.fold_rows_steps(fold_cls, rows, acc)
        else:  # no room for a tree: one repeat-wide accumulator, folded chunk by chunk
            acc = Rows(self.temp([rows.r * per], elem), rows.r, per, per)
            self.copy(rows.buf, acc.buf, [rows.r, per], [rows.ld, 1])
            full = rows.n // per - 1  # whole repeats after the first: an scf.for, so long rows stay short IR
            if full > 1:
                with self.b.loop(1, 1 + full, name="col") as j:
                    part = Rows(self.shifted(rows.buf, self.b.mul(j, per)), rows.r, per, rows.ld)
                    self.row_op(fold_cls, acc, [acc, part], n=per)
            for c0 in range(per * (1 + full) if full > 1 else per, rows.n, per):
                part = Rows(self.shifted(rows.buf, c0), rows.r, min(per, rows.n - c0), rows.ld)
                self.row_op(fold_cls, acc, [acc, part], n=part.n)
            src = acc
        mask = src.n
        columns = self.transposed_pays(kind, rows.r, mask, elem, sides)
        row_stride = src.ld // epb * (self.per_blocks if columns else 1)  # blocks between repeats
        first = None  # the block halvings' first destination: a free buffer instead of a copy of the rows
        if (columns and src is rows and not consume and scratch is not None and scratch.elem == elem
                and (mask // epb) % 2 == 0 and scratch.size >= rows.r * mask // 2 and row_stride <= MAX_REP_STRIDE):
            first = scratch
        elif (columns and src is rows and not consume) or row_stride > MAX_REP_STRIDE:
            compact = Rows(self.temp([rows.r * mask], elem), rows.r, mask, mask)  # (the rows stay intact)
            self.copy(src.buf, compact.buf, [rows.r, mask], [src.ld, 1])
            yield
            if acc is not None:
                self.release(acc.buf)
            acc = src = compact
        if columns:
            yield from self.block_columns_steps(fold_cls, src, out, first)
        else:
            group = self.max_rep // self.per_blocks * self.per_blocks  # dst offsets stay on blocks
            for r0 in range(0, rows.r, group):
                reps = min(group, rows.r - r0)
                self.vec(red_cls, [(out, r0), (src.buf, r0 * src.ld)], reps, mask=mask, blk=[1, 1],
                         rep=[1, src.ld // epb])
            yield
        if acc is not None:
            self.release(acc.buf)
        return out

    def group_plan(self, kind: str, rows: Rows, scratch: Tensor | None, consume: bool, sides: int = 1):
        """The cheapest sequence of dependent steps that reduces rows of whole blocks with the
        group reductions (vcgadd / vcgmax / vcgmin: one result per block, so one instruction
        reduces 8 blocks -- of one row, or one block of each of 8 rows), on the target's
        costs; None when it uses none of them (row_reduce_steps' other paths then). Steps:
        "fold<k>" (each row's blocks from the k-th on onto its first ones, elementwise), "cg"
        (each row's blocks to one value each, rows of b blocks -> rows of b values), "rows"
        (rows of one block: 8 rows per repeat, one value per row), "tail" (block_columns:
        the block column transposed by a copy, then halvings) and "vreduce" (one whole-repeat
        reduction per row). `sides` reductions in lockstep share each step's start-up."""
        if kind not in GROUP_REDUCE:
            return None
        elem = rows.buf.elem
        size = isa.itemsize(elem)
        epb, nb8, per = self.epb(elem), self.per_blocks, self.bpr // size
        if rows.n % epb or rows.ld % epb or size not in (2, 4):
            return None
        name = "f16" if size == 2 else "f32"
        cyc = self.target.vector_cycles
        fold_c, cg_c = cyc(REDUCE[kind][1].name.split(".")[1], name), cyc(GROUP_REDUCE[kind].name.split(".")[1], name)
        red_c = cyc(f"vreduce_{kind}", name)
        step = self.startup / sides
        r, r8 = rows.r, isa.align_up(rows.r, nb8)
        halvings = (epb - 1).bit_length()
        rc = isa.align_up(r, math.lcm(nb8, epb))
        tail = (halvings + 1) * step + -(-r * epb * size // self.bpr)
        left = epb
        while left > 2:
            tail += -(-(left // 2) * rc // per) * fold_c
            left -= left // 2
        tail += -(-r8 // per) * fold_c
        room = SMALL_SCRATCH // size  # elements a temporary may take

        @functools.cache
        def best(b: int, ld: int, dense: bool, fresh: bool) -> tuple[float, tuple[str, ...]]:
            """(cost, steps) from rows of b blocks stored every ld blocks; `fresh`: still the
            caller's rows (a fold must not write them unless they are consumed)."""
            options = []
            if b == 1:
                if ld <= MAX_REP_STRIDE and (size == 4 or (nb8 * ld <= MAX_REP_STRIDE and not (r % nb8 and r // nb8 % 2))):
                    # (f16 results: each instruction's start on a block)
                    options.append((step + -(-r // nb8) * cg_c, ("rows",)))
                options.append((tail, ("tail",)))
            if b * epb <= per and ld <= MAX_REP_STRIDE:
                options.append((step + r * red_c, ("vreduce",)))
            if b % nb8 == 0 and b % epb == 0 and r * b <= room and \
                    (dense or (size == 4 and ld <= MAX_REP_STRIDE and b <= MAX_REP_STRIDE)):
                c, p = best(b // epb, b // epb, True, False)
                options.append((step + r * b // nb8 * cg_c + c, ("cg", *p)))
            # a fold keeps the lower half (rounded up) or the whole repeats / blocks of values
            # below b that reach it (12 blocks -> 8: one fold, then a group reduction)
            keeps = {b - b // 2} | {m for m in (b - b % nb8, b - b % epb) if b - b // 2 <= m < b}
            for keep in keeps if b > 1 else ():
                h = b - keep
                busy = min(r * -(-h // nb8), h * -(-r // nb8)) * fold_c
                if not (fresh and not consume):
                    c, p = best(keep, ld, False, False)
                    options.append((step + busy + c, (f"fold{keep}", *p)))
                elif (scratch is not None and scratch.elem == elem and scratch.size >= r * keep * epb) or \
                        r * keep * epb <= room:
                    c, p = best(keep, keep, True, False)
                    options.append((step + busy + c, (f"fold{keep}", *p)))
            return min(options) if options else (math.inf, ())

        plan = best(rows.n // epb, rows.ld // epb, rows.ld == rows.n, True)[1]
        if not plan or not ({"cg", "rows"} & set(plan)):
            return None
        return plan

    def group_reduce_steps(self, kind: str, rows: Rows, scratch: Tensor | None, consume: bool, plan, out: Tensor):
        """row_reduce_steps along a `group_plan`: out[i] = the fold of row i, yielding after
        each dependent step."""
        red_cls, fold_cls = REDUCE[kind]
        cg_cls = GROUP_REDUCE[kind]
        elem = rows.buf.elem
        epb, nb8, per = self.epb(elem), self.per_blocks, self.bpr // isa.itemsize(elem)
        r = rows.r
        src, b, fresh = rows, rows.n // epb, not consume
        temps: list[Tensor] = []
        for op in plan:
            if op.startswith("fold"):  # blocks [keep, b) of each row onto blocks [0, b - keep)
                keep = int(op[4:])
                h = b - keep
                if fresh:  # the first halving into free memory: the rows stay intact
                    if scratch is not None and scratch.elem == elem and scratch.size >= r * keep * epb:
                        buf = scratch
                    else:
                        buf = self.temp([r * keep * epb], elem)
                        temps.append(buf)
                    dst = Rows(buf, r, keep * epb, keep * epb)
                    if keep > h:  # the middle blocks have no partner
                        self.copy(self.shifted(src.buf, h * epb), self.shifted(dst.buf, h * epb), [r, (keep - h) * epb],
                                  [src.ld, 1], [dst.ld, 1])
                else:
                    dst = src
                self.grid(fold_cls, [(dst.buf, dst.ld, 1), (src.buf, src.ld, 1),
                                     (self.shifted(src.buf, keep * epb), src.ld, 1)], r, h * epb)
                src, b, fresh = Rows(dst.buf, r, keep * epb, dst.ld), keep, False
            elif op == "cg":
                vals = self.temp([r * b], elem)
                temps.append(vals)
                reps = b // nb8  # repeats per row
                if src.ld == src.n:  # dense rows: one run of repeats (in chunks whose results start on blocks)
                    chunk = self.max_rep - self.max_rep % epb
                    for d in range(0, r * reps, chunk):
                        self.vec(cg_cls, [(vals, d * nb8), (src.buf, d * per)], min(chunk, r * reps - d))
                else:
                    for c in range(reps):
                        for r0 in range(0, r, self.max_rep):
                            self.vec(cg_cls, [(vals, r0 * b + c * nb8), (src.buf, r0 * src.ld + c * per)],
                                     min(self.max_rep, r - r0), rep=[b, src.ld // epb])
                src, b, fresh = Rows(vals, r, b, b), b // epb, False
            elif op == "rows":
                self.group_rows(cg_cls, src, out)
            elif op == "tail":
                yield from self.block_columns_steps(fold_cls, src, out)
                continue
            else:  # "vreduce"
                group = self.max_rep // nb8 * nb8  # dst offsets stay on blocks
                for r0 in range(0, r, group):
                    self.vec(red_cls, [(out, r0), (src.buf, r0 * src.ld)], min(group, r - r0), mask=src.n, blk=[1, 1],
                             rep=[1, src.ld // epb])
            yield
        for x in temps:
            self.release(x)

    def group_rows(self, cg_cls, src: Rows, out: Tensor) -> None:
        """out[i] = the group reduction of row i's one block: the blocks of a repeat are 8
        rows (block stride = the row stride), one repeat per 8 rows, one value per row."""
        epb, nb8 = self.epb(src.buf.elem), self.per_blocks
        ld = src.ld // epb
        full, part = divmod(src.r, nb8)
        if nb8 * ld <= MAX_REP_STRIDE:
            chunk = self.max_rep - self.max_rep % 2  # (f16 results start on blocks)
            for g0 in range(0, full, chunk):
                self.vec(cg_cls, [(out, g0 * nb8), (src.buf, g0 * nb8 * src.ld)], min(chunk, full - g0),
                         blk=[1, ld], rep=[nb8, nb8 * ld])
        else:
            for g in range(full):
                self.vec(cg_cls, [(out, g * nb8), (src.buf, g * nb8 * src.ld)], 1, blk=[1, ld])
        if part:
            self.vec(cg_cls, [(out, full * nb8), (src.buf, full * nb8 * src.ld)], 1, mask=part * epb, blk=[1, ld])

    def fold_rows(self, fold_cls, rows: Rows, dst: Rows) -> Rows:
        """rows folded to one repeat (`per` elements) each by halving the chunk count: chunks
        [keep, c) onto chunks [0, c - keep), the first halving from `rows` into `dst` (which
        may be `rows`), the later ones in place. Returns the folded rows (in dst)."""
        return drive(self.fold_rows_steps(fold_cls, rows, dst))

    def fold_rows_steps(self, fold_cls, rows: Rows, dst: Rows):
        """fold_rows, yielding after each halving."""
        per = self.bpr // isa.itemsize(rows.buf.elem)
        r, n = rows.r, rows.n
        c = -(-n // per)
        src = rows

        width = n  # of the rows still to fold: after the first halving, whole chunks
        while c > 1:
            h = c // 2
            keep = c - h
            up = width - keep * per  # the upper chunks [keep, c) fold onto the first `up` elements
            if src is not dst and up < keep * per:  # the lower part without a partner, from its chunk on
                a0 = up - up % per
                self.copy(self.shifted(src.buf, a0), self.shifted(dst.buf, a0), [r, keep * per - a0], [src.ld, 1],
                          [dst.ld, 1])
            self.grid(fold_cls, [(dst.buf, dst.ld, 1), (src.buf, src.ld, 1),
                                 (self.shifted(src.buf, keep * per), src.ld, 1)], r, up)
            yield
            src, c, width = dst, keep, keep * per
        return Rows(dst.buf, r, min(n, per), dst.ld)

    def transposed_pays(self, kind: str, r: int, width: int, elem: Attribute = f32, sides: int = 1) -> bool:
        """Whether block_columns (its ~7 dependent steps) beats one whole-repeat `vreduce` per
        row for r rows of `width` (<= one repeat) elements, on the target's costs; `sides`
        reductions in lockstep (`row_reduces`) share each step's start-up."""
        epb = self.epb(elem)
        if width % epb or kind not in ("sum", "max"):
            return False
        cyc = self.target.vector_cycles
        name = "f16" if isa.itemsize(elem) == 2 else "f32"
        fold = "vadd" if kind == "sum" else "vmax"
        nb = width // epb
        groups = -(-r // self.per_blocks)
        halvings = (epb - 1).bit_length()
        steps = nb.bit_length() + halvings  # block halvings, the transposing copy, the row halvings
        mine = (steps * self.startup / sides + (nb - 1) * groups * cyc(fold, name)
                + 2 * groups * cyc("default", name) + (epb - 1) * -(-groups // self.per_blocks) * cyc(fold, name))
        return mine < self.startup / sides + r * cyc(f"vreduce_{kind}", name)

    def block_columns_steps(self, fold_cls, src: Rows, out: Tensor, first: Tensor | None = None):
        """out[i] = the fold of row i of src (rows of whole blocks, at most one repeat wide),
        without a per-row reduction: the blocks of each row folded onto its first block in
        place (a repeat takes one block of each of 8 rows: full-width instructions), that
        block column moved to 8 rows of r elements (one strided copy), and those 8 rows
        folded elementwise (three halvings for f32). `out` holds the row count rounded up to a
        repeat of blocks; its padding is zero. `first` (an even block count): the first
        halving goes into this buffer (rows of half the width) and src stays intact."""
        epb, nb8 = self.epb(src.buf.elem), self.per_blocks
        r, r8 = src.r, isa.align_up(src.r, nb8)
        nb = src.n // epb
        while nb > 1:  # blocks [nb - h, nb) of every row onto blocks [0, h)
            h = nb // 2
            rows = (src.buf, src.ld, 1)
            if first is not None:
                into = Rows(first, r, h * epb, h * epb)
                self.grid(fold_cls, [(first, into.ld, 1), rows, (self.shifted(src.buf, (nb - h) * epb), src.ld, 1)],
                          r, h * epb)
                src, first = into, None
            else:
                self.grid(fold_cls, [rows, rows, (self.shifted(src.buf, (nb - h) * epb), src.ld, 1)], r, h * epb)
            yield
            nb -= h
        rc = isa.align_up(r, math.lcm(nb8, epb))  # the block column's rows start on blocks (24 f16 rows: 32)
        cols = self.temp([epb * rc], src.buf.elem)
        if rc != r:
            self.dup(cols, 0.0)
        self.copy(src.buf, cols, [epb, r], [1, src.ld], [rc, 1])
        yield
        left = epb
        while left > 2:
            h = left // 2
            top = self.shifted(cols, (left - h) * rc)
            self.flat(fold_cls, cols, [cols, top], h * rc)
            yield
            left -= h
        self.flat(fold_cls, out, [cols, self.shifted(cols, rc)], r8)
        yield
        self.release(cols)

    def row_tree(self, fold_cls, rows: Rows) -> Tensor:
        """row_reduce for a combiner without a whole-repeat instruction (a product): the
        upper part of each row folded onto the lower part, halving it while it is wider than
        a block (split points on blocks), then the last block's columns one by one. Works in
        place on `rows`."""
        epb = self.epb(f32)
        left = rows.n
        while left > epb:
            split = isa.align_up(-(-left // 2), epb)
            part = left - split
            lower = Rows(rows.buf, rows.r, part, rows.ld)
            upper = Rows(self.shifted(rows.buf, split), rows.r, part, rows.ld)
            self.row_op(fold_cls, lower, [lower, upper], n=part)
            left = split
        r8 = isa.align_up(rows.r, self.per_blocks)
        out = self.temp([r8], f32)
        if r8 != rows.r:
            self.dup(out, 0.0)
        self.copy(rows.buf, out, [rows.r], [rows.ld])
        if left > 1:
            col = self.temp([rows.r], f32)
            for j in range(1, left):
                self.copy(self.shifted(rows.buf, j), col, [rows.r], [rows.ld])
                self.flat(fold_cls, out, [out, col], rows.r)
            self.release(col)
        return out

    def brcb(self, vals: Tensor) -> Tensor:
        """Each of the per-row values spread over one block."""
        epb = self.epb(vals.elem)
        n = vals.size
        out = self.temp([n * epb], vals.elem)
        for g0 in range(0, n // self.per_blocks, self.max_rep):
            reps = min(self.max_rep, n // self.per_blocks - g0)
            done = g0 * self.per_blocks
            self.vec(isa.VBrcbOp, [(out, done * epb), (vals, done)], reps)
        return out

    def axis_rows(self, v: SSAValue, axes: Sequence[int]) -> tuple[list[int], list[int]]:
        """(sizes, strides) that visit tensor v with the `axes` innermost (as rows)."""
        shape = tensor_shape(v)
        st = row_major(shape)
        order = [i for i in range(len(shape)) if i not in axes] + list(axes)
        return [shape[i] for i in order] or [1], [st[i] for i in order] or [1]

    def op_softmax(self, o: Operation, log: bool = False) -> None:
        x = self.tensor(o.operands[0])
        self.plain_only(o.operands[0])
        axis = o.properties["axis"].value.data
        sizes, strides = self.axis_rows(o.operands[0], [axis])
        n, r, v = sizes[-1], math.prod(sizes[:-1]), o.operands[0]
        if (not log and numpy_dtype(x.elem).kind == "f" and x.itemsize == 2 and r > 1 and n % self.epb(x.elem) == 0
                and list(strides) == list(row_major(sizes)) and o.results[0].type.element_type == x.elem):
            return self.softmax_centred_f16(o, x, sizes, strides)
        rows = self.load_rows(x, sizes, strides, 1)
        # f16 rows stored densely (the attention scores): the max of the f16 values (exact)
        # folded in place when they die here, and the exponentials rounded to f16 in the
        # result before their f32 sum, which then folds in place: no fold scratch, and the
        # last multiply on half the repeats
        half = (not log and numpy_dtype(x.elem).kind == "f" and x.itemsize == 2 and rows.n % self.epb(x.elem) == 0
                and rows.ld == rows.n and list(strides) == list(row_major(sizes))
                and o.results[0].type.element_type == x.elem)
        v = o.operands[0]
        if half and self.owned.get(v) is x and self._dies_here(v):
            mx = self.narrow(self.row_reduce("max", Rows(replace(x, shape=(x.size,)), rows.r, rows.n, rows.n),
                                             consume=True), f32)
        else:
            mx = self.row_reduce("max", rows)
        mb = self.brcb(mx)
        self.row_op(isa.VSubOp, rows, [rows, ("bcast", mb)])
        if half:
            for tmp in (mx, mb, *self.softmax_f16_normalize(o, rows, x.elem)):
                self.release(tmp)
            self.release(rows.buf)
            return
        if log:
            e = Rows(self.temp([rows.r * rows.ld], f32), rows.r, rows.n, rows.ld)
            self.row_op(isa.VExpOp, e, [rows])
            s = self.row_reduce("sum", e, consume=True)
            self.release(e.buf)
            self.flat(isa.VLnOp, s, [s], rows.r)
            sb = self.brcb(s)
            self.row_op(isa.VSubOp, rows, [rows, ("bcast", sb)])
        else:
            self.row_op(isa.VExpOp, rows, [rows])
            s = self.row_reduce("sum", rows)
            self.flat(isa.VRecOp, s, [s], rows.r)  # one reciprocal per row, then a vmul per element
            sb = self.brcb(s)
            self.row_op(isa.VMulOp, rows, [rows, ("bcast", sb)])
        for tmp in (mx, mb, s, sb):
            self.release(tmp)
        dst = self.dest(o.results[0])
        self.store_rows(rows, dst, sizes, strides, 1)
        self.release(rows.buf)
        self.env[o.results[0]] = dst

    def softmax_centred_f16(self, o: Operation, x: Tensor, sizes: Sequence[int], strides: Sequence[int]) -> None:
        """Softmax of dense f16 rows of whole blocks (the attention scores plus their mask)
        without an f32 copy of the rows: the row max of the f16 values (exact; its first
        halving into the result's buffer, free until then, so x stays intact), the max
        subtracted in f16 into the result (x - max of two f16 values: exact, or rounded
        below the f16 result's own rounding after exp), the exponentials on f16 in place (an
        f16 vexp is the f32 exp rounded once: the result's own rounding, on half the repeats
        and without the two f32 conversions around an f32 exp), then `softmax_f16_sum`."""
        n, r = sizes[-1], math.prod(sizes[:-1])
        dst = self.dest(o.results[0])
        xr = Rows(replace(x, shape=(x.size,)), r, n, n)
        mx = self.row_reduce("max", xr, scratch=dst)
        mb = self.brcb(mx)
        self.release(mx)
        e = Rows(replace(dst, shape=(r * n,)), r, n, n)
        self.row_op(isa.VSubOp, e, [xr, ("bcast", mb)])
        self.release(mb)
        self.flat(isa.VExpOp, e.buf, [e.buf])
        for tmp in self.softmax_f16_sum(e):
            self.release(tmp)
        self.env[o.results[0]] = dst

    def softmax_f16_sum(self, e: Rows) -> list[Tensor]:
        """An f16 Softmax's tail on its f16 exponentials `e` (dense rows in the result's
        buffer): converted to f32 rows (exact) whose sum folds in place, one reciprocal per
        row, the multiply on f16. (Adding the rows' halves in f16 first would halve the
        conversion but round sums above 1 by up to 2^-11: a whole f16 ulp on p near 1.)
        Returns the temporaries to release."""
        r, n = e.r, e.n
        rows = Rows(self.temp([r * n], f32), r, n, n)
        self.convert(e.buf, rows.buf)
        s = self.row_reduce("sum", rows, consume=True)
        self.release(rows.buf)
        self.flat(isa.VRecOp, s, [s], r)
        s16 = self.narrow(s, e.buf.elem)
        sb = self.brcb(s16)
        self.row_op(isa.VMulOp, e, [e, ("bcast", sb)])
        return [s16, sb]

    def softmax_f16_normalize(self, o: Operation, rows: Rows, elem: Attribute, dst: Tensor | None = None):
        """An f16 Softmax's tail on its centred f32 rows: the exponentials in f32, rounded into
        the f16 result (`dst`, else the op's destination) before their f32 sum folds in place,
        one reciprocal per row, the multiply on f16. Returns the temporaries to release (the
        callers release them in their order: the pool's reuse follows it)."""
        self.row_op(isa.VExpOp, rows, [rows])
        if dst is None:
            dst = self.dest(o.results[0])
        self.convert(replace(rows.buf, shape=(rows.r * rows.n,)), dst)
        s = self.row_reduce("sum", rows, consume=True)
        self.flat(isa.VRecOp, s, [s], rows.r)
        s16 = self.narrow(s, elem)
        sb = self.brcb(s16)
        out = Rows(replace(dst, shape=(dst.size,)), rows.r, rows.n, rows.n)
        self.row_op(isa.VMulOp, out, [out, ("bcast", sb)])
        self.env[o.results[0]] = dst
        return s16, sb

    def op_log_softmax(self, o: Operation) -> None:
        self.op_softmax(o, log=True)

    def plain_only(self, v: SSAValue) -> None:
        enc = lt.layout_of(v.type)
        if enc is not None:
            raise self.fail(f"a reduction on a {enc.fmt} tile (plain tensors only)")

    def op_layer_norm(self, o: Operation) -> None:
        from ge.dialects.graph import get_float

        x = self.tensor(o.operands[0])
        self.plain_only(o.operands[0])
        shape = tensor_shape(o.operands[0])
        axis = o.properties["axis"].value.data
        norm = shape[axis:]
        rows = self.load_rows(x, list(shape) or [1], list(row_major(shape)) or [1], len(norm))
        n = rows.n
        eps = get_float(o.properties, "epsilon", 1e-5)
        params = [self.tensor(v) for v in o.operands[1:]]
        wide = self.widening_cast(o.results[0]) if rows.ld == n else None
        half = (wide is None and x.elem == o.results[0].type.element_type and x.itemsize == 2 and rows.ld == n
                and n % self.epb(x.elem) == 0 and all(p.elem == x.elem and p.size == n for p in params))
        # f32 rows of the scale and bias made beside the statistics' first step (independent of
        # them: no step of their own before the rows' multiply and add)
        rows32: list[Tensor] = []

        def make_params() -> None:
            if not half:
                rows32.extend(self.norm_param(v, norm) for v in o.operands[1:])

        # the widened result's f32 buffer holds the squares until the scale and bias write it
        # (a tile of f32 rows less in UB: the tiler's estimate, VectorKernel.scratch_bytes)
        wide_dst = self.dest(wide.results[0]) if wide is not None else None
        sq = wide_dst if wide_dst is not None and wide_dst.elem == f32 and wide_dst.size >= rows.r * rows.ld else None
        if x.itemsize == 2:  # (the parameters' rows made beside the squares: no step of their own)
            stats = self.normalize_one_pass(rows, eps, beside=make_params, sq_buf=sq)
        else:
            make_params()
            stats = self.normalize(rows, eps)
        if wide is not None:
            # an f16 LayerNorm whose only user widens it to f32 (force_fp16's cast back to the
            # model's output type): the scale and bias applied on the f32 rows straight into
            # the cast's f32 destination -- no rounding to f16 and conversion back (two
            # conversions, one dependent step), and closer to the f32 model
            dst = wide_dst
            out = Rows(replace(dst, shape=(dst.size,)), rows.r, n, n)
            src = rows
            for p, cls in zip(rows32, (isa.VMulOp, isa.VAddOp)):
                self.row_op(cls, out, [src, ("vec", p)])
                src = out
            if src is rows:
                self.move(replace(rows.buf, shape=(rows.r * n,)), replace(dst, shape=(rows.r * n,)))
            for tmp in (*rows32, *stats, rows.buf):
                self.release(tmp)
            self.env[wide.results[0]] = dst
            self.absorbed.add(wide)
            return
        if half:
            # f16 in, out and parameters: the normalized rows rounded into the f16 result, the
            # scale and bias applied there on half the repeats (no f32 copies of them)
            dst = self.dest(o.results[0])
            self.convert(replace(rows.buf, shape=(rows.r * n,)), dst)
            out = Rows(replace(dst, shape=(dst.size,)), rows.r, n, n)
            for p, cls in zip(params, (isa.VMulOp, isa.VAddOp)):
                self.row_op(cls, out, [out, ("vec", p)])
            for tmp in (*stats, rows.buf):
                self.release(tmp)
            self.env[o.results[0]] = dst
            return
        for p, cls in zip(rows32, (isa.VMulOp, isa.VAddOp)):
            self.row_op(cls, rows, [rows, ("vec", p)])
        for tmp in (*rows32, *stats):
            self.release(tmp)
        dst = self.dest(o.results[0])
        self.store_rows(rows, dst, list(shape) or [1], list(row_major(shape)) or [1], len(norm))
        self.release(rows.buf)
        self.env[o.results[0]] = dst

    def widening_cast(self, v: SSAValue) -> Operation | None:
        """The graph.cast that is the only user of the f16 value v and widens it to f32 (to
        be computed by v's producer in f32), else None."""
        uses = list(v.uses)
        if len(uses) != 1 or v.type.element_type == f32 or numpy_dtype(v.type.element_type).kind != "f":
            return None
        user = uses[0].operation
        if not isinstance(user, g.CastOp) or user.results[0].type.element_type != f32:
            return None
        return user

    def normalize(self, rows: Rows, eps: float) -> list[Tensor]:
        """rows = (rows - mean) / sqrt(var + eps) per row, in two passes: the mean, then the
        mean squared deviation of the centered rows (f32 data in full f32 precision: no
        cancellation). Returns the per-row temporaries to release."""
        n = rows.n
        sq = Rows(self.temp([rows.r * rows.ld], f32), rows.r, n, rows.ld)
        mean = self.row_reduce("sum", rows, scratch=sq.buf)  # sq is free until the squares
        self.flat(isa.VMulsOp, mean, [mean], scalar=1.0 / n)
        mb = self.brcb(mean)
        self.row_op(isa.VSubOp, rows, [rows, ("bcast", mb)])
        self.row_op(isa.VMulOp, sq, [rows, rows])
        var = self.row_reduce("sum", sq, consume=True)
        self.release(sq.buf)
        self.flat(isa.VMulsOp, var, [var], scalar=1.0 / n)
        self.flat(isa.VAddsOp, var, [var], scalar=eps)
        self.flat(isa.VSqrtOp, var, [var])
        self.flat(isa.VRecOp, var, [var])
        vb = self.brcb(var)
        self.row_op(isa.VMulOp, rows, [rows, ("bcast", vb)])
        return [mean, mb, var, vb]

    def normalize_one_pass(self, rows: Rows, eps: float, beside: Callable[[], None] | None = None,
                           sq_buf: Tensor | None = None) -> list[Tensor]:
        """`normalize` in one pass, as onnxruntime's LayerNorm computes it: the sums of x and
        of x^2 reduced side by side (`row_reduces`: one chain of dependent steps, not two),
        var = E[x^2] - mean^2 (kept >= 0), one vrsqrt, then the rows centered and scaled.
        For rows of f16 data: the cancellation's error, ~2^-24 (mean / std)^2, stays below
        the f16 input's own rounding, 2^-11 mean / std, until mean / std is in the hundreds.
        `sq_buf`: an f32 buffer free until after the statistics for the squares (else a
        temporary)."""
        n = rows.n
        sq = Rows(self.temp([rows.r * rows.ld], f32) if sq_buf is None else sq_buf, rows.r, n, rows.ld)
        self.row_op(isa.VMulOp, sq, [rows, rows])
        if beside is not None:  # independent work (the scale and bias rows) in the squares' step
            beside()
        per = self.bpr // isa.itemsize(f32)
        half = -(-n // per) - -(-n // per) // 2  # repeats per row after the first halving
        scratch = self.temp([rows.r * half * per], f32) if n > per else None  # x's first halving
        mean, var = self.row_reduces("sum", [(rows, scratch, False), (sq, None, True)])
        for tmp in ([sq.buf] if sq_buf is None else []) + ([scratch] if scratch is not None else []):
            self.release(tmp)
        # the statistics' steps ordered by depth, each step's instructions side by side (one
        # start-up per step): the mean's broadcast beside the variance's first steps, and the
        # rows' centring beside its subtraction -- the chain takes no step of its own for them
        self.flat(isa.VMulsOp, mean, [mean], scalar=1.0 / n)
        self.flat(isa.VMulsOp, var, [var], scalar=1.0 / n)
        m2 = self.temp(mean.shape, f32)
        self.flat(isa.VMulOp, m2, [mean, mean])
        self.flat(isa.VAddsOp, var, [var], scalar=eps)
        mb = self.brcb(mean)
        self.flat(isa.VSubOp, var, [var, m2])
        self.row_op(isa.VSubOp, rows, [rows, ("bcast", mb)])
        self.flat(isa.VMaxsOp, var, [var], scalar=eps)  # E[x^2] - mean^2 may round below zero
        self.release(m2)
        self.flat(isa.VRsqrtOp, var, [var])
        vb = self.brcb(var)
        self.row_op(isa.VMulOp, rows, [rows, ("bcast", vb)])
        return [mean, mb, var, vb]

    def norm_param(self, v: SSAValue, norm: Sequence[int]) -> Tensor:
        """A LayerNorm scale / bias as one f32 row of the normalized dims."""
        x = self.tensor(v)
        n = math.prod(norm)
        out = self.temp([n], f32)
        if x.size == n:
            self.move(replace(x, shape=(n,)), out)
            return out
        src = x
        if x.elem != f32:
            src = self.temp(x.shape, f32)
            self.convert(x, src)
        self.copy(src, out, list(norm), broadcast_strides(x.shape, norm))
        if src is not x:
            self.release(src)
        return out

    def op_reduce(self, o: Operation, kind: str, mean: bool = False) -> None:
        from ge.dialects.graph import get_ints

        x = self.tensor(o.operands[0])
        self.plain_only(o.operands[0])
        axes = list(get_ints(o.properties, "axes"))
        sizes, strides = self.axis_rows(o.operands[0], axes)
        rows = self.load_rows(x, sizes, strides, len(axes))
        red = self.row_reduce(kind, rows, consume=True)
        self.release(rows.buf)
        if mean:
            self.flat(isa.VMulsOp, red, [red], rows.r, scalar=1.0 / rows.n)
        dst = self.dest(o.results[0])
        self.move(replace(red, shape=dst.shape), dst)
        self.release(red)
        self.env[o.results[0]] = dst

    # -- pools and LRN ------------------------------------------------------------------------

    def op_global_avg_pool(self, o: Operation) -> None:
        self.global_pool(o, "sum")

    def op_global_max_pool(self, o: Operation) -> None:
        self.global_pool(o, "max")

    def global_pool(self, o: Operation, kind: str) -> None:
        x = self.tensor(o.operands[0])
        v = o.operands[0]
        shape = tensor_shape(v)
        enc = lt.layout_of(v.type)
        dst = self.dest(o.results[0])
        if enc is None:  # plain [N, C, spatial...]: one row per (n, c)
            sizes, strides = self.axis_rows(v, list(range(2, len(shape))))
            rows = self.load_rows(x, sizes, strides, len(shape) - 2)
            red = self.row_reduce(kind, rows, consume=True)
            self.release(rows.buf)
            if kind == "sum":
                self.flat(isa.VMulsOp, red, [red], rows.r, scalar=1.0 / rows.n)
            self.move(replace(red, shape=dst.shape), dst)
            self.release(red)
        elif enc.fmt == lt.Format.NC1HWC0:
            self.block_pool(x, dst, shape, kind)
        else:
            raise self.fail(f"a global pool on a {enc.fmt} tile")
        self.env[o.results[0]] = dst

    def block_pool(self, x: Tensor, dst: Tensor, shape: Sequence[int], kind: str) -> None:
        """NC1HWC0 [N, C1, H, W, C0]: the pixel blocks of each (n, c1) added (maxed) pairwise,
        halving the count per step; the sum scaled by 1 / (H W)."""
        n, c1, h, w, c0 = shape
        rows, p = n * c1, h * w
        elem = f32 if kind == "sum" else x.elem
        work = self.temp([rows * p * c0], elem)
        self.move(replace(x, shape=work.shape), work)
        cls = isa.VAddOp if kind == "sum" else isa.VMaxOp
        left = p
        by_rows = p * c0 // self.epb(elem) <= MAX_REP_STRIDE  # the rows' stride fits a repeat stride
        while left > 1:  # chunk-wise over all rows at once (static offsets: no barrier inside a halving)
            half = left // 2
            if by_rows:
                lower = Rows(work, rows, half * c0, p * c0)
                upper = Rows(self.shifted(work, (left - half) * c0), rows, half * c0, p * c0)
                self.row_op(cls, lower, [lower, upper])
            else:
                st = [p * c0, 1]
                self.strided(cls, work, [work, self.shifted(work, (left - half) * c0)], [rows, half * c0], [st, st, st])
            left -= half
        if kind == "sum" and p > 1:
            st = [p * c0, 1]
            self.strided(isa.VMulsOp, work, [work], [rows, c0], [st, st], scalar=1.0 / p)
        mid = dst if dst.elem == elem else self.temp(dst.shape, elem)
        self.copy(work, mid, [rows, c0], [p * c0, 1], [c0, 1])
        if mid is not dst:
            self.convert(mid, dst)
            self.release(mid)
        self.release(work)

    def op_lrn(self, o: Operation) -> None:
        """Channel-major f32 rows of the squares, zero rows for the channels past either end,
        the window as `size` whole-buffer adds, then x / (bias + alpha/size * sum)^beta."""
        props = o.properties
        size = props["size"].value.data
        alpha, beta, bias = (props[key].value.data for key in ("alpha", "beta", "bias"))
        v = o.operands[0]
        x = self.tensor(v)
        shape = tensor_shape(v)
        enc = lt.layout_of(v.type)
        if enc is not None and enc.fmt == lt.Format.NC1HWC0:
            n, c1, h, w, c0 = shape
            c, p = c1 * c0, h * w
            img = c1 * p * c0
            sizes, strides = [c1, c0, p], [p * c0, 1, c0]
        elif enc is None and len(shape) >= 3:
            n, c, p = shape[0], shape[1], math.prod(shape[2:])
            img = c * p
            sizes, strides = [c, p], [p, 1]
        else:
            raise self.fail(f"LRN on a {enc.fmt if enc else 'plain'} tile of shape {list(shape)}")
        lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
        pp = isa.align_up(p, self.epb(f32))
        dst = self.dest(o.results[0])
        for b in range(n):
            xb = self.shifted(x, b * img, (img,))
            xf = self.as_f32(xb) if xb.elem != f32 else xb
            pad = self.temp([(c + lo + hi) * pp], f32)
            self.dup(pad, 0.0)
            rows = self.shifted(pad, lo * pp, (c * pp,))
            row_st = [s * pp for s in row_major(sizes[:-1])] + [1]
            self.copy(xf, rows, sizes, strides, row_st)
            self.flat(isa.VMulOp, rows, [rows, rows])
            acc = self.temp([c * pp], f32)
            if size == 1:
                self.copy(rows, acc, [c * pp])
            else:
                self.flat(isa.VAddOp, acc, [replace(pad, shape=(c * pp,)), self.shifted(pad, pp, (c * pp,))])
                for k in range(2, size):
                    self.flat(isa.VAddOp, acc, [acc, self.shifted(pad, k * pp, (c * pp,))])
            self.flat(isa.VMulsOp, acc, [acc], scalar=alpha / size)
            self.flat(isa.VAddsOp, acc, [acc], scalar=bias)
            self.flat(isa.VLnOp, acc, [acc])
            self.flat(isa.VMulsOp, acc, [acc], scalar=beta)
            self.flat(isa.VExpOp, acc, [acc])
            den = replace(pad, shape=(img,))
            self.copy(acc, den, sizes, row_st, strides)
            self.release(acc)
            out = self.shifted(dst, b * img, (img,))
            if out.elem == f32:
                self.flat(isa.VDivOp, out, [xf, den])
            else:
                self.flat(isa.VDivOp, den, [xf, den])
                self.convert(den, out)
            self.release(pad)
            if xf is not xb:
                self.release(xf)
        self.env[o.results[0]] = dst

    # -- data movement ------------------------------------------------------------------------

    def op_transpose(self, o: Operation) -> None:
        from ge.dialects.graph import get_ints

        x = self.tensor(o.operands[0])
        perm = get_ints(o.properties, "perm")
        st = row_major(x.shape)
        dst = self.dest(o.results[0])
        out_shape = [x.shape[p] for p in perm]
        dims = collapse(out_shape, [[st[p] for p in perm], row_major(out_shape)])
        self.copy(x, dst, [n for n, _ in dims], [s[0] for _, s in dims], [s[1] for _, s in dims])
        self.env[o.results[0]] = dst

    def op_trans_data(self, o: Operation) -> None:
        x = self.tensor(o.operands[0])
        src_t, dst_t = o.operands[0].type, o.results[0].type
        dst = self.dest(o.results[0])
        fine, plain, to_fine = (dst_t, src_t, True) if lt.layout_of(dst_t) is not None else (src_t, dst_t, False)
        enc = lt.layout_of(fine)
        if enc is None or lt.layout_of(plain) is not None:
            raise self.fail("a conversion between two storage formats (one side must be a plain tensor)")
        if x.elem != dst.elem:
            raise self.fail("trans_data that changes the element type")
        if enc.fmt == lt.Format.NC1HWC0:
            parts = self.nc1hwc0_parts(tuple(fine.get_shape()), tuple(plain.get_shape()), enc.origin_fmt)
        elif enc.fmt == lt.Format.FRACTAL_NZ:
            parts = self.nz_parts(tuple(fine.get_shape()), tuple(plain.get_shape()))
        else:
            raise self.fail(f"trans_data to or from {enc.fmt}")
        if to_fine and sum(math.prod(s) for s, *_ in parts) < dst.size:
            self.dup(dst, 0.0)  # the padding of the storage format is zero
        for sizes, plain_st, fine_st, plain_off, fine_off in parts:
            src_st, dst_st = (plain_st, fine_st) if to_fine else (fine_st, plain_st)
            s_off, d_off = (plain_off, fine_off) if to_fine else (fine_off, plain_off)
            self.copy(self.shifted(x, s_off), self.shifted(dst, d_off), sizes, src_st, dst_st)
        self.env[o.results[0]] = dst

    @staticmethod
    def nc1hwc0_parts(fine: Sequence[int], plain: Sequence[int], origin: lt.Format):
        """Rectangles (sizes, plain strides, fine strides, plain offset, fine offset) that map
        an NCHW / NHWC tile onto [N, C1, H, W, C0]: the whole C0 blocks, then the last
        partial one."""
        n, c1, h, w, c0 = fine
        dims = [1] * (4 - len(plain)) + list(plain)
        if origin == lt.Format.NHWC:
            c = dims[3]
            pst = row_major(dims)
            plain_st = {"n": pst[0], "c": pst[3], "h": pst[1], "w": pst[2]}
        else:
            c = dims[1]
            pst = row_major(dims)
            plain_st = {"n": pst[0], "c": pst[1], "h": pst[2], "w": pst[3]}
        fst = row_major(fine)
        out = []
        full, rest = divmod(min(c, c1 * c0), c0)
        for blocks, lanes, first in ((full, c0, 0), (1 if rest else 0, rest, full)):
            if not blocks:
                continue
            sizes = [n, blocks, lanes, h, w]
            p = [plain_st["n"], c0 * plain_st["c"], plain_st["c"], plain_st["h"], plain_st["w"]]
            f = [fst[0], fst[1], 1, fst[2], fst[3]]
            out.append((sizes, p, f, first * c0 * plain_st["c"], first * fst[1]))
        return out

    @staticmethod
    def nz_parts(fine: Sequence[int], plain: Sequence[int]):
        """FRACTAL_NZ [..., N1, M1, M0, N0] <-> ND [..., M, N]: whole fractal rows, then the
        partial last column block."""
        *batch, n1, m1, m0, n0 = fine
        *_, m, nn = plain
        b = math.prod(batch)
        fst, pst = row_major([b, n1, m1 * m0, n0]), row_major([b, m, nn])
        out = []
        rows = min(m, m1 * m0)
        full, rest = divmod(min(nn, n1 * n0), n0)
        for blocks, lanes, first in ((full, n0, 0), (1 if rest else 0, rest, full)):
            if not blocks:
                continue
            sizes = [b, blocks, rows, lanes]
            p = [pst[0], n0 * pst[2], pst[1], pst[2]]
            f = [fst[0], fst[1], fst[2], fst[3]]
            out.append((sizes, p, f, first * n0, first * fst[1]))
        return out


def drive(steps):
    """Run a step generator (VectorLowering.row_reduce_steps, ...) to its end; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def lockstep(gens: Sequence) -> list:
    """Run step generators round-robin, one step of each in turn: the instructions of
    independent chains interleave step by step. Their results, in order."""
    out: list = [None] * len(gens)
    live = list(range(len(gens)))
    while live:
        for i in list(live):
            try:
                next(gens[i])
            except StopIteration as stop:
                out[i] = stop.value
                live.remove(i)
    return out


@dataclass
class Rows:
    """`r` rows of `n` elements in `buf` (f32; a max pool's may be f16), row i at element
    i * ld (ld whole blocks)."""

    buf: Tensor
    r: int
    n: int
    ld: int


class _PlanOnly(VectorLowering):
    """A VectorLowering without a region or a builder: the target's figures only, for
    the plans the tiler asks about before any IR exists (`row_plan`)."""

    def __init__(self, target):  # (no region: VectorLowering.__init__ needs one)
        self.take_target(target)


class FlatVector(VectorLowering):
    """The contiguous emitters (`flat`, `dup`, `convert`) outside a `tile.vector`, on builder
    `b`: what to-isa emits itself (the 910's bias copy cast to f32, zero padding)."""

    def __init__(self, b, target):  # (no region: VectorLowering.__init__ needs one)
        self.b = b
        self.take_target(target)


# the compile scope's memo (dialects/interning.py, as tile_cube's Cube plans): row-plan key ->
# (the target, its plan); the target object is kept beside its plan, so that an id reused by
# another target within the scope is not a hit
_ROW_PLAN_MEMO = "isa_vector.row_plans"


def row_plan(target, kind: str, r: int, n: int, scratch: int = 0, consume: bool = False, sides: int = 1,
             elem: str = "f32"):
    """`group_plan` for `r` dense rows of `n` elements of `elem` ("f32" / "f16"; `scratch`:
    the elements of a free buffer beside them): what the tiler's UB and cost estimates need
    to know of a row reduction before the region is lowered (tile_vector.VectorKernel.
    scratch_bytes, tile_cost.op_program). Planned once per compile (the compile's
    `intern_scope` memo, dropped with it -- nothing outlives a compile); outside a scope,
    planned each time."""
    memo = scope_memo(_ROW_PLAN_MEMO)
    key = (id(target), kind, r, n, scratch, consume, sides, elem)
    hit = None if memo is None else memo.get(key)
    if hit is not None and hit[0] is target:
        return hit[1]
    ty = {"f32": f32, "f16": f16}[elem]
    rows = Rows(Tensor(None, 0, (r * n,), ty), r, n, n)
    buf = Tensor(None, 0, (scratch,), ty) if scratch else None
    plan = _PlanOnly(target).group_plan(kind, rows, buf, consume, sides)
    if memo is not None:
        memo[key] = (target, plan)
    return plan


def lower_vector(k, op: t.VectorOp, fixed=None, blocks: dict | None = None) -> None:
    """Emit the isa vector instructions that compute `op`'s region (see the module
    docstring), except the head `fixed` (a to_isa.FixQuant) that FixPipe computed; raises
    VectorLoweringError naming every op it cannot lower. `blocks`: what scratch buffers hold
    from the previous row slice's input copies (to_isa.slice_blocks), updated in place."""
    VectorLowering(k, op, fixed, blocks).run()


__all__ = ["SUPPORTED", "VectorLoweringError", "lower_vector"]
