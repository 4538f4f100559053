"""`tile.vpool` -> isa (lowering/isa_pool.py) on the simulator.

Each case wraps `lower_vpool` in a small isa kernel (GM -> UB copy, the pool, UB -> GM)
with a stand-in for the to-isa context, runs plan-local-memory + insert-sync, simulates,
and compares with the tile interpreter's `vpool` (the op's definition): max exactly, f32
averages to rtol 1e-6, f16 averages to one f16 rounding (rtol 2**-10: both sides sum in
f32 in the same order and round once, but the uniform-count path multiplies by 1/count
instead of dividing, which may flip the last f16 bit). Source positions outside the input
hold NaN in GM, so reading any of them would show. The simulator must report no
problems, and the executed Vector instruction count must stay O(kernel positions x rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr, UnitAttr, f16, f32
from xdsl.ir import Block, SSAValue

from ge import targets
from ge.dialects import blobs, isa
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.ir import run_passes
from ge.lowering import isa_pool
from ge.lowering.index_builder import Index
from ge.lowering.isa_builder import IsaBuilder
from ge.lowering.isa_pool import PoolLoweringError, lower_vpool
from ge.runtime.simulator import Simulator
from ge.runtime.tile_interp import vpool as vpool_reference

TARGET = targets.load_target("ascend910")
RNG = np.random.default_rng(7)
VECTOR_OPS = isa.VECTOR_OPS + (isa.CopyUbToUbOp,)


@dataclass
class FakeContext:
    """The part of to-isa's KernelLowering that lower_vpool uses."""

    b: IsaBuilder
    target: targets.Target
    buffers: dict[SSAValue, tuple[SSAValue, Index]] = field(default_factory=dict)
    indices: dict[SSAValue, Index] = field(default_factory=dict)

    def buffer(self, v: SSAValue) -> tuple[SSAValue, Index]:
        return self.buffers[v]

    def index(self, v: SSAValue) -> Index:
        return self.indices[v]


@dataclass(frozen=True)
class Case:
    mode: str
    src: tuple[int, ...]  # the UB tile: [n, c1, H, W, c0] or [n, c, H, W]
    out_hw: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    in_size: tuple[int, int]
    h: int
    w: int
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    include_pad: bool = False
    elem: object = f16

    @property
    def dst(self) -> tuple[int, ...]:
        return (*self.src[:2], *self.out_hw, *self.src[4:])

    def params(self) -> dict:
        return dict(mode=self.mode, kernel=self.kernel, strides=self.strides, dilations=self.dilations,
                    in_size=self.in_size, pads=self.pads, count_include_pad=self.include_pad)


def vpool_op(case: Case) -> t.VPoolOp:
    block = Block(arg_types=[t.buffer_type(case.src, case.elem, t.MemSpace.UB),
                             t.buffer_type(case.dst, case.elem, t.MemSpace.UB), IndexType(), IndexType()])
    props = {k: t.int_array(v) for k, v in (("kernel", case.kernel), ("strides", case.strides),
                                              ("dilations", case.dilations), ("in_size", case.in_size),
                                              ("pads", case.pads))}
    props["mode"] = StringAttr(case.mode)
    if case.include_pad:
        props["count_include_pad"] = UnitAttr()
    op = t.VPoolOp.build(operands=list(block.args), properties=props)
    op.verify()
    return op


def pool_kernel(case: Case, dynamic: bool = True, src_at: int = 0, dst_at: int = 0) -> isa.KernelOp:
    """GM x -> UB -> vpool -> UB -> GM y; h, w are run-time values when `dynamic` (derived
    from block_idx, which is 0); the tiles sit `src_at` / `dst_at` elements into their
    UB buffers."""
    n_src, n_dst = math.prod(case.src), math.prod(case.dst)
    tx, ty = isa.buffer_type([n_src], case.elem, isa.MemSpace.GM), isa.buffer_type([n_dst], case.elem, isa.MemSpace.GM)
    b = IsaBuilder.new_kernel("pool", [tx], [ty], 1, ["x", "y"])
    x, y = b.args
    xu = b.buffer(isa.MemSpace.UB, [src_at + n_src], case.elem, name="xu")[0]
    yu = b.buffer(isa.MemSpace.UB, [dst_at + n_dst], case.elem, name="yu")[0]
    b.add(isa.CopyGmToUbOp(x, xu, [n_src], dst_offset=b.offset(src_at)))
    op = vpool_op(case)
    k = FakeContext(b, TARGET)
    k.buffers = {op.source: (xu, src_at), op.dest: (yu, dst_at)}
    if dynamic:
        zero = b.block_idx()
        k.indices = {op.h: b.add_(zero, case.h) if case.h else zero, op.w: b.add_(zero, case.w) if case.w else zero}
    else:
        k.indices = {op.h: case.h, op.w: case.w}
    lower_vpool(k, op)
    b.add(isa.CopyUbToGmOp(yu, y, [n_dst], src_offset=b.offset(dst_at)))
    return b.kernel


