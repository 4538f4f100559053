"""The GM memory plan: greedy offsets from lifetimes, checked step by step; on the nine
light models, against the lower bound (the most bytes live at one step)."""

from __future__ import annotations

import random

import pytest
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64

import ge
from ge.dialects import task
from ge.dialects.blobs import blob_scope
from ge.ir import parse_module, run_passes
from ge.lowering.build_model import BuildOptions, ModelBuildError, build_model, check_model
from ge.lowering.memory_plan import (
    STRATEGIES,
    MemoryPlanError,
    Tensor,
    align_up,
    check_no_overlap,
    live_bytes,
    lower_bound,
    plan_memory,
)
from ge.testing import LIGHT_MODELS, light_model_path, with_random_weights

ALIGN = 512
PIPELINE = "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data,fuse"


def test_chain_reuses_dead_tensors():
    # a -> b -> c -> d, each read only by the next: two slots suffice.
    ts = [Tensor(n, 1000, i, i + 1) for i, n in enumerate("abcd")]
    plan = plan_memory(ts, ALIGN)
    check_no_overlap(ts, plan.offsets, ALIGN)
    assert plan.lower_bound == plan.peak == 2 * 1024
    assert plan.no_reuse == 4 * 1024
    assert plan.offsets[0] == plan.offsets[2] and plan.offsets[1] == plan.offsets[3] != plan.offsets[0]


def test_disable_reuse_gives_every_tensor_its_own_bytes():
    ts = [Tensor(n, 1000, i, i + 1) for i, n in enumerate("abcd")]
    plan = plan_memory(ts, ALIGN, reuse=False)
    assert plan.strategy == "no-reuse"
    assert plan.offsets == (0, 1024, 2048, 3072) and plan.peak == plan.no_reuse == 4096


def test_offsets_are_aligned_and_sizes_rounded_up():
    ts = [Tensor("a", 1, 0, 1), Tensor("b", 513, 0, 1), Tensor("c", 0, 1, 1)]
    plan = plan_memory(ts, ALIGN)
    assert all(o % ALIGN == 0 for o in plan.offsets)
    assert plan.lower_bound == 512 + 1024 and plan.peak == 512 + 1024


def test_lower_bound_is_the_largest_live_set():
    ts = [Tensor("a", 512, 0, 2), Tensor("b", 1024, 1, 1), Tensor("c", 2048, 2, 3), Tensor("d", 512, 3, 3)]
    assert live_bytes(ts, ALIGN) == [512, 1536, 2560, 2560]
    assert lower_bound(ts, ALIGN) == 2560


def test_greedy_fills_the_best_gap():
    # A big tensor dies, leaving a hole that the later, smaller tensors share.
    ts = [Tensor("big", 4096, 0, 1), Tensor("keep", 1024, 0, 3), Tensor("x", 2048, 2, 2), Tensor("y", 2048, 3, 3)]
    plan = plan_memory(ts, ALIGN)
    check_no_overlap(ts, plan.offsets, ALIGN)
    assert plan.peak == 4096 + 1024


def test_check_no_overlap_finds_two_live_tensors_sharing_bytes():
    ts = [Tensor("a", 1024, 0, 2), Tensor("b", 1024, 2, 3)]
    check_no_overlap(ts, [0, 1024], ALIGN)
    with pytest.raises(MemoryPlanError, match=r"step 2: 'a' \[0, 1024\) and 'b' \[512, 1536\) are both live"):
        check_no_overlap(ts, [0, 512], ALIGN)
    with pytest.raises(MemoryPlanError, match="not a non-negative multiple of 512"):
        check_no_overlap(ts, [0, 1000], ALIGN)
    check_no_overlap([Tensor("a", 1024, 0, 1), Tensor("b", 1024, 2, 3)], [0, 0], ALIGN)  # disjoint lifetimes


def test_bad_lifetime_is_refused():
    with pytest.raises(MemoryPlanError, match="bad size 10 or lifetime"):
        plan_memory([Tensor("a", 10, 3, 2)], ALIGN)


@pytest.mark.parametrize("seed", range(20))
def test_every_strategy_is_sound_on_random_lifetimes(seed):
    rng = random.Random(seed)
    ts = []
    for i in range(60):
        start = rng.randrange(40)
        ts.append(Tensor(f"t{i}", rng.choice([100, 512, 1000, 4096, 20000, 150528]), start, start + rng.randrange(8)))
    bound = lower_bound(ts, ALIGN)
    for name, strategy in STRATEGIES.items():
        offsets = strategy(ts, ALIGN)
        check_no_overlap(ts, offsets, ALIGN)
        peak = max(o + align_up(t.size, ALIGN) for o, t in zip(offsets, ts))
        assert peak >= bound, name
    plan = plan_memory(ts, ALIGN)
    assert bound <= plan.peak <= plan.no_reuse


