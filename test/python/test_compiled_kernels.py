"""Kernels compiled from ONNX all the way to isa (import -> graph-optimize -> layouts ->
fuse -> bufferize -> tile -> to-isa -> plan-local-memory -> insert-sync) run on the
simulator: conv with a fused epilogue, matmul + bias, pools, softmax, layer norm and an
elementwise chain match the graph-level reference with no simulator problem, and deleting
any single sync op or any set/wait pair that insert-sync placed in them is reported (the
pair deletions as a RAW / WAR / WAW hazard).

Tolerances: f32 (`must_keep_origin_dtype`) 1e-5 of the output scale (the kernels sum in
another order than numpy); f16 (`force_fp16`) 1e-2, a few f16 roundings apart (the graph
level rounds once per graph op, a kernel once per instruction).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import StringAttr

from ge.dialects import isa
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.mutation import mutants, pair_mutants
from ge.runtime.reference import run
from ge.runtime.simulator import IsaProgram

RNG = np.random.default_rng(7)
TO_ISA = "assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa,plan-local-memory,insert-sync"


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _init(name, array):
    return numpy_helper.from_array(array.astype(np.float32), name)


def conv_epilogue():
    w, b = RNG.standard_normal((16, 8, 3, 3)) * 0.2, RNG.standard_normal(16)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "c"], ["y"])]
    return _model(nodes, [_tensor("x", [1, 8, 10, 10])], [_tensor("y", [1, 16, 10, 10])], [_init("w", w), _init("b", b)])


def matmul_bias():
    w, b = RNG.standard_normal((64, 48)) * 0.2, RNG.standard_normal(48)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"]), helper.make_node("Relu", ["g"], ["y"])]
    return _model(nodes, [_tensor("x", [8, 64])], [_tensor("y", [8, 48])], [_init("w", w), _init("b", b)])


def pools():
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["m"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return _model(nodes, [_tensor("x", [1, 16, 11, 11])], [_tensor("y", [1, 16, 6, 6])])


def softmax():
    return _model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [_tensor("x", [6, 40])], [_tensor("y", [6, 40])])


def layer_norm():
    s, b = RNG.standard_normal(32), RNG.standard_normal(32)
    nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)]
    return _model(nodes, [_tensor("x", [2, 8, 32])], [_tensor("y", [2, 8, 32])], [_init("s", s), _init("b", b)])


def elementwise():
    nodes = [helper.make_node("Mul", ["x", "z"], ["m"]), helper.make_node("Add", ["m", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    return _model(nodes, [_tensor("x", [3, 70]), _tensor("z", [3, 70])], [_tensor("y", [3, 70])])


def pool_batch_norm():
    """densenet's transition pattern: max pool, then BN + ReLU on the pooled map (a BN
    that folds into no conv), both results used. Its kernel double-buffers five UB inputs
    (the map and four per-channel vectors): ten loop-carried V -> MTE2 pairs."""
    c = 64
    s, b, m, v = RNG.random(c) + 0.5, RNG.standard_normal(c), RNG.standard_normal(c), RNG.random(c) + 0.5
    w1, w2 = RNG.standard_normal((16, c, 1, 1)) * 0.1, RNG.standard_normal((16, c, 1, 1)) * 0.1
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["p", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["p", "w1"], ["c1"]), helper.make_node("Conv", ["r", "w2"], ["c2"]),
             helper.make_node("Add", ["c1", "c2"], ["y"])]
    inits = [_init(n, a) for n, a in (("s", s), ("b", b), ("m", m), ("v", v), ("w1", w1), ("w2", w2))]
    return _model(nodes, [_tensor("x", [1, c, 112, 112])], [_tensor("y", [1, 16, 56, 56])], inits, opset=13)


CASES = {f.__name__: f for f in (conv_epilogue, matmul_bias, pools, softmax, layer_norm, elementwise)}


def _inputs(model):
    return {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def _compiled(model, precision: str, inputs, target: str = "ascend910"):
    """The module at the isa level, and the graph level's outputs on `inputs`."""
    module = import_model(model)
    module.attributes["ge.target"] = StringAttr(target)
    run_passes(module, f"graph-optimize{{precision={precision}}}")
    reference = run(module, inputs)
    run_passes(module, TO_ISA)
    return module, reference


def _run(module, inputs):
    program = IsaProgram(module)
    outputs = program.run(inputs)
    return outputs, program.sim.report


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
@pytest.mark.parametrize("name", list(CASES))
def test_compiled_kernels_match_the_graph_level(name, precision):
    model = CASES[name]()
    inputs = _inputs(model)
    module, reference = _compiled(model, precision, inputs)
    assert any(isinstance(op, isa.KernelOp) for op in module.walk())
    outputs, report = _run(module, inputs)
    assert report.problems == []
    tol = 1e-5 if precision == "must_keep_origin_dtype" else 1e-2
    for got, want in zip(outputs, reference):
        scale = max(1e-30, float(np.abs(want.astype(np.float64)).max()))
        err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
        assert err <= tol, f"{name} ({precision}): error {err:.3g} of the output scale"


