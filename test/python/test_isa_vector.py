"""`tile.vector` -> isa vector instructions (lowering/isa_vector.py), run on the simulator.

Each case lowers one tile.vector region -- hand-written graph ops, or regions the real
pipeline (graph-optimize .. tile) makes from small ONNX graphs -- into an isa kernel around
it (GM -> UB copies, the lowering, UB -> GM copies) with a stand-in for the `to-isa`
context, runs plan-local-memory + insert-sync, simulates it and compares with the region's
reference result (ge.runtime.tile_interp.run_graph_block). Every run must leave the
simulator without problems (hazards, never-written reads, out-of-bounds accesses).

Tolerances, relative to the output's largest magnitude: f32 1e-5 (reductions sum in
another order than numpy); f16 2e-3 (two f16 roundings: both sides round each op once,
but an f16 op computed via other f32 steps -- BatchNorm's folded scale and shift -- can
land one f16 step away).
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ModuleOp, StringAttr, TensorType, f16, f32
from xdsl.ir import Block, Region

from ge import targets, testing
from ge.dialects import blobs, isa
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.frontend.onnx import import_model
from ge.ir import parse_module, run_passes
from ge.lowering.isa_builder import IsaBuilder
from ge.lowering.isa_vector import VectorLoweringError, lower_vector
from ge.runtime.simulator import Simulator
from ge.runtime.tile_interp import run_graph_block

TARGET = "ascend910"
F32, F16 = "must_keep_origin_dtype", "force_fp16"
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3}
PIPELINE = "graph-optimize{{precision={}}},assign-layouts,eliminate-trans-data,fuse,bufferize,tile"


# --------------------------------------------------------------------------------------
# Harness: a kernel around one tile.vector, simulated
# --------------------------------------------------------------------------------------


class FakeContext:
    """What `to-isa` hands the lowering: builder, target, the UB buffer of each operand."""

    def __init__(self, b: IsaBuilder, target: targets.Target, bufs: dict):
        self.b, self.target, self.bufs = b, target, bufs

    def buffer(self, v):
        return self.bufs[v], 0

    def index(self, v):
        raise AssertionError("tile.vector regions take no index operands")


def _count(v) -> int:
    return math.prod(v.type.get_shape())


def build_kernel(vop: t.VectorOp, target: str = TARGET) -> ModuleOp:
    """GM args -> flat UB buffers -> the lowering -> GM, planned and synchronized."""
    tgt = targets.load_target(target)
    ins, outs = list(vop.ins), list(vop.outs)
    types = [isa.buffer_type([_count(v)], v.type.element_type, isa.MemSpace.GM) for v in ins + outs]
    b = IsaBuilder.new_kernel("vec", types[:len(ins)], types[len(ins):])
    ub = {}
    for i, v in enumerate(ins + outs):
        if v not in ub:
            (ub[v],) = b.buffer(isa.MemSpace.UB, [_count(v)], v.type.element_type, name=f"io{i}")
    for v, a in zip(ins, b.args):
        b.add(isa.CopyGmToUbOp(a, ub[v], [_count(v)]))
    lower_vector(FakeContext(b, tgt, ub), vop)
    for v, a in zip(outs, b.args[len(ins):]):
        b.add(isa.CopyUbToGmOp(ub[v], a, [_count(v)]))
    module = ModuleOp([b.kernel])
    module.attributes["ge.target"] = StringAttr(target)
    module.verify()
    return run_passes(module, "plan-local-memory,insert-sync")


def random_args(vop: t.VectorOp, rng: np.random.Generator, positive: bool = False) -> list[np.ndarray]:
    """Standard normal inputs (positive ones with `positive`, and always for a variance)."""
    variances = {o.operands[4] for o in vop.body.block.ops if o.name == "graph.batch_norm"}
    for o in reversed(list(vop.body.block.ops)):
        if o.name == "graph.cast" and o.results[0] in variances:
            variances.add(o.operands[0])
    out = []
    for a in vop.body.block.args:
        x = rng.standard_normal(a.type.get_shape())
        x = np.abs(x) + 0.1 if positive or a in variances else x
        out.append(x.astype(numpy_dtype(a.type.element_type)))
    return out


class Result:
    """Simulated outputs, reference outputs, the kernel and the simulator's report."""

    def __init__(self, vop: t.VectorOp, args: list[np.ndarray], target: str = TARGET):
        self.vop = vop
        self.module = build_kernel(vop, target)
        self.kernel = next(op for op in self.module.walk() if isinstance(op, isa.KernelOp))
        self.want = run_graph_block(vop.body.block, {}, args)
        self.got = [np.zeros(_count(v), numpy_dtype(v.type.element_type)) for v in vop.outs]
        self.sim = Simulator(targets.load_target(target))
        self.sim.run_kernel(self.kernel, [a.reshape(-1) for a in args] + self.got)

    def errors(self) -> list[float]:
        """Max |got - want| / max |want| per output."""
        out = []
        for g, w in zip(self.got, self.want):
            w = np.asarray(w, np.float64).reshape(-1)
            scale = max(1e-6, float(np.abs(w).max()))
            out.append(float(np.abs(g.astype(np.float64) - w).max()) / scale)
        return out

    def vector_ops(self, name: str | None = None) -> list[isa._VectorOp]:
        return [op for op in self.kernel.walk() if isinstance(op, isa.VECTOR_OPS) and (name is None or op.name == name)]

    def region_tolerance(self) -> float:
        """The tolerance of the least precise float the region computes in: an f16 softmax
        cast to f32 carries f16 roundings (one f16 ulp of a small value is 4e-5 of the
        largest), so the f32 output's 1e-5 would test the reference's f16 rounding order."""
        floats = {np.dtype(numpy_dtype(r.type.element_type)) for op in self.vop.body.walk() for r in op.results
                  if isinstance(r.type, TensorType) and isinstance(r.type.element_type, AnyFloat)}
        floats |= {np.dtype(g.dtype) for g in self.got if g.dtype.kind == "f"}
        return max((TOL[d] for d in floats if d in TOL), default=0)

    def check(self) -> None:
        assert not self.sim.report.problems, self.sim.report.problems[:3]
        tol = self.region_tolerance() if self.got[0].dtype.kind == "f" else 0
        for g, w, e in zip(self.got, self.want, self.errors()):
            assert g.dtype == np.asarray(w).dtype
            assert e <= tol, f"relative error {e:.3g} > {tol}"
        for op in self.vector_ops():
            assert 1 <= op.repeats <= 255


