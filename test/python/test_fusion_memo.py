"""The fuse pass's legality memo (lowering/fusion_legality.py `group_tiles` with `verdicts`):
one probe per group structure within a run, and the memo's answer is the answer a fresh
probe gives -- for repeated blocks, for a block differing only in a shape (probed again),
and for a refusal."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
from onnx import helper
from xdsl.dialects import func

from ge import targets
from ge.dialects import graph
from ge.dialects import layout as lt
from ge.dialects import tile as t
from ge.lowering import fuse, fusion_legality
from ge.lowering.bufferize import gm_type
from ge.testing import layout_level

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"

# (stride, pad) of each Conv + Relu block on 1 x 4 x 6 x 6: two 6 x 6 blocks, a stride-2
# block (6 x 6 -> 3 x 3), two 3 x 3 blocks (the 6 x 6 block's ops and attributes, another shape)
BLOCKS = ((1, 1), (1, 1), (2, 1), (1, 1), (1, 1))


def blocks_model(c: int = 4) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "x"
    for i, (stride, pad) in enumerate(BLOCKS):
        inits.append(helper.make_tensor(f"w{i}", onnx.TensorProto.FLOAT, [c, c, 3, 3],
                                        rng.standard_normal(c * c * 9).tolist()))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[pad] * 4,
                                   strides=[stride, stride]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    g = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", 1, [1, c, 6, 6])],
                          [helper.make_tensor_value_info(x, 1, [1, c, 3, 3])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def block_fn(model: onnx.ModelProto) -> func.FuncOp:
    return next(op for op in layout_level(model).walk() if isinstance(op, func.FuncOp))


def conv_relu_pairs(fn: func.FuncOp) -> list[list]:
    ops = list(fn.body.block.ops)
    convs = [o for o in ops if isinstance(o, graph.Conv2dOp)]
    return [[c, next(iter(c.results[0].uses)).operation] for c in convs]


def test_identical_blocks_probed_once_a_shape_apart_probed_again(monkeypatch):
    fn = block_fn(blocks_model())
    pairs = conv_relu_pairs(fn)
    assert [type(p[1]) for p in pairs] == [graph.ReluOp] * len(BLOCKS)
    probed: list[tuple] = []
    real = fusion_legality._probe
    monkeypatch.setattr(fusion_legality, "_probe",
                        lambda ops, tg: probed.append(tuple(ops)) or real(ops, tg))
    target = targets.load_target("ascend910")
    verdicts: dict = {}
    answers = [fusion_legality.group_tiles(p, target, verdicts) for p in pairs]
    # blocks 0 and 1 are one structure, block 2 another, blocks 3 and 4 a third (a shape apart from 0)
    assert probed == [tuple(pairs[0]), tuple(pairs[2]), tuple(pairs[3])]
    assert len(verdicts) == 3
    keys = [fusion_legality.structure(p) for p in pairs]
    assert keys[0] == keys[1] and keys[3] == keys[4] and len({keys[0], keys[2], keys[3]}) == 3
    # the memo's answers are a fresh probe's, block by block
    monkeypatch.setattr(fusion_legality, "_probe", real)
    assert answers == [fusion_legality.group_tiles(p, target) for p in pairs] == [None] * len(BLOCKS)


def test_fuse_run_answers_match_fresh_probes():
    """Every verdict a `fuse` run keeps (memoized by structure) is what `group_tiles` says
    with no memo."""
    fn = block_fn(blocks_model())
    fuser = fuse.Fuser(fn.body.block, fuse.enabled_rules(None), [], targets.load_target("ascend910"))
    fuser.run()
    probed = [list(ops) for ops in fuser.verdicts if len(ops) > 1]
    assert len(probed) >= len(BLOCKS)
    assert len(fuser.by_structure) < len(probed)  # repeated blocks shared a probe
    for ops in probed:
        assert fuser.verdicts[tuple(ops)] == fusion_legality.group_tiles(ops, fuser.target)
    assert sum(1 for g in fuser.groups if [o.name for o in g.ops] == ["graph.conv2d", "graph.relu"]) >= 3


def test_a_refusal_is_memoized_as_the_same_refusal(monkeypatch):
    """LogSoftmax over 7 channels with its NC1HWC0 conversion does not build: the memo keeps
    that reason, and asking again does not probe again."""
    fn = block_fn(onnx.parser.parse_model((REGRESSIONS / "seed10.onnxtxt").read_text()))
    ops = list(fn.body.block.ops)
    soft = next(o for o in ops if isinstance(o, graph.LogSoftmaxOp))
    conv = next(o for o in ops if isinstance(o, lt.TransDataOp) and o.input is soft.results[0])
    fresh = fusion_legality.group_tiles([soft, conv])
    assert fresh is not None and "pads past the tensor" in fresh
    calls = []
    real = fusion_legality._probe
    monkeypatch.setattr(fusion_legality, "_probe", lambda o, tg: calls.append(o) or real(o, tg))
    verdicts: dict = {}
    target = targets.load_target(targets.DEFAULT_TARGET)
    assert fusion_legality.group_tiles([soft, conv], target, verdicts) == fresh
    assert fusion_legality.group_tiles([soft, conv], target, verdicts) == fresh
    assert len(calls) == 1


def test_attribute_key_tells_apart_what_the_printed_key_does():
    """The key holds attributes, not their IR text: it groups the candidate groups exactly as
    the printed key does (equal attributes print the same; here no two differ only in print)."""
    fn = block_fn(blocks_model())
    ops = [o for o in fn.body.block.ops if o.dialect_name() in ("graph", "layout") and o.results]
    groups = [list(pair) for pair in itertools.pairwise(ops)] + conv_relu_pairs(fn)

    def partition(printed: bool) -> list[int]:
        first: dict = {}
        return [first.setdefault(fusion_legality.structure(g, printed=printed), i) for i, g in enumerate(groups)]

    assert partition(False) == partition(True)
    assert len(set(partition(False))) > 1


def test_an_unhashable_key_falls_back_to_ir_text(monkeypatch):
    fn = block_fn(blocks_model())
    pairs = conv_relu_pairs(fn)
    real = fusion_legality.structure
    monkeypatch.setattr(fusion_legality, "structure",
                        lambda ops, printed=False: real(ops, True) if printed else ([],))  # a list does not hash
    verdicts: dict = {}
    target = targets.load_target("ascend910")
    assert [fusion_legality.group_tiles(p, target, verdicts) for p in pairs] == [None] * len(BLOCKS)
    assert list(verdicts) == [(target.name, real(pairs[i], True)) for i in (0, 2, 3)]


def test_probe_module_launches_on_the_outlined_gm_types():
    """The probe's launch and allocations use the kernel's own GM types: `gm_type` of the
    group's inputs (weights as constants) and of its results; the launch verifies against
    the kernel (the kernel itself has the placeholder kind "probe")."""
    fn = block_fn(blocks_model())
    pair = conv_relu_pairs(fn)[2]
    module = fusion_legality.probe_module(pair, targets.load_target("ascend910"))
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    launch = next(op for op in main.body.block.ops if isinstance(op, t.LaunchOp))
    launch.verify()
    conv = pair[0]
    assert [v.type for v in launch.ins] == [gm_type(conv.operands[0].type), gm_type(conv.operands[1].type)]
    assert isinstance(launch.ins[1].owner, t.ConstOp) and [a.type for a in main.body.block.args] == [launch.ins[0].type]
    assert [v.type for v in launch.outs] == [gm_type(pair[1].results[0].type)]