def compile_kernel(kernel: isa.KernelOp) -> isa.KernelOp:
    m = ModuleOp([kernel])
    m.attributes["ge.target"] = StringAttr(TARGET.name)
    m.verify()
    run_passes(m, "plan-local-memory,insert-sync")
    return kernel


def source_data(case: Case) -> np.ndarray:
    """Random values inside the input, NaN at every source position outside it."""
    dt = numpy_dtype(case.elem)
    x = RNG.standard_normal(case.src).astype(dt)
    rows = case.h + np.arange(case.src[2])
    cols = case.w + np.arange(case.src[3])
    inside = ((rows >= 0) & (rows < case.in_size[0]))[:, None] & ((cols >= 0) & (cols < case.in_size[1]))[None, :]
    shape = [1] * len(case.src)
    shape[2], shape[3] = inside.shape
    return np.where(inside.reshape(shape), x, np.array(np.nan, dt))


def simulate(case: Case, **kw) -> tuple[np.ndarray, np.ndarray, dict, int]:
    """(result, expected, executed instructions per pipe, vector ops in the IR)."""
    kernel = compile_kernel(pool_kernel(case, **kw))
    x = source_data(case)
    y = np.zeros(math.prod(case.dst), numpy_dtype(case.elem))
    sim = Simulator(TARGET)
    stats = sim.run_kernel(kernel, [x.reshape(-1), y])
    assert not sim.report.problems, "\n".join(map(str, sim.report.problems))
    expected = vpool_reference(x, case.out_hw, case.h, case.w, **case.params())
    ir_vector_ops = sum(isinstance(o, VECTOR_OPS) for o in kernel.walk())
    return y.reshape(case.dst), expected, stats.instructions, ir_vector_ops


def check(case: Case, got: np.ndarray, want: np.ndarray) -> None:
    if case.mode == "max":
        np.testing.assert_array_equal(got, want)
    elif case.elem == f32:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2.0**-10, atol=1e-4)