def run_region(vop: t.VectorOp, seed: int = 0, positive: bool = False) -> Result:
    res = Result(vop, random_args(vop, np.random.default_rng(seed), positive))
    res.check()
    return res


# --------------------------------------------------------------------------------------
# Regions: hand-written graph ops, or from ONNX through the pipeline
# --------------------------------------------------------------------------------------


def region(text: str) -> t.VectorOp:
    """A tile.vector whose body is the graph function `text` (args -> ins, results -> outs)."""
    module = parse_module(text)
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    holder = Block(arg_types=[_ub_type(a.type) for a in fn.body.block.args]
                   + [_ub_type(ty) for ty in fn.function_type.outputs.data])
    body = fn.body.detach_block(0)
    ret = body.last_op
    values = list(ret.operands)
    body.erase_op(ret)
    body.add_op(t.YieldOp(*values))
    n = len(body.args)
    vop = t.VectorOp(holder.args[:n], holder.args[n:], Region(body))
    _KEEP.append((module, holder, vop))
    return vop


_KEEP: list = []  # parsed modules stay alive while their regions are used


def _ub_type(ty):
    from xdsl.dialects.builtin import MemRefType

    return MemRefType(ty.element_type, list(ty.get_shape()) or [1], memory_space=t.MemSpaceAttr(t.MemSpace.UB))


def _onnx(nodes, inputs, outputs, inits=(), opset: int = 17):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def pipeline_regions(mp, precision: str) -> list[t.VectorOp]:
    m = import_model(mp)
    run_passes(m, PIPELINE.format(precision))
    _KEEP.append(m)
    return [op for op in m.walk() if isinstance(op, t.VectorOp)]


def region_ops(vop: t.VectorOp) -> set[str]:
    return {o.name for o in vop.body.block.ops} - {"tile.yield"}


# --------------------------------------------------------------------------------------
# Elementwise: flat, broadcast on blocks, splat constants
# --------------------------------------------------------------------------------------


def test_flat_add_is_one_instruction_of_many_repeats():
    """64 x 32 f16 = 2048 elements = 16 repeats of 128: one vadd."""
    vop = region("""
    func.func @f(%x: tensor<64x32xf16>, %y: tensor<64x32xf16>) -> tensor<64x32xf16> {
      %z = graph.add %x, %y : (tensor<64x32xf16>, tensor<64x32xf16>) -> tensor<64x32xf16>
      func.return %z : tensor<64x32xf16>
    }""")
    res = run_region(vop)
    (add,) = res.vector_ops()
    assert add.name == "isa.vadd" and add.repeats == 2048 // 128 and add.mask is None
    np.testing.assert_array_equal(res.got[0], res.want[0].reshape(-1))  # one f16 rounding on both sides


def test_long_flat_op_splits_at_the_repeat_limit():
    """38440 f16 = 300 repeats of 128 elements + a 40-element tail: 255 + 45, then one
    masked repeat."""
    vop = region("""
    func.func @f(%x: tensor<38440xf16>) -> tensor<38440xf16> {
      %z = graph.relu %x : tensor<38440xf16>
      func.return %z : tensor<38440xf16>
    }""")
    res = run_region(vop)
    ops = res.vector_ops("isa.vrelu")
    assert [o.repeats for o in ops] == [255, 45, 1]
    assert [o.mask for o in ops[:2]] == [None] * 2 and ops[-1].mask.value.data == 38440 % 128


@pytest.mark.parametrize("elem", ["f32", "f16"])
def test_per_channel_vector_on_nc1hwc0_uses_block_stride_zero(elem):
    """[1, C1, P, 1, C0] + [1, C1, 1, 1, C0]: the bias block is read with block and repeat
    stride 0; every repeat is full (8 blocks), one instruction per C1 block (the ReLU after
    the add on the same pass: vaddrelu)."""
    c0 = 8 if elem == "f32" else 16
    x, bias = f"tensor<1x3x64x1x{c0}x{elem}>", f"tensor<1x3x1x1x{c0}x{elem}>"
    vop = region(f"""
    func.func @f(%x: {x}, %b: {bias}) -> {x} {{
      %z = graph.add %x, %b : ({x}, {bias}) -> {x}
      %r = graph.relu %z : {x}
      func.return %r : {x}
    }}""")
    res = run_region(vop)
    adds = res.vector_ops("isa.vaddrelu")
    assert len(adds) == 3 and not res.vector_ops("isa.vadd") and not res.vector_ops("isa.vrelu")
    for op in adds:
        assert isa.ints(op.blk_stride)[2] == 0 and isa.ints(op.rep_stride)[2] == 0
        assert op.mask.value.data == 256 // (4 if elem == "f32" else 2)
    assert sum(o.repeats for o in adds) == 3 * 64 * c0 * (4 if elem == "f32" else 2) // 256


