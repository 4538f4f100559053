"""The tiling cost model against the simulator: the cycles `tile` records for a kernel
(`tile.cycles`: the launch overhead, the vector instructions `to-isa` emits per op, GM
bytes as a throughput limit) come within 15% of the cycles the simulator measures for the
same kernel, on single-op graphs whose kernels are the models' row reductions, casts and
MatMuls. bench/tile_cost_accuracy.py reports the same per kernel for whole models."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.lowering.tile_cost import Machine, pipelined
from ge.targets import load_target


def single_op(op: str, shape: list[int], out_shape: list[int] | None = None, **attrs):
    inputs, inits = ["x"], []
    if op == "LayerNormalization":
        rng = np.random.default_rng(0)
        inits = [numpy_helper.from_array(rng.random(shape[-1:], dtype=np.float32), n) for n in ("s", "b")]
        inputs += ["s", "b"]
    if op == "MatMul":
        rng = np.random.default_rng(0)
        inits = [numpy_helper.from_array(rng.random((shape[-1], out_shape[-1]), dtype=np.float32), "w")]
        inputs.append("w")
    node = helper.make_node(op, inputs, ["y"], **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape or shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def modeled_and_simulated(model, shape) -> list[tuple[str, float, float]]:
    # standalone launches (no SuperKernel): the model prices each kernel with its own dispatch
    compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False, super_kernel=False))
    compiled.run({"x": np.zeros(shape, np.float32)}, timing_only=True)
    modeled = {k.name: k.modeled for k in compiled.executor.kernels}
    return [(k.kernel, float(modeled[k.kernel]), k.alone) for k in compiled.last_run.kernels]


@pytest.mark.parametrize("op, shape, out_shape, attrs", [
    ("Softmax", [1, 1000], None, {"axis": -1}),  # the classifier's softmax: one row on one core
    ("Softmax", [4, 64, 64], None, {"axis": -1}),  # attention scores
    ("LayerNormalization", [64, 128], None, {"axis": -1}),
    ("MatMul", [64, 128], [64, 128], {}),
    ("MatMul", [64, 512], [64, 128], {}),
])
def test_modeled_cycles_within_15_percent_of_simulated(op, shape, out_shape, attrs):
    rows = modeled_and_simulated(single_op(op, shape, out_shape, **attrs), shape)
    assert rows
    for kernel, modeled, simulated in rows:
        assert modeled == pytest.approx(simulated, rel=0.15), f"{op} {shape}: {kernel}"


def test_launch_overhead_is_in_every_kernel():
    """A kernel with almost no work still costs the target's launch overhead (the
    simulator charges it), so the model never predicts less."""
    target = load_target("ascend910")
    rows = modeled_and_simulated(single_op("Relu", [1, 16]), [1, 16])
    assert all(modeled >= target.overhead.launch for _, modeled, _ in rows)
    assert all(simulated >= target.overhead.launch for _, _, simulated in rows)


def test_vector_instruction_costs_are_the_simulators():
    """One place for the per-instruction costs: the model's vector instruction is the
    simulator's CostModel.vector (start-up + repeats x the op's cycles for its type)."""
    from ge.runtime.sim_timing import CostModel

    target = load_target("ascend910")
    mach, sim = Machine(target), CostModel(target)
    for op, elem, reps in (("vexp", "f16", 3), ("vexp", "f32", 3), ("vdiv", "f16", 7), ("vreduce_sum", "f32", 2)):
        startup, busy, _ = sim.vector(reps, op, elem)
        assert mach.instruction(op, elem, reps) == startup + busy
    assert mach.instruction("vdiv", "f16", 4) > mach.instruction("vadd", "f16", 4)


def test_hbm_port_limits_throughput_without_adding_fill():
    # one iteration: the stages run one after another; the DMAs moving the bytes overlap the port
    assert pipelined(1, [10.0, 20.0], True, port=25.0) == 30.0
    assert pipelined(1, [10.0, 20.0], True, port=45.0) == 45.0
    # many iterations: the loop takes at least iterations x port, with no fill or drain on top
    assert pipelined(4, [10.0, 20.0], True, port=25.0) == 100.0
    assert pipelined(4, [10.0, 20.0], True) == 4 * 20.0 + 10.0
    assert pipelined(4, [10.0, 20.0], False, port=25.0) == 120.0
    assert pipelined(4, [10.0, 20.0], False, port=40.0) == 160.0


def test_op_program_prices_an_nc1hwc0_global_pool_as_its_halvings():
    """A global pool over an NC1HWC0 tile goes through `op_program` like every other vector
    op: its program is the pixel blocks' pairwise halvings (isa_vector's `block_pool`); over
    a plain tensor it stays one instruction over the tile."""
    from xdsl.dialects.builtin import TensorType, f16
    from xdsl.ir import Block

    from ge.dialects import graph as g
    from ge.dialects.layout import FormatAttr
    from ge.lowering.tile_cost import op_program

    mach = Machine(load_target("ascend910"))
    assert mach.target.vector.bytes_per_repeat == 256

    def nc1hwc0(nchw: list[int]) -> TensorType:
        n, c, h, w = nchw
        return TensorType(f16, [n, c // 16, h, w, 16], FormatAttr("NC1HWC0", "NCHW", nchw))

    def pool(cls, fmt: bool):
        x_ty, y_ty = ((nc1hwc0([1, 64, 13, 13]), nc1hwc0([1, 64, 1, 1])) if fmt else
                      (TensorType(f16, [1, 64, 13, 13]), TensorType(f16, [1, 64, 1, 1])))
        return cls.create(operands=[Block(arg_types=[x_ty]).args[0]], result_types=[y_ty])

    tile = (1, 4, 13, 13, 16)
    # an average on f32: 4 planes of 169 pixels x 16 channels converted, 8 halvings (169 -> 1)
    # of 4 x ceil(half x 64 bytes / 256) repeats, the scale, the copy out, the narrowing
    halvings = [("vadd", "f32", r) for r in (84, 44, 24, 12, 8, 4, 4, 4)]
    assert op_program(mach, pool(g.GlobalAvgPoolOp, True), tile) == [
        ("vconv", "f16", 169), *halvings, ("vmuls", "f32", 1), ("default", "f32", 1), ("vconv", "f32", 1)]
    # a max on f16: half the bytes, no scale, no conversions
    assert op_program(mach, pool(g.GlobalMaxPoolOp, True), tile) == [
        ("default", "f16", 85), *[("vmax", "f16", r) for r in (44, 24, 12, 8, 4, 4, 4, 4)], ("default", "f16", 1)]
    assert op_program(mach, pool(g.GlobalAvgPoolOp, False), (1, 64, 13, 13)) == [("default", "f16", 85)]
