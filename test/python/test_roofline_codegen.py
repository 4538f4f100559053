"""Cube code toward the roofline, measured on the simulator with resnet50's conv shapes:

- double buffering overlaps: the tile offsets divided by a constant are emitted as affine
  products (`tile_cube._div_exact`), so insert-sync can bound every L1 access and the
  next tile's loads run under this tile's K loop (with `divui`, the old code, it cannot);
- a layer-4 conv (7 x 7 pixels per image, 2.4 MB of weights) at batch 8 runs the images
  in its inner loop (`batch_inner`: each core loads its slice of the weights once) and
  beats the best plan without that option;
- the cost model's prediction for that kernel is at most 35% above the simulated cycles, never
  below.

The numerics match onnxruntime either way (f16 storage, f32 accumulation: max error
within 1% of the largest output).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import targets
from ge.dialects import isa
from ge.ir import parse_module
from ge.lowering import tile_cube
from ge.transforms.isa_analysis import access_span, instructions

pytestmark = pytest.mark.slow


def conv_model(batch: int, c: int, hw: int, k: int, residual: bool = False):
    """Conv (+ bias) [+ the input as a residual] + ReLU: one Cube kernel with its epilogue."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((c, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[k // 2] * 4)]
    if residual:
        nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
    nodes.append(helper.make_node("Relu", ["s" if residual else "c"], ["y"]))
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, c, hw, hw])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [batch, c, hw, hw]


def run(model, x, monkeypatch, **patches):
    """Outputs, the Cube kernel's simulated cycles (alone) and modeled cycles, and the
    Cube plans chosen, with `patches` set on lowering/tile_cube.py."""
    with monkeypatch.context() as m, tile_cube.plans_planned() as memo:
        for name, value in patches.items():
            m.setattr(tile_cube, name, value)
        compiled = ge.compile(model, ge.CompileOptions(keep_ir_text=False))
        out = compiled.run({"x": x})["y"]
        plans = list(memo.values())
    cube = [k for k in compiled.last_run.kernels if k.instructions.get("M")]
    assert len(cube) == 1
    kernel = next(k for k in compiled.executor.kernels if k.name == cube[0].kernel)
    return out, cube[0].alone, float(kernel.modeled), plans


def reference(model, x):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def close(got, want) -> bool:
    return np.abs(got - want).max() <= 0.01 * np.abs(want).max()


def l1_spans(model, tmp_path, monkeypatch, **patches) -> list:
    """The byte spans of every L1 access of the Cube kernel after plan-local-memory (None:
    the analysis cannot bound it)."""
    with monkeypatch.context() as m:
        for name, value in patches.items():
            m.setattr(tile_cube, name, value)
        ge.compile(model, ge.CompileOptions(keep_ir_text=False, dump_ir=str(tmp_path)))
    module = parse_module((tmp_path / "09_plan-local-memory.mlir").read_text())
    kernel = next(k for k in module.walk() if isinstance(k, isa.KernelOp)
                  and any(isinstance(o, isa.MmadOp) for o in k.walk()))
    instrs = instructions(kernel, targets.load_target("ascend910"))
    return [access_span(a) for i in instrs for a in i.accesses if a.key == ("l1",)]


def test_affine_tile_offsets_let_insert_sync_bound_every_l1_access(tmp_path, monkeypatch):
    """With the L1 -> L0B copy's offset a `divui`, insert-sync cannot bound its reads: the
    load into the other L1 buffer then waits for them, and double buffering does not
    overlap (a 3 x 3 conv at batch 16 ran 33,077 cycles that way, 26,538 with affine offsets)."""
    model, _ = conv_model(batch=4, c=64, hw=56, k=3)
    spans = l1_spans(model, tmp_path / "affine", monkeypatch)
    assert spans and all(s is not None for s in spans)
    # (a K loop -- not a chunk unrolled over two L0 buffers -- is where the offset is divided)
    spans = l1_spans(model, tmp_path / "looped", monkeypatch, UNROLLED_K=False)
    assert spans and all(s is not None for s in spans)

    def divui(b, a, d):
        return b.div(a, d)

    assert any(s is None for s in l1_spans(model, tmp_path / "divui", monkeypatch, _div_exact=divui,
                                           UNROLLED_K=False))


def test_layer4_conv_loads_its_weights_once_per_core(monkeypatch):
    model, shape = conv_model(batch=8, c=512, hw=7, k=3, residual=True)  # the residual's tiles per image
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = reference(model, x)
    out, cycles, modeled, plans = run(model, x, monkeypatch)
    old_out, old_cycles, _, old_plans = run(model, x, monkeypatch, INNER_BATCH=False)
    assert plans and all(p.batch_inner for p in plans) and not any(p.batch_inner for p in old_plans)
    assert close(out, want) and close(old_out, want)
    assert cycles < 0.9 * old_cycles
    # the model is conservative here: its K loop pays the MTE1 and Cube start-ups on every
    # step, which the simulator's pipelined pipes hide behind the previous step's data
    # (28.5k simulated, 37.6k modeled since the blocks share the L2 and HBM in time; a
    # model without those start-ups is closer here but, still blind to L0 overlap across
    # tiles, picked plans that made resnet50 at batch 16 5.6% slower)
    assert cycles <= modeled <= 1.35 * cycles
