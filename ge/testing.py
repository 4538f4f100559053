"""Models for tests and benchmarks: the onnx wheel's light model zoo with seeded weights.

The nine `light_*.onnx` graphs in `onnx/backend/test/data/light` carry every weight as a
`ConstantOfShape` filled with 0.02, which makes every channel identical and hides indexing
bugs. `with_random_weights` turns each of those into an initializer with seeded random
values shaped for its role (He-scaled conv/gemm weights, positive BatchNorm variances), so
a wrong channel, offset or transpose shows up as a wrong number.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

LIGHT_MODELS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)


def light_model_dir() -> Path:
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def light_model_path(name: str) -> Path:
    return light_model_dir() / f"light_{name}.onnx"


def _role(model: onnx.ModelProto, tensor: str) -> tuple[str, int]:
    for n in model.graph.node:
        if tensor in n.input:
            return n.op_type, list(n.input).index(tensor)
    return "", -1


def with_random_weights(model: onnx.ModelProto | str | Path, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose ConstantOfShape weights are seeded random initializers."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    model = onnx.ModelProto.FromString(model.SerializeToString())
    rng = np.random.default_rng(seed)
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    keep_nodes, new_inits = [], []
    for n in g.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
            keep_nodes.append(n)
            continue
        shape = tuple(int(d) for d in inits[n.input[0]])
        op, idx = _role(model, n.output[0])
        new_inits.append(numpy_helper.from_array(_weight(rng, shape, op, idx), n.output[0]))
    shape_inputs = {n.input[0] for n in g.node if n.op_type == "ConstantOfShape"} - {
        i for n in keep_nodes for i in n.input
    }
    del g.node[:]
    g.node.extend(keep_nodes)
    kept = [t for t in g.initializer if t.name not in shape_inputs]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    inputs = [i for i in g.input if i.name not in shape_inputs]
    listed = {i.name for i in inputs}
    if model.ir_version < 4:  # IR < 4 requires every initializer to be a graph input too
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in new_inits if t.name not in listed]
    del g.input[:]
    g.input.extend(inputs)
    return model


def _weight(rng: np.random.Generator, shape: tuple[int, ...], op: str, idx: int) -> np.ndarray:
    if op == "BatchNormalization":
        if idx == 1:  # scale
            return rng.uniform(0.5, 1.5, shape).astype(np.float32)
        if idx == 4:  # variance
            return rng.uniform(0.5, 1.5, shape).astype(np.float32)
        return rng.normal(0.0, 0.1, shape).astype(np.float32)
    if op in ("Conv", "Gemm", "MatMul") and idx == 1 and len(shape) >= 2:
        fan_in = int(np.prod(shape[1:])) if op == "Conv" else shape[0] if op == "MatMul" else min(shape)
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return rng.normal(0.0, 0.05, shape).astype(np.float32)


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            out[vi.name] = rng.standard_normal(shape).astype(dtype)
        else:
            out[vi.name] = rng.integers(0, 4, shape).astype(dtype)
    return out


def calibrate_weights(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` whose random weights behave like trained ones on `inputs`.

    Deep nets with random weights are chaotic (activations grow or vanish layer after
    layer, so rounding differences grow too). Here every BatchNormalization gets the real
    per-channel mean and variance of its input, and every Conv / Gemm / MatMul whose output
    does not feed a BatchNormalization is rescaled (weight and bias) to unit output RMS --
    one forward pass through ge's reference kernels, layer by layer, so each layer sees its
    calibrated predecessors. Weights shared by two layers, or not stored as initializers,
    are left alone.
    """
    from xdsl.dialects import func
    from xdsl.ir import SSAValue

    from ge.dialects import graph
    from ge.frontend.onnx import _value_name, import_model
    from ge.runtime.reference import evaluate, find_function

    module = import_model(model)
    fn = find_function(module)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    by_hint: dict[str, list[str]] = {}
    for name in inits:  # xDSL drops a `_<digits>` suffix from name hints: several may match
        by_hint.setdefault(SSAValue.extract_valid_name(_value_name(name)), []).append(name)
    updates: dict[str, np.ndarray] = {}
    env = dict(zip(fn.body.block.args, (inputs[n] for n in graph.argument_names(fn))))

    def initializer(v) -> str | None:
        """The initializer a constant operand was imported from (same name and value)."""
        if not isinstance(v.owner, graph.ConstantOp):
            return None
        value = env[v]
        found = [n for n in by_hint.get(v.name_hint or "", []) if np.array_equal(inits[n], value)]
        return found[0] if len(found) == 1 else None

    def update(*pairs) -> bool:
        """Record new values for initializers (all or none); False if one is not an
        unshared initializer."""
        names = [initializer(v) for v, _ in pairs]
        if any(n is None or n in updates for n in names) or len(set(names)) != len(names):
            return False
        updates.update((n, a.astype(np.float32)) for n, (_, a) in zip(names, pairs))
        return True

    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            break
        args = [env[v] for v in op.operands]
        if isinstance(op, graph.BatchNormOp):
            x = args[0].astype(np.float64)
            axes = (0, *range(2, x.ndim))
            mean, var = x.mean(axis=axes), x.var(axis=axes)
            if update((op.mean, mean), (op.var, var)):
                args[3], args[4] = mean.astype(np.float32), var.astype(np.float32)
        results = evaluate(op, args)
        if isinstance(op, graph.Conv2dOp | graph.GemmOp | graph.MatMulOp) and not any(
            isinstance(u.operation, graph.BatchNormOp) for u in op.results[0].uses
        ):
            rms = float(np.sqrt(np.mean(results[0].astype(np.float64) ** 2)))
            params = (op.weight, op.bias) if isinstance(op, graph.Conv2dOp) else (
                (op.b, op.c) if isinstance(op, graph.GemmOp) else (op.rhs,)
            )
            if rms > 0 and update(*((v, env[v] / rms) for v in params if v is not None)):
                results = [(results[0] / rms).astype(results[0].dtype)]
        env.update(zip(op.results, results))

    out = onnx.ModelProto.FromString(model.SerializeToString())
    for t in out.graph.initializer:
        if t.name in updates:
            t.CopyFrom(numpy_helper.from_array(updates[t.name].astype(numpy_helper.to_array(t).dtype), t.name))
    return out


