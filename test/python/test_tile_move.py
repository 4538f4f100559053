"""Data-movement kernels (lowering/tile_move.py) end to end: ge.compile at the isa level +
CompiledModel.run on the simulator, against onnxruntime.

The ONNX node cases of Gather, Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth, Pad,
Concat and Trilu run with their integer shape / axes / pads / repeats inputs frozen as
constants (Gather's indices stay a run-time input). Movers copy values, so f32
(must_keep_origin_dtype) results must be bit-identical to onnxruntime's; in the default
f16 mode the values are rounded to f16 once (relative error <= 2^-11).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.conformance import excluded_reason, node_cases
from ge.errors import GeError
from ge.frontend.onnx import NeedsInputValue, import_model

MOVERS = ("Gather", "Slice", "Split", "Expand", "Tile", "DepthToSpace", "SpaceToDepth", "Pad", "Concat", "Trilu")
CASES = [(n, op, c) for n, op, c in node_cases() if op in MOVERS and excluded_reason(n) is None]
FIRST = {op: (n, c) for n, op, c in reversed(CASES)}
F32 = ge.CompileOptions(precision_mode="must_keep_origin_dtype")


def _arrays(case) -> list[np.ndarray]:
    return [np.asarray(numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else a) for a in case.data_sets[0][0]]


def frozen(model: onnx.ModelProto, inputs: list[np.ndarray]) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model with the inputs the importer needs at compile time turned into
    initializers, and the remaining (run-time) inputs by name."""
    inits = {t.name for t in model.graph.initializer}
    by_name = dict(zip([i.name for i in model.graph.input if i.name not in inits], inputs))
    fixed: set[str] = set()
    while True:
        try:
            import_model(model, input_shape={n: a.shape for n, a in by_name.items() if n not in fixed},
                         frozen_inputs={n: by_name[n] for n in fixed})
            break
        except NeedsInputValue as e:
            assert not set(e.names) <= fixed
            fixed |= set(e.names)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    live = [i for i in out.graph.input if i.name not in fixed]
    del out.graph.input[:]
    out.graph.input.extend(live)
    out.graph.initializer.extend(numpy_helper.from_array(by_name[n], n) for n in sorted(fixed))
    return out, {n: a for n, a in by_name.items() if n not in fixed}


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString()).run(None, inputs)


def run_case(case, options: ge.CompileOptions) -> None:
    inputs = _arrays(case)
    model, live = frozen(case.model, inputs)
    names = [i.name for i in case.model.graph.input if i.name not in {t.name for t in case.model.graph.initializer}]
    want = onnxruntime_outputs(case.model, dict(zip(names, inputs)))
    compiled = ge.compile(model, options)
    got = list(compiled.run(live).values())
    assert not compiled.last_run.problems
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if options.precision_mode == "must_keep_origin_dtype" or w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=2.0**-11, atol=0)


def test_every_mover_has_cases():
    assert set(FIRST) == set(MOVERS)
    assert len(CASES) >= 70


@pytest.mark.parametrize(("name", "case"), [(n, c) for _, n, c in CASES], ids=[n for n, _, _ in CASES])
def test_node_case_f32(name, case):
    run_case(case, F32)


EMPTY = [(n, c) for n, _, c in CASES if "zero" in n or "out_of_bounds" in n]  # outputs without elements
F16 = [*FIRST.values(), *EMPTY]


@pytest.mark.parametrize(("name", "case"), F16, ids=[n for n, _ in F16])
def test_node_case_f16(name, case):
    run_case(case, ge.CompileOptions())


# --------------------------------------------------------------------------------------
# Gather: an embedding lookup at DMA speed
# --------------------------------------------------------------------------------------


