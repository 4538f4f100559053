"""The Cube's L0C read-out follows the chip: the coupled 910 has no FixPipe, so `to-isa`
emits `isa.copy_l0c_to_ub` (the Vector unit's copy_matrix_cc_to_ubuf, pipe V) and the
result leaves UB by MTE3; the 910B and 310B read L0C out with `isa.fixpipe` (pipe FIX).

Models compiled all the way to the isa level and run on the simulator against
onnxruntime, with the tolerances of test_api.py: f32 (`must_keep_origin_dtype`) within 1e-3
of the output scale (max |onnxruntime|); f16 (`force_fp16`, calibrated weights) within 2%
with the same argmax. Every run is hazard-free, and on the 910 route deleting any single
wait_flag of the compiled kernels is reported by the simulator.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import StringAttr

import ge
from ge import targets
from ge.dialects import isa
from ge.frontend.onnx import import_model
from ge.ir import run_passes
from ge.mutation import mutants
from ge.runtime.simulator import IsaProgram
from ge.testing import calibrate_weights, light_model_path, random_inputs, with_random_weights

F32 = "must_keep_origin_dtype"
TO_ISA = "assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa,plan-local-memory,insert-sync"
ROUTE = {"ascend910": "isa.copy_l0c_to_ub", "ascend910b": "isa.fixpipe", "ascend310b": "isa.fixpipe"}


def conv_matmul(batch: int = 2, hw: int = 10, seed: int = 0) -> onnx.ModelProto:
    """Conv + bias + Relu, then Flatten and Gemm + bias: a conv and a matmul epilogue."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * k).astype(np.float32), n)
             for n, s, k in (("w", (16, 8, 3, 3), 0.2), ("b", (16,), 1.0), ("wg", (16 * hw * hw, 24), 0.03),
                             ("bg", (24,), 1.0))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], name="gemm")]
    graph = helper.make_graph(nodes, "conv_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 24])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))


def error_of_scale(got: np.ndarray, expected: np.ndarray) -> float:
    g, e = got.astype(np.float64), expected.astype(np.float64)
    return float(np.abs(g - e).max() / max(1e-30, np.abs(e).max()))


def instruction_counts(compiled: ge.CompiledModel) -> Counter:
    """Instructions by op name over the model file's kernel bodies (each distinct body once)."""
    return Counter(name for body in compiled.model.kernels["bodies"] for name in body["instrs"])


def compile_and_run(model, inputs, target: str, precision: str):
    compiled = ge.compile(model, ge.CompileOptions(soc_version=target, precision_mode=precision, keep_ir_text=False))
    got = compiled.run(inputs)
    assert compiled.last_run.problems == [], "\n".join(map(str, compiled.last_run.problems[:5]))
    return compiled, got


@pytest.mark.parametrize("target", list(ROUTE))
def test_conv_matmul_reads_l0c_out_by_the_route_of_the_chip(target):
    model = conv_matmul()
    inputs = random_inputs(model, seed=1)
    expected = onnxruntime_outputs(model, inputs)
    compiled, got = compile_and_run(model, inputs, target, F32)
    counts = instruction_counts(compiled)
    other = ({"isa.copy_l0c_to_ub", "isa.fixpipe"} - {ROUTE[target]}).pop()
    # one read-out per Cube kernel body (the conv's and the Gemm's), none of the other kind
    assert counts[ROUTE[target]] >= 2 and counts[other] == 0, counts
    for name, e in expected.items():
        assert error_of_scale(got[name], e) <= 1e-3, f"{target} {name}: {error_of_scale(got[name], e):.3g}"


def test_the_910_pays_for_its_read_out_on_the_vector_pipe():
    """On the 910 the L0C read-out runs on V, so the Vector pipe is busier than on an
    otherwise identical chip with FixPipe, whose FIX pipe takes that work instead."""
    model = conv_matmul()
    inputs = random_inputs(model, seed=1)
    busy = {}
    for fixpipe in (False, True):
        real = targets.load_target("ascend910")
        chip = dataclasses.replace(real, isa=dataclasses.replace(real.isa, fixpipe=fixpipe))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(targets, "load_target", lambda name, chip=chip, real=targets.load_target:
                          chip if name == "ascend910" else real(name))
            compiled, _ = compile_and_run(model, inputs, "ascend910", F32)
        assert (instruction_counts(compiled)["isa.fixpipe"] > 0) == fixpipe
        pipes = Counter()
        for stats in compiled.last_run.kernels:
            pipes.update(stats.pipe_busy)
        busy[fixpipe] = pipes
    assert busy[False].get("FIX", 0) == 0 < busy[True]["FIX"]
    assert busy[False]["V"] > busy[True]["V"]


def test_deleting_any_wait_on_the_910_route_is_caught(monkeypatch):
    """Every wait_flag insert-sync placed in the compiled conv + Gemm kernels of the 910
    (M -> V before copy_l0c_to_ub, V -> M after it, ...) is needed: deleting any one is
    reported. One core, so that every block walks all tiles and every wait executes."""
    real = targets.load_target("ascend910")
    one_core = dataclasses.replace(real, cores=dataclasses.replace(real.cores, cube=1, vector=1))
    monkeypatch.setattr(targets, "load_target", lambda name, real=targets.load_target:
                        one_core if name == "ascend910" else real(name))
    model = conv_matmul(batch=1, hw=6)
    inputs = random_inputs(model, seed=1)
    module = import_model(model)
    module.attributes["ge.target"] = StringAttr("ascend910")
    run_passes(module, "graph-optimize{precision=force_fp16}")
    run_passes(module, TO_ISA)
    assert not any(isinstance(op, isa.FixpipeOp) for op in module.walk())
    assert any(isinstance(op, isa.WaitFlagOp) and (op.src_pipe.data, op.dst_pipe.data) == (isa.Pipe.M, isa.Pipe.V)
               for op in module.walk())
    tried, missed = 0, []
    for op_name, desc, mutant in mutants(module):
        if op_name != isa.WaitFlagOp.name:
            continue
        program = IsaProgram(mutant)
        program.run(inputs)
        tried += 1
        if not program.sim.report.problems:
            missed.append(desc)
    assert tried >= 10 and not missed, "\n".join(missed)


@pytest.mark.slow  # squeezenet compiles and runs in 30-60 s per chip
@pytest.mark.parametrize("target", ["ascend910", "ascend910b"])
def test_f16_squeezenet_follows_the_chip_and_matches_onnxruntime(target):
    raw = with_random_weights(light_model_path("squeezenet"), seed=1)
    inputs = random_inputs(raw, seed=2)
    model = calibrate_weights(raw, inputs)
    expected = onnxruntime_outputs(model, inputs)
    compiled, got = compile_and_run(model, inputs, target, "force_fp16")
    counts = instruction_counts(compiled)
    other = ({"isa.copy_l0c_to_ub", "isa.fixpipe"} - {ROUTE[target]}).pop()
    assert counts[ROUTE[target]] > 0 and counts[other] == 0, counts
    for name, e in expected.items():
        assert error_of_scale(got[name], e) <= 2e-2, f"{target} {name}: {error_of_scale(got[name], e):.3g}"
        assert got[name].reshape(e.shape[0], -1).argmax(axis=1).tolist() == \
            e.reshape(e.shape[0], -1).argmax(axis=1).tolist()


def test_the_910_read_out_has_its_ub_tile_counted_and_placed():
    """The UB tile the 910's read-out writes is a tile.alloc of the Cube kernel, so the
    tile-level capacity check (and the tiler's choice of tile sizes) counts it -- as to-isa
    keeps it: f16 where the read-out converts (`to_isa.read_out_plans`), nothing where it
    writes the output tile -- and plan-local-memory places it inside UB next to the
    epilogue's other buffers."""
    from ge.dialects import tile as t
    from ge.lowering.to_isa import read_out_plans
    from ge.transforms.tile_capacity import usage

    model = conv_matmul()
    module = import_model(model)
    module.attributes["ge.target"] = StringAttr("ascend910")
    run_passes(module, "graph-optimize{precision=force_fp16}")
    run_passes(module, "assign-layouts,eliminate-trans-data,fuse,bufferize,tile")
    target = targets.load_target("ascend910")
    staged = 0
    for kernel in (op for op in module.walk() if isinstance(op, t.KernelOp)):
        for copy in (op for op in kernel.walk() if isinstance(op, t.CopyOp)
                     and t.space_of(op.source.type) == t.MemSpace.L0C):
            assert t.space_of(copy.dest.type) == t.MemSpace.UB
            alloc = copy.dest.owner
            while not isinstance(alloc, t.AllocOp):  # through views
                alloc = alloc.source.owner
            need = isa.nbytes(alloc.result.type) * alloc.count.value.data
            plan = next((q for q in read_out_plans(kernel, target) if q.acc is alloc.result), None)
            if plan is not None:  # converted on the read-out: f16, or no tile of its own
                need = 0 if plan.into is not None else need // 2
            assert need <= usage(kernel, target)[t.MemSpace.UB] <= target.memory.ub
            staged += 1
    assert staged >= 2
    run_passes(module, "to-isa,plan-local-memory,insert-sync")
    outs = [op for op in module.walk() if isinstance(op, isa.CopyL0cToUbOp)]
    assert len(outs) >= 2
    for op in outs:
        buf = op.dst.owner
        assert isinstance(buf, isa.BufferOp) and buf.byte_offset is not None
        assert buf.slot_offset(len(buf.slots) - 1, target) + isa.nbytes(op.dst.type) <= target.memory.ub
