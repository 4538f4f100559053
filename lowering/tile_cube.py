"""Cube kernels of the `tile` pass: Conv (implicit GEMM through img2col), MatMul, Gemm and
batched MatMul, with their fused epilogues.

The Ascend C cube paradigm: CopyIn (GM -> L1), Split (L1 -> L0A / L0B; for a convolution
the A side is Load3D = `tile.img2col` from the feature map in L1), Compute (`tile.mmad`
into L0C, f32 accumulation), then the epilogue: L0C -> UB, the group's elementwise ops on
the tile (`tile.vector`), CopyOut UB -> GM.

A problem is a GEMM per (batch, group): C[M, N] = A[M, K] x B[K, N]; for a convolution
M = output pixels (OH * OW), N = output channels of the group, K = (C1, KH, KW, C0) over
the group's input channels -- the order of FRACTAL_Z weights, so an L1 -> L0B load is a
rectangle. Grouped convolutions whose groups are not C0-aligned (depthwise, ShuffleNet's
groups of 34 channels) run as GE's "extended groups": E consecutive groups become one
block-diagonal GEMM with C0-aligned channels (the weights are rebuilt at compile time).

Loops: one flattened loop over (batch, group, outer tiles) split over `block_dim` cores;
inner tiles; K chunks in L1; K steps in L0. The outer dim is M or N (`order`); when K fits
one L1 chunk, the outer operand's L1 load is hoisted out of the inner loop (and a matmul's
copies go in K pieces, so the first mmads need not wait for the whole operand). A conv
whose image is smaller than an M tile may stack several images along H in one tile
(`_stacked`). Tile sizes, order, chunking, stacking and buffer counts come from the cost
model (lowering/tile_cost.py).
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType, f16, f32, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ge import targets
from ge.dialects import graph as g
from ge.dialects import isa
from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.dialects.blobs import dense_attr
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.interning import intern_scope, scope_memo
from ge.dialects.layout import Format
from ge.lowering import fusion_rules as fr
from ge.lowering import op_bank, to_isa
from ge.lowering.isa_vector import MAX_REP_STRIDE, relu_after
from ge.lowering.tile_cost import (
    ELEMENTWISE,
    Machine,
    Roofline,
    align,
    elem_name,
    l0c_epilogue_program,
    l0c_epilogue_rest,
    machine_memo,
    pipelined,
    scalar_form,
)
from ge.lowering.tile_ir import Index, KernelBuilder, written_inputs
from ge.lowering.tile_vector import CapacityShortfall, Unsupported, shape_of

TM = (16, 32, 48, 64, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 1024)
TN = (16, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512)
FRACTAL = 16  # rows of an NZ / Z fractal (M0 of FRACTAL_NZ, N0 of FRACTAL_Z)
# Do an N tile's weights, loaded into L1 once with the whole K in one step (order "nm"), go
# into L0B once too (`_CubeEmitter.emit`)? Its M tiles then skip those moves.
HOLD_L0 = True
HOLD_STEPS = True  # ... and with K in several unrolled steps, when all of them fit L0B (`_held_steps`)
INNER_BATCH = True  # may a conv plan run the images in its inner loop (order "nm": weights once per N tile)?
GEMV = True  # are GEMV-shaped MatMuls (M one fractal) planned as a weight stream (`gemv`)?
C04 = True  # may a conv with at most 4 input channels take K in 4-channel blocks (`_c04`)?
C04_C0 = 4  # channels per K block of a C04 conv (GE's C04 format)
SUBSAMPLE = True  # does a strided 1 x 1 conv copy in only the pixels it reads (`_fm_geometry`)?
# The costs of a matmul whose cores share their reads (`_shares_reads`: not batched, not a
# GEMV, a chip with an L2), calibrated on BERT-base's projections (bench/kernels.py):
SHARED_READS = True  # the cores' reads of the same A / B bytes hit the L2 after the first (`_block_misses`)
PIPELINED_K = True  # a K step's start-ups overlap the other pipe's work (`_k_loop`)
CROWDED = 4.0  # p of the p-norm of a tile's stages taken as its slowest: pipes near their limit stall each other
SHARED_CONV = True  # are a conv's reads costed as shared by its cores (`_shares_reads`) too?
ODD_K_STEPS = True  # does an odd number of K steps per chunk cost two steps end to end (`_k_loop`)?
BLOCK_MISSES = True  # are the shared reads' misses those of block 1's items (`_block_misses`)?
SLICED_DRAIN = True  # the row slices of a sliced epilogue pipeline (the last tile's drain)
# The HBM share of the slowest core's L2 misses when the cores share their reads, in fair
# shares (hbm_total / blocks): the simulator gives the round's second block what the blocks
# still to come leave free, two shares while block 0 is not fetching (`_shared_miss_rate`)
MISS_SHARE = 2.0
# Are the A reads of a conv or matmul whose A an earlier kernel of the run wrote (and which
# fits the L2) costed as L2 hits for every core (`_warm_a`, `_shared_misses`)?
WARM_INPUTS = True
SHARED_FILL = True  # do a conv's or matmul's shared first loads take at least their distinct tiles at the HBM rate (`cube_cost`)?
# Is a chunk's even K step loop unrolled over two single L0 buffers (`_unrolled_steps`)? A
# K-step loop drains at its end: insert-sync sets its flags before it and waits for them
# after it, so the next chunk's (or tile's) first L1 -> L0 moves wait for this chunk's last
# mmad; unrolled, the L0 buffers alternate across chunks and tiles. Kernel cycles with both
# switches on against both off (at c0c4d53): resnet50_b16 1,520,622 -> 1,461,575, resnet50
# 265,600 -> 256,958, squeezenet 92,863 -> 91,966, bert_base 186,949 -> 185,226.
UNROLLED_K = True
# Does insert-sync give each forward dependency of a block its own set/wait pair, set right
# after its first side (`insert_sync._stab`, since c0c4d53's successor)? Before, one pair
# covered each overlapping group, set after its latest first side, so in a chunk of more
# than 2 unrolled steps step i's moves waited for mmad i - 1 and the steps ran end to end;
# off, the model unrolls only 2-step chunks (for comparing with that insert-sync).
TIGHT_FORWARD_SYNC = True
MAX_UNROLLED_STEPS = 16  # the most K steps per chunk unrolled with TIGHT_FORWARD_SYNC (else 2)
# Is a pipeline whose slowest stage is the Vector epilogue (the 910's read-out and vector
# ops) charged at that stage's pace, without `CROWDED`'s p-norm? The Cube runs ahead into
# its second L0C buffer and the Vector unit never waits (simulated: bert_base's FFN in,
# 256 x 64 tiles, GELU epilogue 3.3k per tile against K loops of 3.1k: 6 tiles at the
# Vector's pace, 31,909 cycles, where the p-norm charged 4.3k more than that). Matmuls only,
# where it was measured (resnet50's convs: plans 1.6k cycles slower with it).
VECTOR_PACED = True
ROTATING_STEP = True  # does a one-step chunk's K loop pipeline across chunks (`_rotates`)?
DIV_BY_RECIPROCAL = True  # is an epilogue's Div by one value charged as the vmul isa_vector runs (`_by_one_value`)?
# May a conv whose image is smaller than an M tile stack several images along H into one
# (`_stacked`: ResNet's 7 x 7 layers at batch 16, M = 49 padded to 64 per image)? The Cube
# then shares each L0B weight move among the images: one image per tile moved a 48 x 128
# weight step per 64 rows, MTE1 at its limit (simulated 88% busy, the Cube 72%).
STACK = True
# Does a matmul whose K fits one L1 chunk copy its operands in K pieces (`_pieces`), so the
# first tile's mmads start when the first piece has arrived, not the whole hoisted operand?
# (Simulated: bert_base's FFN in, a 256 x 768 A tile hoisted per core, all 32 cores loading
# at once: the first mmad at 7.6k cycles; in 4 pieces, A's and B's, at 5.0k; 31,909 -> 29,250.)
PROGRESSIVE = True
PIECES = 4  # the most K pieces of such a copy
# Does a conv whose N tile's weights are hoisted (order "nm", one K chunk) copy them in K
# pieces too, and do the later pieces go after the first M tile's feature-map rows
# (`DEFER_PIECES`: in a loop of at most one trip, the M tiles' first, on a core's first N
# tile; a later N tile's load together, as the one before it runs)? MTE2 runs its copies
# in order: with the whole weight tile first, the first mmad waited for it and the rows
# after it. (Simulated: resnet50_b16's 3 x 3 conv at 28 x 28, 147 KB of weights per core
# and 32 cores loading at once: the slowest core's first mmad at 2,920 cycles, 1,620 in 4
# pieces after the rows; 20,011 -> 18,900. The cost model is unchanged: as for a matmul's
# hoisted B, the fill it charges is the cores' distinct weight tiles from the HBM.)
CONV_PIECES = True
DEFER_PIECES = True
# Does the Cube-bias decision (`_cube_bias_cost`) price a K loop whose N tile's weights stay
# in L0B (`_holds_b`: the emitter's `HOLD_L0` / `_held_steps`) as moving A's fractals only?
# (resnet50_b16's conv1, 13 steps of 16 held: charged A's and B's moves, 157 cycles a step
# against the mmad's 117 simulated, its K loop looked the slowest stage either way and the
# bias mmads dearer than the broadcasts; priced as held, the Vector unit's read-outs and
# broadcasts are, and the Cube's bias wins: 34,564 -> 28,314 simulated cycles.) Not in the
# plan search: its bounds (`CubeBounds`) take every step's moves, and a held K loop cheaper
# than them would be pruned unseen.
HELD_COST = True
# Are the epilogue operands an earlier kernel of the run wrote (a residual) and that fit the
# L2 read as L2 hits, outside the HBM budget (`_Fixed.epi_warm`, `_epi_bytes`), as A's are
# (`WARM_INPUTS`)? Off: at the core's HBM share, which priced resnet50_b16's residual 1 x 1
# convs by their GM port (k29_n84: 1,584 cycles per tile against a Vector stage of 1,225;
# 16,180 modeled, 13,297 simulated).
WARM_EPILOGUE = True
# Are a Cube kernel's stores into an output of at most half the L2 costed at the core's
# share of the L2 bandwidth, outside the HBM budget (`_Fixed.out_l2`)? The simulator's L2
# takes the writes (dirty blocks go to the HBM when evicted): resnet50_b16's k29_n84 stored
# a 28 KB tile in ~290 cycles, where the HBM share priced it at 805.
L2_WRITES = True
# Are a candidate's UB bytes those to-isa keeps when the L0C read-out converts the
# accumulator (`to_isa.L0cBias`, chips without FixPipe: no f32 tile in UB, `_ub_sizes`)? Off:
# an f32 accumulator tile and f32 temporaries, which kept resnet50_b16's 1 x 1 convs at
# 64-channel N tiles (k30_n90: 13,773 cycles simulated; 10,662 with 208 x 128 tiles).
# Convs only: a matmul's epilogue then needs no row slices, and the cost model prices an
# unsliced one high (bert_base's FFN in, bias + GELU in one slice: modeled 33,452 against
# 27,665 simulated; 29,107 against 27,788 in 2 slices), so its plans moved for the worse.
CONVERTED_UB = True
# Is a conv's bias added by the Cube (`cube_bias_block`)? On a chip without FixPipe the
# bias went into every L0C tile by `broadcast_ub_to_l0c`, one per row fractal on the
# Vector unit (resnet50_b16: 13.5k of k6_n10's 41.6k cycles); an mmad of an all-ones A
# block by a B block whose first K row is the bias ends the tile's chain with the bias
# instead (Caffe adds its conv bias the same way, a GEMM with a ones `bias_multiplier`),
# m/16 x n/16 Cube cycles.
CUBE_BIAS = True
# Does a conv whose every tile reads its own B chunks take them GM -> L0B per K step
# (`_b_direct_fits`; MTE2's GM -> L0A/L0B path, Load2D GM -> B2) when the model finds it
# faster? Through L1, a K step's moves are A's and B's one after the other on MTE1, which
# paced the Cube (resnet50's 3 x 3 conv at 56 x 56, batch 1: 370 cycles of moves per
# 272-cycle mmad); straight from GM, B moves on MTE2 beside A's on MTE1 (3,369 -> 2,853).
B_DIRECT = True


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _round(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _div_exact(b: KernelBuilder, a: Index, d: int) -> Index:
    """a // d where a is i * c with c a multiple of d: i * (c // d), an affine index that
    insert-sync's analysis can bound (a `divui` it cannot: the load of the other buffer
    would then wait for this one's readers, and double buffering would not overlap)."""
    if isinstance(a, SSAValue) and isinstance(op := a.owner, arith.MuliOp):
        for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if isinstance(c.owner, arith.ConstantOp) and c.owner.value.value.data % d == 0:
                return b.mul(x, c.owner.value.value.data // d)
    return b.div(a, d)


def _itemsize(v: SSAValue | Attribute) -> int:
    ty = v.type if isinstance(v, SSAValue) else v
    return numpy_dtype(ty.element_type).itemsize


# --------------------------------------------------------------------------------------
# The problem
# --------------------------------------------------------------------------------------


@dataclass
class CubeProblem:
    """One cube kernel's GEMMs and the group around them."""

    kind: str  # "conv" | "matmul"
    anchor: Operation
    block: Block
    elem: Attribute  # A/B element type
    batch: int
    groups: int
    m: int
    n: int
    k: int
    a_fmt: str  # conv: "nc1hwc0" | "nchw"; matmul: "nd" | "nd_t" | "nz"
    b_fmt: str  # conv: "fz" | "nchw" (run-time weights converted on copy-in); matmul: "nd" | "nd_t" | "nz" | "nz_t"
    out_fmt: str  # "nc1hwc0" | "nchw" | "nd" | "nz"
    c0: int = 16  # C0 of A / B (K blocks): 32 B of the input type
    out_c0: int = 0  # C0 of the stored output's channel blocks (its own type's; 0: c0)
    # conv geometry
    conv: dict | None = None
    # matmul batch broadcasting: does A / B have the batch dim?
    a_batched: bool = True
    b_batched: bool = True
    # partial broadcasting (A [2, 1, m, k] x B [1, 3, k, n]): the output's batch dims and,
    # per operand, its batch stride along each of them (0 where it broadcasts)
    out_batch: tuple[int, ...] = ()
    a_batch_strides: tuple[int, ...] | None = None
    b_batch_strides: tuple[int, ...] | None = None
    weight_transform: np.ndarray | None = None  # rebuilt FRACTAL_Z weights (extended groups)
    weight_type: TensorType | None = None
    macs: int = 0
    a_src: SSAValue | None = None  # the GM value A is read from (before a fused TransData)
    b_src: SSAValue | None = None  # the plain weights B is read from (before a fused TransData)
    out_value: SSAValue | None = None  # a stored output (after a fused TransData)
    epilogue_ops: list[Operation] = field(default_factory=list)  # compute ops after the anchor
    # `_epilogue_program`, made once while the group's IR is whole (it reads use lists)
    program: tuple | None = field(default=None, compare=False, repr=False)
    folded: bool = False  # a matmul's batch folded into M (`_foldable`): M tiles span batch entries
    a_warm: bool = False  # A was written by a kernel of the run and fits the L2 (`_warm_a`)
    epi_written: tuple[bool, ...] = ()  # per `epilogue_operands`: written by a kernel of the run (`_warm_a`)
    # the conv bias as a Cube B block [1, N, 16] (`cube_bias_block`), or None: the epilogue adds it
    bias_block: np.ndarray | None = field(default=None, compare=False, repr=False)
    # A's K made of several feature maps' channels (`_k_concat`: the residual Add of two 1 x 1
    # convs in one kernel): per part (its GM value, its C1 blocks, its (row, column) subsampling)
    a_parts: tuple[tuple[SSAValue, int, tuple[int, int]], ...] = ()
    summed: Operation | None = None  # ... and the Add of the two convs, which L0C's accumulation does

    @property
    def epilogue_bias(self) -> bool:
        """Does the epilogue add a conv's (or int8 MatMul's) bias? Not when the Cube does
        (`bias_block`)."""
        return isinstance(self.anchor, CONV_OPS + (g.QuantMatMulOp,)) and self.anchor.bias is not None \
            and self.bias_block is None

    @property
    def oc0(self) -> int:
        return self.out_c0 or self.c0

    @property
    def acc_elem(self) -> Attribute:
        """L0C's type: i32 for int8 inputs (exact integer sums), else f32."""
        return i32 if numpy_dtype(self.elem).kind in "iu" else f32


def _conv_problem(op: g.Conv2dOp | g.QuantConv2dOp, block: Block, weight_of: Callable[[], np.ndarray | None],
                  x: SSAValue, out: SSAValue) -> CubeProblem:
    """`weight_of()`: the weights' origin-format value when they are constant, else None --
    asked only when the problem needs them (C04, weights not in FRACTAL_Z): it converts
    them back from their storage format."""
    w = op.weight
    xe, we, oe = lt.layout_of(x.type), lt.layout_of(w.type), lt.layout_of(out.type)
    xs = xe.shape if xe else shape_of(x)
    ws = we.shape if we else shape_of(w)
    n, c, h, wd = xs
    co, cg, kh, kw = ws
    _, _, oh, ow = oe.shape if oe else shape_of(out)
    group = op.group.value.data
    mg = co // group
    elem = x.type.element_type
    if xe is not None and (xe.fmt != Format.NC1HWC0 or xe.origin_fmt != Format.NCHW):
        raise Unsupported(f"conv input in {xe.fmt} (origin {xe.origin_fmt})")
    if oe is not None and (oe.fmt != Format.NC1HWC0 or oe.origin_fmt != Format.NCHW):
        raise Unsupported(f"conv output in {oe.fmt} (origin {oe.origin_fmt})")
    c0 = shape_of(x)[4] if xe else max(1, 32 // numpy_dtype(elem).itemsize)
    # Extended groups (GE's group "enlarge"): E groups per GEMM so channels align to C0 / 16.
    if group == 1:
        ext = 1
    else:
        ext = math.lcm(math.lcm(cg, c0) // cg, math.lcm(mg, FRACTAL) // mg)
        ext = min(ext, group)
    groups_e = _ceil(group, ext)
    cg_e, mg_e = cg * ext, mg * ext
    c1g = _ceil(cg_e, c0)
    fz_ok = we is not None and we.fmt == Format.FRACTAL_Z and shape_of(w)[3] == c0 and ext == 1
    prob = CubeProblem(
        kind="conv", anchor=op, block=block, elem=elem, batch=n, groups=groups_e, m=oh * ow, n=mg_e,
        k=c1g * kh * kw * c0, a_fmt="nc1hwc0" if xe else "nchw", b_fmt="fz", out_fmt="nc1hwc0" if oe else "nchw",
        c0=c0, macs=n * oh * ow * co * cg * kh * kw, a_src=x,
        conv=dict(n=n, c=c, h=h, w=wd, co=co, cg=cg, kh=kh, kw=kw, oh=oh, ow=ow, group=group, ext=ext,
                  cg_e=cg_e, mg_e=mg_e, c1g=c1g, strides=g.get_ints(op.properties, "strides"),
                  pads=g.get_ints(op.properties, "pads"), dilations=g.get_ints(op.properties, "dilations")),
    )
    if groups_e > 1 and (cg_e % c0 or mg_e % FRACTAL):
        raise Unsupported(f"grouped conv with {cg} channels and {mg} filters per group")
    if _c04(prob) and (weight_value := weight_of()) is not None:
        _make_c04(prob, weight_value)
        return prob
    cv = prob.conv
    if SUBSAMPLE and kh == kw == 1 and max(cv["strides"]) > 1 and not any(cv["pads"]):
        cv["sub"] = tuple(cv["strides"])
    if not fz_ok:
        origin = weight_of()
        if origin is None:
            raise Unsupported("conv weights that are not FRACTAL_Z constants cannot be rearranged at compile time")
        if ext > 1:
            wide = np.zeros((groups_e * mg_e, cg_e, kh, kw), dtype=origin.dtype)
            for gi in range(group):
                ge_, e = divmod(gi, ext)
                wide[ge_ * mg_e + e * mg: ge_ * mg_e + (e + 1) * mg, e * cg:(e + 1) * cg] = origin[gi * mg:(gi + 1) * mg]
            origin = wide
        plain = TensorType(elem, list(origin.shape))
        prob.weight_type = lt.encode(plain, Format.FRACTAL_Z, Format.NCHW)
        if prob.weight_type.get_shape()[3] != c0:
            raise Unsupported(f"FRACTAL_Z of {elem} has C0 {prob.weight_type.get_shape()[3]}, the feature map {c0}")
        from ge.runtime import layouts

        prob.weight_transform = layouts.to_storage(origin, prob.weight_type)
    return prob


def _summed_pair(ops: list[Operation], anchor: Operation) -> tuple[Operation, Operation | None, Operation | None]:
    """(anchor, partner, their Add) of a group with two convs whose results only meet in
    one Add (fuse.py `_k_partner`: ResNet's projection shortcut and its block's last conv);
    the anchor is the one with a bias (fold-batch-norm leaves one: `OneBiasForSummedConvs`).
    (anchor, None, None) for a group of one Cube op."""
    convs = [o for o in ops if isinstance(o, CONV_OPS + MATMUL_OPS)]
    if len(convs) == 1:
        return anchor, None, None
    if len(convs) != 2 or not all(isinstance(o, g.Conv2dOp) for o in convs):
        raise Unsupported("a group of " + " and ".join(o.name for o in convs) + " (two convs summed only)")
    a, b = sorted(convs, key=lambda o: o.bias is None)
    uses = [{u.operation for u in c.results[0].uses} for c in convs]
    summed = next(iter(uses[0])) if len(uses[0]) == 1 else None
    if summed is None or uses[1] != {summed} or summed not in ops or len(summed.operands) != 2 \
            or not isinstance(summed, g.AddOp | g.SumOp) or b.bias is not None:
        raise Unsupported("two convs in one group whose results are not only summed, with one bias")
    return a, b, summed


def _k_concat(p: CubeProblem, partner: g.Conv2dOp, summed: Operation,
              weight_value: Callable[[SSAValue], np.ndarray | None]) -> None:
    """Conv `p` + conv `partner` (the Add `summed` of their results) as one GEMM: both 1 x 1
    without pads or groups, of one output shape, so they share M and N, and their K's
    concatenate -- A's K rows the two feature maps' C1 blocks side by side (each read with
    its own subsampling: a stride-2 projection shortcut reads every other row and column,
    `_fm_geometry`), B the two weights' rows, L0C the sum. The partner's output (resnet50_b16:
    25.7 MB written, then read as the residual) never goes to GM."""
    q = _conv_problem(partner, p.block, lambda: weight_value(partner.weight), partner.input, partner.results[0])
    ca, cb = p.conv, q.conv
    for cv in (ca, cb):
        if (cv["kh"], cv["kw"], cv["group"]) != (1, 1, 1) or any(cv["pads"]) or set(cv["dilations"]) != {1}:
            raise Unsupported("a summed conv that is not 1 x 1 without pads, dilations and groups")
    if not (p.a_src in p.block.args and q.a_src in p.block.args):
        raise Unsupported("a summed conv whose input is converted in the kernel")
    if (p.a_fmt, q.a_fmt) != ("nc1hwc0", "nc1hwc0") or (p.batch, p.m, p.n, p.c0, p.elem) != (
            q.batch, q.m, q.n, q.c0, q.elem) or (ca["oh"], ca["ow"]) != (cb["oh"], cb["ow"]):
        raise Unsupported("summed convs of different output shapes, element types or input formats")
    wa, wb = weight_value(p.anchor.weight), weight_value(partner.weight)
    if wa is None or wb is None:
        raise Unsupported("summed convs whose weights are not constants")
    c0, (c1a, c1b) = p.c0, (ca["c1g"], cb["c1g"])
    both = np.zeros((ca["co"], (c1a + c1b) * c0, 1, 1), wa.dtype)  # each part's channels padded to C0 blocks
    both[:, :ca["cg"]] = wa
    both[:, c1a * c0:c1a * c0 + cb["cg"]] = wb
    from ge.runtime import layouts

    p.weight_type = lt.encode(TensorType(p.elem, list(both.shape)), Format.FRACTAL_Z, Format.NCHW)
    p.weight_transform = layouts.to_storage(both, p.weight_type)
    # (each map read with its conv's stride: a 1 x 1 conv without pads reads exactly those pixels)
    p.a_parts = ((p.a_src, c1a, tuple(ca["strides"])), (q.a_src, c1b, tuple(cb["strides"])))
    ca.pop("sub", None)
    p.k, p.macs, p.summed = both.shape[1], p.macs + q.macs, summed
    ca.update(c=p.k, cg=p.k, cg_e=p.k, c1g=c1a + c1b, h=ca["oh"], w=ca["ow"], strides=[1, 1])


def _c04(p: CubeProblem) -> bool:
    """Does a conv take K in blocks of 4 channels (GE's C04: a first conv's 3 input channels
    padded to 4, not to C0 = 16)? One group of at most 4 channels, a window larger than 1 x 1,
    2-byte elements whose C0 is 16 (and constant weights, rebuilt at compile time: the
    caller's check). Then K =
    kh * kw * 4 rounded to the Cube's K0 instead of kh * kw * 16: resnet50's conv1 runs
    208 instead of 784 K rows (3.8x fewer mmads and img2col bytes); the feature map keeps
    its C0 = 16 in GM and the copy-in takes the first 4 channels of each pixel."""
    cv = p.conv
    return (C04 and cv["group"] == 1 and cv["cg"] <= C04_C0 < p.c0 == 16 and cv["kh"] * cv["kw"] > 1
            and numpy_dtype(p.elem).itemsize == 2
            and (p.a_fmt == "nchw" or shape_of(p.a_src)[1] == 1))


def _make_c04(p: CubeProblem, weight_value: np.ndarray) -> None:
    """Re-express conv `p` with K blocks of 4 channels: K = (kh, kw, 4) rounded up to whole
    K0 = 16 rows, and weights [K / 4, N1, 16, 4] (the K rows past kh * kw * 4, channels past
    Cin and filters past Cout are zero)."""
    cv = p.conv
    kh, kw, co, cg = cv["kh"], cv["kw"], cv["co"], cv["cg"]
    cv.update(c1g=1, c04=True, src_c0=p.c0)
    p.k = _round(kh * kw * C04_C0, p.c0)
    p.c0 = C04_C0
    n1 = _ceil(co, FRACTAL)
    w4 = np.zeros((p.k // C04_C0, n1 * FRACTAL, C04_C0), dtype=weight_value.dtype)
    w4[:kh * kw, :co, :cg] = weight_value.reshape(co, cg, kh * kw).transpose(2, 0, 1)
    p.weight_transform = w4.reshape(p.k // C04_C0, n1, FRACTAL, C04_C0)
    p.weight_type = TensorType(p.elem, list(p.weight_transform.shape))


def _matmul_problem(op: g.MatMulOp | g.GemmOp | g.QuantMatMulOp, block: Block) -> CubeProblem:
    a, b = op.operands[0], op.operands[1]
    ta = isinstance(op, g.GemmOp) and op.trans_a is not None
    tb = isinstance(op, g.GemmOp) and op.trans_b is not None
    ae, be, oe = lt.layout_of(a.type), lt.layout_of(b.type), lt.layout_of(op.output.type)
    sa = list(ae.shape if ae else shape_of(a))
    sb = list(be.shape if be else shape_of(b))
    if len(sa) == 1:
        sa = [1, sa[0]]
    if len(sb) == 1:
        sb = [sb[0], 1]
    m, k = (sa[-1], sa[-2]) if ta else (sa[-2], sa[-1])
    n = sb[-2] if tb else sb[-1]
    nb = max(len(sa), len(sb)) - 2
    out_batch = tuple(g.broadcast_shapes(sa[:-2], sb[:-2])) if nb > 0 else ()
    batch = math.prod(out_batch) if out_batch else 1

    def batched(s: list[int]) -> tuple[bool, tuple[int, ...] | None]:
        """Does the operand have batch dims, and its batch strides along the output's
        when it broadcasts along some of them (None: its batch index is the output's)."""
        own = math.prod(s[:-2]) if len(s) > 2 else 1
        if own == 1:
            return False, None
        if tuple(s[:-2]) == out_batch[len(out_batch) - len(s[:-2]):] and own == batch:
            return True, None
        dims = (1,) * (len(out_batch) - len(s[:-2])) + tuple(s[:-2])
        return True, tuple(math.prod(dims[j + 1:]) if d > 1 else 0 for j, d in enumerate(dims))

    (a_batched, a_strides), (b_batched, b_strides) = batched(sa), batched(sb)

    def fmt(e, transposed: bool) -> str:
        if e is None:
            return "nd_t" if transposed else "nd"
        if e.fmt != Format.FRACTAL_NZ:
            raise Unsupported(f"matmul operand in {e.fmt}")
        return "nz_t" if transposed else "nz"

    prob = CubeProblem(
        kind="matmul", anchor=op, block=block, elem=a.type.element_type, batch=batch, groups=1, m=m, n=n, k=k,
        a_fmt=fmt(ae, ta), b_fmt=fmt(be, tb), out_fmt="nz" if oe else "nd", a_batched=a_batched,
        b_batched=b_batched, macs=batch * m * n * k, out_batch=out_batch, a_batch_strides=a_strides,
        b_batch_strides=b_strides,
    )
    if prob.a_fmt == "nz_t" and FRACTAL % max(1, 32 // numpy_dtype(prob.elem).itemsize):
        raise Unsupported(f"a transposed FRACTAL_NZ A operand of {prob.elem}")
    if oe is not None and len(shape_of(op.output)) < 4:
        raise Unsupported("FRACTAL_NZ output of rank < 2")
    if prob.out_fmt == "nz" or "nz" in prob.a_fmt or "nz" in prob.b_fmt:
        prob.c0 = max(1, 32 // numpy_dtype(prob.elem).itemsize)
    return prob


def _warm_a(block: Block, a: SSAValue) -> bool:
    """Does A come from a kernel of the run (`bufferize`'s `l2_inputs` on the kernel)? Then,
    when it fits the L2 (`_shared_misses`), its blocks sit there when this kernel launches
    (the simulator keeps the L2 across a run's launches, as the chip does) and every
    core's A reads hit. Why: bert_base's projections were modeled with block 1 fetching
    its A rows from HBM, 6-18% over their simulated cycles, and took K steps of 16 where
    steps of 32 run 6-11% faster."""
    return a in block.args and block.args.index(a) in written_inputs(block)


def _foldable(p: CubeProblem) -> bool:
    """Can the batch of a matmul join M (A [b, m, k] x B [k, n] is one [b * m, k] x [k, n]
    GEMM)? When B has no batch dims and A, the output and every epilogue operand are plain
    row-major: then M tiles may span batch entries (BERT's projections: 8 x 128 rows are one
    M of 1024, tiled as the cores need, not in 128-row pieces per sequence)."""
    if p.batch == 1 or p.b_batched or not p.a_batched or p.a_batch_strides is not None:
        return False
    if p.a_fmt != "nd" or p.out_fmt != "nd" or lt.layout_of(p.a_src.type) is not None:
        return False
    rows = p.batch * p.m
    for v in epilogue_operands(p):
        s = shape_of(v)
        if lt.layout_of(v.type) is not None:
            return False
        if math.prod(s) == 1 or len(s) == 1:
            continue
        if s[-1] not in (1, p.n) or math.prod(s[:-1]) not in (1, rows):
            return False
    return True


CONV_OPS = (g.Conv2dOp, g.QuantConv2dOp)
MATMUL_OPS = (g.MatMulOp, g.GemmOp, g.QuantMatMulOp)


def _zero_point(op: Operation) -> int:
    """The activation zero point of an int8 cube op (0 for the float ones)."""
    if isinstance(op, g.QuantConv2dOp):
        return op.input_offset.value.data
    if isinstance(op, g.QuantMatMulOp):
        return op.lhs_offset.value.data
    return 0


def cube_bias_block(p: CubeProblem, target: targets.Target | None,
                    weight_value: Callable[[SSAValue], np.ndarray | None]) -> np.ndarray | None:
    """The conv bias as the B block the Cube adds it with (`CUBE_BIAS`), or None (the
    epilogue adds it): [1, N, 16] f16, bias[n] at K row 0, zeros in rows 1-15 -- with an
    all-ones A column block, `mmad(ones, block)` is the bias in every row, exact (f16 x 1
    summed in f32). On a chip without FixPipe (whose epilogue would broadcast the bias
    into L0C), for an f16 conv of one group whose bias is a constant in f16."""
    anchor = p.anchor
    if not (CUBE_BIAS and target is not None and not target.isa.fixpipe and isinstance(anchor, g.Conv2dOp)
            and anchor.bias is not None and p.elem == f16 and anchor.bias.type.element_type == f16
            and p.conv["group"] == 1 and p.conv["ext"] == 1 and p.acc_elem == f32 and anchor.bias in p.block.args):
        return None
    rows = _round(p.n, FRACTAL)
    if rows * FRACTAL * 2 > target.memory.l0b // 2:  # (the whole block stays in L0B: N <= 1024 on the 910)
        return None
    bias = weight_value(anchor.bias)
    if bias is None:
        return None
    co = p.conv["co"]
    block = np.zeros((1, rows, FRACTAL), dtype=np.float16)
    block[0, :co, 0] = np.asarray(bias, dtype=np.float16).reshape(-1)[:co]
    return block


def cube_bias_reserve(p: CubeProblem, tm, tn, ab: int) -> tuple:
    """Bytes (L0A, L0B, L1, UB) a tiling of `p` into tm x tn tiles keeps for the Cube's
    bias (`cube_bias_block`) from its start: the ones column block (made in UB, moved to L1
    and L0A) and the bias block of every N tile (L1 and L0B); all zero without it
    (`_cube_bias_cost` checks a plan's buffers fit beside them)."""
    if p.bias_block is None:
        return 0, 0, 0, 0
    ones, block = tm * FRACTAL * ab, -(-p.n // tn) * tn * FRACTAL * ab
    return ones, block, ones + block, ones


def is_cube_group(block: Block) -> bool:
    """A group whose first op after its input conversions is a Conv / MatMul / Gemm."""
    ops = [o for o in list(block.ops)[:-1] if not isinstance(o, lt.TransDataOp | g.ConstantOp)]
    return bool(ops) and isinstance(ops[0], CONV_OPS + MATMUL_OPS)


def cube_problem(block: Block, weight_value: Callable[[SSAValue], np.ndarray | None],
                 target: targets.Target | None = None) -> CubeProblem:
    """The GEMMs of a cube group. Layout conversions fused into the group (GE's
    TbeTransDataFusionPass) are done by the copies: a TransData of the conv input means the
    feature map is read in its plain NCHW form, one of the result means the epilogue
    writes NCHW."""
    ops = list(block.ops)[:-1]
    anchor = next(o for o in ops if not isinstance(o, lt.TransDataOp | g.ConstantOp))
    anchor, partner, summed = _summed_pair(ops, anchor)
    epilogue = []
    for op in ops:
        if op is anchor or op is partner or op is summed or isinstance(op, g.ConstantOp):
            continue  # (constants: the epilogue's immediates, `build_epilogue`)
        if isinstance(op, lt.TransDataOp):
            # input conversions (of A, or of an epilogue operand) are done by the copy-in,
            # output conversions by the copy-out: the epilogue computes in one tile layout
            if op.input in block.args and all(u.operation is anchor or u.operation in ops for u in op.output.uses):
                continue
            if op.input.owner is anchor or op.input.owner in epilogue:
                continue
            raise Unsupported("a layout conversion inside a cube epilogue")
        if not (fr.is_elementwise(op) or isinstance(op, g.CastOp | g.BatchNormOp)):
            raise Unsupported(f"{op.name} in a cube epilogue")
        if ops.index(op) < ops.index(anchor):
            raise Unsupported(f"{op.name} before the cube op")
        epilogue.append(op)
    outs = list(dict.fromkeys(block.last_op.operands))
    if len({lt.layout_of(v.type) is None for v in outs}) > 1:
        raise Unsupported("outputs in a storage format and in a plain one")
    if _zero_point(anchor):
        raise Unsupported(f"{anchor.name} with an activation zero point ({_zero_point(anchor)}) on the Cube "
                          "(quantize activations symmetrically: offset 0)")
    if isinstance(anchor, CONV_OPS):
        x = anchor.input
        if isinstance(x.owner, lt.TransDataOp) and x.owner in ops:
            x = x.owner.input
            if lt.layout_of(x.type) is not None:
                raise Unsupported("a conv input converted between two storage formats")
        prob = _conv_problem(anchor, block, lambda: weight_value(anchor.weight), x, outs[0])
        if partner is not None:
            _k_concat(prob, partner, summed, weight_value)
        w = anchor.weight
        if isinstance(w.owner, lt.TransDataOp) and w.owner in ops:
            # weights known only at run time: the copy-in builds the FRACTAL_Z chunks
            prob.b_src, prob.b_fmt = w.owner.input, "nchw"
            if lt.layout_of(prob.b_src.type) is not None or prob.conv["ext"] > 1:
                raise Unsupported("conv weights converted at run time from a storage format or for extended groups")
    elif isinstance(anchor, MATMUL_OPS):
        if any(isinstance(o, lt.TransDataOp) for o in ops):
            raise Unsupported("layout conversions fused into a matmul kernel")
        prob = _matmul_problem(anchor, block)
    else:
        raise Unsupported(f"{anchor.name} is not a cube op")
    prob.a_src = prob.a_src or anchor.operands[0]
    prob.bias_block = cube_bias_block(prob, target, weight_value)
    prob.a_warm = _warm_a(block, prob.a_src)
    prob.out_value = outs[0]
    prob.epilogue_ops = epilogue
    prob.epi_written = tuple(_warm_a(block, v) for v in epilogue_operands(prob))
    if prob.kind == "matmul" and _foldable(prob):
        prob.m, prob.batch, prob.a_batched, prob.out_batch, prob.folded = prob.batch * prob.m, 1, False, (), True
    if prob.out_fmt == "nc1hwc0":
        prob.out_c0 = shape_of(outs[0])[4]
        if any(shape_of(v)[4] != prob.out_c0 for v in outs[1:]):
            raise Unsupported("outputs of two C0s (element sizes)")
    elif prob.out_fmt == "nz" and any(shape_of(v)[-1] != prob.c0 for v in outs):
        raise Unsupported("a FRACTAL_NZ output whose C0 is not the inputs'")
    return prob


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CubePlan:
    tm: int
    tn: int
    tk: int
    kl1: int  # K per L1 chunk
    order: str  # "mn": M tiles outer; "nm": N tiles outer
    l1_buffers: int
    l0_buffers: int
    l0c_buffers: int
    ub_buffers: int
    blocks: int
    cycles: float
    split: int = 1  # the inner tiles are split in this many parts across cores too
    usage: tuple[tuple[str, int], ...] = ()
    candidates: int = 0
    batch_inner: bool = False  # order "nm": the images run in the inner loop (weights loaded once per N tile)
    a_whole: bool = False  # order "mn", several K chunks: A's whole K stays in L1 (loaded once per M tile)
    epi_split: int = 1  # the epilogue runs on the L0C tile in this many row slices (UB holds one slice)
    stack: int = 1  # a conv's images stacked along H per M tile (`_stacked`)
    cube_bias: bool = False  # the Cube adds the bias (`cube_bias_block`; `use_plan` drops the block otherwise)
    b_direct: bool = False  # each K step's B goes GM -> L0B on MTE2, no L1 copy (`_b_direct_fits`, `_plan_one`)

    def describe(self) -> str:
        used = ", ".join(f"{s.upper()} {b}" for s, b in self.usage)
        split = f" split={self.split}" if self.split > 1 else ""
        split += " batch_inner" if self.batch_inner else ""
        split += " a_whole" if self.a_whole else ""
        split += f" epi_split={self.epi_split}" if self.epi_split > 1 else ""
        split += f" stack={self.stack}" if self.stack > 1 else ""
        split += " cube_bias" if self.cube_bias else ""
        split += " b_direct" if self.b_direct else ""
        return (f"m={self.tm} n={self.tn} k={self.tk} k_l1={self.kl1} order={self.order}{split} blocks={self.blocks} "
                f"buffers l1={self.l1_buffers} l0={self.l0_buffers} l0c={self.l0c_buffers} ub={self.ub_buffers}; {used}")


def _fm_geometry(cv: dict) -> tuple[int, int, tuple[int, int]]:
    """(rows, width, strides) of the feature map as the L1 holds it: the input image, or
    for a strided 1 x 1 conv without pads (`sub`: ResNet's projection shortcuts) only the
    pixels it reads -- the copy-in takes every s-th row and column, and the Cube sees a 1 x 1
    stride-1 conv on an oh x ow map (a quarter of the bytes for stride 2)."""
    if cv.get("sub"):
        return cv["oh"], cv["ow"], (1, 1)
    return cv["h"], cv["w"], tuple(cv["strides"])


def _stacked(p: CubeProblem, s: int) -> CubeProblem:
    """Conv `p` with `s` images stacked along H into one (GE has no such format; it is the
    tile's view of s images): image j's rows start at row j * S_in of a taller map (S_in
    a multiple of the H stride, at least the image's rows plus its larger H pad, so a
    window never reaches two images and the rows between them read as zeros), its output
    rows at j * S_out (S_out = S_in / stride; the S_out - oh rows between two images' outputs
    are computed and dropped). The problem has batch / s images of that map; the emitter
    copies each real image in and out (`_CubeEmitter.stacked_rows`)."""
    cv = p.conv
    h, _, (st, _) = _fm_geometry(cv)
    pads = cv["pads"]
    s_out = max(_ceil(h + max(pads[0], pads[2]), st), cv["oh"])
    s_in = s_out * st
    oh = (s - 1) * s_out + cv["oh"]
    conv = dict(cv, n=cv["n"] // s, oh=oh, stack=s, stack_rows=(s_in, s_out), image_oh=cv["oh"])
    if not cv.get("sub"):  # (a subsampled map's rows are its output rows: `_fm_geometry`)
        conv["h"] = (s - 1) * s_in + cv["h"]
    return replace(p, batch=p.batch // s, m=oh * cv["ow"], conv=conv)


def _stack_options(p: CubeProblem, m0: int) -> tuple[int, ...]:
    """Image counts a conv's M tile may stack (`_stacked`): divisors of the batch whose
    stacked map still fits one M tile of `TM`; NC1HWC0 in and out, one group, and epilogue
    operands per channel or per pixel in NC1HWC0 with the output's C0 (copied per image; one
    per image and channel only -- broadcast along H and W -- would differ along the tile)."""
    cv = p.conv
    if not (STACK and p.kind == "conv" and p.batch > 1 and p.groups == 1 and not cv.get("c04")
            and p.a_fmt == "nc1hwc0" and p.out_fmt == "nc1hwc0" and p.b_fmt == "fz"):
        return (1,)
    for v in epilogue_operands(p):
        enc, shape = lt.layout_of(v.type), shape_of(v)
        if math.prod(shape) == 1 or tuple(shape) == (cv["co"],):
            continue
        if enc is None or enc.fmt != Format.NC1HWC0 or shape[4] != p.oc0 or shape[2] * shape[3] != p.m:
            return (1,)
    out = [1]
    for s in _divisors(p.batch)[1:]:
        if _round(_stacked(p, s).m, m0) > TM[-1]:
            break
        out.append(s)
    return tuple(out)


def _fmap_rows(p: CubeProblem, tm: int) -> int:
    """Input rows the L1 feature map holds for an M tile of tm pixels."""
    cv = p.conv
    ow, oh = cv["ow"], cv["oh"]
    rows_out = min(oh, tm // ow if tm % ow == 0 else (tm - 1) // ow + 2)
    return (rows_out - 1) * _fm_geometry(cv)[2][0] + (cv["kh"] - 1) * cv["dilations"][0] + 1


@dataclass
class _Sizes:
    """Bytes of one tile's buffers and traffic under a candidate (per single buffer)."""

    a_l1: int
    b_l1: int
    l0a: int
    l0b: int
    l0c: int
    ub: int
    epi_in: int  # GM bytes of epilogue operands per output tile
    out: int
    vec_ops: int
    program: tuple = ()  # the epilogue's vector instructions (`_epilogue_program`)
    ub_temps: int = 0  # the part of `ub` that is the body's temporaries (one copy with double buffering)
    epi_split: int = 1  # row slices of the epilogue (`ub` is one slice's)
    epi_serial: bool = False  # sliced, with an operand that follows the rows (a residual): see `sizes`
    a_cap: int = 0  # L1 bytes of A when they differ from the bytes its copy-in moves (`a_l1`): C04
    epi_warm: int = 0  # GM bytes of epilogue operands per output tile the L2 serves (`WARM_EPILOGUE`)
    out_l2: bool = False  # the stores go into the L2 (`L2_WRITES`): `out` leaves the HBM term

    @property
    def out_hbm(self) -> int:
        """The stored bytes per tile the HBM budget carries."""
        return 0 if self.out_l2 else self.out


def epilogue_operands(p: CubeProblem) -> list[SSAValue]:
    """GM values the epilogue reads per tile: the conv bias / Gemm C, and the group
    arguments the epilogue ops use."""
    out: list[SSAValue] = []
    anchor = p.anchor
    if p.epilogue_bias:
        out.append(anchor.bias)
    if isinstance(anchor, g.GemmOp) and anchor.c is not None:
        out.append(anchor.c)
    for op in p.epilogue_ops:
        for v in op.operands:
            if isinstance(v.owner, lt.TransDataOp) and v.owner.input in p.block.args:
                v = v.owner.input  # converted by the copy-in
            if v in p.block.args and v not in out:
                out.append(v)
    return out


@dataclass(frozen=True)
class _Fixed:
    """What the cost of every candidate of one problem shares (read from the IR once)."""

    ab: int  # A/B element bytes
    ob: int  # output element bytes
    outs: int  # stored outputs
    epi: tuple[tuple[int, int], ...]  # (element bytes, elements) per epilogue operand
    vec_ops: int
    program: tuple[tuple[str, str, int, bool], ...] = ()  # `_epilogue_program`
    # on a chip without FixPipe whose epilogue starts as `to_isa.L0cBias` takes it: the
    # vector program left after the converting read-out (`l0c_epilogue_rest`), else None
    read_out: tuple[tuple[str, str, int, bool], ...] | None = None
    read_out_bias: bool = False  # ... and its bias goes into L0C (a sliced epilogue keeps it on the Vector unit)
    # per `epi` operand: an earlier kernel of the run wrote it and it fits the L2 (`WARM_EPILOGUE`)
    epi_warm: tuple[bool, ...] = ()
    out_l2: bool = False  # the outputs' stores go into the L2 (`L2_WRITES`)


def _fixed(p: CubeProblem, target: targets.Target | None = None) -> _Fixed:
    """What every candidate of `p` shares; with `target`, also how its epilogue reads L0C
    out there (without a target: as a chip with FixPipe, the f32 accumulator in UB)."""
    outs = list(dict.fromkeys(p.block.last_op.operands))
    epi = tuple((_itemsize(v), math.prod(shape_of(v))) for v in epilogue_operands(p))
    bn = sum(isinstance(o, g.BatchNormOp) for o in p.epilogue_ops)
    program = _epilogue_program(p)
    converts = (target is not None and not target.isa.fixpipe and CONVERTED_UB and p.kind == "conv"
                and p.out_fmt == "nc1hwc0")
    split = l0c_epilogue_rest(program) if converts else None
    warm = tuple(bool(target is not None and WARM_EPILOGUE and w and eb * n <= target.memory.l2)
                 for (eb, n), w in zip(epi, p.epi_written or (False,) * len(epi)))
    out_l2 = bool(target is not None and L2_WRITES and target.memory.l2 and target.dma.l2_total
                  and 2 * sum(_nbytes_full(v) for v in outs) <= target.memory.l2)
    return _Fixed(numpy_dtype(p.elem).itemsize, max(_itemsize(v) for v in outs), len(outs), epi,
                  2 + len(p.epilogue_ops) + 4 * bn, program, split and split[1], bool(split and split[0]), warm,
                  out_l2)


def _epilogue_program(p: CubeProblem) -> tuple[tuple[str, str, int, bool], ...]:
    if p.program is None:
        p.program = _program_of(p)
    return p.program


def _program_of(p: CubeProblem) -> tuple[tuple[str, str, int, bool], ...]:
    """The vector instructions the epilogue body costs per output tile, as (op, element
    type, bytes per output element, per-channel operand): the bias add and the cast on
    the accumulator, then the group's ops. An op with an immediate (a one-element constant
    in the group: `build_epilogue`) is charged as its tensor form, though to-isa runs the
    scalar one (vmuls 1 cycle a repeat, vmul 2): priced so, bert_base's FFN in fell out of
    `VECTOR_PACED` into `CROWDED`'s p-norm, modeled 31,402 against 27,788 simulated (28,107
    as a tensor form: the same plan)."""
    acc = elem_name(p.acc_elem)
    out: list[tuple[str, str, int, bool]] = []
    anchor = p.anchor
    if p.epilogue_bias:
        out.append(("vadd", acc, 4, p.kind == "conv"))
    if isinstance(anchor, g.GemmOp):
        if anchor.alpha.value.data != 1.0:
            out.append(("vmuls", "f32", 4, False))
        if anchor.c is not None and anchor.beta.value.data != 0.0:
            out.append(("vadd", "f32", 4, False))
    if anchor.results[0].type.element_type != p.acc_elem:
        out.append(("vconv", "f32", 4, False))
    fused = None  # a ReLU the add before it runs with (`isa_vector.relu_after`: one vaddrelu)
    for op in p.epilogue_ops:
        name = op.name.split(".", 1)[1]
        elem = elem_name(op.results[0].type.element_type)
        size = numpy_dtype(op.results[0].type.element_type).itemsize
        if op is fused:
            continue
        if (relu := relu_after(op)) is not None and relu in p.epilogue_ops and scalar_form(op) is None:
            out.append(("vaddrelu", elem, size, "rows" if _row_vector(p, op) else False))
            fused = relu
            continue
        if isinstance(op, g.BatchNormOp | g.DequantizeOp):
            out += [("vconv", "f32", 4, False), ("vmul", "f32", 4, True), ("vadd", "f32", 4, True),
                    ("vconv", "f32", 4, False)]
        elif isinstance(op, g.CastOp):
            out.append(("vconv", elem_name(op.operands[0].type.element_type), max(size, _itemsize(op.operands[0])),
                        False))
        elif isinstance(op, g.DivOp) and p.batch == 1 and _by_one_value(op):
            # isa_vector: a multiply by the divisor's reciprocal, made once beside the first step
            # (bert_base's GELU divides by sqrt(2): simulated vrec 43 + vmul 163, vdiv charged 547)
            out.append(("vmul", elem, size, False))
        else:
            out.append((ELEMENTWISE.get(name, "default"), elem, size, "rows" if _row_vector(p, op) else False))
    return tuple(out)


def _by_one_value(op: g.DivOp) -> bool:
    """Is `op` a float Div by one value (a constant or a one-element tensor), which
    isa_vector runs as a multiply by its reciprocal (`by_reciprocal` / `by_one_value`)?
    (`_epilogue_program` asks it for unbatched matmuls and convs only: priced so, bert_base's
    attention scores (batch 96, / 8) took an order-"nm" plan that simulated 1.4k cycles
    slower than the one the vdiv price picks -- a miss of the batched plans' model, open.)"""
    divisor = op.operands[1]
    return (DIV_BY_RECIPROCAL and numpy_dtype(op.results[0].type.element_type).kind == "f"
            and isinstance(divisor.type, TensorType) and math.prod(shape_of(divisor)) == 1
            and math.prod(shape_of(op.results[0])) > 1)


def _row_vector(p: CubeProblem, op: Operation) -> bool:
    """Does epilogue op `op` of a row-major (ND) matmul take a row vector ([N]) against
    the tile's rows? (`isa_vector` runs it row by row when a row is off the repeat grid.)"""
    if p.out_fmt != "nd":
        return False
    rows = math.prod(shape_of(op.results[0])[:-1])
    return rows > 1 and any(math.prod(shape_of(v)[:-1]) == 1 and shape_of(v)[-1] > 1 for v in op.operands
                            if isinstance(v.type, TensorType) and shape_of(v))


@machine_memo
def epilogue_cycles(mach: Machine, program: tuple, tm: int, tn: int) -> float:
    """Cycles of the epilogue's vector instructions on a tm x tn tile: one start-up per
    step (a per-channel operand's several instructions per step overlap their start-ups
    on the pipelined Vector unit). A row vector against rows longer than a repeat and off
    the repeat grid ("rows") takes an instruction per column of a repeat with the rows on
    its repeat axis (isa_vector.block_layout), or -- rows too far apart for a repeat
    stride -- an instruction per row and repeat."""
    vec = mach.target.vector
    bpr = vec.bytes_per_repeat

    def rows(op: str, elem: str, size: int) -> float:
        columns = _ceil(tn * size, bpr)
        if tn * size // vec.block_bytes <= MAX_REP_STRIDE:
            return columns * mach.instruction(op, elem, tm)
        return tm * columns * mach.instruction(op, elem, 1)

    return sum(rows(op, elem, size) if kind == "rows" and tn * size > bpr and (tn * size) % bpr else
               mach.instruction(op, elem, max(1, _ceil(tm * tn * size, bpr))) for op, elem, size, kind in program)


def sizes(p: CubeProblem, tm: int, tn: int, tk: int, kl1: int, f: _Fixed | None = None,
          a_whole: bool = False, epi_split: int = 1) -> _Sizes:
    """The buffers of a candidate; with `epi_split` the UB buffers hold one of that many
    row slices of the tile (the epilogue's GM bytes stay the whole tile's)."""
    f = f or _fixed(p)
    ab = f.ab
    a_l1, a_cap = _a_sizes(p, tm, kl1, ab, a_whole)
    ub, temps, epi_in, serial = _ub_sizes(p, tm, tn, f, epi_split)
    return _Sizes(a_l1, kl1 * tn * ab, tm * tk * ab, tk * tn * ab, tm * tn * 4, ub, epi_in, f.outs * tm * tn * f.ob,
                  f.vec_ops, f.program, temps, epi_split, serial, a_cap, _epi_bytes(f, tm, tn, True), f.out_l2)


def _a_sizes(p: CubeProblem, tm: int, kl1: int, ab: int, a_whole: bool) -> tuple[int, int]:
    """(A's bytes per L1 buffer, A's L1 bytes when they differ from what its copy-in moves:
    C04, else 0) of an M tile and K chunk (`sizes`; apart: the plan search asks once per pair)."""
    if a_whole:  # A's whole K (every chunk) in L1
        return tm * _ceil(p.k, kl1) * kl1 * ab, 0
    if p.kind == "conv":
        cv = p.conv
        ncb = kl1 // (cv["kh"] * cv["kw"] * p.c0)
        a_l1 = ncb * p.c0 * _fmap_rows(p, tm) * _fm_geometry(cv)[1] * ab
        if cv.get("c04") and p.a_fmt == "nc1hwc0":  # 4 of each pixel's 16 channels: one 32-B burst each
            return a_l1 * cv["src_c0"] // p.c0, a_l1
        return a_l1, 0
    return tm * kl1 * ab, 0


def _epi_bytes(f: _Fixed, tm: int, tn: int, warm: bool) -> int:
    """GM bytes per tm x tn output tile of the epilogue operands an earlier kernel of the
    run wrote into the L2 (`warm`), or of the others."""
    return sum(eb * min(n, tm * tn) for (eb, n), w in zip(f.epi, f.epi_warm, strict=True) if w == warm)


def _ub_sizes(p: CubeProblem, tm: int, tn: int, f: _Fixed, epi_split: int) -> tuple[int, int, int, bool]:
    """(UB bytes, the body's temporaries among them, epilogue HBM bytes (`_epi_bytes`), serial slices) of a
    tm x tn output tile (`sizes`; apart: they do not depend on K, the plan search asks once
    per tile shape)."""
    # epilogue operand tiles (an upper bound: per-channel ones take tn elements, full ones
    # tm x tn; twice for a copy re-laid out in UB), and a bound of the body's live values
    te = tm // epi_split  # rows of one epilogue slice
    converted = f.read_out is not None and (epi_split == 1 or (to_isa.SLICED_READ_OUT and not f.read_out_bias))
    # (converted: an NC1HWC0 output's operands come in its layout, one copy each)
    epi_bytes = sum((1 if converted else 2) * eb * min(n, te * tn) for eb, n in f.epi)
    if converted:
        # `to_isa.L0cBias`: the read-out converts to f16 on the way, so no f32 accumulator
        # tile: the converted one (none when the read-out writes the output), the body's
        # live f16 values, and the whole bias kept in UB as f16 and f32 (`resident_bias_plans`)
        value = te * tn * f.ob
        wide = te * tn * max([f.ob] + [size for _, _, size, _ in f.read_out])  # (an f32 op left: f32 values)
        temps = ((1 + f.outs) * wide if f.read_out else 0) + 8 * tn * 4 * (len(f.epi) + 1)
        resident = sum(n * (eb + 4) for eb, n in f.epi if n <= (p.conv["co"] if p.conv else p.n))
        ub = (value if f.read_out else 0) + f.outs * value + epi_bytes + temps + resident
        return ub, temps, _epi_bytes(f, tm, tn, False), False
    temps = (2 + f.outs) * te * tn * 4 + 8 * tn * 4 * (len(f.epi) + 1)
    ub = te * tn * 4 + f.outs * te * tn * f.ob + epi_bytes + temps
    epi_in = _epi_bytes(f, tm, tn, False)
    # a sliced epilogue loads such an operand per slice: MTE2, in order, then waits for the
    # previous slice's epilogue, and the next tile's loads wait behind it
    serial = epi_split > 1 and any(n > (p.conv["co"] if p.conv else p.n) for _, n in f.epi)
    return ub, temps, epi_in, serial


def _epi_splits(p: CubeProblem, tm: int, tn: int, f: _Fixed) -> tuple[int, ...]:
    """Row slices the epilogue of an M tile of tm rows may run in: whole fractals each
    (an M tile larger than UB's share then still fits). A conv only with N tiles of at most
    64 channels and no operand that follows the rows (a residual): a sliced NC1HWC0 epilogue
    of wider tiles costs the Vector unit more than the model counts (a resnet50 layer-2
    conv at batch 16: modeled 23,681, simulated 28,735 cycles)."""
    if p.out_fmt == "nchw" or (p.conv and (tn > 64 or any(n > p.conv["co"] for _, n in f.epi)
                                             or p.conv.get("stack"))):
        return (1,)
    return tuple(e for e in (1, 2, 4, 8) if tm % (e * FRACTAL) == 0)


def cube_cost(p: CubeProblem, mach: Machine, tm: int, tn: int, tk: int, kl1: int, order: str, blocks: int,
              l1d: bool, l0d: bool, epid: bool, split: int = 1, s: _Sizes | None = None,
              batch_inner: bool = False, a_whole: bool = False, parts: _TileParts | None = None,
              core: tuple[int, int] | None = None, misses: tuple[float, float, float] | None = None,
              held: bool = False) -> float:
    """Cycles of the slowest core: its tiles pipelined through their stages -- the L1
    loads (the next tile's overlap this tile's K loop when L1 is double-buffered), the K
    loop (L1 -> L0 moves and mmads, overlapped when L0 is double-buffered; K chunks of L1
    pipelined with their loads), the epilogue (the L0C read-out and vector ops, overlapped
    with the next tile's K loop when L0C and UB are double-buffered) and the copy-out --
    with the tile's GM bytes at the core's HBM share as a throughput limit. A weight read
    after the first one hits the L2 (the weights fit it): it costs the L2 path's rate and
    none of the HBM share. A matmul or conv whose cores share their reads (`_shares_reads`):
    the reads after the first reader's hit the L2 at the core's share of its bandwidth
    (`_block_misses`), the loads' start-ups overlap, stages near the slowest one add to it
    (`CROWDED`) and the slices of a sliced epilogue pipeline. `parts`: the tiling's
    `_TileParts` (`_cheapest` shares them among a tiling's schedules); `core`, `misses`: the
    schedule's `_core_tiles` and, when the cores share their reads, `_shared_misses`
    (`_cheapest` asks once per tile shape)."""
    s = s or sizes(p, tm, tn, tk, kl1, _fixed(p, mach.target))
    parts = parts or _TileParts(p, mach, tm, tn, tk, kl1, s, l0d)
    n_tiles = _ceil(p.n, tn)
    per_core, inner = core or _core_tiles(p, tm, tn, order, blocks, split, batch_inner)
    chunks = parts.chunks
    a_in, b_in = s.a_l1, s.b_l1
    hoist_b = chunks == 1 and order == "nm"
    b_reads = b_in * (per_core if hoist_b else per_core * inner * chunks)  # the core's weight bytes
    weights = s.b_l1 * chunks * n_tiles * p.groups
    miss = min(1.0, weights / b_reads) if b_reads and weights <= mach.target.memory.l2 else 1.0
    l2_rate = mach.target.bytes_per_cycle(mach.target.dma.l2_to_l1)
    # GEMV (M one fractal): every core of the N split reads the same A rows (padded to the
    # fractal in L1); after the first read they hit the L2 (where there is one), at the L2
    # path's rate or the core's share of the L2 bandwidth, outside the HBM budget
    a_miss, a_rate = 1.0, l2_rate
    is_gemv, shared = parts.gemv, parts.shared
    if shared:
        a_miss, miss, l2_rate, miss_rate = misses or _shared_misses(p, mach, tm, tn, order, blocks, split,
                                                                    batch_inner, chunks == 1, per_core)
        a_rate = l2_rate
    elif is_gemv and mach.target.memory.l2 and mach.target.dma.l2_total:  # the 310B has no L2
        a_reads = blocks * (per_core if chunks == 1 and order == "mn" else per_core * inner * chunks)
        a_miss = min(1.0, chunks * p.batch / a_reads) if a_reads else 1.0
        a_rate = min(l2_rate, mach.target.bytes_per_cycle(mach.target.dma.l2_total) / blocks)
    elif p.kind == "conv" and p.conv.get("c04") and mach.target.memory.l2 and mach.target.dma.l2_total:
        # (only C04 convs so far: the other convs' plans are calibrated without it)
        a_miss = _fmap_miss(p, tm, n_tiles if chunks > 1 or order == "nm" else 1, s, chunks, weights,
                            mach.target.memory.l2)
        a_rate = min(l2_rate, mach.target.bytes_per_cycle(mach.target.dma.l2_total) / blocks)

    def load(a: float, b_: float) -> float:
        """MTE2 cycles of a tile's A and B bytes (B partly from the L2; a GEMV's A too)."""
        # a GEMV's stream of loads keeps MTE2 busy: their start-ups overlap (paid once, below)
        # (a matmul's stream of loads too, when they share the L2: pipelined, its K chunks' loads follow each other)
        if shared:
            return (a * a_miss + b_ * miss) / miss_rate + b_ * (1 - miss) / l2_rate + a * (1 - a_miss) / a_rate
        count = 0 if is_gemv else (a > 0) + (b_ > 0)
        return (mach.dma("gm_to_l1", a * a_miss + b_ * miss, blocks, count=count)
                + b_ * (1 - miss) / l2_rate + a * (1 - a_miss) / a_rate)

    hoisted = 0.0
    if a_whole:  # A's whole K once per outer (M) tile, B in K chunks: s.a_l1 is A's whole K
        hoisted, a_in = load(a_in, 0), 0
    elif chunks == 1:  # the outer operand is loaded once per outer tile
        if order == "mn":
            hoisted, a_in = load(a_in, 0), 0
        else:
            hoisted, b_in = load(0, b_in), 0
    mte2 = load(a_in, b_in)
    chunk, k_fill = parts.chunk, parts.k_fill()
    if held and _holds_b(p, mach.target.memory.l0b, tm, tn, tk, kl1, order, l0d):
        # the N tile's B fractals move into L0B once, before its M tiles; their steps move A's
        chunk = parts.held_chunk()
        hoisted += _ceil(kl1, tk) * mach.dma("l1_to_l0b", s.l0b)
    fix, vec = parts.fix, parts.vec
    epi_in, mte3 = _epilogue_traffic(mach, s, blocks)
    hoisted_bytes = (s.a_l1 * a_miss if order == "mn" else s.b_l1 * miss) if chunks == 1 or a_whole else 0
    gm = mach.hbm(chunks * (a_in * a_miss + b_in * miss) + hoisted_bytes / inner + s.epi_in + s.out_hbm, blocks)  # reads + writes
    # without FixPipe (the 910) the L0C read-out runs on the Vector pipe, with the epilogue
    read_out = fix + vec
    epilogue = [fix, epi_in, vec, mte3] if mach.target.isa.fixpipe else [epi_in, read_out, mte3]
    # the outer operand's load overlaps the previous outer tile's work only with two L1
    # buffers and more than one outer tile; the first one is a fill either way
    spread = l1d and per_core > 1 and not a_whole
    fill = hoisted
    if SHARED_FILL and shared and hoisted and blocks > 1:
        # the cores load their first outer tiles at the same time: the hits of a tile
        # another core reads too arrive as that core's fetch brings them in, so the fill
        # takes at least the distinct tiles' bytes at the HBM rate (simulated: resnet50's
        # 1 x 1 conv 1024 -> 256 at 14 x 14, batch 16, one image per 2 cores: the copies of
        # the 16 images took 5.2k-10.9k cycles, modeled at the L2 rate 4.0k)
        outer_n = _ceil(p.m, tm) if order == "mn" else n_tiles
        firsts = _first_tiles(mach, p.kind == "conv", p.batch, p.groups, outer_n, order, blocks, split, batch_inner)
        fill = max(hoisted, firsts * (s.a_l1 if order == "mn" or a_whole else s.b_l1) / mach.hbm_bytes_per_cycle())
    pieces = parts.pieces(order)
    if pieces > 1 and order == "mn":
        # the first tile's K loop runs while A's later pieces arrive (measured with A
        # hoisted; with B hoisted -- order "nm", a conv's later pieces after the first
        # tile's A: `DEFER_PIECES` -- the fill is the cores' distinct weight tiles from the
        # HBM, which the model undercounts already: not discounted)
        fill = max(fill / pieces, fill - chunk * (pieces - 1) / pieces)
    if pieces > 1 and p.kind == "matmul":  # each copy's later pieces start up again (the hoisted one's and
        # every tile's; a conv's are its hoisted B's, after the first tile's A, beside its K loop)
        fill += (pieces - 1) * mach.target.startup.mte2
        mte2 += (pieces - 1) * mach.target.startup.mte2
    serial = fill if spread else per_core * fill
    # B from GM: the first mmad waits for A's chunk and its step's B only, not the chunk's B
    first_loads = load(a_in, 0) + mach.dma("gm_to_l0b", s.l0b) if parts.b_direct and chunks > 1 and l1d else None
    if chunks == 1:
        load, body = mte2 + (hoisted / inner if spread else 0.0), chunk
    else:
        load, body = 0.0, pipelined(chunks, [mte2, chunk], l1d) + k_fill
        if first_loads is not None:
            body -= max(0.0, min(mte2, chunk) - first_loads)
    if p.bias_block is not None:  # the bias mmad that ends each tile's chain (`cube_bias_block`) and
        # the kernel's set-up, which the first loads wait for: a dup, UB -> L1, L1 -> L0A / L0B
        body += mach.cube(tm, FRACTAL, tn, elem_name(p.elem)) - mach.target.startup.cube
        serial += _bias_setup(p, mach, tm, tn)
    front = []
    if l1d and load:
        front = [load]
    else:
        body += load
    if is_gemv or shared:
        serial += mach.target.startup.mte2
    tiles = per_core * inner
    # a tile's epilogue in row slices (unrolled): with double-buffered UB the slices
    # pipeline through the epilogue's pipes, so the last tile's epilogue drains in that time
    drain = sum(epilogue)
    if SLICED_DRAIN and s.epi_split > 1 and shared:
        drain = pipelined(s.epi_split, [e / s.epi_split for e in epilogue], epid)
    if not epid or s.epi_serial:
        stages = [*front, body + drain]
        return serial + pipelined(tiles, stages, len(stages) > 1, port=gm)
    stages = [*front, body, *epilogue]
    cost = pipelined(tiles, stages, True, port=gm)
    vector_bound = (p.kind == "matmul" and not mach.target.isa.fixpipe and max(stages) == read_out
                    and read_out > body)
    if CROWDED and shared and not (VECTOR_PACED and vector_bound):
        # pipes near their limit together (the L2 reads and the Vector epilogue) stall each
        # other: the slowest stage as a p-norm of the stages -- not when the Vector epilogue
        # is the slowest (`VECTOR_PACED`)
        slowest = max(stages)
        crowd = sum((x / slowest) ** CROWDED for x in stages) ** (1 / CROWDED) * slowest
        cost += tiles * (crowd - slowest)
    return serial + max(cost - (sum(epilogue) - drain), tiles * max(stages), tiles * gm)


def _shares_reads(p: CubeProblem, mach: Machine) -> bool:
    """Are a matmul's (not batched) or a conv's reads costed as shared by its cores
    (`_block_misses`)? Not a GEMV's nor a C04 conv's (their own A models), nor on a chip
    without an L2. (Convs: without it the model charged every core's reads to the HBM and
    over-predicted them by ~15% against the simulator's shared L2.)"""
    if not SHARED_READS or not mach.target.memory.l2 or not mach.target.dma.l2_total:
        return False
    if p.kind == "conv":
        return SHARED_CONV and not p.conv.get("c04")
    return p.batch == 1 and not gemv(p, mach)


def _shared_miss(p: CubeProblem, order: str, blocks: int, split: int, per_core: int) -> tuple[float, float]:
    """(A, B): the share of the slowest core's reads of each operand that miss the L2 when
    the cores read the same A rows and B columns. The blocks of one outer tile are
    consecutive: block 1 is the first reader of its inner tiles (it fetches them from HBM,
    at its share) and follows block 0 on the outer tile (L2 hits, at the L2's share: the
    simulator's L2 serves the later readers the lines as they arrive); without a split it
    is the first reader of its outer tiles and the inner ones are block 0's. A core's
    second outer tile reads the same inner tiles again (hits)."""
    if blocks == 1:
        return 1.0, 1.0
    inner_batched = (p.b_batched if order == "mn" else p.a_batched) and p.batch > 1
    # (without a split, block 1's inner tiles are block 0's unless they are another batch entry's)
    inner_miss, outer_miss = (1.0 / per_core, 0.0) if split > 1 else (float(inner_batched), 1.0)
    return (outer_miss, inner_miss) if order == "mn" else (inner_miss, outer_miss)


@machine_memo
def _block_misses(mach: Machine, conv: bool, batch: int, groups: int, outer_n: int, inner_n: int, order: str,
                  blocks: int, split: int, batch_inner: bool, hoisted: bool) -> tuple[float, float]:
    """(A, B): the share of block 1's loads of each operand that miss the L2, from the
    items (image, group, outer tile, part of the inner tiles) the kernel's loop gives each
    block (`block_range`: consecutive runs): a tile block 0 loads, or block 1 loaded
    before, hits (block 0's reads take the free HBM bandwidth: it fetches what the later
    blocks share). The outer operand is loaded per inner tile, or once per item when
    `hoisted`; a conv's weights are the same for every image. (Block 1 stands for the
    slowest core, as in `_shared_miss`, which this equals when each block takes one item
    or there is no split; with several items a block's are parts of the same outer tile.)"""
    if blocks == 1:
        return 1.0, 1.0
    total, per = _items(batch, groups, outer_n, blocks, split, batch_inner)
    inner_total = inner_n * (batch if batch_inner else 1)
    per_part = _ceil(inner_total, split)

    def keys(item: int) -> tuple[tuple, tuple, int]:
        """The item's outer tile, its inner tiles (a part: the same tiles for the same
        part), and how many inner tiles."""
        image, group, outer, part = _item(item, groups, outer_n, split)
        n_in = max(0, min(per_part, inner_total - part * per_part))
        if order == "mn":  # outer: this image's A rows; inner: B columns (a conv's for every image)
            return ("a", image, group, outer), ("b", 0 if conv else image, group, part), n_in
        # outer: B columns; inner: A rows (every image's with batch_inner)
        return ("b", 0 if conv else image, group, outer), ("a", image, group, part), n_in

    seen = set()
    for item in range(min(per, total)):
        seen.update(keys(item)[:2])
    o_loads = o_miss = i_loads = i_miss = 0
    for item in range(per, min(2 * per, total)):
        o, i, n_in = keys(item)
        o_loads += 1 if hoisted else max(n_in, 1)
        i_loads += n_in
        if o not in seen:
            o_miss += 1
            seen.add(o)
        if i not in seen:
            i_miss += n_in
            seen.add(i)
    outer_miss = o_miss / o_loads if o_loads else 1.0
    inner_miss = i_miss / i_loads if i_loads else 1.0
    return (outer_miss, inner_miss) if order == "mn" else (inner_miss, outer_miss)


@machine_memo
def _first_tiles(mach: Machine, conv: bool, batch: int, groups: int, outer_n: int, order: str, blocks: int,
                 split: int, batch_inner: bool) -> int:
    """The distinct outer tiles the cores' first items load (`_block_misses`' items: a conv's
    weights are the same for every image)."""
    total, per = _items(batch, groups, outer_n, blocks, split, batch_inner)
    firsts = set()
    for item in range(0, total, per):
        image, group, outer, _ = _item(item, groups, outer_n, split)
        firsts.add((0 if conv and order == "nm" else image, group, outer))
    return len(firsts)


def _items(batch: int, groups: int, outer_n: int, blocks: int, split: int, batch_inner: bool) -> tuple[int, int]:
    """(work items, items per block) of a Cube kernel's loop (`block_range`): an item is an
    (image -- all of them with `batch_inner` --, group, outer tile, part of the inner tiles)."""
    total = (1 if batch_inner else batch) * groups * outer_n * split
    return total, _ceil(total, blocks)


def _item(item: int, groups: int, outer_n: int, split: int) -> tuple[int, int, int, int]:
    """(image, group, outer tile, part) of work item `item` (`_items`)."""
    rest, part = divmod(item, split)
    rest, outer = divmod(rest, outer_n)
    image, group = divmod(rest, groups)
    return image, group, outer, part


def _fmap_miss(p: CubeProblem, tm: int, loads: int, s: _Sizes, chunks: int, weights: int, l2: int) -> float:
    """The share of a conv's feature-map reads that miss the L2: an M tile's input rows
    overlap the next tile's (a 7 x 7 stride-2 conv's tile of one output row reads 7 input
    rows, 5 of them the previous tile's), and A is read again per N tile (`loads`) unless
    hoisted; the rows an earlier read brought in hit the L2 while the launch's reads fit it."""
    cv = p.conv
    rows = _fmap_rows(p, tm)
    h = _fm_geometry(cv)[0]
    unique = s.a_l1 * h / rows * p.batch * p.groups * chunks  # the whole feature map (these channels)
    if unique + weights > l2:
        return 1.0
    return min(1.0, h / (_ceil(p.m, tm) * rows * loads))


def _core_tiles(p: CubeProblem, tm: int, tn: int, order: str, blocks: int, split: int,
                batch_inner: bool) -> tuple[int, int]:
    """(outer tiles of the slowest core, inner tiles per outer one) of a candidate."""
    m_tiles, n_tiles = _ceil(p.m, tm), _ceil(p.n, tn)
    outer, inner = (m_tiles, n_tiles) if order == "mn" else (n_tiles, m_tiles)
    images = 1 if batch_inner else p.batch  # images in the outer (multi-core) index
    inner = _ceil(inner * (p.batch if batch_inner else 1), split)
    return _ceil(images * p.groups * outer * split, blocks), inner


def _k_loop(p: CubeProblem, mach: Machine, tm: int, tn: int, tk: int, kl1: int, s: _Sizes, l0d: bool,
            shared: bool | None = None, b_direct: bool = False, held: bool = False) -> float:
    """Cycles of one L1 chunk's K loop: its L1 -> L0 moves and mmads (overlapped with two
    L0 buffers), and the fill where the chunk's first moves wait for the previous chunk's
    last mmad (a loop over steps drains at its end; unrolled steps (`_unrolls`) do half as
    often, or with TIGHT_FORWARD_SYNC never within a tile: `_k_fill`). `shared`: the
    problem's `_shares_reads`, when known. `b_direct`: B's fractals come GM -> L0B on MTE2
    while MTE1 moves A's (`CubePlan.b_direct`): a step's moves take the slower of the two."""
    steps = _ceil(kl1, tk)
    mte1 = _step_moves(mach, s, b_direct, held=held)
    cube = mach.cube(tm, tk, tn, elem_name(p.elem))
    # unrolled: with TIGHT_FORWARD_SYNC no fill per chunk; without it every other chunk's
    # first moves wait for the previous chunk's last mmad (the two L1 slots' copies of the
    # chunk: the first copy's moves follow the other's mmads closely, the next loop
    # iteration's wait for the last one; bert_base's q / k / v projections, 2 steps of 16
    # per chunk of 32: 312 -> 264 cycles per chunk, 11,842 -> 10,828 per kernel)
    fill = (0.0 if TIGHT_FORWARD_SYNC else 0.5) if _unrolls(steps, l0d) else 1.0
    rotates = _rotates(p, mach, steps, kl1, l0d)
    if rotates:
        fill = 0.0
    if not (PIPELINED_K and l0d and (_shares_reads(p, mach) if shared is None else shared)):
        return pipelined(steps, [mte1, cube], l0d) - (1 - fill) * min(mte1, cube)
    # the pipes are pipelined (an instruction's start-up overlaps the previous one's data)
    # and the L0 buffers alternate: step i's moves wait for step i - 2's mmad, its mmad
    # for its moves, so two steps take both pipes' start-ups and busy cycles once each
    start = mach.target.startup
    # (B from GM: A's move and B's on two pipes, each with its own start-up)
    mte1_busy = _step_moves(mach, s, b_direct, busy=True) if b_direct else mte1 - (1 if held else 2) * start.mte1
    cube_busy = cube - start.cube
    step = max(mte1_busy, cube_busy, (mte1 - start.mte1 + cube) / 2)
    if fill < 1:
        return steps * step + fill * min(mte1, cube)
    if ODD_K_STEPS and steps > 1 and steps % 2:
        # an odd number of steps per chunk: the L0 buffers do not alternate across the
        # chunk's end -- the first step waits for the previous chunk's last mmad, the last
        # for the one before it (simulated: a 3 x 3 conv's chunk of 3 steps ran its moves
        # and mmad end to end twice, 400 cycles where 3 overlapped steps take 240)
        return 2 * (mte1 - start.mte1 + cube) + (steps - 2) * step
    return steps * step + min(mte1, cube)


def _step_moves(mach: Machine, s: _Sizes, b_direct: bool, busy: bool = False, held: bool = False) -> float:
    """Cycles of a K step's L0 moves: A's and B's on MTE1 one after the other, or with B
    straight from GM (`b_direct`) A's on MTE1 beside B's on MTE2 (`busy`: without their
    start-ups, which overlap the previous move's data on a pipelined pipe)."""
    if held:  # (B in L0B for all the N tile's M tiles: `_holds_b`)
        return mach.dma("l1_to_l0a", s.l0a)
    if b_direct:
        start = mach.target.startup
        a, b_ = mach.dma("l1_to_l0a", s.l0a), mach.dma("gm_to_l0b", s.l0b)
        return max(a - start.mte1, b_ - start.mte2) if busy else max(a, b_)
    return mach.dma("l1_to_l0a", s.l0a) + mach.dma("l1_to_l0b", s.l0b)


def _holds_b(p: CubeProblem, l0b: int, tm: int, tn: int, tk: int, kl1: int, order: str, l0d: bool) -> bool:
    """Does the emitter keep an N tile's B fractals in L0B for all its M tiles: order "nm",
    the whole K in one L1 chunk, in one step (`HOLD_L0`) or in unrolled steps that all fit
    the target's `l0b` bytes beside the Cube bias's blocks (`_held_steps`)?"""
    if order != "nm" or kl1 < p.k:
        return False
    if _ceil(kl1, tk) == 1:
        return HOLD_L0
    return _held_steps(p, tm, tn, tk, kl1, order, l0d, l0b)


def _unrolls(steps: int, l0d: bool) -> bool:
    """Does the emitter unroll a chunk's `steps` K steps over two L0 buffers (`_unrolled_steps`)?"""
    most = MAX_UNROLLED_STEPS if TIGHT_FORWARD_SYNC else 2
    return UNROLLED_K and l0d and steps % 2 == 0 and 2 <= steps <= most


def _rotates(p: CubeProblem, mach: Machine, steps: int, kl1: int, l0d: bool) -> bool:
    """Is a chunk's K loop one step whose double L0 buffers rotate in the loop over chunks
    (no step loop: `_maybe_loop`)? With TIGHT_FORWARD_SYNC a chunk's moves then wait only
    for the mmad two chunks back, as unrolled steps do, and the loop over chunks drains once
    per tile (`_k_fill`). (Simulated: bert_base's FFN out, 128 x 256 tiles, K steps of 32
    in chunks of 32: 260 cycles per chunk, the mmad's pace, where a drain per chunk was
    charged 508. The model takes steps of 16 in chunks of 16: FFN out 30,441 -> 30,201,
    the q projection 10,173 -> 9,933 against 2 steps per chunk of 32.) Matmuls whose cores
    share their reads, on the 910 only: on the 910B the twin of test/lowering/tile-cube.mlir's
    matmul simulated one-step chunks of 16 slower than 2-step chunks of 32 (6,127 vs 5,985)."""
    return (ROTATING_STEP and TIGHT_FORWARD_SYNC and PIPELINED_K and l0d and steps == 1 and kl1 < p.k
            and p.kind == "matmul" and not mach.target.isa.fixpipe and _shares_reads(p, mach))


def _pieces(p: CubeProblem, kl1: int, tk: int, l0d: bool, order: str) -> int:
    """K pieces the copies of a one-chunk matmul take (`PROGRESSIVE`), or a one-chunk conv's
    hoisted FRACTAL_Z weights in order "nm" (`CONV_PIECES`): the most of `PIECES` that
    divide its unrolled K steps (a piece holds whole steps, so a step reads one piece and
    insert-sync makes it wait for that piece's copy only); 1 otherwise."""
    steps = _ceil(kl1, tk)
    conv = CONV_PIECES and p.kind == "conv" and p.b_fmt != "nchw" and order == "nm"
    if not (PROGRESSIVE and (p.kind == "matmul" or conv) and kl1 >= p.k and _unrolls(steps, l0d)):
        return 1
    return max(d for d in range(1, PIECES + 1) if steps % d == 0)


def _k_fill(p: CubeProblem, mach: Machine, tm: int, tn: int, tk: int, kl1: int, s: _Sizes, l0d: bool,
            b_direct: bool = False) -> float:
    """Cycles a tile's K loop adds once when its steps are unrolled (`_unrolls`) or rotate
    (`_rotates`) and it has several chunks: the loop over chunks drains at its end (its
    flags are waited for after it), so the next tile's first moves wait for this tile's
    last mmad. (One chunk: the steps of consecutive tiles alternate their buffers in the
    loop over tiles, no fill.)"""
    steps = _ceil(kl1, tk)
    if not (TIGHT_FORWARD_SYNC and (_unrolls(steps, l0d) or _rotates(p, mach, steps, kl1, l0d))) or kl1 >= p.k:
        return 0.0
    return min(_step_moves(mach, s, b_direct), mach.cube(tm, tk, tn, elem_name(p.elem)))


def _epilogue_stages(mach: Machine, s: _Sizes, tm: int, tn: int, blocks: int) -> tuple[float, float, float, float]:
    """Cycles of a tile's epilogue per pipe: the L0C read-out, the operand loads, the vector
    ops and the copy-out (in `s.epi_split` row slices: a start-up per slice). On a chip
    without FixPipe an epilogue runs the program to-isa gives it there
    (`l0c_epilogue_program`: the bias in L0C, the cast on the read-out) -- a sliced one
    only without the bias in L0C (`to_isa._sliced_readers`: each slice's read-out converts;
    a bias would go into L0C once per tile, so to-isa leaves such an epilogue to the Vector
    unit). bert_base's q projection, 4 slices: a vconv of 291 cycles per slice less."""
    fix, vec = _epilogue_compute(mach, s, tm, tn)
    epi_in, mte3 = _epilogue_traffic(mach, s, blocks)
    return fix, epi_in, vec, mte3


def _epilogue_compute(mach: Machine, s: _Sizes, tm: int, tn: int) -> tuple[float, float]:
    """(L0C read-out, vector ops) of `_epilogue_stages`: the same for every schedule of a tiling."""
    return _epilogue_terms(mach, s.program, s.epi_split, s.l0c, tm, tn)


def _epilogue_terms(mach: Machine, epilogue: tuple, es: int, l0c: int, tm: int, tn: int) -> tuple[float, float]:
    """`_epilogue_compute` of a tm x tn tile whose `l0c` bytes the epilogue program
    `epilogue` (`_Sizes.program`) reads out in `es` slices."""
    program = mach.memo(("l0c_program", epilogue), lambda: l0c_epilogue_program(mach, epilogue))
    if es > 1 and (not to_isa.SLICED_READ_OUT or (program and program[0][0] == "broadcast_ub_to_l0c")):
        program = epilogue
    return mach.dma("l0c_to_ub", l0c, count=es), es * epilogue_cycles(mach, program, tm // es, tn)


def _epilogue_traffic(mach: Machine, s: _Sizes, blocks: int) -> tuple[float, float]:
    """(operand loads, copy-out) of `_epilogue_stages` on one of `blocks` cores."""
    if s.out_l2:  # into the L2: the path's rate or the core's share of the L2 bandwidth
        store = s.epi_split * mach.target.startup.mte3 + s.out / _l2_store_rate(mach, blocks)
    else:
        store = mach.dma("ub_to_gm", s.out, blocks, count=s.epi_split)
    return mach.dma("gm_to_ub", s.epi_in + s.epi_warm, blocks), store


@machine_memo
def _l2_store_rate(mach: Machine, blocks: int) -> float:
    """Bytes per cycle of one of `blocks` cores' stores into the L2 (`L2_WRITES`)."""
    tg = mach.target
    return min(mach.bytes_per_cycle("ub_to_gm", 1), tg.bytes_per_cycle(tg.dma.l2_total) / max(blocks, 1))


class _TileParts:
    """The terms of `cube_cost` that one tiling's schedules share (its K loop, L0C read-out
    and vector ops; its K fill and copy pieces when first asked), and the problem's
    `_shares_reads` / `gemv`. Why: a plan search costs a tiling's schedules one after
    another and bounds every tiling it visits (`floor`, `CubeBounds`): computed once per tiling,
    not per schedule -- the same numbers, so the same plans."""

    __slots__ = ("_held", "_k_fill", "_pieces", "b_direct", "chunk", "chunks", "drain", "fix", "gemv", "k_loops", "kl1", "l0d",
                 "mach", "p", "s", "shared", "stage", "tk", "tm", "tn", "vec")

    def __init__(self, p: CubeProblem, mach: Machine, tm: int, tn: int, tk: int, kl1: int, s: _Sizes, l0d: bool,
                 shared: bool | None = None, is_gemv: bool | None = None,
                 epilogue: tuple[float, float] | None = None, b_direct: bool = False) -> None:
        self.p, self.mach, self.tm, self.tn, self.tk, self.kl1, self.s, self.l0d = p, mach, tm, tn, tk, kl1, s, l0d
        self.shared = _shares_reads(p, mach) if shared is None else shared
        self.gemv = gemv(p, mach) if is_gemv is None else is_gemv
        self.b_direct = b_direct
        self.chunk = _k_loop(p, mach, tm, tn, tk, kl1, s, l0d, self.shared, b_direct)
        # (`epilogue`: its `_epilogue_compute`, the same for a tile shape's K options)
        self.fix, self.vec = epilogue or _epilogue_compute(mach, s, tm, tn)
        self.chunks = chunks = _ceil(p.k, kl1)
        self.k_loops = chunks * self.chunk
        self.stage = max(self.k_loops, self.fix, self.vec)  # (`floor`)
        sliced = SLICED_DRAIN and s.epi_split > 1 and self.shared  # (`cube_cost`'s drain: `CubeBounds.through`)
        self.drain = max(self.fix, self.vec) if sliced else self.fix + self.vec
        self._k_fill: float | None = None
        self._pieces: dict[str, int] | None = None
        self._held: float | None = None

    def held_chunk(self) -> float:
        """`chunk` with B held in L0B (`_holds_b`): the steps move A's fractals only."""
        if self._held is None:
            self._held = _k_loop(self.p, self.mach, self.tm, self.tn, self.tk, self.kl1, self.s, self.l0d,
                                 self.shared, held=True)
        return self._held

    def k_fill(self) -> float:
        if self._k_fill is None:
            self._k_fill = _k_fill(self.p, self.mach, self.tm, self.tn, self.tk, self.kl1, self.s, self.l0d,
                                   self.b_direct)
        return self._k_fill

    def pieces(self, order: str) -> int:
        if self._pieces is None:
            self._pieces = {}
        if order not in self._pieces:
            self._pieces[order] = _pieces(self.p, self.kl1, self.tk, self.l0d, order)
        return self._pieces[order]

    def floor(self) -> tuple[int, float]:
        """(K chunks, the cycles one of a tile's stages surely takes whatever its schedule):
        the K loops of all its chunks, its L0C read-out or its epilogue's vector ops."""
        return self.chunks, self.stage


def _shared_misses(p: CubeProblem, mach: Machine, tm: int, tn: int, order: str, blocks: int, split: int,
                   batch_inner: bool, one_chunk: bool, per_core: int,
                   warm: bool | None = None) -> tuple[float, float, float]:
    """(A misses, B misses, L2 rate) of a schedule whose cores share their reads
    (`cube_cost`, `CubeBounds.of_loads`): the same for every K option of a tile shape
    (`_cheapest` asks once per schedule and `one_chunk`, with the problem's `_warm_in_l2`
    as `warm`)."""
    if BLOCK_MISSES:
        outer_n, inner_n = (_ceil(p.m, tm), _ceil(p.n, tn))[:: 1 if order == "mn" else -1]
        a_miss, miss = _block_misses(mach, p.kind == "conv", p.batch, p.groups, outer_n, inner_n, order, blocks,
                                     split, batch_inner, one_chunk)
    else:
        a_miss, miss = _shared_miss(p, order, blocks, split, per_core)
    tg = mach.target
    if _warm_in_l2(p, mach) if warm is None else warm:
        a_miss = 0.0  # (`_warm_a`: in the L2 since its producer wrote it)
    return (a_miss, miss, min(tg.bytes_per_cycle(tg.dma.l2_to_l1), tg.bytes_per_cycle(tg.dma.l2_total) / blocks),
            _shared_miss_rate(mach, blocks))


def _warm_in_l2(p: CubeProblem, mach: Machine) -> bool:
    """Are A's reads L2 hits for every core (`WARM_INPUTS`: an earlier kernel of the run
    wrote A, and it fits the L2)?"""
    return bool(WARM_INPUTS and p.a_warm
                and math.prod(shape_of(p.a_src)) * _itemsize(p.a_src) <= mach.target.memory.l2)


@machine_memo
def _shared_miss_rate(mach: Machine, blocks: int) -> float:
    """Bytes per cycle of the slowest core's L2 misses when the cores share their reads:
    MISS_SHARE fair shares of the HBM, at most the path's rate. Why: in a run the
    activations a matmul reads were just written and sit in the L2, so only the first
    readers of each weight tile fetch; the simulator's `CostModel.start_block` leaves block
    1 (the slowest core here) 2 / active of the HBM when block 0 is not fetching (measured:
    bert_base's FFN out on 32 cores, blocks 1-3 at 57-75 B/cycle against a fair 37.5). At
    one share the model took 24-block plans the simulator ran 17% slower (test_miss_share)."""
    return min(mach.bytes_per_cycle("gm_to_l1", 1), MISS_SHARE * mach.hbm_bytes_per_cycle() / max(blocks, 1))


@machine_memo
def _fastest_read(mach: Machine, blocks: int) -> float:
    """Bytes per cycle of one of `blocks` cores' GM reads, from the HBM or from the L2 at
    its share, whichever is faster (a lower bound of shared reads' cost: `cube_cost`)."""
    tg = mach.target
    return max(_shared_miss_rate(mach, blocks),
               min(tg.bytes_per_cycle(tg.dma.l2_to_l1), tg.bytes_per_cycle(tg.dma.l2_total) / blocks))


class CubeBounds:
    """The lower bounds of `cube_cost` a plan search prunes with, for one problem on one
    machine, with what they share: the problem's traits (`_shares_reads`, `gemv`, A warm
    in the L2: `_warm_in_l2`), whether the bounds leave A's loads out (`a_hits`) and the
    stream's start-up (`start`: `serial`'s least). Each bound is at most the cost of every
    candidate it bounds (each of its terms is a term of the cost's stages, port or serial
    part, and rounding is monotone), so `_cheapest` skips a candidate whose bound exceeds a
    cost found. Made once per search (`_cheapest`); `parts` makes a tiling's `_TileParts`
    with the traits. Why: as free functions the bounds each took the problem, the machine
    and the traits (or computed the traits again), and three of them worked out the
    start-up and which A loads to leave out on their own."""

    __slots__ = ("a_hits", "gemv", "mach", "p", "shared", "start", "warm")

    def __init__(self, p: CubeProblem, mach: Machine) -> None:
        self.p, self.mach = p, mach
        self.shared, self.gemv = _shares_reads(p, mach), gemv(p, mach)
        self.warm = _warm_in_l2(p, mach)
        # A's reads hit the L2: a GEMV's, a C04 conv's feature-map rows partly, shared reads mostly
        self.a_hits = bool(self.gemv or (p.conv or {}).get("c04") or self.shared)
        self.start = mach.target.startup.mte2 if self.shared or self.gemv else 0.0

    def parts(self, tm: int, tn: int, tk: int, kl1: int, s: _Sizes, l0d: bool,
              epilogue: tuple[float, float] | None = None) -> _TileParts:
        """The tiling's `_TileParts` (`epilogue`: its `_epilogue_compute`, when known)."""
        return _TileParts(self.p, self.mach, tm, tn, tk, kl1, s, l0d, self.shared, self.gemv, epilogue)

    def of_schedule(self, tm: int, tn: int, tk: int, kl1: int, order: str, blocks: int, l1d: bool, l0d: bool,
                    epid: bool, split: int = 1, s: _Sizes | None = None, batch_inner: bool = False,
                    a_whole: bool = False, floor: tuple[int, float] | None = None) -> float:
        """A lower bound of `cube_cost` with the same arguments, at a fraction of its price
        (`floor`: the tiling's `_TileParts.floor`, shared by its schedules): the slowest
        core's tiles times a stage every tile surely has (`stage`)."""
        s = s or sizes(self.p, tm, tn, tk, kl1, _fixed(self.p, self.mach.target))
        chunks, stage = floor or self.parts(tm, tn, tk, kl1, s, l0d).floor()
        per_core, inner = _core_tiles(self.p, tm, tn, order, blocks, split, batch_inner)
        return per_core * inner * self.stage(order, blocks, s, a_whole, chunks, stage)

    def stage(self, order: str, blocks: int, s: _Sizes, a_whole: bool, chunks: int, stage: float) -> float:
        """The cycles each tile surely takes in `of_schedule`: `stage` (the tiling's floor:
        the K loops of all its chunks, its L0C read-out or its epilogue's vector ops), the A
        loads of its K chunks (A not hoisted and not one whose reads hit the L2: `a_hits`),
        its shared reads, or its GM bytes (those A bytes, the epilogue operands and
        outputs) at the core's HBM share."""
        mach = self.mach
        a_in = 0 if a_whole or (chunks == 1 and order == "mn") or self.a_hits else s.a_l1
        reads = 0.0
        if self.shared:  # the loads not hoisted, each byte from the HBM or the L2, at the faster share (`load`)
            reads = chunks * (s.a_l1 + s.b_l1 if chunks > 1 else s.b_l1 if order == "mn" else s.a_l1) \
                / _fastest_read(mach, blocks)
        return max(stage, chunks * mach.dma("gm_to_l1", a_in, blocks), reads,
                   mach.hbm(chunks * a_in + s.epi_in + s.out_hbm, blocks))

    def through(self, parts: _TileParts, tiles: int, loads: float = 0.0, serial: float | None = None) -> float:
        """A lower bound of `cube_cost` for a schedule whose slowest core runs `tiles` tiles
        of the tiling of `parts`: every tile but one at least at its floor stage
        (`_TileParts.floor`), and one through its K loops and its epilogue's read-out and
        vector ops end to end (the fill and drain of `pipelined`; a sliced epilogue's drain
        at least its slowest stage), less a rounding margin, plus `serial` (a bound of
        `cube_cost`'s `serial`: by default the least of `serial`, `start`). Why:
        `of_schedule` takes every tile at the floor, loose when a core runs few tiles
        (resnet50 at batch 1 on 32 cores: 1-4), where the candidates the search cost were
        1.3-2.3x the plan's cycles (densenet121: 28k costed -> 18k). `loads`: a bound of a
        tile's loads (`loads` of one tile), a stage every tile has too."""
        return ((tiles - 1) * max(parts.stage, loads) + parts.k_loops + parts.drain) * (1 - 1e-9) \
            + (self.start if serial is None else serial)

    def serial(self, parts: _TileParts, order: str, per_core: int, l1d: bool, a_whole: bool,
               misses: tuple[float, float, float, float] | None) -> float:
        """A lower bound of `cube_cost`'s `serial` (the cycles outside the tiles' pipeline,
        which `through` adds): the stream's start-up when the cores share their reads or a
        GEMV streams its weights, and -- sharing, with the outer operand hoisted (one K
        chunk, or A's whole K) -- its first load, every byte at the faster of the schedule's
        L2-hit and miss rates (`misses`: its `_shared_misses`), less what its K pieces
        overlap, per outer tile unless the next one's load overlaps the work (less a
        rounding margin). Why: the searches' costed candidates (resnet50: 9.7k) ran 1.5x the
        plan's cycles at the median, and those of them within 2% of the bounds are pushed
        past the cheapest cost by it."""
        if not (self.shared and (parts.chunks == 1 or a_whole)):
            return self.start
        s = parts.s
        _, _, l2_rate, miss_rate = misses
        first = (s.a_l1 if order == "mn" or a_whole else s.b_l1) / max(l2_rate, miss_rate) * (1 - 1e-9)
        pieces = parts.pieces(order)
        if pieces > 1 and order == "mn":
            first /= pieces
        spread = l1d and per_core > 1 and not a_whole  # (`cube_cost`: the next outer tile's load overlaps)
        return self.start + (first if spread else per_core * first)

    def of_loads(self, tm: int, tn: int, order: str, blocks: int, split: int, batch_inner: bool, chunks: int,
                 s: _Sizes) -> float:
        """A lower bound of `cube_cost` when the cores share their reads, tighter than
        `of_schedule` and dearer: the slowest core's tiles times the loads of a tile's K
        chunks that are not hoisted, at the schedule's L2 misses -- `cube_cost`'s MTE2 stage
        `load`, part of a stage every tile has (less a rounding margin). Why: the loads are
        most convs' slowest stage, which `of_schedule` takes at the faster read rate; asked
        only of the candidates that bound lets through (densenet121: 49k costed -> 33k)."""
        per_core, inner = _core_tiles(self.p, tm, tn, order, blocks, split, batch_inner)
        misses = _shared_misses(self.p, self.mach, tm, tn, order, blocks, split, batch_inner, chunks == 1, per_core,
                                self.warm)
        return self.loads(order, chunks, s, per_core * inner, misses)

    @staticmethod
    def loads(order: str, chunks: int, s: _Sizes, tiles: int, misses: tuple[float, float, float, float]) -> float:
        """`of_loads` of the slowest core's `tiles` at `misses` (`_shared_misses`)."""
        a_miss, miss, l2_rate, miss_rate = misses
        a = 0 if chunks == 1 and order == "mn" else s.a_l1  # hoisted: loaded once per outer tile (`cube_cost`)
        b = 0 if chunks == 1 and order == "nm" else s.b_l1
        load = (a * a_miss + b * miss) / miss_rate + b * (1 - miss) / l2_rate + a * (1 - a_miss) / l2_rate
        return tiles * (chunks * load * (1 - 1e-9))

    def of_tiling(self, tm: int, tn: int, tk: int, kl1: int, blocks: int, s: _Sizes, a_whole: bool,
                  l0d: bool = True) -> float:
        """`of_tilings` of one tiling on at most `blocks` cores (by default taken with two
        L0 buffers, which bounds it with one too)."""
        one = _Candidates()
        one.add((tm, tn, tk, kl1, False, l0d, False, s, a_whole), (("mn", blocks, 1, False),))
        return float(self.of_tilings(one, np.array([blocks]))[0])

    def of_tilings(self, found: _Candidates, most: np.ndarray) -> np.ndarray:
        """A lower bound of `of_schedule` for every schedule of each tiling of `found` on at
        most `most` cores (per tiling), cheaper than its floor: the slowest core runs at
        least its share of all the tiles, each taking its K loops (a bound of `_k_loop` from
        its mmads and L1 -> L0 moves), or the A loads of its K chunks (several: A is not
        hoisted), or the tiles' GM bytes at the chip's HBM rate (less a rounding margin:
        `_k_loop` and a schedule's bound add and multiply in another order). Why: the search
        orders all its tilings by it (resnet50: 24k) and visits those below the cheapest
        cost found; as numpy arrays, the bounds cost a few ms per search, and with the moves
        -- most convs' slowest part of the K loop -- resnet50's searches visit 9k tilings,
        not 19k."""
        return self._terms(found, most)[0]

    def _terms(self, found: _Candidates, most: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(`of_tilings`, a bound of each tiling's K loops (`_TileParts.k_loops`), a bound
        of a tile's slowest stage) of the tilings of `found`."""
        p, mach = self.p, self.mach
        tm, tn, tk, kl1, a_l1, b_l1, l0a, l0b, epi_out, whole, l0d = found.columns().T
        tiles = p.batch * p.groups * _ceil(p.m, tm) * _ceil(p.n, tn)
        chunks = _ceil(p.k, kl1)
        a_in = np.zeros_like(a_l1) if self.a_hits else a_l1 * ((chunks > 1) & (whole == 0))
        steps = _ceil(kl1, tk)
        m0, k0, n0 = mach.fractal(elem_name(p.elem))
        startup = mach.target.startup
        cube = startup.cube + _ceil(tm, m0) * _ceil(tk, k0) * _ceil(tn, n0)  # a step's mmad (`Machine.cube`)
        mte1 = _each(lambda n: mach.dma("l1_to_l0a", n), l0a) + _each(lambda n: mach.dma("l1_to_l0b", n), l0b)
        mmad, moves = cube, mte1
        reads = np.zeros(len(tm))
        if self.shared:
            if PIPELINED_K:  # (`_k_loop`: the steps' mmads and moves without their start-ups)
                mmad, moves = cube - startup.cube, mte1 - 2 * startup.mte1
            # (`stage`: the loads not hoisted -- either operand -- at one core's rates)
            reads = chunks * np.where(chunks > 1, a_l1 + b_l1, np.minimum(a_l1, b_l1)) / _fastest_read(mach, 1)
        # `_k_loop`: with two L0 buffers, the steps at the slower pipe's pace (or two steps'
        # moves and mmads), and the faster one's step once more where a chunk's first moves wait
        # for the last mmad before them -- an odd number of steps (not unrolled, `_unrolls`) that
        # do not rotate (`_rotates`: a matmul's one step); with one, the moves and mmads in turn
        waits = (steps % 2 == 1) & ((steps > 1) | (p.kind != "matmul"))
        pace = np.maximum(np.maximum(mmad, moves), (mte1 - startup.mte1 + cube) / 2)
        k_loop = np.where(l0d == 1, steps * pace + waits * np.minimum(mmad, moves), steps * (mte1 + cube))
        k_loops = chunks * k_loop * (1 - 1e-9)
        stage = np.maximum(k_loops, np.maximum(chunks * _each(lambda n: mach.dma("gm_to_l1", n), a_in), reads))
        port = tiles * (chunks * a_in + epi_out) / mach.hbm_bytes_per_cycle()
        return np.maximum(_ceil(tiles, most) * stage, port) * (1 - 1e-9), k_loops, stage

    def keys(self, found: _Candidates, most: np.ndarray) -> np.ndarray:
        """A lower bound of the cost of every candidate of each tiling of `found` on at most
        `most` cores: its `of_tilings`, or the array form of `through` at the fewest tiles a
        core runs (each tile at least its slowest stage -- its K loops, loads, or L0C
        read-out --, one through its K loops and its read-out, plus `start`), less a
        rounding margin. Why: `_cheapest` visits the tilings in this order while it is at
        most the cheapest cost found; densenet121's searches visited 22k tilings by
        `of_tilings`, half of them only to find their `through` too high (16k by these)."""
        p, mach = self.p, self.mach
        bounds, k_loops, stage = self._terms(found, most)
        tm, tn = found.columns().T[:2]
        tiles = p.batch * p.groups * _ceil(p.m, tm) * _ceil(p.n, tn)
        # the L0C read-out and vector ops (`_epilogue_compute`), by (tm, tn, epilogue slices)
        splits = found.epilogue_splits()
        program = _fixed(p).program
        terms: dict[int, tuple[float, float]] = {}

        def term(key: int, j: int) -> float:
            hit = terms.get(key)
            if hit is None:
                tm_, tn_, es = key >> 20, (key >> 4) & 0xFFFF, key & 15
                hit = terms[key] = _epilogue_terms(mach, program, es, tm_ * tn_ * 4, tm_, tn_)
            return hit[j]

        keys = (tm << 20) + (tn << 4) + splits
        fix, vec = _each(lambda key: term(key, 0), keys), _each(lambda key: term(key, 1), keys)
        sliced = (splits > 1) & (SLICED_DRAIN and self.shared)  # (`_TileParts.drain`)
        drain = np.where(sliced, np.maximum(fix, vec), fix + vec)
        stage = np.maximum(stage, np.maximum(fix, vec))
        through = ((_ceil(tiles, most) - 1) * stage + k_loops + drain) * (1 - 1e-9) + self.start
        return np.maximum(bounds, through)


def _each(fn: Callable[[int], float], values: np.ndarray) -> np.ndarray:
    """`fn` of each of `values` (integers, few of them distinct), asked once per value."""
    distinct, where = np.unique(values, return_inverse=True)
    return np.array([fn(int(v)) for v in distinct], dtype=np.float64)[where]


def _cheapest(p: CubeProblem, mach: Machine, found: Sequence[tuple]) -> tuple[int, float]:
    """(index, cost) of the first cheapest candidate of `found` (`cube_cost` arguments; the
    schedules of one tiling in a row, sharing its `_Sizes`), the one a scan in order finds
    (`_ranked`'s first)."""
    ranked = _ranked(p, mach, found, 1)
    return (ranked[0][1], ranked[0][0]) if ranked else (-1, math.inf)


def _ranked(p: CubeProblem, mach: Machine, found: Sequence[tuple], keep: int) -> list[tuple[float, int]]:
    """(cost, index) of the `keep` cheapest candidates of `found`, cheapest first (ties: the
    first in scan order); `keep` > 1 for operator tuning (`plan_alternatives`), which times
    several of them in the simulator.
    Tilings are visited in increasing order of their `CubeBounds.keys`, their schedules in
    increasing order of `CubeBounds.of_schedule`, and a candidate is costed only while its
    bounds are at most the keep-th cheapest cost found so far: one skipped costs more than the
    plans kept. A tiling's shared terms are computed once (`_TileParts`), a tile shape's once
    per search (`_ShapeSchedules`: its schedules' tiles per core, their L2 misses), and a
    tiling's `CubeBounds.stage` once per (order, cores); a candidate passes
    `CubeBounds.through` too before it is costed, and when the cores share their reads
    `CubeBounds.loads` and `through` with the loads plus `CubeBounds.serial`. (`found`
    from `_search_space` makes a tiling's `_Sizes` when visited.)"""
    if not isinstance(found, _Candidates):
        found = _Candidates.of(found)
    bounds = CubeBounds(p, mach)
    shape_of, keys = found.shape_index()  # each tiling's tile shape: (tm, tn, schedules)
    most = np.array([max(blocks for _, blocks, _, _ in schedules) for _, _, schedules in keys], dtype=np.int64)
    bounds_of = bounds.keys(found, most[shape_of])
    order_of = np.argsort(bounds_of, kind="stable")
    shapes: dict[int, _ShapeSchedules] = {}  # made when first visited
    kept: list[tuple[float, int]] = []
    best = math.inf  # the cost a candidate must not exceed to be kept: the keep-th cheapest's
    for bound, i, sk in zip(bounds_of[order_of].tolist(), order_of.tolist(), shape_of[order_of].tolist()):
        if bound > best:
            break
        lo, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules = found.tiling(i)
        shape = shapes.get(sk)
        if shape is None:
            shape = shapes[sk] = _ShapeSchedules(p, tm, tn, schedules, bounds.warm)
        parts = bounds.parts(tm, tn, tk, kl1, s, l0d, shape.epilogue(mach, s))
        chunks, stage = parts.floor()
        if bounds.through(parts, shape.floor_tiles) > best:
            continue  # at most every schedule's (its slowest core runs at least `floor_tiles`)
        stages: dict[tuple[str, int], float] = {}  # `CubeBounds.stage` by (order, blocks)
        by_bound = []
        for k in shape.by_tiles:
            if bounds.through(parts, shape.tiles[k]) > best:
                break  # (and so every schedule after it, running as many tiles or more)
            order, blocks, _, _ = schedules[k]
            per_tile = stages.get((order, blocks))
            if per_tile is None:
                per_tile = stages[order, blocks] = bounds.stage(order, blocks, s, whole, chunks, stage)
            by_bound.append((shape.tiles[k] * per_tile, lo + k))  # `CubeBounds.of_schedule`
        by_bound.sort()
        for bound, j in by_bound:
            if bound > best:
                break
            k = j - lo
            if bounds.through(parts, shape.tiles[k]) > best:
                continue
            order, blocks, split, bin_ = schedules[k]
            misses = shape.misses(mach, k, chunks == 1) if bounds.shared else None
            if bounds.shared:
                loads = bounds.loads(order, chunks, s, 1, misses)  # a tile's
                if shape.tiles[k] * loads > best:  # `CubeBounds.of_loads`
                    continue
                if bounds.through(parts, shape.tiles[k], loads,
                                  bounds.serial(parts, order, shape.per_core[k], l1d, whole, misses)) > best:
                    continue  # the tiles through their loads, and the first load outside the pipeline
            cyc = cube_cost(p, mach, tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole, parts,
                            shape.core[k], misses)
            if len(kept) < keep or (cyc, j) < kept[-1]:
                insort(kept, (cyc, j))
                del kept[keep:]
                if len(kept) == keep:
                    best = kept[-1][0]
    return kept


class _ShapeSchedules:
    """What `_cheapest` asks of a tile shape's schedules for each of its K options, computed
    once per search: the most cores among them, the tiles that `_TileParts.floor` multiplies
    (every tile over the most cores), the slowest core's tiles of each (`_core_tiles`:
    outer x inner; `by_tiles`: the schedules in increasing order of them) and, when
    asked, each one's L2 misses (`_shared_misses`) and the shape's epilogue terms
    (`_epilogue_compute`)."""

    __slots__ = ("_epilogue", "_misses", "by_tiles", "core", "floor_tiles", "most", "p", "per_core", "schedules",
                 "tiles", "tm", "tn", "warm")

    def __init__(self, p: CubeProblem, tm: int, tn: int, schedules: tuple[tuple[str, int, int, bool], ...],
                 warm: bool | None = None) -> None:
        self.p, self.tm, self.tn, self.schedules, self.warm = p, tm, tn, schedules, warm
        self.most = max(blocks for _, blocks, _, _ in schedules)
        self.floor_tiles = _ceil(p.batch * p.groups * _ceil(p.m, tm) * _ceil(p.n, tn), self.most)
        self.core = [_core_tiles(p, tm, tn, order, blocks, split, bin_) for order, blocks, split, bin_ in schedules]
        self.per_core = [per_core for per_core, _ in self.core]
        self.tiles = [per_core * inner for per_core, inner in self.core]
        self.by_tiles = sorted(range(len(schedules)), key=self.tiles.__getitem__)  # (`CubeBounds.through` grows with them)
        self._misses: dict[tuple[int, bool], tuple[float, float, float]] = {}
        self._epilogue: dict[tuple[int, int, int], tuple[float, float]] = {}

    def epilogue(self, mach: Machine, s: _Sizes) -> tuple[float, float]:
        """`_epilogue_compute` of a tiling of this shape (by its epilogue slices and program)."""
        key = (s.epi_split, s.l0c, id(s.program))
        hit = self._epilogue.get(key)
        if hit is None:
            hit = self._epilogue[key] = _epilogue_compute(mach, s, self.tm, self.tn)
        return hit

    def misses(self, mach: Machine, k: int, one_chunk: bool) -> tuple[float, float, float]:
        """`_shared_misses` of schedule `k`."""
        hit = self._misses.get((k, one_chunk))
        if hit is None:
            order, blocks, split, bin_ = self.schedules[k]
            hit = self._misses[k, one_chunk] = _shared_misses(self.p, mach, self.tm, self.tn, order, blocks, split,
                                                               bin_, one_chunk, self.per_core[k], self.warm)
        return hit


def gemv(p: CubeProblem, mach: Machine) -> bool:
    """A GEMV-shaped MatMul / Gemm: M is one Cube fractal (a classifier at batch 1, a
    transformer's matmuls at small batch x sequence). Its cost is the weight stream: the
    plans split N over the cores (K whole per core, no cross-core reduction), the cores
    read the same A rows (L2 hits after the first), and the stream of weight loads keeps
    MTE2 busy (their start-ups overlap). `GEMV = False`: the old cost (for comparison)."""
    return GEMV and p.kind == "matmul" and p.groups == 1 and _round(p.m, mach.fractal(elem_name(p.elem))[0]) <= FRACTAL


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _m_candidates(p: CubeProblem, m0: int) -> list[int]:
    if p.conv and p.conv.get("stack"):  # one M tile holds the stacked images (`_stacked`)
        return [_round(p.m, m0)]
    if p.a_fmt == "nz_t":  # M runs along the stored matrix's C0-wide columns
        m0 = math.lcm(m0, p.c0)
    top = _round(p.m, m0)
    return sorted({x for x in TM if x < top and x % m0 == 0} | {top})


def _n_candidates(p: CubeProblem, n0: int) -> list[int]:
    top = _round(p.n, n0)
    if p.out_fmt == "nc1hwc0":  # whole output C0 blocks
        n0 = math.lcm(n0, p.oc0)
        top = _round(p.n, n0)
    if p.groups > 1:  # a tile must not cross into the next group's channels
        return [d for d in _divisors(p.n) if d % n0 == 0] or [top]
    if "nz" in p.b_fmt or p.out_fmt == "nz":  # whole C0-wide columns (32 for int8: N = 10 takes one)
        n0 = max(n0, p.c0)
        top = _round(p.n, n0)
    return sorted({x for x in TN if x < top and x % n0 == 0} | {top})


def _k_options(p: CubeProblem, k0: int) -> list[tuple[int, list[int]]]:
    """(K per L1 chunk, K steps that divide it) options."""
    out = []
    if p.kind == "conv" and p.conv.get("c04"):  # one chunk: K = (kh, kw, 4) in whole K0 rows
        # K steps that divide it: a partial last step's weight copy out of the [K / 4, N1,
        # 16, 4] layout would cut across its fractal digits, which to-isa cannot move
        return [(p.k, [d * k0 for d in _divisors(p.k // k0)])]
    if p.kind == "conv":
        cv = p.conv
        per_block = cv["kh"] * cv["kw"] * p.c0
        c1g = cv["c1g"]
        for ncb in sorted({1, 2, 4, 8, 16, 32, 64, c1g}):
            if ncb > c1g or (ncb < c1g and any(c1 % ncb for _, c1, _ in p.a_parts[:-1])):
                continue  # (several chunks: each within one part of A's K, `_CubeEmitter.load_parts`)
            kl1 = ncb * per_block
            blocks = ncb * cv["kh"] * cv["kw"]  # C0-wide K rows in the chunk
            units = {d for d in _divisors(blocks)} | {2 ** i for i in range(10) if 2 ** i < blocks}
            steps = sorted(d * p.c0 for d in units if (d * p.c0) % k0 == 0)
            out.append((kl1, steps))
        return out
    unit = k0
    if "nz" in p.a_fmt or "nz" in p.b_fmt:
        unit = math.lcm(k0, FRACTAL, p.c0)
    top = _round(p.k, unit)
    tks = sorted({unit * 2 ** i for i in range(12) if unit * 2 ** i < top} | {top})
    for kl1 in tks:
        out.append((kl1, [tk for tk in tks if tk <= kl1 and kl1 % tk == 0]))
    return out


_PLAN_MEMO = "tile_cube.plans"  # the compile scope's memo (dialects/interning.py): problem key -> CubePlan


def plan_cube(p: CubeProblem, mach: Machine) -> CubePlan:
    """The cheapest tiling of `p` whose buffers fit every local memory, or the op bank's
    tuned plan for it while one is in use (lowering/op_bank.py). The same problem on the
    same target is planned once per compile -- ResNet repeats its layers -- in the
    compile's `intern_scope`; outside one, planned each time."""
    memo, source = scope_memo(_PLAN_MEMO), op_bank.current()
    if memo is None and source is None:
        return _plan_cube(p, mach)
    key = plan_key(p, mach)
    plan = None if memo is None else memo.get(key)
    if plan is None and source is not None:  # a tuned plan (lowering/op_bank.py)
        plan = source.plan(op_bank.digest(key), lambda keep: [_plan_cube(p, mach), *_plans(p, mach, keep)],
                           lambda plan: _fits_memories(plan, mach))
    if plan is None:
        plan = _plan_cube(p, mach)
    if memo is not None:
        memo[key] = plan
    return plan


def _fits_memories(plan: CubePlan, mach: Machine) -> bool:
    """Do the plan's buffers (`CubePlan.usage`) fit the target's local memories? (A bank's
    plan written by another version of ge may not.)"""
    mem = mach.target.memory
    return all(used <= getattr(mem, space, 0) for space, used in plan.usage)


def plan_key(p: CubeProblem, mach: Machine) -> tuple:
    """What makes two Cube problems one for planning: the plan memo's key, and (digested)
    the op bank's (lowering/op_bank.py)."""
    geometry = None if p.conv is None else tuple(
        (k, tuple(v) if isinstance(v, tuple | list) else v) for k, v in sorted(p.conv.items()))
    key = (mach.target.name, p.kind, elem_name(p.elem), p.batch, p.groups, p.m, p.n, p.k, p.a_fmt, p.b_fmt,
           p.out_fmt, p.c0, geometry, _fixed(p), GEMV, SHARED_READS, PIPELINED_K, CROWDED, SLICED_DRAIN, SHARED_CONV,
           ODD_K_STEPS, BLOCK_MISSES, SHARED_FILL, UNROLLED_K,
           TIGHT_FORWARD_SYNC, MAX_UNROLLED_STEPS, to_isa.SLICED_READ_OUT, DIV_BY_RECIPROCAL, ROTATING_STEP,
           VECTOR_PACED, STACK, PROGRESSIVE, PIECES, MISS_SHARE, WARM_INPUTS, CONVERTED_UB, WARM_EPILOGUE,
           L2_WRITES, CUBE_BIAS, B_DIRECT, CONV_PIECES, DEFER_PIECES, HELD_COST, p.bias_block is not None, p.a_warm, p.epi_written,
           tuple((c1, sub) for _, c1, sub in p.a_parts))  # the switches change the plan; A's parts its K chunks (`_k_options`)
    return key


@contextmanager
def plans_planned() -> Iterator[dict[tuple, CubePlan]]:
    """A compile scope (the one open, else a new one) and its Cube plans by problem key:
    `with plans_planned() as plans: ge.compile(...)`, then `plans.values()` are the plans of
    the compile's distinct problems (tests; `ge.compile` shares an enclosing scope)."""
    with intern_scope():
        yield scope_memo(_PLAN_MEMO)


def _plan_cube(p: CubeProblem, mach: Machine) -> CubePlan:
    """The cheapest plan of `p` and of its stacked forms (`_stack_options`). With a bias
    the Cube may add (`cube_bias_block`): the plan with the bias in the epilogue, taking the
    Cube's bias on that plan's very tiles when they still fit and the model finds their
    pipeline no slower so (`_cube_bias_cost`), and the set-up pays (`_bias_setup_pays`). Not a second
    search: the bias's blocks take L0A / L0B room a larger tile may need, and the model
    does not tell such tilings apart well enough (resnet50_b16's 3 x 3 conv at 128
    channels: 160-row tiles with the broadcast bias simulated 20,871 cycles, the 112-row
    ones a search with the Cube bias preferred 22,952; at batch 1 a 3 x 3 conv at 64
    channels, K = 144 steps that fill L0A twice, 3,369 against 3,674 on K = 48 steps)."""
    return _plans(p, mach, 1)[0]


def _plans(p: CubeProblem, mach: Machine, keep: int) -> list[CubePlan]:
    """`_plan_cube`'s choice for each of the `keep` cheapest plans of `p` without the Cube's
    bias, in that order."""
    if p.bias_block is None:
        return _plan_variant(p, mach, keep)
    plain = replace(p)
    _drop_cube_bias(plain)
    return [_with_cube_bias(p, plain, mach, chosen) for chosen in _plan_variant(plain, mach, keep)]


def _with_cube_bias(p: CubeProblem, plain: CubeProblem, mach: Machine, chosen: CubePlan) -> CubePlan:
    if chosen.stack > 1:  # (the plan's tiles are those of the stacked problem)
        p, plain = _stacked(p, chosen.stack), _stacked(plain, chosen.stack)
    cycles = _cube_bias_cost(p, plain, mach, chosen)
    if cycles is not None and _bias_setup_pays(p, mach, chosen):
        return replace(chosen, cube_bias=True, cycles=cycles)
    return chosen


def _cube_bias_cost(p: CubeProblem, plain: CubeProblem, mach: Machine, plan: CubePlan) -> float | None:
    """The model's cycles of `plan`'s tiling of `p` (stacked as the plan is) with the Cube's
    bias, when its buffers still fit beside the bias's blocks (`cube_bias_reserve`) and,
    but for the set-up (`_bias_setup`, which `_bias_setup_pays` weighs), it costs no more
    than with the bias in the epilogue (`plain`, costed the same way): the bias mmads add to the Cube stage,
    which rejects it where the Cube is the bottleneck; else None. (Not "cheaper": where
    the model's slowest stage is not the Vector unit's it sees no gain in the broadcasts
    gone -- resnet50_b16's conv1, 37,259 -> 30,833 simulated cycles with the Cube bias.)"""
    tg = mach.target
    mem, al = tg.memory, tg.alignment
    fixed = _fixed(p, tg)
    r_l0a, r_l0b, r_l1, r_ub = (align(r, a) for r, a in zip(cube_bias_reserve(p, plan.tm, plan.tn, fixed.ab),
                                                             (al.l0a, al.l0b, al.l1, al.ub)))
    args = (plan.tm, plan.tn, plan.tk, plan.kl1)
    s = sizes(p, *args, fixed, plan.a_whole, plan.epi_split)
    ub = 2 * s.ub - s.ub_temps if plan.ub_buffers == 2 else s.ub
    if (align(s.l0a, al.l0a) * plan.l0_buffers + r_l0a > mem.l0a or align(s.l0b, al.l0b) * plan.l0_buffers + r_l0b
            > mem.l0b or (align(s.a_cap or s.a_l1, al.l1) + align(s.b_l1, al.l1)) * plan.l1_buffers + r_l1 > mem.l1
            or ub + r_ub > mem.ub):
        return None
    schedule = (plan.order, plan.blocks, plan.l1_buffers == 2, plan.l0_buffers == 2,
                plan.l0c_buffers == 2 and plan.ub_buffers == 2, plan.split)
    plain_s = sizes(plain, *args, _fixed(plain, tg), plan.a_whole, plan.epi_split)
    l0d = plan.l0_buffers == 2
    cycles = cube_cost(p, mach, *args, *schedule, s=s, batch_inner=plan.batch_inner, a_whole=plan.a_whole,
                       parts=_TileParts(p, mach, *args, s, l0d, b_direct=plan.b_direct), held=HELD_COST)
    before = cube_cost(plain, mach, *args, *schedule, s=plain_s, batch_inner=plan.batch_inner, a_whole=plan.a_whole,
                       parts=_TileParts(plain, mach, *args, plain_s, l0d, b_direct=plan.b_direct), held=HELD_COST)
    return cycles if cycles - _bias_setup(p, mach, plan.tm, plan.tn) <= before else None


def _bias_setup_pays(p: CubeProblem, mach: Machine, plan: CubePlan) -> bool:
    """Do the broadcasts the Cube bias saves a core (its tiles' fractals at the target's
    cycles per fractal) come to more than twice its set-up (`_bias_setup`)? The model
    charges a broadcast with its tile's epilogue; a core's first broadcast runs while its
    first loads arrive, so with one or two tiles per core the set-up, which the first
    loads wait for, costs more than the model finds (resnet50 at batch 1: its 1 x 1 convs
    with one 112 x 64 tile per core ran 2,520 cycles with the broadcast and 2,683 with the
    Cube bias)."""
    outer, inner = _core_tiles(p, plan.tm, plan.tn, plan.order, plan.blocks, plan.split, plan.batch_inner)
    fractals = (plan.tm // FRACTAL) * (plan.tn // FRACTAL)
    saved = outer * inner * fractals * mach.target.vector_cycles("broadcast_ub_to_l0c", "f32")
    return saved > 2 * _bias_setup(p, mach, plan.tm, plan.tn)


def _bias_setup(p: CubeProblem, mach: Machine, tm: int, tn: int) -> float:
    """Cycles before a Cube-bias kernel's first loads: the ones block's dup, UB -> L1 and
    L1 -> L0A, the bias block's L1 -> L0B (`_CubeEmitter.cube_bias_buffers`)."""
    ones, block, _, _ = cube_bias_reserve(p, tm, tn, numpy_dtype(p.elem).itemsize)
    start = mach.target.startup
    return start.vector + start.mte3 + mach.dma("l1_to_l0a", ones) + mach.dma("l1_to_l0b", block)


def use_plan(p: CubeProblem, plan: CubePlan) -> None:
    """Make `p` the problem `plan` is for: without the Cube bias when the plan does not
    take it (`_plan_cube`)."""
    if p.bias_block is not None and not plan.cube_bias:
        _drop_cube_bias(p)


def _drop_cube_bias(p: CubeProblem) -> None:
    """`p` with its bias added by the epilogue: an epilogue operand again."""
    p.bias_block, p.program = None, None
    p.epi_written = tuple(_warm_a(p.block, v) for v in epilogue_operands(p))


def _plan_variant(p: CubeProblem, mach: Machine, keep: int = 1) -> list[CubePlan]:
    """The `keep` cheapest plans of `p` and of its stacked forms (`_stack_options`), cheapest
    first (ties: the fewer images stacked)."""
    plans, short = [], None
    for s in _stack_options(p, mach.fractal(elem_name(p.elem))[0]):
        try:
            found = _plan_one(_stacked(p, s) if s > 1 else p, mach, keep)
        except CapacityShortfall as e:
            short = short or e
            continue
        plans += [replace(plan, stack=s) if s > 1 else plan for plan in found]
    if not plans:
        raise short
    return sorted(plans, key=lambda plan: plan.cycles)[:keep]


def _plan_one(p: CubeProblem, mach: Machine, keep: int = 1) -> list[CubePlan]:
    """The `keep` cheapest plans of `p` (`_ranked`), cheapest first."""
    found = _search_space(p, mach)
    return sorted((_plan_of(p, mach, found, i, cyc) for cyc, i in _ranked(p, mach, found, keep)),
                  key=lambda plan: plan.cycles)


def _plan_of(p: CubeProblem, mach: Machine, found: Sequence[tuple], i: int, cyc: float) -> CubePlan:
    """The plan of candidate i of `found` (costed `cyc`): its buffers, and B straight from GM
    when that fits and the model finds it cheaper."""
    tg = mach.target
    mem, al = tg.memory, tg.alignment
    tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole = found[i]
    direct = None
    if _b_direct_fits(p, mach, tn, tk, kl1, order):
        direct = cube_cost(p, mach, tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole,
                           _TileParts(p, mach, tm, tn, tk, kl1, s, l0d, b_direct=True))
    b_direct = direct is not None and direct < cyc
    if b_direct:
        cyc = direct
    single = {"l0a": align(s.l0a, al.l0a), "l0b": align(s.l0b, al.l0b), "l0c": align(s.l0c, al.l0c),
              "l1": align(s.a_cap or s.a_l1, al.l1) + (0 if b_direct else align(s.b_l1, al.l1))}
    l0cd, ubd = 2 * single["l0c"] <= mem.l0c, 2 * s.ub - s.ub_temps <= mem.ub
    usage = (("l1", single["l1"] * (2 if l1d else 1)),
             ("l0a", single["l0a"] * (2 if l0d else 1)),
             ("l0b", single["l0b"] * (2 if l0d else 1)),
             ("l0c", single["l0c"] * (2 if l0cd else 1)))
    return CubePlan(tm, tn, tk, kl1, order, 2 if l1d else 1, 2 if l0d else 1, 2 if l0cd else 1, 2 if ubd else 1,
                    blocks, cyc, split, usage, len(found), batch_inner=bin_, a_whole=whole, epi_split=s.epi_split,
                    b_direct=b_direct)


def _b_direct_fits(p: CubeProblem, mach: Machine, tn: int, tk: int, kl1: int, order: str) -> bool:
    """Can a conv's K steps take their B fractals straight from GM into L0B (`B_DIRECT`;
    Load2D's GM -> B2 path, which the Atlas training parts have too)? Its weights are in
    FRACTAL_Z already (not converted from NCHW on the way in), a K step is whole fractal
    rows of one chunk, K whole chunks and N whole tiles (a step reads no K row nor filter
    past the weights': its copy has no window), and B is not kept in L1 for several tiles:
    with the whole K in one chunk in
    order "nm" the N tile's weights are loaded once and read by its every M tile, which
    per-step loads would read from GM again each time."""
    return bool(B_DIRECT and p.kind == "conv" and p.b_fmt != "nchw" and kl1 % tk == 0 and p.k % kl1 == 0
                and p.n % tn == 0
                and not gemv(p, mach) and not (_ceil(p.k, kl1) == 1 and order == "nm"))


def _schedules(p: CubeProblem, tm: int, tn: int, whole: bool, cores: int) -> tuple[tuple[str, int, int, bool], ...]:
    """(order, blocks, split, batch_inner) of every schedule of a tm x tn tiling, in scan
    order: the same for each of its K options (`_plan_cube`)."""
    out = []
    # the images in the inner loop of order "nm": a conv's weights loaded once per N tile
    inner_batch = (False, True) if INNER_BATCH and p.batch > 1 and p.kind == "conv" else (False,)
    for order, bin_ in [(o, b_) for o in (("mn",) if whole else ("mn", "nm")) for b_ in inner_batch if o == "nm" or not b_]:
        outer, inner = (_ceil(p.m, tm), _ceil(p.n, tn))[:: 1 if order == "mn" else -1]
        items = (1 if bin_ else p.batch) * p.groups * outer
        inner *= p.batch if bin_ else 1
        for split in (1, 2, 4, 8, 16, 32):
            if split > inner or (split > 1 and items * split > 2 * cores):
                break
            out.append((order, min(cores, items * split), split, bin_))
    return tuple(out)


class _Candidates:
    """A plan search's candidates in scan order, each as its `cube_cost` arguments (tm, tn,
    tk, kl1, order, blocks, l1d, l0d, epid, split, s, batch_inner, a_whole), kept by tiling:
    a tiling's schedules are those of its tile shape (`_schedules`). Why: resnet50's
    searches hold 170k candidates in 29k tilings, and `_cheapest` costs few of them."""

    def __init__(self) -> None:
        self._tilings: list[tuple] = []  # (first index, tm, tn, tk, kl1, l1d, l0d, epid, s, a_whole, schedules)
        self.starts: list[int] = []
        self.n = 0

    @classmethod
    def of(cls, found: Sequence[tuple]) -> _Candidates:
        """The candidates of a list of `cube_cost` arguments (a tiling: a run sharing its `_Sizes`)."""
        out = cls()
        start = 0
        for i in range(1, len(found) + 1):
            if i == len(found) or found[i][10] is not found[start][10]:
                tm, tn, tk, kl1, _, _, l1d, l0d, epid, _, s, _, whole = found[start]
                out.add((tm, tn, tk, kl1, l1d, l0d, epid, s, whole),
                        tuple((c[4], c[5], c[9], c[11]) for c in found[start:i]))
                start = i
        return out

    def add(self, tiling: tuple, schedules: tuple[tuple[str, int, int, bool], ...]) -> None:
        """A tiling (tm, tn, tk, kl1, l1d, l0d, epid, s, a_whole) and its schedules."""
        if schedules:
            self.starts.append(self.n)
            self._tilings.append((self.n, *tiling, schedules))
            self.n += len(schedules)

    @property
    def tilings(self) -> list[tuple]:
        """Every tiling (first index, tm, tn, tk, kl1, l1d, l0d, epid, s, a_whole, schedules)."""
        return self._tilings

    def tiling(self, i: int) -> tuple:
        """Tiling `i` (as `tilings` holds it)."""
        return self._tilings[i]

    def columns(self) -> np.ndarray:
        """(tm, tn, tk, kl1, A's and B's L1 bytes, L0A and L0B bytes, epilogue GM bytes,
        a_whole, l0d) of each tiling, for `CubeBounds.of_tilings`."""
        return np.array([(tm, tn, tk, kl1, s.a_l1, s.b_l1, s.l0a, s.l0b, s.epi_in + s.out_hbm, whole, l0d)
                         for _, tm, tn, tk, kl1, _, l0d, _, s, whole, _ in self._tilings], dtype=np.int64).reshape(-1, 11)

    def epilogue_splits(self) -> np.ndarray:
        """Each tiling's epilogue slices (`_Sizes.epi_split`)."""
        return np.array([s.epi_split for *_, s, _, _ in self._tilings], dtype=np.int64)

    def shape_index(self) -> tuple[np.ndarray, list[tuple]]:
        """(each tiling's tile shape, the shapes as (tm, tn, schedules)): one shape per
        schedules tuple."""
        ids: dict[int, int] = {}
        keys: list[tuple] = []
        of = []
        for _, tm, tn, *_, schedules in self._tilings:
            k = ids.get(id(schedules))
            if k is None:
                k = ids[id(schedules)] = len(keys)
                keys.append((tm, tn, schedules))
            of.append(k)
        return np.array(of, dtype=np.intp), keys

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j: int) -> tuple:
        if j < 0:
            j += self.n
        if not 0 <= j < self.n:
            raise IndexError(j)
        start, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules = self.tiling(bisect_right(self.starts, j) - 1)
        order, blocks, split, bin_ = schedules[j - start]
        return tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole

    def __iter__(self) -> Iterator[tuple]:
        for _, tm, tn, tk, kl1, l1d, l0d, epid, s, whole, schedules in self.tilings:
            for order, blocks, split, bin_ in schedules:
                yield tm, tn, tk, kl1, order, blocks, l1d, l0d, epid, split, s, bin_, whole


class _GridCandidates(_Candidates):
    """`_Candidates` as `_search_space` finds them: one row of numbers per tiling (`rows`:
    first index, the `columns`, l1d, epid, tile shape, A's L1 bytes in C04, the (tm, tn)
    pair's position), a tiling's `_Sizes` made when first asked. Why: `_cheapest` visits a
    third of a search's tilings; the rest need only their bounds' columns."""

    def __init__(self, rows: np.ndarray, pairs: list[tuple[int, int, int, bool, int]], shapes: list[tuple],
                 fixed: _Fixed) -> None:
        super().__init__()
        self.rows, self.pairs, self.shapes, self.fixed = rows, pairs, shapes, fixed
        self._tilings = [None] * len(rows)
        self.starts = rows[:, 0].tolist()
        last = rows[-1].tolist()
        self.n = last[0] + len(shapes[last[14]][2])

    @property
    def tilings(self) -> list[tuple]:
        return [self.tiling(i) for i in range(len(self._tilings))]

    def tiling(self, i: int) -> tuple:
        t = self._tilings[i]
        if t is None:
            lo, tm, tn, tk, kl1, a_l1, b_l1, l0a, l0b, _, whole, l0d, l1d, epid, shape, a_cap, pair = self.rows[i].tolist()
            ub, temps, epi_in, serial, es = self.pairs[pair]
            f = self.fixed
            s = _Sizes(a_l1, b_l1, l0a, l0b, tm * tn * 4, ub, epi_in, f.outs * tm * tn * f.ob, f.vec_ops, f.program,
                       temps, es, serial, a_cap, _epi_bytes(f, tm, tn, True), f.out_l2)
            t = self._tilings[i] = (lo, tm, tn, tk, kl1, l1d == 1, l0d == 1, epid == 1, s, whole == 1,
                                    self.shapes[shape][2])
        return t

    def columns(self) -> np.ndarray:
        return self.rows[:, 1:12]

    def shape_index(self) -> tuple[np.ndarray, list[tuple]]:
        return self.rows[:, 14].astype(np.intp), self.shapes

    def epilogue_splits(self) -> np.ndarray:
        return np.array([es for *_, es in self.pairs], dtype=np.int64)[self.rows[:, 16]]


def _search_space(p: CubeProblem, mach: Machine) -> _Candidates:
    """The candidates of `p` whose buffers fit every local memory, in scan order: M tile, N
    tile, K per L1 chunk, K step (the largest first), A's whole K in L1 or not (a GEMV's),
    then the tile shape's schedules (`_schedules`). A tile shape's epilogue slices (the
    fewest whose UB share fits), UB bytes and schedules are computed per (tm, tn) pair,
    the L0 and L1 bytes of its K options as numpy arrays over the (tm, tn, K option) grid.
    Nothing fits: `CapacityShortfall` of the nearest miss (the first candidate with the
    fewest bytes over, on the first memory it misses in the order L0A, L0B, L0C, L1, UB)."""
    tg = mach.target
    m0, k0, n0 = mach.fractal(elem_name(p.elem))
    cores = mach.cores(cube=True)
    mem, al = tg.memory, tg.alignment
    fixed = _fixed(p, tg)
    ab = fixed.ab
    wholes = (False, True) if gemv(p, mach) else (False,)
    ks = []  # the K options (kl1, tk, a_whole) in scan order
    for kl1, tks in _k_options(p, k0):
        for tk in sorted(tks, reverse=True):
            if p.kind == "conv" and tk < kl1 and _ceil(kl1, tk) * tk - kl1 >= tk // 2 and kl1 % tk:
                continue  # a last K step mostly padding
            ks += [(kl1, tk, whole) for whole in (wholes if kl1 < p.k else (False,))]
    ms, ns = _m_candidates(p, m0), _n_candidates(p, n0)
    grid = (len(ms), len(ns), len(ks))
    if not all(grid):
        raise CapacityShortfall("ub", 0, 0)
    # per (tm, kl1, a_whole): A's L1 bytes (`_a_sizes`)
    a_keys = list(dict.fromkeys((kl1, whole) for kl1, _, whole in ks))
    a_of = [a_keys.index((kl1, whole)) for kl1, _, whole in ks]
    a = np.array([[_a_sizes(p, tm, kl1, ab, whole) for kl1, whole in a_keys] for tm in ms], dtype=np.int64)
    a_l1, a_cap = a[:, a_of, 0], a[:, a_of, 1]  # (M, K)
    # per (tm, tn): the epilogue's slices and UB bytes, L0C, the tile shape's schedules
    pairs = []  # (ub, temps, epi_in, serial, epi_split)
    pair_cols = np.zeros((len(ms), len(ns), 4), dtype=np.int64)  # ub, L0C, epid, epilogue GM bytes
    shape_of = np.full((len(ms), len(ns), len(wholes)), -1, dtype=np.int64)
    shapes: list[tuple] = []  # (tm, tn, schedules) with schedules
    for mi, tm in enumerate(ms):
        for ni, tn in enumerate(ns):
            for es in _epi_splits(p, tm, tn, fixed):  # the fewest epilogue slices whose UB share fits
                ub, temps, epi_in, serial = _ub_sizes(p, tm, tn, fixed, es)
                if ub <= mem.ub:
                    break
            l0c = align(tm * tn * 4, al.l0c)
            epid = 2 * l0c <= mem.l0c and 2 * ub - temps <= mem.ub  # the body's temporaries are not double-buffered
            pair_cols[mi, ni] = ub, l0c, epid, epi_in + (0 if fixed.out_l2 else fixed.outs * tm * tn * fixed.ob)
            pairs.append((ub, temps, epi_in, serial, es))
            for w, whole in enumerate(wholes):
                schedules = _schedules(p, tm, tn, whole, cores)
                if schedules:
                    shape_of[mi, ni, w] = len(shapes)
                    shapes.append((tm, tn, schedules))
    tm_ = np.array(ms, dtype=np.int64)[:, None, None]
    tn_ = np.array(ns, dtype=np.int64)[None, :, None]
    kl1_, tk_, whole_ = (np.array(c, dtype=np.int64)[None, None, :] for c in zip(*ks))
    l0a, l0b = tm_ * tk_ * ab, tk_ * tn_ * ab
    b_l1 = kl1_ * tn_ * ab
    l0a_al, l0b_al = align(l0a, al.l0a), align(l0b, al.l0b)
    l1 = align(np.where(a_cap != 0, a_cap, a_l1), al.l1)[:, None, :] + align(b_l1, al.l1)
    ub, l0c = pair_cols[:, :, 0, None], pair_cols[:, :, 1, None]
    fits = (l0a_al <= mem.l0a) & (l0b_al <= mem.l0b) & (l0c <= mem.l0c) & (ub <= mem.ub) & (l1 <= mem.l1)
    shape = shape_of[:, :, whole_[0, 0]]
    keep = fits & (shape >= 0)
    if not keep.any():
        need = np.broadcast_arrays(l0a_al, l0b_al, l0c, l1, ub)
        have = np.array([mem.l0a, mem.l0b, mem.l0c, mem.l1, mem.ub])
        over = np.stack(need) - have[:, None, None, None]
        first = (over > 0).argmax(axis=0)  # the first memory a candidate misses
        deficit = np.take_along_axis(over, first[None], axis=0)[0]
        if not (deficit > 0).any():
            raise CapacityShortfall("ub", 0, 0)
        j = int(np.argmin(np.where(deficit > 0, deficit, np.iinfo(np.int64).max), axis=None))
        space = int(first.flat[j])
        raise CapacityShortfall(("l0a", "l0b", "l0c", "l1", "ub")[space], int(need[space].flat[j]), int(have[space]))

    def kept(x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(x, grid)[keep]

    shape = kept(shape)
    counts = np.array([len(sch) for _, _, sch in shapes], dtype=np.int64)[shape]
    rows = np.stack([np.cumsum(counts) - counts, kept(tm_), kept(tn_), kept(tk_), kept(kl1_), kept(a_l1[:, None, :]),
                     kept(b_l1), kept(l0a), kept(l0b), kept(pair_cols[:, :, 3, None]), kept(whole_),
                     kept((2 * l0a_al <= mem.l0a) & (2 * l0b_al <= mem.l0b)), kept(2 * l1 <= mem.l1),
                     kept(pair_cols[:, :, 2, None]), shape, kept(a_cap[:, None, :]),
                     kept(np.arange(len(ms) * len(ns)).reshape(len(ms), len(ns), 1))], axis=1)
    return _GridCandidates(rows.astype(np.int64), pairs, shapes, fixed)


def roofline(p: CubeProblem, mach: Machine) -> Roofline:
    cores = mach.cores(cube=True)
    compute = p.macs / mach.peak_macs(elem_name(p.elem), cores)
    traffic = sum(_nbytes_full(v) for v in p.block.args) + sum(_nbytes_full(v) for v in set(p.block.last_op.operands))
    return Roofline(compute, traffic / mach.hbm_bytes_per_cycle())


def _nbytes_full(v: SSAValue) -> int:
    return _itemsize(v) * math.prod(shape_of(v))


# --------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------


class _OperandTile:
    """Where the epilogue's tile of a GM operand comes from and how the body sees it:
    a rectangle `sizes` of the GM `view` at `offsets(b, g, m0, n0, builder)`, optionally
    re-laid out in UB (`convert` = (source view, perm, destination view)) into the tile
    layout of the epilogue, read by the body as shape `region`."""

    def __init__(self, view, offsets: Callable, sizes, region, convert=None):
        self.view, self.offsets, self.sizes, self.region, self.convert = view, offsets, sizes, region, convert


def _acc_region_shape(p: CubeProblem, tm: int, tn: int) -> tuple[int, ...]:
    if p.out_fmt == "nc1hwc0":
        return (1, tn // p.oc0, tm, 1, p.oc0)
    if p.out_fmt == "nchw":
        return (1, tn, tm, 1)
    rank = len(shape_of(p.anchor.results[0]))
    if p.out_fmt == "nd":
        return (*([1] * max(0, rank - 2)), tm, tn)
    return (*([1] * (rank - 4)), tn // p.c0, tm // FRACTAL, FRACTAL, p.c0)


def _conv_operand_tile(p: CubeProblem, v: SSAValue, tm: int, tn: int, channel_only: bool) -> _OperandTile:
    """A conv epilogue operand: its GM tile in its own storage format (NC1HWC0 or plain
    NCHW), converted in UB to the epilogue's tile layout when the two differ."""
    cv = p.conv
    oh, ow, co, c0 = cv["oh"], cv["ow"], cv["co"], p.oc0
    mg_e = cv["mg_e"]
    s = shape_of(v)
    enc = lt.layout_of(v.type)

    def ch(gi: Index, n0: Index, bld: KernelBuilder) -> Index:
        return bld.add_(bld.mul(gi, mg_e), n0)

    if channel_only:  # conv bias / batch-norm parameters: [C]
        if s != (co,):
            raise Unsupported(f"a per-channel operand of shape {list(s)}")
        n_, c_, hw = 1, co, 1
    elif enc is not None:
        if enc.fmt != Format.NC1HWC0 or enc.origin_fmt != Format.NCHW:
            raise Unsupported(f"a conv epilogue operand in {enc.fmt}")
        if c0 % s[4] or (s[4] != c0 and p.out_fmt != "nc1hwc0"):
            raise Unsupported(f"a conv epilogue operand with C0 {s[4]} (the output's is {c0})")
        n_, c_, h_, w_ = lt.nchw_dims(enc.origin_fmt, enc.shape)
        hw = h_ * w_
    else:
        n_, c_, h_, w_ = (1,) * (4 - len(s)) + s
        hw = h_ * w_
    if (not channel_only and (hw not in (1, oh * ow) or (hw > 1 and (h_, w_) != (oh, ow)))) \
            or c_ not in (1, co) or n_ not in (1, cv["n"]):
        raise Unsupported(f"an epilogue operand {v.type} that broadcasts along H or W only")
    mt, ct = (tm if hw > 1 else 1), (tn if c_ == co else 1)
    nb = n_ > 1
    region5 = p.out_fmt == "nc1hwc0"
    if enc is not None:  # GM tile [1, C1, M, C0]
        if c_ < co:
            raise Unsupported("an NC1HWC0 epilogue operand broadcast along C")

        def offs5(b, gi, m0, n0, bld):
            return [b if nb else 0, bld.div(ch(gi, n0, bld), c0), m0 if hw > 1 else 0, 0]

        own = s[4]
        if own != c0:  # an f16 residual (C0 16) of an int8 output (C0 32): r blocks per output block
            r = c0 // own

            def offs_own(b, gi, m0, n0, bld):
                return [b if nb else 0, bld.div(ch(gi, n0, bld), own), m0 if hw > 1 else 0, 0]

            return _OperandTile((n_, s[1], hw, own), offs_own, (1, tn // own, mt, own), (1, tn // c0, mt, 1, c0),
                                ((tn // c0, r, mt, own), (0, 2, 1, 3), (tn // c0, mt, r, own)))
        view, offsets, sizes = (n_, shape_of(v)[1], hw, shape_of(v)[4]), offs5, (1, tn // c0, mt, c0)
        if region5:
            return _OperandTile(view, offsets, sizes, (1, tn // c0, mt, 1, c0))
        convert = None if mt == 1 else ((tn // c0, mt, c0), (0, 2, 1), (tn // c0, c0, mt))
        return _OperandTile(view, offsets, sizes, (1, tn, mt, 1), convert)

    def offs4(b, gi, m0, n0, bld):
        return ([b if nb else 0] if not channel_only else []) + \
            [ch(gi, n0, bld) if c_ == co else 0] + ([m0 if hw > 1 else 0] if not channel_only else [])

    view = (co,) if channel_only else (n_, c_, hw)
    sizes = (ct,) if channel_only else (1, ct, mt)
    if not region5:
        return _OperandTile(view, offs4, sizes, (1, ct, mt, 1))
    if ct == 1:
        return _OperandTile(view, offs4, sizes, (1, 1, mt, 1, 1))
    if mt == 1:
        return _OperandTile(view, offs4, sizes, (1, tn // c0, 1, 1, c0))
    return _OperandTile(view, offs4, sizes, (1, tn // c0, mt, 1, c0),
                        ((tn // c0, c0, mt), (0, 2, 1), (tn // c0, mt, c0)))


def _operand_tile(p: CubeProblem, v: SSAValue, tm: int, tn: int, channel_only: bool) -> _OperandTile:
    """The epilogue tile of operand `v` (see `_OperandTile`)."""
    s = shape_of(v)
    if math.prod(s) == 1:
        return _OperandTile(s, lambda b, gi, m0, n0, bld: [0] * len(s), s, s)
    if p.kind == "conv":
        return _conv_operand_tile(p, v, tm, tn, channel_only)
    enc = lt.layout_of(v.type)
    out = p.out_value
    if p.out_fmt == "nz" and enc is None:
        # a plain per-column [N] (or per-row [M, 1]) operand: its tile seen in NZ order
        core = s[next((i for i, d in enumerate(s) if d != 1), len(s)):]
        zrank = len(shape_of(out)) - 4
        if len(s) >= 2 and s[-1] == 1 and len(core) <= 2 and math.prod(s) == p.m:
            return _OperandTile((p.m,), lambda b, gi, m0, n0, bld: [m0], (tm,),
                                (*([1] * zrank), 1, tm // FRACTAL, FRACTAL, 1))
        if len(core) == 1 and s[-1] == p.n:
            return _OperandTile((p.n,), lambda b, gi, m0, n0, bld: [n0], (tn,),
                                (*([1] * zrank), tn // p.c0, 1, 1, p.c0))
        raise Unsupported(f"a plain epilogue operand of shape {list(s)} of a FRACTAL_NZ matmul")
    if enc is not None:
        if enc.fmt != Format.FRACTAL_NZ or tuple(enc.shape[-2:]) != (p.m, p.n):
            raise Unsupported(f"a matmul epilogue operand {v.type}")
        bsz = math.prod(s[:-4])
        if bsz not in (1, p.batch):
            raise Unsupported(f"a matmul epilogue operand {v.type} broadcast along some batch dims")

        def offs_z(b, gi, m0, n0, bld):
            return [b if bsz > 1 else 0, bld.div(n0, p.c0), bld.div(m0, FRACTAL), 0, 0]

        sizes = (1, tn // p.c0, tm // FRACTAL, FRACTAL, p.c0)
        if p.out_fmt == "nz":
            return _OperandTile((bsz, *s[-4:]), offs_z, sizes,
                                (*([1] * (len(s) - 4)), tn // p.c0, tm // FRACTAL, FRACTAL, p.c0))
        region = (*([1] * max(0, len(shape_of(out)) - 2)), tm, tn)
        return _OperandTile((bsz, *s[-4:]), offs_z, sizes, region,
                            ((tn // p.c0, tm // FRACTAL, FRACTAL, p.c0), (1, 2, 0, 3), (tm // FRACTAL, FRACTAL, tn // p.c0, p.c0)))
    so = shape_of(out)
    if p.out_fmt == "nd" and len(so) < 2:
        raise Unsupported("an epilogue operand of a vector-shaped matmul")
    rank = len(s)
    if rank == 1:
        mm, nn, bb = 1, s[0], 1
    elif p.folded:  # rows of every batch entry (or one broadcast row) along the folded M
        mm, nn, bb = math.prod(s[:-1]), s[-1], 1
    else:
        mm, nn, bb = s[-2], s[-1], math.prod(s[:-2])
    if nn not in (1, p.n) or mm not in (1, p.m) or bb not in (1, p.batch):
        raise Unsupported(f"an epilogue operand of shape {list(s)}")

    def offs_n(b, gi, m0, n0, bld):
        return [b if bb > 1 else 0, m0 if mm > 1 else 0, n0 if nn > 1 else 0]

    tile = (1, tm if mm > 1 else 1, tn if nn > 1 else 1)
    if p.out_fmt == "nz":
        raise Unsupported(f"a plain epilogue operand of shape {list(s)} of a FRACTAL_NZ matmul")
    region = tile[1:] if rank >= 2 else (tile[2],)
    region = (*([1] * max(0, rank - 2)), *region)
    return _OperandTile((bb, mm, nn), offs_n, tile, region)


def _f32_scalar(value: float) -> g.ConstantOp:
    return g.ConstantOp(dense_attr(np.array(value, dtype=np.float32), TensorType(f32, [])))


def _batch_norm_ops(op: g.BatchNormOp, x: SSAValue, params: list[SSAValue], shape) -> tuple[list[Operation], SSAValue]:
    """BatchNorm as x * inv + (bias - mean * inv), inv = scale / sqrt(var + eps), on plain
    tiles (the reference kernel's formula)."""
    scale, bias, mean, var = params
    elem = x.type.element_type
    ops: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    def to(v: SSAValue) -> SSAValue:
        return v if v.type.element_type == f32 else add(g.CastOp.to(v, f32))

    eps = add(_f32_scalar(op.epsilon.value.data))
    xs, sc, bi, mn, vr = to(x), to(scale), to(bias), to(mean), to(var)
    inv = add(g.DivOp.make([sc, add(g.SqrtOp.make([add(g.AddOp.make([vr, eps]))]))]))
    shift = add(g.SubOp.make([bi, add(g.MulOp.make([mn, inv]))]))
    y = add(g.AddOp.make([add(g.MulOp.make([xs, inv])), shift]))
    if elem != f32:
        y = add(g.CastOp.to(y, elem))
    del shape
    return ops, y


def _dequantize_ops(op: g.DequantizeOp, x: SSAValue, scale: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Dequantize on an accumulator tile: (x - offset) converted to f32, times the scale
    tile (per channel: shaped to broadcast over the tile), rounded once to the result type
    (the reference kernel's order: bit-exact)."""
    ops: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    y = add(g.CastOp.to(x, f32))
    if (offset := op.offset.value.data) != 0:
        y = add(g.AddOp.make([y, add(_f32_scalar(-offset))]))
    s = scale if scale.type.element_type == f32 else add(g.CastOp.to(scale, f32))
    y = add(g.MulOp.make([y, s]))
    if (elem := op.output.type.element_type) != f32:
        y = add(g.CastOp.to(y, elem))
    return ops, y


def build_epilogue(p: CubeProblem, tm: int, tn: int, operands: list[SSAValue], tiles: dict) -> tuple[Block, list[SSAValue]]:
    """The tile.vector body: accumulator (+ bias / alpha, beta, C), cast, the group's ops."""
    acc_shape = _acc_region_shape(p, tm, tn)
    arg_types = [TensorType(p.acc_elem, list(acc_shape))] + [
        TensorType(v.type.element_type, list(tiles[v].region)) for v in operands
    ]
    body = Block(arg_types=arg_types)
    body.args[0].name_hint = "acc"
    env: dict[SSAValue, SSAValue] = {}
    for v, a in zip(operands, body.args[1:]):
        a.name_hint = v.name_hint
        env[v] = a

    def add(op: Operation) -> SSAValue:
        body.add_op(op)
        return op.results[0]

    def f32_of(v: SSAValue) -> SSAValue:
        return v if v.type.element_type == f32 else add(g.CastOp.to(v, f32))

    y = body.args[0]
    anchor = p.anchor
    if isinstance(anchor, g.Conv2dOp) and p.epilogue_bias:
        y = add(g.AddOp.make([y, f32_of(env[anchor.bias])]))
    if isinstance(anchor, g.QuantConv2dOp | g.QuantMatMulOp) and anchor.bias is not None:
        y = add(g.AddOp.make([y, env[anchor.bias]]))  # i32 + i32
    if isinstance(anchor, g.GemmOp):
        alpha, beta = anchor.alpha.value.data, anchor.beta.value.data
        if alpha != 1.0:
            y = add(g.MulOp.make([y, add(_f32_scalar(alpha))]))
        if anchor.c is not None and beta != 0.0:
            cv = f32_of(env[anchor.c])
            if beta != 1.0:
                cv = add(g.MulOp.make([cv, add(_f32_scalar(beta))]))
            y = add(g.AddOp.make([y, cv]))
    out_elem = anchor.results[0].type.element_type
    if out_elem != p.acc_elem:
        y = add(g.CastOp.to(y, out_elem))
    env[anchor.results[0]] = y
    for op in list(p.block.ops)[:-1]:
        if isinstance(op, lt.TransDataOp):
            if op.input in env:  # done by the copies (the epilogue has one tile layout)
                env[op.output] = env[op.input]
            continue
        if isinstance(op, g.ConstantOp):  # an immediate (`fusion_rules.scalar_operands`), as it is
            env[op.output] = add(op.clone())
            continue
        if op is p.summed:  # (the partner conv's products are in the accumulator: `_k_concat`)
            env[op.results[0]] = env[anchor.results[0]]
            continue
        if op not in p.epilogue_ops:
            continue
        if isinstance(op, g.DequantizeOp):
            ops, r = _dequantize_ops(op, env[op.input], env[op.scale])
            for o in ops:
                body.add_op(o)
            env[op.results[0]] = r
            continue
        if isinstance(op, g.BatchNormOp):
            ops, r = _batch_norm_ops(op, env[op.input], [env[v] for v in op.operands[1:]], acc_shape)
            for o in ops:
                body.add_op(o)
            env[op.results[0]] = r
            continue
        new = type(op).create(
            operands=[env[v] for v in op.operands],
            result_types=[TensorType(r.type.element_type, list(acc_shape)) for r in op.results],
            properties=dict(op.properties), attributes=dict(op.attributes),
        )
        for r, nr in zip(op.results, new.results):
            nr.name_hint = r.name_hint
            env[r] = nr
        body.add_op(new)
    for op in body.ops:
        try:
            op.verify_()
        except VerifyException as e:
            raise Unsupported(f"epilogue op {op.name} does not verify on its tile: {e}") from None
    outs = list(dict.fromkeys(p.block.last_op.operands))
    body.add_op(t.YieldOp(*[env[v] for v in outs]))
    return body, outs


class _CubeEmitter:
    def __init__(self, b: KernelBuilder, p: CubeProblem, plan: CubePlan, gm: dict[SSAValue, SSAValue],
                 l0b_bytes: int, image: CubeProblem | None = None):
        self.b, self.p, self.plan, self.gm = b, p, plan, gm
        self.l0b_bytes = l0b_bytes  # the target's L0B (`_held_steps`)
        self.elem = p.elem
        self.image = image  # a stacked plan's problem of one image (`_stacked`; `p` is the stacked one)

    def stacked_rows(self, per_image: int, total: int) -> list[tuple[int, int, int]]:
        """(image in the stack, first row, rows) of each image's part of a stacked tile of
        `total` rows whose images start `per_image` rows apart (the last takes the rest)."""
        s = self.plan.stack
        return [(j, j * per_image, per_image if j < s - 1 else total - j * per_image) for j in range(s)]

    # -- GM views of the operands ------------------------------------------------------

    def a_view(self) -> SSAValue:
        p, b = self.p, self.b
        a = self.gm[p.a_src]
        s = a.type.get_shape()
        if p.kind == "conv":
            return a
        if p.a_fmt in ("nz", "nz_t"):
            return b.view(a, (math.prod(s[:-4]) if len(s) > 4 else 1, *s[-4:]), "a_gm")
        if len(s) == 1:
            return b.view(a, (1, 1, s[0]) if p.a_fmt == "nd" else (1, s[0], 1), "a_gm")
        if p.folded:
            return b.view(a, (1, p.m, s[-1]), "a_gm")
        return b.view(a, (math.prod(s[:-2]) if len(s) > 2 else 1, *s[-2:]), "a_gm")

    def b_view(self) -> SSAValue:
        p, b = self.p, self.b
        if p.kind == "conv" and p.b_fmt == "nchw":
            plain = self.gm[p.b_src]
            co, cg, kh, kw = plain.type.get_shape()
            return b.view(plain, (co, cg, kh * kw), "w_gm")
        w = self.gm[p.anchor.operands[1]]
        s = w.type.get_shape()
        if p.kind == "conv":
            k1, n1, n0, c0 = s
            return b.view(w, (k1, n1 * n0, c0), "w_gm")
        if p.b_fmt.startswith("nz"):
            return b.view(w, (math.prod(s[:-4]) if len(s) > 4 else 1, *s[-4:]), "b_gm")
        if len(s) == 1:
            return b.view(w, (1, s[0], 1), "b_gm")
        return b.view(w, (math.prod(s[:-2]) if len(s) > 2 else 1, *s[-2:]), "b_gm")

    # -- L1 chunks ---------------------------------------------------------------------

    def a_l1_shape(self) -> tuple[int, ...]:
        p, pl = self.p, self.plan
        if p.kind == "conv":
            cv = p.conv
            ncb = pl.kl1 // (cv["kh"] * cv["kw"] * p.c0)
            rows, width = _fmap_rows(p, pl.tm), _fm_geometry(cv)[1]
            if p.a_fmt == "nc1hwc0":
                return (1, ncb, rows, width, p.c0)
            return (1, ncb * p.c0, rows, width)
        ka = self.a_k()
        if p.a_fmt == "nd":
            return (1, pl.tm, ka)
        if p.a_fmt == "nd_t":
            return (1, ka, pl.tm)
        if p.a_fmt == "nz_t":  # A^T [K, M] stored FRACTAL_NZ: (M / C0, K / 16, 16, C0)
            return (1, pl.tm // p.c0, ka // FRACTAL, FRACTAL, p.c0)
        return (1, ka // p.c0, pl.tm // FRACTAL, FRACTAL, p.c0)

    def a_k(self) -> int:
        """K extent of A's L1 buffer: one chunk, or every chunk (`a_whole`)."""
        pl = self.plan
        return _ceil(self.p.k, pl.kl1) * pl.kl1 if pl.a_whole else pl.kl1

    def b_l1_shape(self) -> tuple[int, ...]:
        p, pl = self.p, self.plan
        if p.kind == "conv":
            return (pl.kl1 // p.c0, pl.tn, p.c0)
        return {
            "nd": (1, pl.kl1, pl.tn), "nd_t": (1, pl.tn, pl.kl1),
            "nz": (1, pl.tn // p.c0, pl.kl1 // FRACTAL, FRACTAL, p.c0),
            "nz_t": (1, pl.kl1 // p.c0, pl.tn // FRACTAL, FRACTAL, p.c0),
        }[p.b_fmt]

    def copy_k(self, src, offsets: list, dst, shape: tuple[int, ...], fmt: str, operand: str, pieces: int,
               which: range | None = None) -> None:
        """An operand's L1 copy in `pieces` along K (`_pieces`): K is dim 2 of A ("nd"),
        dim 1 of A^T, and so on (an NZ dim counts C0 columns or 16-row fractals: a piece of
        whole K steps is whole ones); `which`: those of the pieces only."""
        b = self.b
        dim = {("a", "nd"): 2, ("a", "nd_t"): 1, ("a", "nz"): 1, ("a", "nz_t"): 2,
               ("b", "nd"): 1, ("b", "nd_t"): 2, ("b", "nz"): 2, ("b", "nz_t"): 1, ("b", "fractal_z"): 0}[operand, fmt]
        if pieces == 1 or shape[dim] % pieces:
            if which is None or 0 in which:  # (the whole copy, with the first piece)
                b.copy(src, offsets, dst, None, shape, pad=0.0)
            return
        part = shape[dim] // pieces
        for j in which or range(pieces):
            offs, into, size = list(offsets), [0] * len(shape), list(shape)
            offs[dim], into[dim], size[dim] = b.add_(offs[dim], j * part) if j else offs[dim], j * part, part
            b.copy(src, offs, dst, into, size, pad=0.0)

    def load_a(self, a_gm, a_l1, bi, gi, m0, kc, pieces: int = 1) -> None:
        p, b, pl = self.p, self.b, self.plan
        shape = self.a_l1_shape()
        if p.kind == "conv":
            cv = p.conv
            ncb = shape[1] if p.a_fmt == "nc1hwc0" else shape[1] // p.c0
            row = b.sub(b.mul(b.div(m0, cv["ow"]), _fm_geometry(cv)[2][0]), cv["pads"][0], "ih")
            self.h = row  # in the map's rows (`_fm_geometry`)
            if p.a_parts:
                self.load_parts(a_l1, bi, row, kc, shape)
                return
            sh, sw = cv.get("sub", (1, 1))
            cstart = b.add_(b.mul(gi, cv["cg_e"]), b.mul(kc, ncb * p.c0))
            if p.a_fmt == "nc1hwc0":
                self.copy_map(a_gm, a_l1, shape, bi, row, _div_exact(b, cstart, p.c0), 0, ncb, (sh, sw))
            else:
                b.copy(a_gm, [bi, cstart, b.mul(row, sh), 0], a_l1, None, shape, strides=(1, 1, sh, sw), pad=0.0)
            return
        k = b.mul(kc, pl.kl1)
        ba = self.operand_batch(bi, p.a_batch_strides) if p.a_batched else 0
        if p.a_fmt == "nd":
            offs = [ba, m0, k]
        elif p.a_fmt == "nd_t":
            offs = [ba, k, m0]
        elif p.a_fmt == "nz_t":
            offs = [ba, _div_exact(b, m0, p.c0), _div_exact(b, k, FRACTAL), 0, 0]
        else:
            offs = [ba, _div_exact(b, k, p.c0), _div_exact(b, m0, FRACTAL), 0, 0]
        self.copy_k(a_gm, offs, a_l1, shape, p.a_fmt, "a", pieces)

    def copy_map(self, gm, a_l1, shape: tuple[int, ...], bi, row, c1: Index, into: int, blocks: int,
                 sub: tuple[int, int]) -> None:
        """`blocks` C1 blocks of an NC1HWC0 feature map from block `c1` into A's L1 chunk
        (`shape`) at block `into`, the rows of `row` on, every `sub`-th row and column
        (`_fm_geometry`); a stacked tile (`_stacked`) takes each image's rows, and the zero
        rows after them, at its place."""
        b, (sh, sw) = self.b, sub
        steps = (1, 1, sh, sw, 1)
        if self.image is None:
            b.copy(gm, [bi, c1, b.mul(row, sh), 0, 0], a_l1, [0, into, 0, 0, 0] if into else None,
                   (1, blocks, *shape[2:]), strides=steps, pad=0.0)
            return
        for j, first, rows in self.stacked_rows(self.p.conv["stack_rows"][0], shape[2]):
            b.copy(gm, [b.add_(b.mul(bi, self.plan.stack), j), c1, b.mul(row, sh), 0, 0], a_l1,
                   [0, into, first, 0, 0], (1, blocks, rows, *shape[3:]), strides=steps, pad=0.0)

    def load_parts(self, a_l1, bi, row, kc, shape: tuple[int, ...]) -> None:
        """A's chunk `kc` from the feature maps whose channels make its K (`_k_concat`):
        each part's C1 blocks at their place in the chunk, read with the part's own
        subsampling; past the last part's channels, zeros (its copy reads on into the
        padding). A chunk loop's chunks each lie in one part (`_k_options`): each part's copy
        then in a loop of 0 or 1 trips from `kc` (`_at_most_once`)."""
        b, ncb = self.b, shape[1]
        first = 0
        for j, (src, c1, sub) in enumerate(self.p.a_parts):
            last = j == len(self.p.a_parts) - 1
            if isinstance(kc, int):  # (one chunk, or unrolled: the parts it spans, static)
                lo, hi = max(first, kc * ncb), (kc + 1) * ncb if last else min(first + c1, (kc + 1) * ncb)
                if lo < hi:
                    self.copy_map(self.gm[src], a_l1, shape, bi, row, lo - first, lo - kc * ncb, hi - lo, sub)
            else:  # chunks [s, e) of the loop are this part's
                s, e = first // ncb, (first + c1) // ncb
                trips = (b.min_(b.div(kc, s), 1) if s else 1) if last else b.sub(
                    b.min_(b.div(kc, s), 1) if s else 1, b.min_(b.div(kc, e), 1))
                at = b.sub(kc if last else b.min_(kc, e - 1), b.min_(kc, s) if s else 0)  # (in range either way)
                with self._at_most_once(kc, trips, f"part{j}"):
                    self.copy_map(self.gm[src], a_l1, shape, bi, row, b.mul(at, ncb), 0, ncb, sub)
            first += c1

    def operand_batch(self, bi: Index, strides: tuple[int, ...] | None) -> Index:
        """The batch index of an operand at output batch `bi` (the same index unless the
        operand broadcasts along some batch dims)."""
        if strides is None:
            return bi
        b = self.b
        coords = b.unravel(bi, list(self.p.out_batch), [f"batch{j}" for j in range(len(strides))])
        index: Index = 0
        for c, stride in zip(coords, strides):
            index = b.add_(index, b.mul(c, stride))
        return index

    def filter_of(self, gi: Index, n0: Index) -> Index:
        """A conv's first filter (output channel) of N offset `n0` in group `gi`."""
        return self.b.add_(self.b.mul(gi, self.p.conv["mg_e"]), n0)

    def load_b(self, b_gm, b_l1, bi, gi, n0, kc, pieces: int = 1, which: range | None = None) -> None:
        p, b, pl = self.p, self.b, self.plan
        shape = self.b_l1_shape()
        if p.kind == "conv" and p.b_fmt == "nchw":
            # FRACTAL_Z rows (c1, kh, kw) x filters x C0 from plain [Co, Cg, kh * kw], one C1
            # block at a time; channels past Cg and filters past Co read as 0
            khw = p.conv["kh"] * p.conv["kw"]
            ncb = pl.kl1 // (khw * p.c0)
            first = self.filter_of(gi, n0)
            for j in range(ncb):
                c = b.mul(b.add_(b.mul(kc, ncb), j), p.c0)
                b.copy(b_gm, [first, c, 0], b_l1, [j * khw, 0, 0], (shape[1], p.c0, khw), perm=(2, 0, 1), pad=0.0)
            return
        if p.kind == "conv":
            offs = [b.mul(kc, pl.kl1 // p.c0), self.filter_of(gi, n0), 0]
            self.copy_k(b_gm, offs, b_l1, shape, "fractal_z", "b", pieces, which)
            return
        k = b.mul(kc, pl.kl1)
        bb = self.operand_batch(bi, p.b_batch_strides) if p.b_batched else 0
        offs = {
            "nd": lambda: [bb, k, n0], "nd_t": lambda: [bb, n0, k],
            "nz": lambda: [bb, _div_exact(b, n0, p.c0), _div_exact(b, k, FRACTAL), 0, 0],
            "nz_t": lambda: [bb, _div_exact(b, k, p.c0), _div_exact(b, n0, FRACTAL), 0, 0],
        }[p.b_fmt]()
        self.copy_k(b_gm, offs, b_l1, shape, p.b_fmt, "b", pieces)

    # -- L0 ------------------------------------------------------------------------------

    def fill_l0a(self, a_l1, l0a, m0, kc, kj) -> None:
        p, b, pl = self.p, self.b, self.plan
        tm, tk = pl.tm, pl.tk
        kin = b.mul(kj, tk)  # K offset within the chunk
        ka = self.a_k()
        if pl.a_whole:  # within A's whole K
            kin = b.add_(b.mul(kc, pl.kl1), kin)
        if p.kind == "conv":
            cv = p.conv
            ncb = pl.kl1 // (cv["kh"] * cv["kw"] * p.c0)
            k = b.add_(b.mul(kc, pl.kl1), kin)
            c = b.mul(kc, ncb * p.c0)
            op = t.Img2colOp.build(
                operands=[a_l1, l0a, b.value(m0), b.value(k), b.value(c), b.value(self.h)],
                properties={
                    "kernel": t.int_array((cv["kh"], cv["kw"])), "strides": t.int_array(_fm_geometry(cv)[2]),
                    "dilations": t.int_array(cv["dilations"]), "pads": t.int_array(cv["pads"][:2]),
                    "out_size": t.int_array((cv["oh"], cv["ow"])),
                    "channels": IntegerAttr(cv["cg_e"], 64), "c0": IntegerAttr(p.c0, 64),
                },
            )
            b.add(op)
            return
        if p.a_fmt == "nd":
            src = b.view(a_l1, (tm, ka))
            b.copy(src, [0, kin], l0a, None, (tm, tk))
        elif p.a_fmt == "nd_t":
            src = b.view(a_l1, (ka, tm))
            b.copy(src, [kin, 0], l0a, None, (tk, tm), perm=(1, 0))
        elif p.a_fmt == "nz_t":
            # L1 [m // C0, k // 16, k % 16, m % C0] -> L0A [m // 16, m % 16, k // C0, k % C0],
            # with m and k split into the common (16, C0) digits
            c0 = p.c0
            mr, kr = FRACTAL // c0, FRACTAL // c0  # C0 blocks per 16 (1 for f16, 2 for f32)
            src = b.view(a_l1, (tm // FRACTAL, mr, ka // FRACTAL, kr, c0, c0))
            dst = b.view(l0a, (tm // FRACTAL, mr, c0, tk // FRACTAL, kr, c0))
            b.copy(src, [0, 0, _div_exact(b, kin, FRACTAL), 0, 0, 0], dst, None,
                   (tm // FRACTAL, mr, tk // FRACTAL, kr, c0, c0), perm=(0, 1, 5, 2, 3, 4))
        else:
            src = b.view(a_l1, self.a_l1_shape()[1:])
            dst = b.view(l0a, (tm // FRACTAL, FRACTAL, tk // p.c0, p.c0))
            b.copy(src, [_div_exact(b, kin, p.c0), 0, 0, 0], dst, None, (tk // p.c0, tm // FRACTAL, FRACTAL, p.c0),
                   perm=(1, 2, 0, 3))

    def fill_l0b(self, b_l1, l0b, kj) -> None:
        p, b, pl = self.p, self.b, self.plan
        tn, tk, c0 = pl.tn, pl.tk, p.c0
        kin = b.mul(kj, tk)
        if p.kind == "conv":
            dst = b.view(l0b, (tk // c0, c0, tn))
            b.copy(b_l1, [_div_exact(b, kin, c0), 0, 0], dst, None, (tk // c0, tn, c0), perm=(0, 2, 1),
                   pad=0.0 if pl.kl1 % tk else None)
        elif p.b_fmt == "nd":
            b.copy(b.view(b_l1, (pl.kl1, tn)), [kin, 0], l0b, None, (tk, tn))
        elif p.b_fmt == "nd_t":
            b.copy(b.view(b_l1, (tn, pl.kl1)), [0, kin], l0b, None, (tn, tk), perm=(1, 0))
        elif p.b_fmt == "nz":
            src = b.view(b_l1, self.b_l1_shape()[1:])
            dst = b.view(l0b, (tk // FRACTAL, FRACTAL, tn // c0, c0))
            b.copy(src, [0, _div_exact(b, kin, FRACTAL), 0, 0], dst, None, (tn // c0, tk // FRACTAL, FRACTAL, c0),
                   perm=(1, 2, 0, 3))
        else:
            src = b.view(b_l1, self.b_l1_shape()[1:])
            dst = b.view(l0b, (tk // c0, c0, tn // FRACTAL, FRACTAL))
            b.copy(src, [_div_exact(b, kin, c0), 0, 0, 0], dst, None, (tk // c0, tn // FRACTAL, FRACTAL, c0),
                   perm=(0, 3, 1, 2))

    # -- epilogue ------------------------------------------------------------------------

    def acc_to_ub(self, l0c, acc_ub, slice_: Index = 0) -> None:
        """Row slice `slice_` (of `epi_split`) of the L0C tile into UB."""
        p, b, pl = self.p, self.b, self.plan
        tm, tn, c0 = pl.tm, pl.tn, p.oc0
        te = tm // pl.epi_split
        row = b.mul(slice_, te)
        if p.out_fmt == "nc1hwc0":
            b.copy(b.view(l0c, (tm, tn // c0, c0)), [row, 0, 0], b.view(acc_ub, (tn // c0, te, c0)), None,
                   (te, tn // c0, c0), perm=(1, 0, 2))
        elif p.out_fmt == "nchw":
            b.copy(l0c, [row, 0], b.view(acc_ub, (tn, te)), None, (te, tn), perm=(1, 0))
        elif p.out_fmt == "nd":
            b.copy(l0c, [row, 0], b.view(acc_ub, (te, tn)), None, (te, tn))
        else:
            b.copy(b.view(l0c, (tm // FRACTAL, FRACTAL, tn // c0, c0)), [b.mul(slice_, te // FRACTAL), 0, 0, 0],
                   b.view(acc_ub, (tn // c0, te // FRACTAL, FRACTAL, c0)), None,
                   (te // FRACTAL, FRACTAL, tn // c0, c0), perm=(2, 0, 1, 3))

    def out_tile(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(GM view of an output, UB tile shape) for the output layout."""
        p, pl = self.p, self.plan
        tm, tn, c0 = pl.tm // pl.epi_split, pl.tn, p.oc0  # one epilogue slice
        s = shape_of(p.out_value)
        if p.out_fmt == "nc1hwc0":
            n_, c1, h_, w_, _ = s
            return (n_, c1, h_ * w_, c0), (1, tn // c0, tm, c0)
        if p.out_fmt == "nchw":
            n_, c_, h_, w_ = s
            return (n_, c_, h_ * w_), (1, tn, tm)
        if p.out_fmt == "nd":
            return (p.batch, p.m, p.n), (1, tm, tn)
        return (math.prod(s[:-4]) if len(s) > 4 else 1, *s[-4:]), (1, tn // c0, tm // FRACTAL, FRACTAL, c0)

    def out_offsets(self, bi, gi, m0, n0) -> list:
        p, b = self.p, self.b
        if p.kind == "conv":
            ch = self.filter_of(gi, n0)
            if p.out_fmt == "nc1hwc0":
                return [bi, _div_exact(b, ch, p.oc0), m0, 0]
            return [bi, ch, m0]
        if p.out_fmt == "nd":
            return [bi, m0, n0]
        return [bi, _div_exact(b, n0, p.c0), _div_exact(b, m0, FRACTAL), 0, 0]

    # -- the whole kernel ----------------------------------------------------------------

    def emit(self) -> None:
        p, b, pl = self.p, self.b, self.plan
        tm, tn, tk = pl.tm, pl.tn, pl.tk
        elem = self.elem
        a_gm, b_gm = self.a_view(), self.b_view()
        a_l1 = b.alloc(t.MemSpace.L1, self.a_l1_shape(), elem, pl.l1_buffers, "a_l1")
        # (B straight into L0B: no L1 copy of it)
        b_l1 = None if pl.b_direct else b.alloc(t.MemSpace.L1, self.b_l1_shape(), elem, pl.l1_buffers, "b_l1")
        chunks, steps = _ceil(p.k, pl.kl1), _ceil(pl.kl1, tk)
        held = _held_steps(p, tm, tn, tk, pl.kl1, pl.order, pl.l0_buffers == 2, self.l0b_bytes)
        if held or _unrolled_steps(pl, steps):  # two single L0 buffers, the steps alternating between them
            l0a = [b.alloc(t.MemSpace.L0A, (tm, tk), elem, 1, "a_l0") for _ in range(2)]
            # (held: every K step's B fractals in an L0B buffer of their own, filled once per N tile)
            l0b = [b.alloc(t.MemSpace.L0B, (tk, tn), elem, 1, f"b_l0_{j}" if held else "b_l0")
                   for j in range(steps if held else 2)]
        else:
            l0a = [b.alloc(t.MemSpace.L0A, (tm, tk), elem, pl.l0_buffers, "a_l0")]
            l0b = [b.alloc(t.MemSpace.L0B, (tk, tn), elem, pl.l0_buffers, "b_l0")]
        l0c = b.alloc(t.MemSpace.L0C, (tm, tn), p.acc_elem, pl.l0c_buffers, "c_l0")
        # the bias added by the Cube (`cube_bias_block`)
        bias = self.cube_bias_buffers() if p.bias_block is not None else None
        view_shape, ub_shape = self.out_tile()
        es = pl.epi_split
        te = tm // es  # rows of an epilogue slice: the UB buffers' tiles
        acc_ub = b.alloc(t.MemSpace.UB, ub_shape, p.acc_elem, pl.ub_buffers, "acc_ub")
        operands = epilogue_operands(p)
        anchor = p.anchor
        tiles = {}
        per_slice: set[SSAValue] = set()
        for v in operands:
            channel_only = (isinstance(anchor, CONV_OPS) and v is anchor.bias) or any(
                isinstance(o, g.BatchNormOp) and v in o.operands[1:] for o in p.epilogue_ops) or (
                p.kind == "conv" and any(isinstance(o, g.DequantizeOp) and v is o.scale for o in p.epilogue_ops))
            tiles[v] = _operand_tile(self.image or p, v, te, tn, channel_only)
            if es > 1 and _operand_tile(p, v, tm, tn, channel_only).sizes != tiles[v].sizes:
                per_slice.add(v)  # its tile follows the slice's rows
        op_ub = {v: b.alloc(t.MemSpace.UB, tiles[v].sizes, v.type.element_type, pl.ub_buffers,
                            f"{v.name_hint or 'operand'}_ub") for v in operands}
        op_in = dict(op_ub)  # what the body reads: the loaded tile, or its re-laid-out copy
        for v in operands:
            if tiles[v].convert is not None:
                op_in[v] = b.alloc(t.MemSpace.UB, tiles[v].convert[2], v.type.element_type, pl.ub_buffers,
                                   f"{v.name_hint or 'operand'}_tile")
        body, outs = build_epilogue(p, te, tn, operands, tiles)
        identity = len(list(body.ops)) == 1 and all(y is body.args[0] for y in body.last_op.operands)
        out_ub = {v: acc_ub if identity else b.alloc(t.MemSpace.UB, ub_shape, v.type.element_type, pl.ub_buffers,
                                                      f"{v.name_hint or 'out'}_ub")
                  for v in outs}
        op_gm = {v: b.view(self.gm[v], tiles[v].view) for v in operands}
        out_gm = {v: b.view(self.gm[v], view_shape) for v in outs}

        m_tiles, n_tiles = _ceil(p.m, tm), _ceil(p.n, tn)
        outer_n, inner_n = (m_tiles, n_tiles) if pl.order == "mn" else (n_tiles, m_tiles)
        hoist = chunks == 1
        a_once = hoist or pl.a_whole  # A loaded once per outer (M) tile
        m_per_image = inner_n
        if pl.batch_inner:  # order "nm": (image, M tile) pairs in the inner loop
            inner_n *= p.batch
        per_part = _ceil(inner_n, pl.split)
        images = 1 if pl.batch_inner else p.batch
        lo, hi = b.block_range(images * p.groups * outer_n * pl.split, pl.blocks)
        with b.loop(lo, hi, name="tile") as it:
            bi, gi, oi, part = b.unravel(it, [images, p.groups, outer_n, pl.split], ["image", "group", "outer", "part"])
            first_tile = pl.order == "mn"

            def scaled(i: Index, size: int) -> Index:
                return b.mul(i, size)

            pieces = _pieces(p, pl.kl1, tk, pl.l0_buffers == 2, pl.order) if hoist else 1
            # the weights loaded once per outer (N) tile, whole K in one step, also go into
            # L0B once: the inner (M) tiles' mmads all read the same fractals
            hold_b = _holds_b(p, self.l0b_bytes, tm, tn, tk, pl.kl1, pl.order, pl.l0_buffers == 2)
            # B's later pieces after the first inner tile's A (MTE2 runs its copies in order),
            # for a core's first outer tile: a later one's load together, as the previous
            # outer tile's M tiles run (squeezenet's 3 x 3 conv of fire 8 on the 310B, 4 N
            # tiles of 2 M tiles on its one core, lost 1.7k cycles with every one deferred)
            defer = DEFER_PIECES and hoist and not first_tile and pieces > 1 and not hold_b and p.kind == "conv"
            first_outer: Index = 1  # 1 on the core's first outer tile, else 0 (several per core)
            if defer and _ceil(images * p.groups * outer_n * pl.split, pl.blocks) > 1:
                first_outer = b.sub(1, b.min_(b.sub(it, lo), 1))

            def later_pieces(lo_: Index, trips: Index, name: str) -> None:
                """B's pieces after the first in a loop of `trips` (0 or 1) from `lo_`."""
                with self._at_most_once(lo_, trips, name):
                    self.load_b(b_gm, b_l1, bi, gi, scaled(oi, tn), 0, pieces, range(1, pieces))

            if a_once and first_tile:
                self.load_a(a_gm, a_l1, bi, gi, scaled(oi, tm), 0, pieces)
            elif hoist:
                self.load_b(b_gm, b_l1, bi, gi, scaled(oi, tn), 0, pieces, range(1) if defer else None)
                if defer and first_outer != 1:  # (a later outer tile's: here)
                    later_pieces(it, b.sub(1, first_outer), "b_now")
            if hold_b:
                for j, buf in enumerate(l0b if held else l0b[:1]):
                    self.fill_l0b(b_l1, buf, j)
            inner_lo = b.mul(part, per_part)
            inner_hi = b.min_(b.add_(inner_lo, per_part), inner_n) if pl.split > 1 else inner_n
            with self._maybe_loop(inner_n, "inner", inner_lo, inner_hi) as ii:
                first_ii = ii
                if pl.batch_inner:
                    bi, ii = b.unravel(ii, [p.batch, m_per_image], ["image", "m_tile"])
                mi, ni = (oi, ii) if first_tile else (ii, oi)
                m0, n0 = scaled(mi, tm), scaled(ni, tn)
                with self._maybe_loop(chunks, "chunk") as kc:
                    if not (a_once and first_tile):
                        self.load_a(a_gm, a_l1, bi, gi, m0, kc, pieces)
                    if not (hoist and not first_tile) and not pl.b_direct:  # (b_direct: B per step)
                        self.load_b(b_gm, b_l1, bi, gi, n0, kc, pieces)
                    if defer:  # (the inner loop's first iteration, of the core's first outer tile)
                        first_inner = b.sub(1, b.min_(b.sub(first_ii, inner_lo), 1))
                        later_pieces(first_ii, first_inner if first_outer == 1 else b.mul(first_inner, first_outer),
                                     "b_rest")
                    b_src = (b_gm, gi, n0) if pl.b_direct else None
                    if len(l0a) == 2:
                        for kj in range(steps):
                            self.step(a_l1, b_l1, l0a[kj % 2], l0b[kj if held else kj % 2], l0c, m0, kc, kj, hold_b,
                                      b_src)
                    else:
                        with self._maybe_loop(steps, "step") as kj:
                            self.step(a_l1, b_l1, l0a[0], l0b[0], l0c, m0, kc, kj, hold_b, b_src)
                if bias is not None:  # the chain ends with the bias: C += ones x the N tile's bias columns
                    # (last, behind the tile's loads: first, the tile's first loads would wait for it)
                    ones, block = bias
                    b.add(t.MmadOp.build(operands=[ones, block, [b.value(n0)], l0c, b.is_zero(1)]))
                # the slices unrolled (a loop here would end the tile's pipelining: its UB
                # buffers would rotate in the slice loop, and the next tile would wait for it)
                # (an operand the same for every slice -- a bias -- is loaded once: its
                # per-slice load would hold MTE2, in order, behind the previous slice)
                region = Region(body)
                for ei in range(es):
                    me = b.add_(m0, ei * te) if ei else m0  # the slice's first row
                    self.acc_to_ub(l0c, acc_ub, ei)
                    for v in operands:
                        if ei and v not in per_slice:
                            continue
                        sizes = tiles[v].sizes
                        if self.image is not None and len(sizes) == 4 and sizes[2] == te:  # per pixel: per image
                            for j, first, rows in self.stacked_rows(p.conv["stack_rows"][1] * p.conv["ow"], te):
                                image = b.add_(b.mul(bi, pl.stack), j)
                                b.copy(op_gm[v], tiles[v].offsets(image, gi, 0, n0, b), op_ub[v], [0, 0, first, 0],
                                       (*sizes[:2], rows, sizes[3]), pad=0.0)
                        else:
                            b.copy(op_gm[v], tiles[v].offsets(bi, gi, me, n0, b), op_ub[v], None, sizes, pad=0.0)
                        if (cv := tiles[v].convert) is not None:
                            src_view, perm, _ = cv
                            b.copy(b.view(op_ub[v], src_view), [0] * len(src_view), op_in[v], None, src_view, perm=perm)
                    if not identity:
                        b.add(t.VectorOp([acc_ub, *[op_in[v] for v in operands]], [out_ub[v] for v in outs],
                                         region.clone() if ei else region))
                    for v in outs:
                        if self.image is None:
                            b.copy(out_ub[v], [0] * len(ub_shape), out_gm[v], self.out_offsets(bi, gi, me, n0), ub_shape)
                            continue
                        pixels = p.conv["image_oh"] * p.conv["ow"]  # each image's own rows of the stacked tile
                        for j, first, _ in self.stacked_rows(p.conv["stack_rows"][1] * p.conv["ow"], te):
                            image = b.add_(b.mul(bi, pl.stack), j)
                            b.copy(out_ub[v], [0, 0, first, 0], out_gm[v], self.out_offsets(image, gi, 0, n0),
                                   (*ub_shape[:2], pixels, ub_shape[3]))

    def step(self, a_l1, b_l1, l0a, l0b, l0c, m0, kc, kj, held_b: bool = False, b_src: tuple | None = None) -> None:
        """K step `kj` of chunk `kc`: its L1 -> L0 moves (not B's when the outer tile holds it
        in L0B: `held_b`) and its mmad."""
        b, pl = self.b, self.plan
        self.fill_l0a(a_l1, l0a, m0, kc, kj)
        if b_src is not None:
            self.gm_to_l0b(l0b, *b_src, kc, kj)
        elif not held_b:
            self.fill_l0b(b_l1, l0b, kj)
        first = b.is_zero(b.add_(b.mul(kc, pl.kl1), b.mul(kj, pl.tk)))
        b.add(t.MmadOp.build(operands=[l0a, l0b, [], l0c, first]))

    def gm_to_l0b(self, l0b, b_gm, gi, n0, kc, kj) -> None:
        """K step `kj` of chunk `kc`: its B fractals straight from the FRACTAL_Z weights in GM
        (`b_gm`, group `gi`, N offset `n0`) into L0B's ZN order (`CubePlan.b_direct`)."""
        p, b, pl = self.p, self.b, self.plan
        c0, tk, tn = p.c0, pl.tk, pl.tn
        k = b.add_(b.mul(kc, pl.kl1), b.mul(kj, tk))
        b.copy(b_gm, [_div_exact(b, k, c0), self.filter_of(gi, n0), 0], b.view(l0b, (tk // c0, c0, tn)), None, (tk // c0, tn, c0),
               perm=(0, 2, 1))

    def cube_bias_buffers(self) -> tuple[SSAValue, SSAValue]:
        """(ones, bias block) in L0A / L0B for the bias the Cube adds (`cube_bias_block`),
        made once per kernel before its tiles: the all-ones [tm, 16] A block (a Vector dup
        in UB, moved to L1 and L0A) and the whole bias block [16, N] (GM -> L1 -> L0B), of
        which each tile's bias mmad reads its N tile's columns. Once, not per tile: a
        block that changed with the N tile would hold one of the 910's four M -> MTE1 event
        ids across the tile loop, and the K steps' moves would then wait for the mmad
        before theirs (a 3 x 3 conv: 20.4k -> 27.9k cycles)."""
        p, b, pl = self.p, self.b, self.plan
        tm, elem = pl.tm, self.elem
        ones_ub = b.alloc(t.MemSpace.UB, (tm, FRACTAL), elem, 1, "ones_ub")
        body = Block()
        one = g.ConstantOp(dense_attr(np.ones((tm, FRACTAL), dtype=numpy_dtype(elem)), TensorType(elem, [tm, FRACTAL])))
        body.add_op(one)
        body.add_op(t.YieldOp(one.results[0]))
        b.add(t.VectorOp([], [ones_ub], Region(body)))
        ones_l1 = b.alloc(t.MemSpace.L1, (tm, FRACTAL), elem, 1, "ones_l1")
        b.copy(ones_ub, [0, 0], ones_l1, None, (tm, FRACTAL))
        ones = b.alloc(t.MemSpace.L0A, (tm, FRACTAL), elem, 1, "ones_l0")
        b.copy(ones_l1, [0, 0], ones, None, (tm, FRACTAL))
        shape = (1, _ceil(p.n, pl.tn) * pl.tn, FRACTAL)  # every N tile's columns (zeros past N)
        block_l1 = b.alloc(t.MemSpace.L1, shape, elem, 1, "bias_l1")
        b.copy(b.view(self.gm[p.anchor.bias], p.bias_block.shape, "bias_gm"), [0, 0, 0], block_l1, None, shape,
               pad=0.0)
        block = b.alloc(t.MemSpace.L0B, (FRACTAL, shape[1]), elem, 1, "bias_l0")
        b.copy(block_l1, [0, 0, 0], b.view(block, (1, FRACTAL, shape[1])), None, shape, perm=(0, 2, 1))
        return ones, block

    def _at_most_once(self, lo: Index, trips: Index, name: str):
        """A tile-level loop of `trips` (0 or 1, known at run time) iterations from `lo`: a
        copy done only on some iterations of the loop around it, marked `isa.max_trips = 1`
        so that insert-sync orders it as inline code."""
        return self.b.loop(lo, self.b.add_(lo, trips), name=name, attributes={isa.MAX_TRIPS_ATTR: IntegerAttr(1, i64)})

    def _maybe_loop(self, n: int, name: str, lo: Index = 0, hi: Index | None = None):
        """A loop over lo..hi-1 (0..n-1 by default), or the constant 0 when n == 1."""
        from contextlib import nullcontext

        if n == 1:
            return nullcontext(0)
        return self.b.loop(lo, n if hi is None else hi, name=name)


def _held_steps(p: CubeProblem, tm: int, tn: int, tk: int, kl1: int, order: str, l0d: bool, l0b: int) -> bool:
    """Does an N tile's B stay in L0B across its M tiles with K in several steps
    (`HOLD_STEPS`)? As `HOLD_L0` (order "nm", the whole K in L1 in one chunk, loaded once
    per N tile) with the steps unrolled (`UNROLLED_K`; A alternating between two L0A
    buffers, an odd count too), when every step's B fractals fit the target's `l0b` bytes
    side by side, beside the Cube bias's blocks: the M tiles' steps then move only A L1 ->
    L0. resnet50_b16's conv1 (K = 208 in 13 steps of 16, N = 64: 26 KB of weights) moved
    its weights L1 -> L0B 182 times per core, 10k of its 28k MTE1 cycles."""
    steps = _ceil(kl1, tk)
    ab = numpy_dtype(p.elem).itemsize
    fits = steps * tk * tn * ab <= l0b - cube_bias_reserve(p, tm, tn, ab)[1]
    return bool(HOLD_STEPS and UNROLLED_K and 1 < steps <= MAX_UNROLLED_STEPS and order == "nm"
                and _ceil(p.k, kl1) == 1 and l0d and fits)


def _unrolled_steps(plan: CubePlan, steps: int) -> bool:
    """Are the K steps of a chunk unrolled over two single L0 buffers (step j on buffer
    j % 2)? A loop over steps with a double buffer drains at its end: its flags are set
    before it and waited for after it, so the next chunk's or tile's first L1 -> L0 moves
    wait for this chunk's last mmad and the Cube waits for those moves (a 3 x 3 conv: ~270
    cycles per tile). Unrolled, the buffers alternate across chunks and tiles (an even
    number of steps), and only the loop over chunks or tiles drains."""
    return _unrolls(steps, plan.l0_buffers == 2)


def emit_cube(b: KernelBuilder, p: CubeProblem, plan: CubePlan, gm: dict[SSAValue, SSAValue],
              target: targets.Target) -> None:
    if plan.stack > 1:
        _CubeEmitter(b, _stacked(p, plan.stack), plan, gm, target.memory.l0b, image=p).emit()
    else:
        _CubeEmitter(b, p, plan, gm, target.memory.l0b).emit()