def embedding_model(vocab: int, hidden: int, batch: int, seq: int, seed: int = 0) -> onnx.ModelProto:
    table = np.random.default_rng(seed).standard_normal((vocab, hidden)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0, name="word_embeddings")], "embedding",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [batch, seq, hidden])],
        [numpy_helper.from_array(table, "table")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_embedding_lookup_moves_one_row_per_dma():
    vocab, hidden, batch, seq = 3000, 128, 2, 64
    model = embedding_model(vocab, hidden, batch, seq)
    ids = np.random.default_rng(1).integers(-vocab, vocab, size=(batch, seq)).astype(np.int64)  # negatives wrap
    compiled = ge.compile(model, F32)
    got = compiled.run({"ids": ids})["emb"]
    np.testing.assert_array_equal(got, onnxruntime_outputs(model, {"ids": ids})[0])
    (kernel,) = compiled.last_run.kernels
    rows = batch * seq
    # one scalar read per index, one DMA per row in and out, one index chunk per block
    assert kernel.instructions["S"] == rows
    assert kernel.instructions["MTE3"] == rows
    assert kernel.instructions["MTE2"] == rows + kernel.blocks
    assert kernel.instructions["V"] == 0


def test_gather_index_out_of_range_is_a_run_time_error():
    model = embedding_model(50, 16, 1, 4)
    compiled = ge.compile(model, F32)
    with pytest.raises(GeError, match=r"index 50 is out of range \[-50, 50\)"):
        compiled.run({"ids": np.array([[0, 1, 50, 2]], dtype=np.int64)})
    with pytest.raises(GeError, match=r"index -51 is out of range"):
        compiled.run({"ids": np.array([[0, -51, 1, 2]], dtype=np.int64)})


def test_gather_inner_axis_on_the_tile_interpreter():
    """Gather along axis 1 (rows are strided columns), kernel_level='tile'."""
    x = np.arange(3 * 7 * 4, dtype=np.float32).reshape(3, 7, 4)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], "g",
        [helper.make_tensor_value_info("i", TensorProto.INT32, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2, 2, 4])], [numpy_helper.from_array(x, "x")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    i = np.array([[6, -7], [0, 3]], dtype=np.int32)
    want = onnxruntime_outputs(model, {"i": i})[0]
    for level in ("tile", "isa"):
        got = ge.compile(model, ge.CompileOptions(precision_mode="must_keep_origin_dtype", kernel_level=level)).run({"i": i})
        np.testing.assert_array_equal(got["y"], want)


# --------------------------------------------------------------------------------------
# Other movers beyond the node cases
# --------------------------------------------------------------------------------------


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _check(model: onnx.ModelProto, inputs: dict[str, np.ndarray], level: str = "isa") -> ge.CompiledModel:
    compiled = ge.compile(model, ge.CompileOptions(precision_mode="must_keep_origin_dtype", kernel_level=level))
    got = list(compiled.run(inputs).values())
    for g, w in zip(got, onnxruntime_outputs(model, inputs)):
        np.testing.assert_array_equal(g, w)
    return compiled


def _const(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def test_movers_on_larger_shapes():
    """Slice with a negative inner step, Expand with a partial broadcast, Tile on several
    axes, reflect and edge Pad, DepthToSpace CRD, Trilu lower with k < 0, chained."""
    x = np.random.default_rng(0).standard_normal((2, 8, 6, 10)).astype(np.float32)
    nodes = [
        helper.make_node("Slice", ["x", "s0", "s1", "s2", "s3"], ["a"]),
        helper.make_node("Expand", ["a", "shape"], ["b"]),
        helper.make_node("Tile", ["b", "reps"], ["c"]),
        helper.make_node("Pad", ["c", "pads"], ["d"], mode="reflect"),
        helper.make_node("Pad", ["d", "pads2"], ["e"], mode="edge"),
        helper.make_node("DepthToSpace", ["x"], ["f"], blocksize=2, mode="CRD"),
        helper.make_node("Trilu", ["f", "k"], ["g"], upper=0),
    ]
    inits = [_const("s0", [0, 9]), _const("s1", [1, -11]), _const("s2", [1, 3]), _const("s3", [1, -2]),
             _const("shape", [3, 2, 4, 6, 5]), _const("reps", [1, 2, 1, 1, 3]),
             _const("pads", [0, 0, 0, 2, 1, 0, 0, 0, 1, 2]), _const("pads2", [1, 0, 0, 0, 3, 0, 1, 0, 0, 0]),
             _const("k", -1)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 6, 10])],
                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, None),
                    helper.make_tensor_value_info("g", TensorProto.FLOAT, None)], inits)
    compiled = _check(model, {"x": x})
    assert not compiled.last_run.problems


