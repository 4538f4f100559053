"""The compile's faster paths build what the plain ones build (issue 17).

- `_plan_cube` keeps its candidates by tiling (`tile_cube._Candidates`): the same
  candidates, in the same scan order, as the plain list of `cube_cost` arguments; the
  search picks the same one from either form; `sizes` is the same split in two.
- `InstructionOp.__init__` / `LaunchOp.__init__` skip IRDL's argument checks for plain
  operand groups: the op equals IRDL's (operands, segment sizes, properties in order) and
  a wrong argument still gets IRDL's error.
- `dialects/lazy_format.py` compiles an op's assembly format on first use: the op prints
  and parses as with xDSL's eager format, and the OpDef keeps the format string.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, MemRefType, f16, f32
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.test_value import create_ssa_value

from ge.dialects import isa
from ge.dialects.interning import intern_scope
from ge.lowering import tile_cube

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_search_speed import spied_searches


def _conv_model():
    """A 3x3 conv + ReLU then a 1x1 conv whose epilogue adds the input (a ResNet block's two kinds)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((64, 64, 1, 1)) / 8).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]), helper.make_node("Add", ["c2", "x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 28, 28])], [w1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def searches():
    """(problem, machine, candidates, chosen index and cost) of every Cube plan search."""
    return spied_searches((_conv_model(), soc) for soc in ("ascend910", "ascend910b"))


def test_candidates_are_the_plain_scan_in_order(searches):
    assert len(searches) >= 4
    for p, mach, found, _, _ in searches:
        plain = list(found)
        assert len(plain) == len(found) > 100
        assert all(found[j] == plain[j] for j in range(0, len(plain), 7))
        assert found[-1] == plain[-1]
        with pytest.raises(IndexError):
            found[len(plain)]
        # one tiling = a run sharing its `_Sizes`; its schedules are those of its tile shape
        again = tile_cube._Candidates.of(plain)
        assert [t[:-1] for t in again.tilings] == [t[:-1] for t in found.tilings]
        assert list(again) == plain
        for tm, tn, tk, kl1, _, _, _, _, _, _, s, _, whole in plain[:: max(1, len(plain) // 50)]:
            assert s == tile_cube.sizes(p, tm, tn, tk, kl1, tile_cube._fixed(p, mach.target), whole, s.epi_split)


def test_the_search_picks_the_same_from_a_plain_list(searches):
    for p, mach, found, i, cyc in searches:
        assert tile_cube._cheapest(p, mach, list(found)) == (i, cyc)


def _buffer(space: isa.MemSpace, shape, elem=f16):
    return create_ssa_value(isa.buffer_type(shape, elem, space))


def _irdl(cls: type[IRDLOperation], **kwargs) -> IRDLOperation:
    """The op as IRDL's own constructor builds it."""
    op = cls.__new__(cls)
    IRDLOperation.__init__(op, **kwargs)
    return op


def _same(a: IRDLOperation, b: IRDLOperation) -> None:
    assert type(a) is type(b)
    assert list(a.operands) == list(b.operands)
    assert list(a.properties.items()) == list(b.properties.items())  # the same order too
    assert a.attributes == b.attributes and not a.results and not b.results
    a.verify()  # (a fresh op outside a module: its own checks)


def test_instruction_constructor_builds_irdls_op():
    with intern_scope():
        ub, l0c = _buffer(isa.MemSpace.UB, [256], f32), _buffer(isa.MemSpace.L0C, [16, 64], f32)
        off = create_ssa_value(IndexType())
        for dst_offset in (None, off):
            fast = isa.BroadcastUbToL0cOp(ub, l0c, 4, 1, 0, 0, dst_offset=dst_offset)
            props = {"count": fast.count, "len": fast.len_, "src_gap": fast.src_gap, "dst_gap": fast.dst_gap}
            _same(fast, _irdl(isa.BroadcastUbToL0cOp, operands=[ub, [], l0c, [] if dst_offset is None else [dst_offset]],
                              properties=props))
            assert fast.dst_offset is dst_offset and fast.src_offset is None
        l0a, l0b = _buffer(isa.MemSpace.L0A, [16, 16]), _buffer(isa.MemSpace.L0B, [16, 16])
        mmad = isa.MmadOp(l0c, l0a, l0b, 16, 16, 16, a_offset=off)
        _same(mmad, _irdl(isa.MmadOp, operands=[l0c, [], l0a, [off], l0b, [], []],
                          properties={"m": mmad.m, "k": mmad.k, "n": mmad.n}))
        gm = create_ssa_value(MemRefType(f16, [4, 4]))
        launch = isa.LaunchOp("k0", [gm], [gm])
        ref = _irdl(isa.LaunchOp, operands=[[gm], [gm]], properties={"callee": launch.callee})
        assert list(launch.operands) == list(ref.operands)
        assert list(launch.properties.items()) == list(ref.properties.items())


def test_instruction_constructor_wrong_arguments_get_irdls_error():
    ub, l0c = _buffer(isa.MemSpace.UB, [256], f32), _buffer(isa.MemSpace.L0C, [16, 64], f32)
    props = {"count": isa.int_attr(1), "len": isa.int_attr(1), "src_gap": isa.int_attr(0), "dst_gap": isa.int_attr(0)}
    for bad in ([ub, [], [l0c, l0c], []], [ub, [ub, ub], l0c, []], [ub, l0c]):
        with pytest.raises(ValueError) as plain:
            _irdl(isa.BroadcastUbToL0cOp, operands=bad, properties=props)
        with pytest.raises(ValueError) as fast:
            isa.InstructionOp.__init__(isa.BroadcastUbToL0cOp.__new__(isa.BroadcastUbToL0cOp), operands=bad,
                                       properties=props)
        assert str(fast.value) == str(plain.value)


def test_lazy_format_prints_and_parses_as_the_eager_one():
    from xdsl.irdl.declarative_assembly_format import FormatProgram

    op_def = isa.BroadcastUbToL0cOp.get_irdl_definition()
    assert op_def.assembly_format == isa.BroadcastUbToL0cOp.assembly_format
    ub, l0c = _buffer(isa.MemSpace.UB, [256], f32), _buffer(isa.MemSpace.L0C, [16, 64], f32)
    op = isa.BroadcastUbToL0cOp(ub, l0c, 4, 1, 0, 3)
    lazy, eager = [], []
    op.print(Printer(stream=_Text(lazy)))
    FormatProgram.from_str(op_def.assembly_format, op_def).print(Printer(stream=_Text(eager)), op)
    assert "".join(lazy) == "".join(eager) and "count 4 len 1 src_gap 0 dst_gap 3" in "".join(lazy)
    ctx = Context()
    ctx.load_dialect(isa.Isa)
    text = ('"test.op"() : () -> ()\n%u = "test.u"() : () -> memref<256xf32, #isa.space<ub>>\n'
            '%c = "test.c"() : () -> memref<16x64xf32, #isa.space<l0c>>\n'
            'isa.broadcast_ub_to_l0c %u to %c count 4 len 1 src_gap 0 dst_gap 3 : '
            'memref<256xf32, #isa.space<ub>> to memref<16x64xf32, #isa.space<l0c>>\n')
    ctx.allow_unregistered = True
    module = Parser(ctx, text).parse_module()
    parsed = [o for o in module.ops if isinstance(o, isa.BroadcastUbToL0cOp)]
    assert len(parsed) == 1 and parsed[0].params == (4, 1, 0, 3)


class _Text:
    def __init__(self, out: list[str]):
        self.out = out

    def write(self, s: str) -> int:
        self.out.append(s)
        return len(s)