def test_deleting_any_sync_op_or_pair_of_compiled_kernels_is_caught(capsys):
    tried = caught = pairs_tried = pairs_caught = 0
    missed = []
    for name in CASES:
        model = CASES[name]()
        inputs = _inputs(model)
        # one core (ascend310b): every block walks all tiles, so every flag of the
        # double-buffered loop bodies executes (on 32 cores each block runs one tile)
        module, _ = _compiled(model, "force_fp16", inputs, "ascend310b")
        for _, desc, mutant in mutants(module):
            _, report = _run(mutant, inputs)
            tried += 1
            caught += bool(report.problems)
            if not report.problems:
                missed.append(f"{name}: {desc}")
        for desc, mutant in pair_mutants(module):
            _, report = _run(mutant, inputs)
            pairs_tried += 1
            pairs_caught += bool(report.hazards)
            if not report.hazards:
                missed.append(f"{name}: pair {desc}")
    with capsys.disabled():
        print(f"\ncompiled-kernel mutation test: deleted {tried} sync ops, caught {caught}; "
              f"deleted {pairs_tried} set/wait pairs, {pairs_caught} left a data hazard")
    assert not missed, "\n".join(missed)
    assert tried > 40 and pairs_tried > 15


@pytest.mark.parametrize("target", ["ascend910", "ascend910b"])
def test_more_live_events_than_ids_merge_pairs(monkeypatch, target):
    """Without merging, insert-sync would need more V -> MTE2 event ids for the kernel of
    pool_batch_norm than the chip has (4 on the 910, 8 on the 910B; on the 910 its forward
    MTE2 -> V pairs, one per dependency, run out first); merged, it runs hazard-free and
    matches the graph level."""
    from ge.lowering import to_isa
    from ge.targets import load_target
    from ge.transforms import insert_sync

    ids_of_chip = load_target(target).isa.event_ids
    model = pool_batch_norm()
    inputs = _inputs(model)
    # (the kernel's leftover tile after its paired loop: in the last round instead
    # (`IsaBuilder.pipelined(..., guarded=True)`) the 910B's 8 ids suffice without merging)
    monkeypatch.setattr(to_isa, "GUARDED_ROUNDS", False)
    with monkeypatch.context() as patch:
        patch.setattr(insert_sync, "_merge_closest", lambda *args: False)
        with pytest.raises(insert_sync.SyncError, match=f"more than {ids_of_chip} (V -> MTE2|MTE2 -> V) events"):
            _compiled(model, "force_fp16", inputs, target)
    module, reference = _compiled(model, "force_fp16", inputs, target)
    ids = {op.event.value.data for op in module.walk() if isinstance(op, isa.SetFlagOp)
           and (op.src_pipe.data, op.dst_pipe.data) == (isa.Pipe.V, isa.Pipe.MTE2)}
    assert max(ids) == ids_of_chip - 1
    outputs, report = _run(module, inputs)
    assert report.problems == []
    scale = float(np.abs(reference[0].astype(np.float64)).max())
    assert float(np.abs(outputs[0].astype(np.float64) - reference[0]).max()) / scale <= 1e-2


def test_identical_kernels_get_the_synchronization_of_their_own_analysis():
    """insert-sync analyses each distinct kernel body once and replays its sync ops on the
    kernels with the same body (repeated layers): the result is what analysing every
    kernel gives."""
    from ge.ir import parse_module, print_module
    from ge.targets import load_target
    from ge.transforms.insert_sync import insert_sync, structure_key

    model = CASES["conv_epilogue"]()
    module, _ = _compiled(model, "force_fp16", _inputs(model))
    text = print_module(module)
    kernels = [op for op in module.walk() if isinstance(op, isa.KernelOp)]
    # a second, renamed copy of every kernel in one module, before insert-sync
    bare = parse_module(text)
    for op in [o for o in bare.walk() if isinstance(o, (isa.SetFlagOp, isa.WaitFlagOp, isa.PipeBarrierOp))]:
        op.detach()
        op.erase()
    first = [op for op in bare.walk() if isinstance(op, isa.KernelOp)]
    for k in first:
        twin = k.clone()
        twin.sym_name = StringAttr(k.sym_name.data + "_twin")
        bare.body.block.add_op(twin)
    assert len({structure_key(k) for k in first}) == len(first)
    run_passes(bare, "insert-sync")
    target = load_target("ascend910")
    for k in [op for op in bare.walk() if isinstance(op, isa.KernelOp) and op.sym_name.data.endswith("_twin")]:
        alone = k.clone()
        for op in [o for o in alone.walk() if isinstance(o, (isa.SetFlagOp, isa.WaitFlagOp, isa.PipeBarrierOp))]:
            op.detach()
            op.erase()
        insert_sync(alone, target)
        assert any(isinstance(op, isa.SetFlagOp) for op in k.walk())
        assert structure_key(alone) == structure_key(k)  # the same sync ops at the same places
    assert len(kernels) == len(first)
