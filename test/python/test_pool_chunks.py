"""A pool's pixel passes in the cheaper orientation (`isa_pool.chunk_instructions`: 8
pixels of a row or 8 rows of a column per repeat), and no clean copy when the tile's
copy-in already padded the source with the pool's neutral value (`isa_pool.padded_by_copy`).

resnet50's 3 x 3 / 2 max pool (an 8 x 56 output tile from a 17 x 113 source): its column
pass is one instruction of 56 repeats instead of 7 of 8; its row pass 2 of 56 and one of
7 instead of 7 of 17. Checked against the tile interpreter (test_isa_pool's harness, NaN
outside the input) and, end to end, against onnxruntime on all-negative inputs, where a
pad read as 0 instead of -inf would change every border output."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).parent))
from test_isa_pool import TARGET, Case, check, compile_kernel, pool_kernel, simulate, source_data

from ge.lowering import isa_pool
from ge.testing import kernel_ir, onnxruntime_outputs

RESNET_TILE = Case("max", (1, 1, 17, 113, 16), (8, 56), (3, 3), (2, 2), (112, 112), -1, -1, (1, 1, 1, 1))


def test_orientation_per_pass_shape():
    # the column pass over 8 output rows: one instruction, a repeat per column
    assert isa_pool.chunk_instructions(TARGET, "vmax", "f16", (1, 8, 56), 112) == [(1, 56)]
    # the row pass over 17 rows: two 8-row groups, the last row as 7 row chunks
    assert isa_pool.chunk_instructions(TARGET, "vmax", "f16", (1, 17, 56), 113) == [(2, 56), (1, 7)]
    # a row pitch past the 8-bit block stride: row chunks only (a repeat per 8 rows of a chunk)
    assert isa_pool.chunk_instructions(TARGET, "vmax", "f16", (1, 8, 56), 300) == [(7, 8)]
    # fewer than 8 rows: row chunks, one instruction per row (its 7 chunks the repeats)
    assert isa_pool.chunk_instructions(TARGET, "vmax", "f16", (1, 5, 56), 56) == [(5, 7)]


@pytest.mark.parametrize("orient", ["chosen", "rows"])
def test_resnet_pool_tile_matches_the_interpreter(monkeypatch, orient):
    if orient == "rows":
        monkeypatch.setattr(isa_pool, "_orientations", lambda *a: (False, []))
    got, want, _, _ = simulate(RESNET_TILE)
    check(RESNET_TILE, got, want)


def test_columns_take_fewer_instructions_and_cycles(monkeypatch):
    from ge.dialects.dtypes import numpy_dtype
    from ge.runtime.simulator import Simulator
    from ge.runtime.tile_interp import vpool as vpool_reference

    stats = {}
    for orient in ("chosen", "rows"):
        with pytest.MonkeyPatch.context() as mp:
            if orient == "rows":
                mp.setattr(isa_pool, "_orientations", lambda *a: (False, []))
            kernel = compile_kernel(pool_kernel(RESNET_TILE))
            x = source_data(RESNET_TILE)
            y = np.zeros(int(np.prod(RESNET_TILE.dst)), numpy_dtype(RESNET_TILE.elem))
            run = Simulator(TARGET).run_kernel(kernel, [x.reshape(-1), y])
            want = vpool_reference(x, RESNET_TILE.out_hw, RESNET_TILE.h, RESNET_TILE.w, **RESNET_TILE.params())
            check(RESNET_TILE, y.reshape(RESNET_TILE.dst), want)
            stats[orient] = run.instructions["V"], run.pipe_busy["V"]
    # row pass 2 x 7 + column pass 2 x 7 vmax -> 2 x 3 + 2 x 1 (the clean copy in both)
    assert stats["rows"][0] - stats["chosen"][0] == 28 - 8, stats
    assert stats["chosen"][1] < 0.7 * stats["rows"][1], stats


def _pool_model(kind: str, **attrs) -> onnx.ModelProto:
    node = helper.make_node(kind, ["x"], ["y"], name="pool", **attrs)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32, 56, 56])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _negative_inputs() -> dict[str, np.ndarray]:
    x = -np.abs(np.random.default_rng(3).standard_normal((2, 32, 56, 56))) - 0.5
    return {"x": x.astype(np.float16).astype(np.float32)}  # f16 values: force_fp16 is exact for a max


@pytest.mark.parametrize("padded", [True, False])
def test_max_pool_reads_the_padded_tile(tmp_path, monkeypatch, padded):
    if not padded:
        monkeypatch.setattr(isa_pool, "padded_by_copy", lambda *a: False)
    model = _pool_model("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    compiled, kernel = kernel_ir(model, tmp_path, marker="isa.vmax", soc_version="ascend910")
    # the clean copy's temporary (isa_pool.clean_copy), made only without the padded tile
    assert ("%pool_in" in kernel) is not padded
    got = compiled.run(_negative_inputs())["y"]
    assert compiled.last_run.problems == []
    want = onnxruntime_outputs(model, _negative_inputs())[0]
    assert np.array_equal(got, want)  # exact: a max of f16 values, -inf pads never win


def test_padded_tile_saves_vector_cycles(tmp_path, monkeypatch):
    model = _pool_model("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cycles = {}
    for padded in (True, False):
        monkeypatch.setattr(isa_pool, "padded_by_copy", (lambda *a: False) if not padded else _original)
        compiled, kernel = kernel_ir(model, tmp_path / str(padded), marker="isa.vmax", soc_version="ascend910")
        name = kernel.split("@", 1)[1].split(" ", 1)[0]
        compiled.run(_negative_inputs(), timing_only=True)
        (k,) = [k for k in compiled.last_run.kernels if k.kernel == name]
        cycles[padded] = k.pipe_busy["V"], k.instructions["V"]
    assert cycles[True][1] < cycles[False][1]
    assert cycles[True][0] < cycles[False][0], cycles


_original = isa_pool.padded_by_copy


def test_average_pool_padded_with_zeros(tmp_path):
    """An f32 average (must_keep_origin_dtype): the copy-in's 0 pads are the sum's neutral
    value, so no clean copy; the divisor still counts only the input positions."""
    model = _pool_model("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    import ge

    compiled = ge.compile(model, ge.CompileOptions(soc_version="ascend910", precision_mode="must_keep_origin_dtype",
                                                   keep_ir_text=False))
    x = {"x": np.random.default_rng(4).standard_normal((2, 32, 56, 56)).astype(np.float32) - 1.0}
    got = compiled.run(x)["y"]
    assert compiled.last_run.problems == []
    want = onnxruntime_outputs(model, x)[0]
    # f32 sums of 9 values in another order, one division: a few f32 ulps
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)


def test_pool_of_an_input_larger_than_half_the_l2_is_modeled_as_hits(tmp_path):
    """resnet50_b16's pool reads what the kernel before it wrote, 25.7 MB: more than half
    the 910's 32 MB L2 but within it, so the simulator finds it there. The tiler prices
    the loads as L2 hits (`tile_vector.l2_resident`); at the HBM share the model said
    1.67x the simulated cycles."""
    import re

    import ge

    shape = [16, 16, 112, 112]
    rng = np.random.default_rng(5)
    w1, w2 = (numpy_helper.from_array(rng.standard_normal((64, c, 1, 1)).astype(np.float16), name)
              for c, name in ((16, "w1"), (64, "w2")))
    # a conv writes the 25.7 MB map reading 6.4 MB (resnet's conv1 reads its C04 input), so
    # the L2 holds the map when the pool launches; the conv after keeps the pool's output NC1HWC0
    nodes = [helper.make_node("Conv", ["x", "w1"], ["r"], name="expand"),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              name="pool"),
             helper.make_node("Conv", ["p", "w2"], ["y"], name="conv")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    compiled = ge.compile(model, ge.CompileOptions(soc_version="ascend910", precision_mode="force_fp16",
                                                   dump_ir=str(tmp_path)))
    text = next(tmp_path.glob("*_tile.mlir")).read_text()
    (modeled,) = [int(c) for name, c in re.findall(r"tile.kernel @(\w+) .*?tile.cycles = (\d+)", text) if "pool" in name]
    compiled.run({"x": np.zeros(shape, np.float16)}, timing_only=True)
    (run,) = [k for k in compiled.last_run.kernels if "pool" in k.kernel]
    assert 0.85 < modeled / run.cycles < 1.15, (modeled, run.cycles)