def test_f32_accumulator_plus_f16_bias_cast_chain():
    """The conv epilogue of force_fp16: cast bias up, add to the f32 accumulator (C0 = 16
    lanes are two f32 blocks), cast down, relu."""
    vop = region("""
    func.func @f(%acc: tensor<1x3x96x1x16xf32>, %b: tensor<1x3x1x1x16xf16>) -> tensor<1x3x96x1x16xf16> {
      %0 = graph.cast %b : tensor<1x3x1x1x16xf16> to tensor<1x3x1x1x16xf32>
      %1 = graph.add %acc, %0 : (tensor<1x3x96x1x16xf32>, tensor<1x3x1x1x16xf32>) -> tensor<1x3x96x1x16xf32>
      %2 = graph.cast %1 : tensor<1x3x96x1x16xf32> to tensor<1x3x96x1x16xf16>
      %r = graph.relu %2 : tensor<1x3x96x1x16xf16>
      func.return %r : tensor<1x3x96x1x16xf16>
    }""")
    res = run_region(vop)
    adds = res.vector_ops("isa.vadd")
    # one instruction per (C1 block, f32 half of C0) with 8 pixels per repeat: full repeats
    assert len(adds) == 6 and all(o.mask.value.data == 64 for o in adds)
    np.testing.assert_array_equal(res.got[0], res.want[0].reshape(-1))


@pytest.mark.parametrize("shape,other", [
    ("16x64", "64"),        # row vector: repeat stride 0
    ("8x64", "8x1"),        # per-row scalar: spread to one block per row
    ("1x1x8x64", "1x1x1x64"),
    ("4x32x16", "1"),       # one-element tensor (encoder's scale)
    ("3x10", "10"),         # rows off the block grid: broadcast in full
    ("5x7", "5x1"),
    ("6x3x8", "6x1x8"),
])
@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_broadcast_binary(op, shape, other, elem):
    x, y = f"tensor<{shape}x{elem}>", f"tensor<{other}x{elem}>"
    vop = region(f"""
    func.func @f(%x: {x}, %y: {y}) -> {x} {{
      %z = graph.{op} %y, %x : ({y}, {x}) -> {x}
      func.return %z : {x}
    }}""")
    run_region(vop, positive=op == "div")