def encoder_layer_model(
    seq: int = 64, hidden: int = 128, heads: int = 4, ffn: int = 512, seed: int = 0, opset: int = 17
) -> onnx.ModelProto:
    """A BERT-style transformer encoder layer as torch exports it (MatMul/Add projections,
    Reshape/Transpose heads, scaled Softmax attention with an additive mask, Erf-form GELU,
    LayerNormalization), with seeded weights. Inputs: `x` [1, seq, hidden], `mask` [1, 1, 1, seq]."""
    rng = np.random.default_rng(seed)
    d = hidden // heads
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, arr) -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(name: str, shape) -> str:
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def bias(name: str, n: int) -> str:
        return const(name, (rng.standard_normal(n) * 0.02).astype(np.float32))

    def node(op: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, name: str, n_in: int, n_out: int) -> str:
        mm = node("MatMul", [x, weight(f"{name}.weight", (n_in, n_out))], f"{name}_mm")
        return node("Add", [mm, bias(f"{name}.bias", n_out)], f"{name}_out")

    heads_shape = const("heads_shape", np.array([1, seq, heads, d], np.int64))
    merged_shape = const("merged_shape", np.array([1, seq, hidden], np.int64))

    def split_heads(t: str, name: str, perm) -> str:
        r = node("Reshape", [t, heads_shape], f"{name}_split")
        return node("Transpose", [r], f"{name}_heads", perm=perm)

    q = split_heads(linear("x", "query", hidden, hidden), "q", [0, 2, 1, 3])
    k = split_heads(linear("x", "key", hidden, hidden), "k", [0, 2, 3, 1])
    v = split_heads(linear("x", "value", hidden, hidden), "v", [0, 2, 1, 3])
    scores = node("MatMul", [q, k], "scores")
    scaled = node("Div", [scores, const("scale", np.array(np.sqrt(d), np.float32))], "scaled")
    masked = node("Add", [scaled, "mask"], "masked")
    probs = node("Softmax", [masked], "probs", axis=-1)
    ctx = node("MatMul", [probs, v], "context")
    ctx = node("Transpose", [ctx], "context_t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, merged_shape], "context_merged")
    attn = linear(ctx, "attn_out", hidden, hidden)
    res1 = node("Add", [attn, "x"], "residual1")
    ln1 = node(
        "LayerNormalization",
        [res1, const("ln1.gamma", np.ones(hidden, np.float32)), const("ln1.beta", np.zeros(hidden, np.float32))],
        "ln1", axis=-1, epsilon=1e-5,
    )
    h = linear(ln1, "ffn_in", hidden, ffn)
    # GELU as torch exports it before opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
    e = node("Erf", [node("Div", [h, const("sqrt2", np.array(np.sqrt(2.0), np.float32))], "gelu_div")], "gelu_erf")
    e = node("Add", [e, const("one", np.array(1.0, np.float32))], "gelu_add")
    g = node("Mul", [node("Mul", [h, e], "gelu_mul"), const("half", np.array(0.5, np.float32))], "gelu")
    out = linear(g, "ffn_out", ffn, hidden)
    res2 = node("Add", [out, ln1], "residual2")
    node(
        "LayerNormalization",
        [res2, const("ln2.gamma", np.ones(hidden, np.float32)), const("ln2.beta", np.zeros(hidden, np.float32))],
        "y", axis=-1, epsilon=1e-5,
    )
    graph = helper.make_graph(
        nodes, "encoder_layer",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info("mask", onnx.TensorProto.FLOAT, [1, 1, 1, seq])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, seq, hidden])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def two_branch_model(batch: int | str = 32, k: int = 64, seed: int = 0) -> onnx.ModelProto:
    """Two independent branches, x -> MatMul -> Relu -> MatMul and x -> MatMul -> Sigmoid ->
    MatMul, added: small kernels that leave cores free, so a second stream pays off.
    Input `x` [batch, k] (`batch` may be a symbolic name), output `y` [batch, k]."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((k, k)) / 8).astype(np.float32), f"w{i}") for i in range(4)]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a0"], name="a0"),
        helper.make_node("Relu", ["a0"], ["a1"], name="a1"),
        helper.make_node("MatMul", ["a1", "w1"], ["a2"], name="a2"),
        helper.make_node("MatMul", ["x", "w2"], ["b0"], name="b0"),
        helper.make_node("Sigmoid", ["b0"], ["b1"], name="b1"),
        helper.make_node("MatMul", ["b1", "w3"], ["b2"], name="b2"),
        helper.make_node("Add", ["a2", "b2"], ["y"], name="y"),
    ]
    graph = helper.make_graph(
        nodes, "two_branch", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [batch, k])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [batch, k])], initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def calibrated_model(name: str, seed: int = 1, input_seed: int = 2) -> onnx.ModelProto:
    """A light model (or "encoder_layer") with seeded weights calibrated on its seeded
    inputs: f16 stays finite and well-conditioned through deep nets (benchmarks use it)."""
    model = encoder_layer_model() if name == "encoder_layer" else with_random_weights(light_model_path(name), seed=seed)
    return calibrate_weights(model, random_inputs(model, seed=input_seed))