def executed_bound(case: Case) -> int:
    """The design's bound on executed V instructions: a few fixed ones plus, per kernel
    position, one instruction per (8-pixel chunk, row or plane), twice for f16 averages
    (f32 pixels are two blocks); avg adds one more such pass for the count map and the
    divide."""
    planes, (oh, ow) = math.prod(case.src[:2]), case.out_hw
    chunks = -(-ow // 8) + (ow % 8 > 0)
    per_pass = min(planes, oh) * chunks * (2 if case.mode == "avg" and case.elem == f16 else 1)
    passes = case.kernel[0] * case.kernel[1] * (2 if case.mode == "avg" else 1) + 1
    return 8 + passes * per_pass


# Configurations found in the light models (NC1HWC0, n = 1; see the module docstring of
# isa_pool for the list) plus edge tiles where h or w is negative or windows run past the input.
CASES = {
    # max 3x3/s2, no pads (alexnet, squeezenet, inception_v1): interior row tile, edge tile past the input
    "max3s2_interior": Case("max", (1, 1, 5, 111, 16), (2, 55), (3, 3), (2, 2), (111, 111), 40, 0),
    "max3s2_bottom": Case("max", (1, 1, 7, 53, 16), (3, 26), (3, 3), (2, 2), (54, 54), 48, 0),
    # max 3x3/s2/p1 (resnet50 stem): the first tile starts above the input (h = -1, w = -1)
    "max3s2p1_top": Case("max", (1, 1, 5, 113, 16), (2, 56), (3, 3), (2, 2), (112, 112), -1, -1, (1, 1, 1, 1)),
    # ceil-mode max 3x3/s2 with pads (0, 0, 1, 1) (inception_v2): last windows past the input
    "max3s2_ceil": Case("max", (1, 2, 15, 15, 16), (7, 7), (3, 3), (2, 2), (14, 14), 0, 0, (0, 0, 1, 1)),
    # max 3x3/s1/p1 (inception_v1), whole image
    "max3s1p1": Case("max", (1, 2, 15, 15, 16), (13, 13), (3, 3), (1, 1), (13, 13), -1, -1, (1, 1, 1, 1)),
    # max 2x2/s2 (vgg19)
    "max2s2": Case("max", (1, 1, 4, 56, 16), (2, 28), (2, 2), (2, 2), (56, 56), 20, 0),
    "max2s2_f32": Case("max", (1, 1, 4, 56, 8), (2, 28), (2, 2), (2, 2), (56, 56), 20, 0, elem=f32),
    "max3s2p1_f32": Case("max", (1, 1, 5, 113, 8), (2, 56), (3, 3), (2, 2), (112, 112), 109, -1, (1, 1, 1, 1),
                         elem=f32),
    # dilated max (not in the light models; the op allows it)
    "max_dilated": Case("max", (1, 1, 9, 20, 16), (5, 8), (3, 3), (1, 2), (9, 20), 0, 0, dilations=(2, 2)),
    "max3x2_dilated": Case("max", (1, 2, 11, 20, 16), (4, 8), (3, 2), (2, 2), (11, 20), 0, 0, dilations=(2, 3)),
    "max2x4_s1": Case("max", (1, 1, 9, 20, 16), (8, 17), (2, 4), (1, 1), (9, 20), 0, 0),
    # avg 3x3/s1/p1, count_include_pad false (inception_v2): top edge and interior row tiles
    "avg3s1p1_top": Case("avg", (1, 1, 6, 30, 16), (4, 28), (3, 3), (1, 1), (28, 28), -1, -1, (1, 1, 1, 1)),
    "avg3s1p1_mid": Case("avg", (1, 1, 9, 30, 16), (7, 28), (3, 3), (1, 1), (28, 28), 10, -1, (1, 1, 1, 1)),
    "avg3s1p1_f32": Case("avg", (1, 1, 9, 30, 8), (7, 28), (3, 3), (1, 1), (28, 28), 20, -1, (1, 1, 1, 1), elem=f32),
    # avg 3x3/s2/p1 (shufflenet), bottom edge tile
    "avg3s2p1_bottom": Case("avg", (1, 1, 15, 29, 16), (7, 14), (3, 3), (2, 2), (28, 28), 13, -1, (1, 1, 1, 1)),
    "avg3s2p1_f32": Case("avg", (1, 2, 15, 15, 8), (7, 7), (3, 3), (2, 2), (14, 14), -1, -1, (1, 1, 1, 1), elem=f32),
    # count_include_pad (not in the light models)
    "avg3_include_pad": Case("avg", (1, 1, 9, 30, 16), (7, 28), (3, 3), (1, 1), (28, 28), -1, -1, (1, 1, 1, 1),
                             include_pad=True),
    # avg 2x2/s2 (densenet transitions)
    "avg2s2": Case("avg", (1, 1, 8, 56, 16), (4, 28), (2, 2), (2, 2), (56, 56), 24, 0),
    "avg2s2_f32": Case("avg", (1, 1, 10, 56, 8), (5, 28), (2, 2), (2, 2), (56, 56), 30, 0, elem=f32),
    # 7x7 global-like avg (resnet50, inception_v2), and 7x7 on a 6x6 input (inception_v1)
    "avg7_global": Case("avg", (1, 8, 7, 7, 16), (1, 1), (7, 7), (1, 1), (7, 7), 0, 0),
    "avg7_global_f32": Case("avg", (1, 8, 7, 7, 8), (1, 1), (7, 7), (1, 1), (7, 7), 0, 0, elem=f32),
    "avg7_on6": Case("avg", (1, 4, 7, 7, 16), (1, 1), (7, 7), (1, 1), (6, 6), 0, 0, (0, 0, 1, 1)),
    # NCHW tiles (the op allows them; the tile pass converts to NC1HWC0 first)
    "nchw_max": Case("max", (1, 3, 9, 13), (4, 6), (3, 3), (2, 2), (12, 13), 5, 0, (0, 0, 1, 1)),
    "nchw_avg_f16": Case("avg", (1, 2, 6, 30), (4, 28), (3, 3), (1, 1), (28, 28), -1, -1, (1, 1, 1, 1)),
    "nchw_avg_f32": Case("avg", (1, 2, 6, 30), (4, 28), (3, 3), (1, 1), (28, 28), 24, -1, (1, 1, 1, 1), elem=f32),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vpool_matches_tile_interp(name: str) -> None:
    case = CASES[name]
    got, want, executed, ir_ops = simulate(case)
    check(case, got, want)
    assert np.isfinite(got.astype(np.float32)).all()
    if len(case.src) == 5:
        assert executed["V"] <= executed_bound(case), executed
        assert ir_ops <= 24, f"{ir_ops} vector ops in the IR: the window should be loops, not a stream"


@pytest.mark.parametrize("name", ["max3s2_ceil", "avg3s1p1_mid", "avg7_on6", "avg3s2p1_f32"])
def test_static_positions(name: str) -> None:
    """h, w as constants: the same results; interior tiles skip the clean copy."""
    case = CASES[name]
    got, want, _, _ = simulate(case, dynamic=False)
    check(case, got, want)


def test_static_interior_needs_no_clean_copy() -> None:
    case = CASES["max2s2"]
    kernel = pool_kernel(case, dynamic=False)
    assert not any(isinstance(o, isa.CopyUbToUbOp) for o in kernel.walk())
    kernel = pool_kernel(case, dynamic=True)
    assert sum(isinstance(o, isa.CopyUbToUbOp) for o in kernel.walk()) == 1


def test_uniform_average_is_one_scale() -> None:
    """A global 7x7 average with constant h, w divides by a scalar: no count map."""
    kernel = pool_kernel(CASES["avg7_global_f32"], dynamic=False)
    names = [o.name for o in kernel.walk() if isinstance(o, VECTOR_OPS)]
    assert "isa.vmuls" in names and "isa.vdiv" not in names
    kernel = pool_kernel(CASES["avg7_global_f32"], dynamic=True)
    names = [o.name for o in kernel.walk() if isinstance(o, VECTOR_OPS)]
    assert "isa.vdiv" in names and "isa.vmuls" not in names


def test_tiles_at_an_offset() -> None:
    case = CASES["avg3s2p1_bottom"]
    got, want, _, _ = simulate(case, src_at=64, dst_at=32)
    check(case, got, want)


def test_instructions_scale_with_kernel_positions_not_pixels() -> None:
    """Executed V instructions grow with kernel positions; doubling the row width at the
    same chunk count per row does not add instructions."""
    base = Case("max", (1, 1, 5, 40, 16), (2, 8), (3, 3), (2, 2), (40, 40), 10, 0)
    small = Case("max", (1, 1, 5, 40, 16), (2, 8), (2, 2), (2, 2), (40, 40), 10, 0)
    executed = {}
    for name, case in (("3x3", base), ("2x2", small)):
        got, want, counts, _ = simulate(case)
        check(case, got, want)
        executed[name] = counts["V"]
    # max is separable (isa_pool.separable_pass): kw - 1 row passes over the 5 rows read
    # and kh - 1 column passes over the output, one instruction each (8 pixels x the rows
    # in one instruction), plus the clean copy; no vdup
    assert executed == {"3x3": 2 + 2 + 1, "2x2": 1 + 1 + 1}


def test_separable_max_pool_takes_fewer_vector_cycles() -> None:
    """resnet50's 3x3 stride-2 pool: the row-then-column passes take fewer V cycles than a
    vdup and one pass per kernel position, with the same result (check)."""
    case = Case("max", (1, 2, 15, 57, 16), (7, 28), (3, 3), (2, 2), (112, 112), -1, -1, (1, 1, 1, 1))
    v_cycles = {}
    for name, on in (("separable", True), ("direct", False)):
        with pytest.MonkeyPatch.context() as mp:
            if not on:
                mp.setattr(isa_pool, "separable", lambda *a: False)
            kernel = compile_kernel(pool_kernel(case))
            x = source_data(case)
            y = np.zeros(math.prod(case.dst), numpy_dtype(case.elem))
            sim = Simulator(TARGET)
            stats = sim.run_kernel(kernel, [x.reshape(-1), y])
            check(case, y.reshape(case.dst), vpool_reference(x, case.out_hw, case.h, case.w, **case.params()))
            v_cycles[name] = stats.pipe_busy["V"]
    assert v_cycles["separable"] < 0.8 * v_cycles["direct"], v_cycles


def test_more_rows_are_repeats_not_instructions() -> None:
    few = Case("max", (1, 1, 5, 17, 16), (2, 8), (3, 3), (2, 2), (17, 17), 0, 0)
    many = Case("max", (1, 1, 33, 17, 16), (16, 8), (3, 3), (2, 2), (33, 17), 0, 0)
    counts = []
    for case in (few, many):
        got, want, executed, _ = simulate(case)
        check(case, got, want)
        counts.append(executed["V"])
    assert counts[0] == counts[1]


def test_unsupported_c0_is_a_clear_error() -> None:
    case = Case("max", (1, 1, 5, 9, 8), (2, 4), (3, 3), (2, 2), (9, 9), 0, 0)  # f16 with c0 = 8
    with pytest.raises(PoolLoweringError, match=r"tile.vpool.*c0 = 8"):
        pool_kernel(case)


# --------------------------------------------------------------------------------------
# Every vpool of the light models
# --------------------------------------------------------------------------------------


def model_pools(name: str, pipeline: str) -> list[Case]:
    from ge.frontend.onnx import import_model
    from ge.testing import light_model_path, with_random_weights

    with blobs.blob_scope():
        m = run_passes(import_model(with_random_weights(light_model_path(name))), pipeline)
        cases = []
        for op in m.walk():
            if isinstance(op, t.VPoolOp):
                cases.append(case_of(op))
    return cases


def case_of(op: t.VPoolOp) -> Case:
    src, dst = op.source.type, op.dest.type
    h, w = t._ints(op.in_size)
    pads = t._ints(op.pads)
    # an edge tile: the first window row starts at the top pad
    return Case(op.mode.data, tuple(src.get_shape()), tuple(dst.get_shape()[2:4]), t._ints(op.kernel),
                t._ints(op.strides), (h, w), -pads[0], -pads[1], pads, t._ints(op.dilations),
                op.count_include_pad is not None, src.element_type)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["f16", "f32"])
def test_every_light_model_pool(precision: str) -> None:
    from ge.testing import LIGHT_MODELS

    opt = "graph-optimize" if precision == "f16" else "graph-optimize{precision=must_keep_origin_dtype}"
    pipeline = f"{opt},assign-layouts,eliminate-trans-data,fuse,bufferize,tile"
    seen = 0
    for name in LIGHT_MODELS:
        for case in model_pools(name, pipeline):
            for h in sorted({case.h, case.in_size[0] - case.src[2] + case.pads[2]}):
                edge = Case(**{**case.__dict__, "h": h})
                got, want, _, _ = simulate(edge)
                check(edge, got, want)
                seen += 1
    assert seen > 40


@pytest.mark.parametrize("name", ["avg3s2p1_bottom", "nchw_avg_f32", "max3s2p1_top"])
def test_lowered_kernel_round_trips_as_text(name: str) -> None:
    from ge.ir import parse_module, print_module

    m = ModuleOp([pool_kernel(CASES[name])])
    m.attributes["ge.target"] = StringAttr(TARGET.name)
    text = print_module(m)
    assert "isa.copy_ub_to_ub" in text
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_scratch_bytes_cover_the_temporaries(name: str) -> None:
    from ge.lowering.isa_pool import scratch_bytes

    case = CASES[name]
    kernel = pool_kernel(case)
    temps = [o for o in kernel.walk() if isinstance(o, isa.BufferOp) and o.slots[0].name_hint.startswith("pool_")]
    assert temps
    declared = sum(o.slot_bytes(TARGET) for o in temps)
    assert scratch_bytes(vpool_op(case), TARGET) == declared