@pytest.mark.parametrize("cols,rows", [(192, 128), (320, 40), (4160, 3)])
def test_row_vector_against_rows_of_several_repeats(cols, rows):
    """A bias row against rows of 1.5 (2.5) f16 repeats: one instruction per column of a
    repeat with the rows on its repeat axis (repeat stride: the row's blocks; the bias
    row's 0), the last column under a mask; rows 260 blocks apart (more than a repeat
    stride holds) go row by row."""
    x, y = f"tensor<{rows}x{cols}xf16>", f"tensor<{cols}xf16>"
    vop = region(f"""
    func.func @f(%x: {x}, %y: {y}) -> {x} {{
      %z = graph.add %x, %y : ({x}, {y}) -> {x}
      func.return %z : {x}
    }}""")
    res = run_region(vop)
    adds = res.vector_ops("isa.vadd")
    columns = -(-cols // 128)
    if cols * 2 // 32 > 255:
        assert len(adds) == rows * 2  # per row: its 32 whole repeats, then the 64-element tail
        assert sorted(o.repeats for o in adds) == [1] * rows + [cols // 128] * rows
    else:
        assert len(adds) == columns
        assert all(o.repeats == rows for o in adds)
        assert [tuple(isa.ints(o.rep_stride)) for o in adds] == [(cols // 16, cols // 16, 0)] * columns
        assert adds[-1].mask.value.data == (cols % 128 or 128)
    np.testing.assert_array_equal(res.got[0], res.want[0].reshape(-1))


def test_sum_of_three_and_mean():
    ty = "tensor<4x64xf32>"
    vop = region(f"""
    func.func @f(%a: {ty}, %b: {ty}, %c: tensor<64xf32>) -> ({ty}, {ty}) {{
      %s = graph.sum %a, %b, %c : ({ty}, {ty}, tensor<64xf32>) -> {ty}
      %m = graph.mean %a, %b : ({ty}, {ty}) -> {ty}
      func.return %s, %m : {ty}, {ty}
    }}""")
    run_region(vop)


def test_splat_constants_fold_into_scalar_instructions():
    ty = "tensor<8x64xf16>"
    vop = region(f"""
    func.func @f(%x: {ty}) -> {ty} {{
      %two = graph.constant dense<2.0> : tensor<f16>
      %three = graph.constant dense<3.0> : tensor<1xf16>
      %a = graph.add %x, %two : ({ty}, tensor<f16>) -> {ty}
      %b = graph.mul %a, %three : ({ty}, tensor<1xf16>) -> {ty}
      %c = graph.sub %b, %two : ({ty}, tensor<f16>) -> {ty}
      %d = graph.div %c, %three : ({ty}, tensor<1xf16>) -> {ty}
      %e = graph.sub %two, %d : (tensor<f16>, {ty}) -> {ty}
      func.return %e : {ty}
    }}""")
    res = run_region(vop)
    names = collections.Counter(o.name for o in res.vector_ops())
    assert names["isa.vadds"] == 2 and names["isa.vmuls"] == 2  # x + 2, * 3, - 2, / 3 as * (1 / 3)
    assert names["isa.vdiv"] == 0  # a float division by a constant is a multiply by its reciprocal
    assert names["isa.vdup"] == 1  # the constant 2 (minuend) as one block


@pytest.mark.parametrize("elem", ["f16", "f32"])
def test_division_by_a_one_value_operand_is_a_reciprocal_and_a_multiply(elem):
    # a Cube epilogue gets its constants as one-element UB inputs (not graph.constant):
    # x / c is one vrec of c's block and a vmul per repeat, not a vdiv (2-4x a vmul)
    ty = f"tensor<96x64x{elem}>"
    vop = region(f"""
    func.func @f(%x: {ty}, %c: tensor<{elem}>) -> {ty} {{
      %y = graph.div %x, %c : ({ty}, tensor<{elem}>) -> {ty}
      func.return %y : {ty}
    }}""")
    res = run_region(vop, positive=True)
    names = collections.Counter(o.name for o in res.vector_ops())
    assert names["isa.vdiv"] == 0 and names["isa.vrec"] == 1 and names["isa.vmul"] >= 1


def test_non_splat_constant_is_refused_by_name():
    vop = region("""
    func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
      %w = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
      %y = graph.add %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
      func.return %y : tensor<2x8xf32>
    }""")
    with pytest.raises(VectorLoweringError, match=r"graph\.constant %w.*non-splat"):
        build_kernel(vop)


def test_unsupported_ops_are_listed_together():
    vop = region("""
    func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
      %a = graph.sin %x : tensor<2x8xf32>
      %b = graph.relu %a : tensor<2x8xf32>
      %c = graph.cos %b : tensor<2x8xf32>
      func.return %c : tensor<2x8xf32>
    }""")
    with pytest.raises(VectorLoweringError, match=r"2 op\(s\).*graph\.sin %a.*graph\.cos %c"):
        build_kernel(vop)


UNARY_CASES = [
    ("relu", ""), ("abs", ""), ("neg", ""), ("exp", ""), ("tanh", ""), ("erf", ""), ("sigmoid", ""),
    ("log", "positive"), ("sqrt", "positive"), ("reciprocal", "positive"), ("softplus", ""), ("softsign", ""),
    ("clip", "{min = -0.5 : f32, max = 0.75 : f32}"), ("leaky_relu", "{alpha = 0.1 : f32}"),
    ("gelu", ""), ("gelu", '{approximate = "tanh"}'), ("hard_sigmoid", "{alpha = 0.2 : f32, beta = 0.5 : f32}"),
    ("hard_swish", ""),
]


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("name,attrs", UNARY_CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(UNARY_CASES)])
def test_unary(name, attrs, elem):
    ty = f"tensor<5x100x{elem}>"
    props = "" if attrs in ("", "positive") else " " + attrs
    vop = region(f"""
    func.func @f(%x: {ty}) -> {ty} {{
      %y = graph.{name} %x{props} : {ty}
      func.return %y : {ty}
    }}""")
    run_region(vop, positive=attrs == "positive")


@pytest.mark.parametrize("exponent", ["2.0", "0.5", "3.0", "1.5"])
def test_pow_by_constant(exponent):
    ty = "tensor<4x40xf32>"
    vop = region(f"""
    func.func @f(%x: {ty}) -> {ty} {{
      %p = graph.constant dense<{exponent}> : tensor<f32>
      %y = graph.pow %x, %p : ({ty}, tensor<f32>) -> {ty}
      func.return %y : {ty}
    }}""")
    run_region(vop, positive=True)


# --------------------------------------------------------------------------------------
# Reductions on rows
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("shape,axis", [((1, 1000), 1), ((8, 64), 1), ((3, 100), 1), ((1, 1, 8, 64), 3),
                                        ((4, 6, 5), 1), ((300, 16), 1)])
def test_softmax_and_log_softmax(shape, axis, elem):
    ty = f"tensor<{'x'.join(map(str, shape))}x{elem}>"
    vop = region(f"""
    func.func @f(%x: {ty}) -> ({ty}, {ty}) {{
      %y = graph.softmax %x {{axis = {axis} : i64}} : {ty}
      %z = graph.log_softmax %x {{axis = {axis} : i64}} : {ty}
      func.return %y, %z : {ty}, {ty}
    }}""")
    res = run_region(vop, seed=1)
    if shape == (1, 1000):  # one row: whole repeats along it, not 16 chunks per op
        assert len(res.vector_ops("isa.vexp")) <= 4


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("shape,param", [("4x128", "128"), ("3x10", "10"), ("2x3x40", "40"), ("2x3x40", "3x40")])
def test_layer_norm(shape, param, elem):
    axis = len(shape.split("x")) - len(param.split("x"))
    x, p = f"tensor<{shape}x{elem}>", f"tensor<{param}x{elem}>"
    vop = region(f"""
    func.func @f(%x: {x}, %g: {p}, %b: {p}) -> {x} {{
      %y = graph.layer_norm %x, %g, %b {{axis = {axis} : i64, epsilon = 1.000000e-05 : f32}} : ({x}, {p}, {p}) -> {x}
      func.return %y : {x}
    }}""")
    run_region(vop, seed=2)


@pytest.mark.parametrize("shape", [(64, 128), (13, 24), (100, 64), (9, 1000)])
def test_softmax_reduces_rows_without_a_vreduce_per_row(shape):
    # many rows: each row folded to one block (8 rows per full-width repeat), that block
    # column transposed by one copy and halved three times -- no vreduce (14 cycles per row);
    # the division is one vrec per row and a vmul; partial groups of 8 rows (13, 9) and a
    # partial last chunk (1000 = 15 x 64 + 40) run through the masks
    ty = f"tensor<{shape[0]}x{shape[1]}xf32>"
    vop = region(f"""
    func.func @f(%x: {ty}) -> {ty} {{
      %y = graph.softmax %x {{axis = 1 : i64}} : {ty}
      func.return %y : {ty}
    }}""")
    res = run_region(vop, seed=3)
    names = collections.Counter(o.name for o in res.vector_ops())
    assert names["isa.vdiv"] == 0 and names["isa.vrec"] >= 1
    if shape[0] >= 13:
        assert names["isa.vreduce_max"] == 0 and names["isa.vreduce_sum"] == 0
    else:  # 9 rows: a vreduce per row is cheaper than the transposition's dependent steps
        assert names["isa.vreduce_max"] == 1 and names["isa.vreduce_sum"] == 1


def test_wide_rows_fold_by_halving():
    # rows of 768 (96 blocks): one group reduction over the whole rows (vcgadd, a value per
    # block: 192 repeats), those 12 blocks of values per row folded onto 8 (one grid op: two
    # instructions with 8 rows on the blocks of a repeat, block stride = the 12 blocks), a
    # vcgadd per row (8 blocks) and one over a block of each of 8 rows -- not a chain of
    # halvings; the row ops: 8 rows per instruction, the repeats along the row
    x, p = "tensor<16x768xf32>", "tensor<768xf32>"
    vop = region(f"""
    func.func @f(%x: {x}, %g: {p}, %b: {p}) -> {x} {{
      %y = graph.layer_norm %x, %g, %b {{axis = 1 : i64, epsilon = 1.000000e-05 : f32}} : ({x}, {p}, {p}) -> {x}
      func.return %y : {x}
    }}""")
    res = run_region(vop, seed=4)
    assert [op.repeats for op in res.vector_ops("isa.vcgadd")] == [192, 16, 2] * 2  # mean, then variance
    adds = res.vector_ops("isa.vadd")
    assert len(adds) == 2 * 2 + 2  # one fold (2 instructions) per reduction, the bias add's 2
    assert all(op.repeats == 4 and list(op.blk_stride.get_values()) == [12, 12, 12] for op in adds[:4])
    assert not res.vector_ops("isa.vreduce_sum")
    # the per-row and per-column row ops: 8 rows per instruction, the repeats along the row
    for name in ("isa.vsub", "isa.vmul"):
        ops = [op for op in res.vector_ops(name) if op.repeats > 1]
        assert ops and all(op.repeats in (96, 192) for op in ops)
    assert sum(op.repeats for op in res.vector_ops("isa.vsub")) == 16 * 768 // 64


def test_f16_layer_norm_scales_in_f16():
    # f16 rows, parameters and result (BERT's LayerNorm): mean and variance in f32, the
    # normalized rows rounded into the f16 result and the scale and bias applied there --
    # half the repeats, and no f32 copies of the parameters (two vconvs: in and out)
    x, p = "tensor<16x768xf16>", "tensor<768xf16>"
    vop = region(f"""
    func.func @f(%x: {x}, %g: {p}, %b: {p}) -> {x} {{
      %y = graph.layer_norm %x, %g, %b {{axis = 1 : i64, epsilon = 1.000000e-05 : f32}} : ({x}, {p}, {p}) -> {x}
      func.return %y : {x}
    }}""")
    res = run_region(vop, seed=6)
    assert res.errors()[0] < 1e-3
    f16_ops = [op for op in res.vector_ops() if op.buffer("dst").type.element_type == f16 and op.name != "isa.vconv"]
    assert sorted(op.name for op in f16_ops) == ["isa.vadd", "isa.vadd", "isa.vmul", "isa.vmul"]
    assert sum(op.repeats for op in f16_ops) == 2 * 16 * 768 // 128
    assert len(res.vector_ops("isa.vconv")) == 2


def _layer_norm_f16(rows: int = 16) -> t.VectorOp:
    x, p = f"tensor<{rows}x768xf16>", "tensor<768xf16>"
    return region(f"""
    func.func @f(%x: {x}, %g: {p}, %b: {p}) -> {x} {{
      %y = graph.layer_norm %x, %g, %b {{axis = 1 : i64, epsilon = 1.000000e-05 : f32}} : ({x}, {p}, {p}) -> {x}
      func.return %y : {x}
    }}""")


def test_f16_layer_norm_sums_x_and_squares_in_lockstep():
    # f16 rows (BERT's LayerNorms): one pass as onnxruntime's -- the squares first, then the
    # sums of x and x^2 reduced side by side (each step: x's instructions, then the
    # squares'; group reductions, no vreduce), var = E[x^2] - mean^2 >= 0, one vrsqrt
    res = run_region(_layer_norm_f16(8), seed=7)
    assert res.errors()[0] < 1e-3
    ops = res.vector_ops()
    names = [op.name for op in ops]
    assert names.index("isa.vmul") < names.index("isa.vcgadd")  # x^2 before any reduction
    assert "isa.vreduce_sum" not in names
    cg = res.vector_ops("isa.vcgadd")
    assert [op.repeats for op in cg] == [96, 96, 8, 8, 1, 1]
    x_rows, squares = cg[0].buffer("src"), cg[1].buffer("src")
    assert x_rows is not squares and squares is ops[names.index("isa.vmul")].buffer("dst")
    folds = [op for op in ops[:names.index("isa.vmuls")] if op.name == "isa.vadd"]
    assert len(folds) == 2 and folds[0].buffer("src0") is cg[0].buffer("dst")  # 12 -> 8 blocks per side
    assert folds[1].buffer("src0") is cg[1].buffer("dst")
    assert names.count("isa.vrsqrt") == 1 and "isa.vsqrt" not in names and "isa.vrec" not in names
    assert names.count("isa.vmaxs") == 1  # the variance kept >= 0 (>= eps after adding eps)


def test_f16_layer_norm_16_rows_fold_block_columns_side_by_side():
    # 16 rows: the two sums' group reductions side by side (each step's start-up shared), no
    # vreduce per row and no transposing copy of a block column
    res = run_region(_layer_norm_f16(16), seed=7)
    assert res.errors()[0] < 1e-3
    names = [op.name for op in res.kernel.walk() if op.name.startswith("isa.v") or op.name == "isa.copy_ub_to_ub"]
    assert "isa.vreduce_sum" not in names and "isa.copy_ub_to_ub" not in names
    cg = [i for i, n in enumerate(names) if n == "isa.vcgadd"]
    assert len(cg) == 6 and cg[1] == cg[0] + 1  # the x and x^2 passes over the rows adjacent


def test_f16_layer_norm_one_pass_keeps_a_large_mean():
    # rows whose mean is 30x their spread: E[x^2] - mean^2 cancels ~10 bits of f32, still
    # below the f16 inputs' own rounding (the result within the f16 tolerance)
    vop = _layer_norm_f16(8)
    rng = np.random.default_rng(8)
    args = random_args(vop, rng)
    args[0] = (rng.standard_normal(args[0].shape) + 30).astype(np.float16)
    res = Result(vop, args)
    res.check()
    assert res.errors()[0] < 2e-3


def test_f16_softmax_max_and_scale_in_f16():
    # the attention softmax (a mask added to f16 scores): the row max is taken on the f16
    # sums in place (exact), the exponentials are rounded into the f16 result before their
    # f32 sum folds in place, and the last multiply runs on f16 (half the repeats)
    x, m = "tensor<64x128xf16>", "tensor<128xf16>"
    vop = region(f"""
    func.func @f(%x: {x}, %m: {m}) -> {x} {{
      %a = graph.add %x, %m : ({x}, {m}) -> {x}
      %y = graph.softmax %a {{axis = 1 : i64}} : {x}
      func.return %y : {x}
    }}""")
    res = run_region(vop, seed=5)

    def elem(op):
        return op.buffer("dst").type.element_type

    maxes = res.vector_ops("isa.vmax")
    assert maxes and all(elem(op) == f16 for op in maxes)
    muls = res.vector_ops("isa.vmul")
    assert [elem(op) for op in muls] == [f16] and sum(op.repeats for op in muls) == 64 * 128 // 128
    adds = [elem(op) for op in res.vector_ops("isa.vadd")]  # the mask, then the sum's folds in f32
    assert adds[0] == f16 and len(adds) > 1 and set(adds[1:]) == {f32}
    # no fold scratch: the f32 buffers are the rows and per-row values
    rows = [b for b in res.kernel.walk() if isinstance(b, isa.BufferOp) and b.results[0].type.element_type == f32]
    assert max(isa.num_elements(b.results[0].type) for b in rows) == 64 * 128
    assert sum(isa.num_elements(b.results[0].type) for b in rows) < 64 * 128 + 2048


@pytest.mark.parametrize("kind", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("axes,keep", [("1", True), ("0, 2", False), ("2", False)])
def test_reduce(kind, axes, keep):
    x = "tensor<6x70x9xf32>"
    dims = [int(a) for a in axes.split(",")]
    out = [1 if i in dims else d for i, d in enumerate((6, 70, 9))] if keep else [
        d for i, d in enumerate((6, 70, 9)) if i not in dims]
    y = f"tensor<{'x'.join(map(str, out))}xf32>"
    kd = ", keepdims" if keep else ""
    vop = region(f"""
    func.func @f(%x: {x}) -> {y} {{
      %y = graph.{kind} %x {{axes = array<i64: {axes}>{kd}}} : ({x}) -> {y}
      func.return %y : {y}
    }}""")
    run_region(vop)


# --------------------------------------------------------------------------------------
# Regions from ONNX graphs through the pipeline
# --------------------------------------------------------------------------------------


def _check_all(regions, want_ops: set[str], **kw) -> None:
    seen = set()
    for vop in regions:
        run_region(vop, **kw)
        seen |= region_ops(vop)
    assert want_ops <= seen, f"the pipeline made no region with {want_ops - seen}"


@pytest.mark.parametrize("precision", [F32, F16])
def test_conv_epilogue_with_residual(precision):
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 16, 3, 3], rng.standard_normal(16 * 16 * 9) * 0.1)
    b = helper.make_tensor("b", TensorProto.FLOAT, [16], rng.standard_normal(16))
    mp = _onnx([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("Add", ["c", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
               [_vi("x", [1, 16, 12, 12])], [_vi("y", [1, 16, 12, 12])], [w, b])
    _check_all(pipeline_regions(mp, precision), {"graph.add", "graph.relu", "layout.trans_data"})


@pytest.mark.parametrize("precision", [F32, F16])
def test_batch_norm_lrn_and_global_pool(precision):
    rng = np.random.default_rng(1)
    c = 24
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [c], v) for n, v in (
        ("s", rng.standard_normal(c)), ("bb", rng.standard_normal(c)), ("m", rng.standard_normal(c)),
        ("v", np.abs(rng.standard_normal(c)) + 0.5))]
    mp = _onnx([helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["n"]),
                helper.make_node("Relu", ["n"], ["r"]),
                helper.make_node("LRN", ["r"], ["l"], size=5, alpha=1e-2, beta=0.75, bias=1.0),
                helper.make_node("MaxPool", ["l"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                helper.make_node("GlobalAveragePool", ["p"], ["y"])],
               [_vi("x", [1, c, 14, 14])], [_vi("y", [1, c, 1, 1])], inits)
    _check_all(pipeline_regions(mp, precision), {"graph.batch_norm", "graph.lrn", "graph.global_avg_pool"})


@pytest.mark.parametrize("shape", [(1, 1, 5, 7), (2, 3, 5, 7), (1, 2, 8, 8)], ids=["one_row", "six_rows", "8x8"])
def test_global_max_pool_halves_f16_pixel_blocks(shape):
    """A max pool keeps f16 (no f32 accumulator): its halvings count f16 elements per
    repeat (128) and f16 blocks per row (16 elements), not the f32 rows' 64 and 8 -- those
    read past the buffer (insert-sync refused [288, 800) of 560 elements for 5 x 7 pixels)
    or strode two rows at a time."""
    n, c1, h, w = shape
    enc = f"#layout.fmt<NC1HWC0, origin NCHW [{n}, {c1 * 16}, {h}, {w}]>"
    x = f"tensor<{n}x{c1}x{h}x{w}x16xf16, {enc}>"
    y = f"tensor<{n}x{c1}x1x1x16xf16, #layout.fmt<NC1HWC0, origin NCHW [{n}, {c1 * 16}, 1, 1]>>"
    vop = region(f"""
    func.func @f(%x: {x}) -> {y} {{
      %p = graph.global_max_pool %x : ({x}) -> {y}
      func.return %p : {y}
    }}""")
    res = run_region(vop)
    maxes = res.vector_ops("isa.vmax")
    assert maxes and all(op.repeats * 128 <= n * c1 * h * w * 16 for op in maxes)
    if n * c1 > 1:  # a row is h * w f16 blocks: the rows' repeat or block stride, or one row per instruction
        assert all(h * w in (isa.ints(op.rep_stride)[0], isa.ints(op.blk_stride)[0])
                   or (isa.ints(op.blk_stride)[0] == 1 and isa.ints(op.rep_stride)[0] == 8) for op in maxes)


def test_global_pool_halvings_span_all_rows():
    # NC1HWC0 [16, 8, 7, 7, 16] f16 (resnet50's pool at batch 16 in small): each halving of the
    # 49 pixel blocks runs over all the tile's (n, c1) rows at once (repeat stride = one row of
    # 49 x 16 f32 = 98 blocks) at static offsets -- not a loop of one instruction per row,
    # whose dynamic offsets made insert-sync order every instruction after the previous one
    mp = _onnx([helper.make_node("GlobalAveragePool", ["x"], ["y"])], [_vi("x", [16, 128, 7, 7])],
               [_vi("y", [16, 128, 1, 1])])
    (vop,) = [v for v in pipeline_regions(mp, F16) if "graph.global_avg_pool" in region_ops(v)]
    res = run_region(vop)
    adds = res.vector_ops("isa.vadd")
    rows = math.prod(vop.ins[0].type.get_shape()[:2])
    assert rows > 1 and all(isa.static_index(op.offset_of("src1")) is not None for op in adds)
    # every instruction of a halving covers several rows (no instruction per (row, chunk)):
    # at most the 14 chunk folds (49 -> 25 -> 13 -> 7 -> 4 -> 2 -> 1 pixels, chunks of 4
    # pixels) on no more repeats than one per row and chunk
    chunks = 6 + 3 + 2 + 1 + 1 + 1
    assert len(adds) <= chunks and sum(op.repeats for op in adds) <= chunks * rows


@pytest.mark.parametrize("precision", [F32, F16])
def test_channel_shuffle_transpose(precision):
    mp = _onnx([helper.make_node("Reshape", ["x", "s1"], ["a"]),
                helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3, 4]),
                helper.make_node("Reshape", ["b", "s2"], ["y"])],
               [_vi("x", [1, 24, 6, 6])], [_vi("y", [1, 24, 6, 6])],
               [helper.make_tensor("s1", TensorProto.INT64, [5], [1, 3, 8, 6, 6]),
                helper.make_tensor("s2", TensorProto.INT64, [4], [1, 24, 6, 6])])
    _check_all(pipeline_regions(mp, precision), {"graph.transpose"})


def test_trans_data_both_ways_with_partial_c0_blocks():
    """NCHW -> NC1HWC0 with 20 channels (a partial C0 block, padded with zeros) and back."""
    for fine, plain in (("1x2x3x5x16xf16", "1x20x3x5xf16"), ("1x3x2x4x8xf32", "1x20x2x4xf32")):
        enc = f"#layout.fmt<NC1HWC0, origin NCHW [1, 20, {plain.split('x')[2]}, {plain.split('x')[3]}]>"
        f_ty, p_ty = f"tensor<{fine}, {enc}>", f"tensor<{plain}>"
        vop = region(f"""
        func.func @f(%x: {p_ty}) -> {p_ty} {{
          %a = layout.trans_data %x : {p_ty} to {f_ty}
          %r = graph.relu %a : {f_ty}
          %b = layout.trans_data %r : {f_ty} to {p_ty}
          func.return %b : {p_ty}
        }}""")
        run_region(vop)


def test_fractal_nz_trans_data():
    enc = "#layout.fmt<FRACTAL_NZ, origin ND [2, 20, 40]>"
    f_ty, p_ty = f"tensor<2x3x2x16x16xf16, {enc}>", "tensor<2x20x40xf16>"
    vop = region(f"""
    func.func @f(%x: {p_ty}) -> {p_ty} {{
      %a = layout.trans_data %x : {p_ty} to {f_ty}
      %b = layout.trans_data %a : {f_ty} to {p_ty}
      func.return %b : {p_ty}
    }}""")
    run_region(vop)


def test_encoder_layer_regions():
    with blobs.blob_scope():
        for precision in (F32, F16):
            regions = pipeline_regions(testing.encoder_layer_model(), precision)
            _check_all(regions, {"graph.softmax", "graph.layer_norm", "graph.erf", "graph.div"})


# --------------------------------------------------------------------------------------
# Every tile.vector of the light models and the encoder layer
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_region_of_the_light_models():
    """Each distinct tile.vector (by printed text) of the nine light models and the encoder
    layer, f32 and force_fp16, against the reference on random inputs."""
    import io

    from xdsl.printer import Printer

    seen: set[str] = set()
    worst: dict[tuple[str, str], float] = collections.defaultdict(float)
    rng = np.random.default_rng(0)
    ratio, instrs = (0.0, []), (0, [])
    for name in (*testing.LIGHT_MODELS, "encoder"):
        for precision in (F32, F16):
            with blobs.blob_scope():
                model = testing.encoder_layer_model() if name == "encoder" else testing.with_random_weights(
                    testing.light_model_path(name))
                m = import_model(model)
                run_passes(m, PIPELINE.format(precision))
                for vop in (op for op in m.walk() if isinstance(op, t.VectorOp)):
                    text = io.StringIO()
                    Printer(stream=text).print_op(vop)
                    if text.getvalue() in seen:
                        continue
                    seen.add(text.getvalue())
                    res = Result(vop, random_args(vop, rng))
                    res.check()
                    for kind in region_ops(vop):
                        worst[(kind, precision)] = max(worst[(kind, precision)], max(res.errors()))
                    temps = sum(isa.nbytes(op.type) for op in res.kernel.walk()
                                if isinstance(op, isa.BufferOp) and op.slots[0].name_hint.startswith("vt"))
                    io_bytes = sum(isa.nbytes(op.type) for op in res.kernel.walk()
                             if isinstance(op, isa.BufferOp) and op.slots[0].name_hint.startswith("io"))
                    ratio = max(ratio, (temps / io_bytes, sorted(region_ops(vop))))
                    instrs = max(instrs, (len(res.vector_ops()), sorted(region_ops(vop))))
    print(f"\n{len(seen)} distinct regions; most temporary UB / in+out UB {ratio}; most instructions {instrs}")
    for (kind, precision), err in sorted(worst.items()):
        print(f"  {kind:28s} {precision:24s} worst relative error {err:.2e}")
    assert len(seen) > 900


def test_dead_temporaries_are_reused_in_place():
    """A chain of elementwise ops needs one temporary: each op overwrites the operand that
    dies with it, and the last one writes the out buffer."""
    ty = "tensor<16x64xf32>"
    vop = region(f"""
    func.func @f(%x: {ty}) -> {ty} {{
      %a = graph.relu %x : {ty}
      %b = graph.exp %a : {ty}
      %c = graph.tanh %b : {ty}
      %d = graph.abs %c : {ty}
      %e = graph.neg %d : {ty}
      func.return %e : {ty}
    }}""")
    res = run_region(vop)
    temps = [op for op in res.kernel.walk() if isinstance(op, isa.BufferOp) and op.slots[0].name_hint.startswith("vt")]
    assert len(temps) == 1


def test_operands_read_after_the_first_step_are_not_overwritten():
    """sum(a, b, c) and c^3 with dying temporaries: the result must not take the buffer of
    an operand that a later instruction of the same op still reads."""
    ty = "tensor<8x64xf32>"
    vop = region(f"""
    func.func @f(%x: {ty}, %y: {ty}, %z: {ty}) -> ({ty}, {ty}) {{
      %a = graph.relu %x : {ty}
      %b = graph.relu %y : {ty}
      %c = graph.relu %z : {ty}
      %three = graph.constant dense<3.0> : tensor<f32>
      %p = graph.pow %c, %three : ({ty}, tensor<f32>) -> {ty}
      %s = graph.sum %a, %b, %p : ({ty}, {ty}, {ty}) -> {ty}
      %d = graph.relu %s : {ty}
      func.return %d, %s : {ty}, {ty}
    }}""")
    run_region(vop)