def _three_kernel_module():
    text = """
    func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
      %a = fusion.group "elementwise" [] ins(%x) : (tensor<256xf32>) -> tensor<256xf32> {
      ^bb0(%0: tensor<256xf32>):
        %1 = graph.relu %0 : tensor<256xf32>
        fusion.yield %1 : tensor<256xf32>
      }
      %b = fusion.group "elementwise" [] ins(%a) : (tensor<256xf32>) -> tensor<256xf32> {
      ^bb0(%0: tensor<256xf32>):
        %1 = graph.neg %0 : tensor<256xf32>
        fusion.yield %1 : tensor<256xf32>
      }
      %c = fusion.group "elementwise" [] ins(%b) : (tensor<256xf32>) -> tensor<256xf32> {
      ^bb0(%0: tensor<256xf32>):
        %1 = graph.tanh %0 : tensor<256xf32>
        fusion.yield %1 : tensor<256xf32>
      }
      %d = fusion.group "elementwise" [] ins(%c) : (tensor<256xf32>) -> tensor<256xf32> {
      ^bb0(%0: tensor<256xf32>):
        %1 = graph.sigmoid %0 : tensor<256xf32>
        fusion.yield %1 : tensor<256xf32>
      }
      func.return %d : tensor<256xf32>
    }
    """
    return parse_module(text)


def test_check_model_finds_a_race_on_reused_bytes():
    module = _three_kernel_module()
    build_model(module)
    model = next(op for op in module.ops if isinstance(op, task.ModelOp))
    check_model(model)
    buffers = [op for op in model.body.block.ops if isinstance(op, task.BufferOp)]
    assert buffers[0].offset == buffers[2].offset  # %c reuses %a's bytes after %b read %a
    # Put the kernel that reads %a on a second stream: nothing orders it before %c's writer.
    launches = [op for op in model.body.block.ops if isinstance(op, task.LaunchOp)]
    launches[1].properties["stream"] = IntegerAttr(1, i64)
    model.properties["streams"] = IntegerAttr(2, i64)
    with pytest.raises(ModelBuildError, match=r"tasks 0 \(stream 0\) and 1 \(stream 1\) both touch bytes"):
        check_model(model)


def _fused(name):
    module = ge.load_onnx(with_random_weights(light_model_path(name), seed=0))
    return run_passes(module, PIPELINE)


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_plans(name):
    """No overlap at any step, within 5% of the lower bound, with several streams (the
    default), with one stream, and without reuse; the built IR is race free."""
    with blob_scope():
        fused = _fused(name)
        reports = {}
        for label, options in [("streams", BuildOptions()), ("single", BuildOptions(single_stream=True)),
                               ("no-reuse", BuildOptions(reuse_memory=False))]:
            module = fused.clone()
            [report] = build_model(module, options)
            module.verify()
            check_no_overlap(report.tensors, report.plan.offsets, ALIGN)
            check_model(next(op for op in module.ops if isinstance(op, task.ModelOp)))
            reports[label] = report.plan
        print(f"\n{name}: " + ", ".join(
            f"{k}: peak {p.peak} lower bound {p.lower_bound} no-reuse {p.no_reuse} ({p.strategy})"
            for k, p in reports.items()
        ))
        for label in ("streams", "single"):
            plan = reports[label]
            assert plan.lower_bound <= plan.peak <= 1.05 * plan.lower_bound, label
            assert plan.peak < plan.no_reuse
        assert reports["no-reuse"].peak == reports["no-reuse"].no_reuse == reports["single"].no_reuse


def test_buffer_level_kernel_sequence():
    """After `bufferize` (GM memrefs, `tile.launch` of `tile.kernel` symbols) build-model
    plans the same buffers as at the fusion level and keeps the kernels as they are."""
    fused = _three_kernel_module()
    [at_fusion] = build_model(fused.clone())
    module = run_passes(fused, "bufferize,build-model")
    model = next(op for op in module.ops if isinstance(op, task.ModelOp))
    check_model(model)
    callees = {op.callee.string_value() for op in model.body.block.ops if isinstance(op, task.LaunchOp)}
    kernels = {op.properties["sym_name"].data: op.name for op in module.ops if op.name == "tile.kernel"}
    assert len(callees) == 4 and callees <= set(kernels)
    assert model.workspace == DenseArrayBase.from_list(i64, [2048, at_fusion.plan.peak])