def test_concat_and_split_of_conv_outputs_in_nc1hwc0():
    """Concat along C of convs whose channels fill whole C0 blocks stays in NC1HWC0 (the
    copy joins C1 blocks); a Split into unequal parts follows."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((5, 3, 1, 1)) * 0.2).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w2"], ["c2"]),
        helper.make_node("Concat", ["c1", "c2"], ["cat"], axis=1),
        helper.make_node("Relu", ["cat"], ["r"]),
        helper.make_node("Split", ["r", "parts"], ["p0", "p1"], axis=1),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                   [helper.make_tensor_value_info("p0", TensorProto.FLOAT, None),
                    helper.make_tensor_value_info("p1", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"), _const("parts", [7, 14])])
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    compiled = ge.compile(model, F32)
    got = compiled.run({"x": x})
    for g, w in zip(got.values(), onnxruntime_outputs(model, {"x": x})):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)  # the convs accumulate in a different order


def test_trilu_on_the_tile_interpreter_and_constant_folded():
    x = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4) - 20
    nodes = [helper.make_node("Trilu", ["x", "k"], ["y"], upper=1)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [_const("k", 2)])
    _check(model, {"x": x}, level="tile")
    # a Trilu of a constant (a causal mask) folds away: no kernel computes it
    mask = helper.make_node("Trilu", ["ones"], ["m"], upper=0)
    add = helper.make_node("Add", ["x", "m"], ["y"])
    ones = numpy_helper.from_array(np.ones((5, 4), dtype=np.float32), "ones")
    folded = _model([mask, add], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [ones])
    compiled = _check(folded, {"x": x})
    assert len(compiled.last_run.kernels) == 1


def random_mover(seed: int) -> tuple[list, list[int], list, str]:
    """(nodes, input shape, initializers, precision) of a random mover on a random shape."""
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 5))
    shape = [int(r.integers(1, 9)) for _ in range(rank)]
    kind = ("slice", "pad", "tile", "expand", "concat", "split", "trilu", "gather", "space")[seed % 9]
    prec = "force_fp16" if seed % 2 else "must_keep_origin_dtype"
    inits: list = []
    if kind == "slice":  # bounds past the ends are clamped; steps of either sign
        starts, ends, steps = [], [], []
        for n in shape:
            step = int(r.integers(1, 4)) * (1 if r.random() < 0.6 else -1)
            a, b = sorted(r.integers(-n - 1, n + 2, 2).tolist())
            starts.append(a if step > 0 else b)
            ends.append(b if step > 0 else a)
            steps.append(step)
        nodes = [helper.make_node("Slice", ["x", "a", "b", "ax", "s"], ["y"])]
        inits = [_const("a", starts), _const("b", ends), _const("ax", list(range(rank))), _const("s", steps)]
    elif kind == "pad":
        mode = ("constant", "reflect", "edge", "wrap")[int(r.integers(0, 4))]
        pads = [int(r.integers(0, max(1, n))) for n in shape * 2]
        if mode == "constant":  # negative pads crop
            pads = [p - int(r.integers(0, 2)) if p > 0 else p for p in pads]
        nodes = [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)]
        inits = [_const("p", pads), numpy_helper.from_array(np.array(2.5, np.float32), "v")]
    elif kind == "tile":
        nodes = [helper.make_node("Tile", ["x", "r"], ["y"])]
        inits = [_const("r", [int(r.integers(1, 4)) for _ in shape])]
    elif kind == "expand":
        shape = [1 if r.random() < 0.5 else n for n in shape]
        target = [int(r.integers(1, 4))] + [int(r.integers(2, 6)) if n == 1 else n for n in shape]
        nodes = [helper.make_node("Expand", ["x", "s"], ["y"])]
        inits = [_const("s", target)]
    elif kind == "concat":
        axis = int(r.integers(0, rank))
        other = list(shape)
        other[axis] = int(r.integers(1, 6))
        nodes = [helper.make_node("Concat", ["x", "c", "x"], ["y"], axis=axis)]
        inits = [numpy_helper.from_array(r.standard_normal(other).astype(np.float32), "c")]
    elif kind == "split":  # unequal (possibly empty) parts, joined back in reverse order
        axis = int(r.integers(0, rank))
        n = shape[axis]
        cuts = sorted(r.integers(0, n + 1, int(r.integers(0, n))).tolist())
        parts = np.diff([0, *cuts, n]).tolist()
        outs = [f"o{i}" for i in range(len(parts))]
        nodes = [helper.make_node("Split", ["x", "sp"], outs, axis=axis),
                 helper.make_node("Concat", outs[::-1], ["y"], axis=axis)]
        inits = [_const("sp", parts)]
    elif kind == "trilu":
        shape = shape if rank >= 2 else [3, *shape]
        nodes = [helper.make_node("Trilu", ["x", "k"], ["y"], upper=int(r.integers(0, 2)))]
        inits = [_const("k", int(r.integers(-4, 5)))]
    elif kind == "gather":
        axis = int(r.integers(0, rank))
        idx = r.integers(-shape[axis], shape[axis], size=[int(r.integers(1, 4)) for _ in range(int(r.integers(0, 3)))])
        nodes = [helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)]
        inits = [_const("i", idx)]
    else:
        shape = [int(r.integers(1, 3)), 4 * int(r.integers(1, 3)), 2 * int(r.integers(1, 4)), 2 * int(r.integers(1, 4))]
        if r.random() < 0.5:
            nodes = [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode=("DCR", "CRD")[int(r.integers(0, 2))])]
        else:
            nodes = [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)]
    return nodes, shape, inits, prec


@pytest.mark.parametrize("seed", range(18))
def test_random_movers(seed):
    """Random Slice (any steps, clamped bounds), Pad (every mode), Tile, Expand, Concat,
    Split + Concat, Trilu, Gather (any axis, negative indices), DepthToSpace/SpaceToDepth."""
    nodes, shape, inits, prec = random_mover(seed)
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = onnxruntime_outputs(model, {"x": x})[0]
    got = ge.compile(model, ge.CompileOptions(precision_mode=prec)).run({"x": x})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2.0**-11 if prec == "force_fp16" else 0, atol=0)


# --------------------------------------------------------------------------------------
# 1-D convolution and pooling through the 2-D path
# --------------------------------------------------------------------------------------


def test_conv1d_and_pool1d_model():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 3, 5)) * 0.3).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[2, 2], name="conv1d"),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3], strides=[2], pads=[1, 1], name="pool1d"),
        helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2], strides=[2], name="avg1d"),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 40])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    x = rng.standard_normal((2, 3, 40)).astype(np.float32)
    want = onnxruntime_outputs(model, {"x": x})[0]
    scale = float(np.abs(want).max())
    got = ge.compile(model, F32).run({"x": x})["y"]
    assert got.shape == want.shape == (2, 8, 10)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale)  # f32 conv: accumulation order
    got16 = ge.compile(model).run({"x": x})["y"]
    np.testing.assert_allclose(got16, want, rtol=0, atol=3e-3 * scale)  # f16 inputs and weights
