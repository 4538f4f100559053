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


def conv_relu_model(cin: int, cout: int, hw: int, k: int, batch: int = 1) -> tuple[onnx.ModelProto, list[int]]:
    """Conv (+ bias, seeded He-scaled weights, "same" pads) + ReLU on a [batch, cin, hw, hw]
    input -- one Cube kernel -- and the input shape (the cost-model and Cube-pipeline tests)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[k // 2] * 4),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [batch, cin, hw, hw])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [batch, cout, hw, hw])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [batch, cin, hw, hw]


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


def layout_level(model: onnx.ModelProto, precision_mode: str = "must_keep_origin_dtype"):
    """`model` imported and run through ge.compile's stages up to `fuse` (what fusion sees:
    storage formats assigned, conversions eliminated); returns the verified module."""
    from ge.compiler import CompileOptions, pass_stages, resolve_target
    from ge.frontend.onnx import import_model
    from ge.ir import make_context

    module = import_model(model)
    opts = CompileOptions(precision_mode=precision_mode)
    ctx = make_context()
    for name, p in pass_stages(opts, resolve_target(opts.soc_version)):
        if name == "fuse":
            break
        p.apply(ctx, module)
    module.verify()
    return module


def calibrated_model(name: str, seed: int = 1, input_seed: int = 2) -> onnx.ModelProto:
    """A light model (or "encoder_layer") with seeded weights calibrated on its seeded
    inputs: f16 stays finite and well-conditioned through deep nets (benchmarks use it)."""
    model = encoder_layer_model() if name == "encoder_layer" else with_random_weights(light_model_path(name), seed=seed)
    return calibrate_weights(model, random_inputs(model, seed=input_seed))


# --------------------------------------------------------------------------------------
# Random graphs for the differential fuzzer (ge/fuzz.py)
# --------------------------------------------------------------------------------------

_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Abs", "Neg", "Softsign",
                "Elu", "Softplus")
_REDUCTIONS = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin")


class _RandomGraph:
    """Builds one NNSmith-style graph: a chain of patterns over a current tensor whose
    shape is tracked here, with branches that rejoin it (residual Add, Concat, attention)."""

    def __init__(self, seed: int, conv1d: bool, max_ops: int, opset: int):
        self.rng = np.random.default_rng(seed)
        self.conv1d, self.max_ops, self.opset = conv1d, max_ops, opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.count = 0

    # -- helpers -------------------------------------------------------------------------

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def name(self, op: str) -> str:
        self.count += 1
        return f"{op.lower()}{self.count}"

    def const(self, arr: np.ndarray, hint: str = "c") -> str:
        name = f"{hint}{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(self, shape, fan_in: int) -> str:
        return self.const((self.rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(np.float32), "w")

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs) -> str:
        out = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.shapes[out] = tuple(shape)
        return out

    # -- patterns on any rank ------------------------------------------------------------

    def activation(self, x: str) -> str:
        op = self.pick(_ACTIVATIONS)
        s = self.shapes[x]
        if op == "Clip":
            lo, hi = self.const(np.float32(-1.0 + self.rng.random())), self.const(np.float32(0.5 + self.rng.random()))
            return self.node("Clip", [x, lo, hi], s)
        if op == "LeakyRelu":
            return self.node(op, [x], s, alpha=float(np.round(self.rng.uniform(0.01, 0.3), 2)))
        return self.node(op, [x], s)

    def arithmetic(self, x: str) -> str:
        """Broadcast arithmetic with a constant of a shape that broadcasts to x's."""
        s = self.shapes[x]
        op = self.pick(("Add", "Sub", "Mul", "Div"))
        options = [(), (1,), (s[-1],), s, (1,) * (len(s) - 1) + (s[-1],)]
        if len(s) >= 3:
            options += [(s[1],) + (1,) * (len(s) - 2), (1,) + s[1:2] + (1,) * (len(s) - 2), s[-2:]]
        cs = self.pick(options)
        if op in ("Mul", "Div"):
            value = self.rng.uniform(0.5, 2.0, cs) * self.rng.choice([-1.0, 1.0], cs)
        else:
            value = self.rng.standard_normal(cs)
        c = self.const(value.astype(np.float32))
        return self.node(op, [x, c] if self.chance(0.8) or op == "Div" else [c, x], s)

    def softmax(self, x: str) -> str:
        s = self.shapes[x]
        axes = [a for a in range(len(s)) if s[a] > 1] or [len(s) - 1]  # (over one element: a constant)
        axis = self.pick(axes) - (len(s) if self.chance(0.5) else 0)
        return self.node(self.pick(("Softmax", "LogSoftmax")), [x], s, axis=int(axis))

    def reduction(self, x: str) -> str:
        s = self.shapes[x]
        k = int(self.rng.integers(1, len(s)))
        axes = sorted(int(a) for a in self.rng.choice(len(s), size=k, replace=False))
        op = self.pick(_REDUCTIONS)
        prev = next((n for n in self.nodes if n.output[0] == x), None)
        if op in ("ReduceSum", "ReduceMean") and prev is not None and prev.op_type == "Softmax":
            axis = helper.get_attribute_value(prev.attribute[0]) % len(s)
            if axis in axes:  # (the sum of a softmax over its axis is 1: a constant)
                op = "ReduceMax"
        shape = tuple(1 if i in axes else d for i, d in enumerate(s))
        if op == "ReduceSum":
            return self.node(op, [x, self.const(np.array(axes, np.int64), "axes")], shape, keepdims=1)
        return self.node(op, [x], shape, axes=axes, keepdims=1)

    def layer_norm(self, x: str) -> str:
        s = self.shapes[x]
        axes = [a for a in range(1, len(s)) if np.prod(s[a:]) > 1] or [len(s) - 1]
        axis = int(self.pick(axes)) if self.chance(0.4) else axes[-1]
        norm = s[axis:]
        scale = self.const(self.rng.uniform(0.5, 1.5, norm).astype(np.float32), "gamma")
        bias = self.const((self.rng.standard_normal(norm) * 0.1).astype(np.float32), "beta")
        return self.node("LayerNormalization", [x, scale, bias], s, axis=axis, epsilon=1e-5)

    def transpose(self, x: str) -> str:
        s = self.shapes[x]
        perm = [int(p) for p in self.rng.permutation(len(s))]
        if len(s) == 4 and self.chance(0.5):
            perm = [0] + [int(p) + 1 for p in self.rng.permutation(3)]
        return self.node("Transpose", [x], tuple(s[p] for p in perm), perm=perm)

    # -- feature maps (rank 3 with conv1d, rank 4) -------------------------------------------

    def conv(self, x: str, out_ch: int | None = None, same: bool = False) -> str:
        s = self.shapes[x]
        n, c, *sp = s
        kind = self.pick(("plain", "plain", "depthwise", "grouped"))
        group = 1
        if kind == "depthwise":
            group = c
        elif kind == "grouped":
            group = self.pick([g for g in (2, 3) if c % g == 0] or [1])
        mult = self.pick((1, 1, 2)) if kind == "depthwise" else 0
        co = out_ch or (c * mult if mult else group * int(self.rng.integers(1, 6)))
        if co % group:
            co = group * max(1, co // group)
        k = 1 if same and self.chance(0.5) else self.pick([kk for kk in (1, 3) if all(d >= kk for d in sp)] or [1])
        stride = 1 if same or min(sp) < 4 else self.pick((1, 1, 2))
        pad = k // 2 if same or self.chance(0.7) else 0
        out_sp = tuple((d + 2 * pad - k) // stride + 1 for d in sp)
        w = self.weight((co, c // group, *(k,) * len(sp)), (c // group) * k ** len(sp))
        inputs = [x, w] + ([self.const((self.rng.standard_normal(co) * 0.1).astype(np.float32), "b")]
                           if self.chance(0.6) else [])
        y = self.node("Conv", inputs, (n, co, *out_sp), kernel_shape=[k] * len(sp), strides=[stride] * len(sp),
                      pads=[pad] * (2 * len(sp)), group=group)
        if (self.chance(0.7) or same) and n * int(np.prod(out_sp)) >= 4:
            # (BatchNorm calibrated on fewer values per channel divides by a tiny variance)
            y = self.batch_norm(y)
        if self.chance(0.6):
            y = self.activation(y)
        return y

    def batch_norm(self, x: str) -> str:
        c = self.shapes[x][1]
        params = [self.rng.uniform(0.5, 1.5, c), self.rng.standard_normal(c) * 0.1, np.zeros(c), np.ones(c)]
        return self.node("BatchNormalization", [x, *(self.const(p.astype(np.float32), "bn") for p in params)],
                         self.shapes[x], epsilon=1e-5)

    def pool(self, x: str) -> str:
        s = self.shapes[x]
        sp = s[2:]
        if self.chance(0.3) or min(sp) < 2:
            return self.node(self.pick(("GlobalAveragePool", "GlobalMaxPool")), [x], s[:2] + (1,) * len(sp))
        k = self.pick([kk for kk in (2, 3) if min(sp) >= kk])
        stride = self.pick((1, 2))
        pad = self.pick((0, k // 2)) if k == 3 else 0
        out_sp = tuple((d + 2 * pad - k) // stride + 1 for d in sp)
        op = self.pick(("MaxPool", "AveragePool"))
        attrs = dict(kernel_shape=[k] * len(sp), strides=[stride] * len(sp), pads=[pad] * (2 * len(sp)))
        if op == "AveragePool" and pad:
            attrs["count_include_pad"] = int(self.chance(0.5))
        return self.node(op, [x], s[:2] + out_sp, **attrs)

    def residual(self, x: str) -> str:
        y = self.conv(x, out_ch=self.shapes[x][1], same=True)
        return self.node("Add", [x, y] if self.chance(0.5) else [y, x], self.shapes[x])

    def concat(self, x: str) -> str:
        a = self.conv(x, same=True) if self.chance(0.6) else self.activation(x)
        b = self.conv(x, same=True) if self.chance(0.5) else x
        parts = [a, b] if self.chance(0.5) else [b, a]
        axis = 1 if self.chance(0.7) else int(self.rng.integers(1, len(self.shapes[x])))
        if any(self.shapes[p][:axis] + self.shapes[p][axis + 1:] != self.shapes[x][:axis] + self.shapes[x][axis + 1:]
               for p in parts):
            axis = 1
        shape = list(self.shapes[parts[0]])
        shape[axis] = sum(self.shapes[p][axis] for p in parts)
        return self.node("Concat", parts, tuple(shape), axis=axis)

    # -- sequences ([N, S, D]) and matrices ([N, D]) -------------------------------------------

    def linear(self, x: str, width: int | None = None) -> str:
        s = self.shapes[x]
        d = s[-1]
        width = width or int(self.rng.integers(1, 13))
        if len(s) == 2 and self.chance(0.5):
            trans_b = int(self.chance(0.5))
            w = self.weight((width, d) if trans_b else (d, width), d)
            bias = self.const((self.rng.standard_normal(width) * 0.1).astype(np.float32), "b")
            return self.node("Gemm", [x, w, bias], (s[0], width), transB=trans_b)
        if len(s) == 4 and self.chance(0.3):  # batch dims that broadcast in part: [1, C] x [2, 1]
            w = self.weight((2, 1, d, width), d)
            y = self.node("MatMul", [x, w], (2, s[1], s[2], width))
        else:
            y = self.node("MatMul", [x, self.weight((d, width), d)], s[:-1] + (width,))
        if self.chance(0.5):
            y = self.node("Add", [y, self.const((self.rng.standard_normal(width) * 0.1).astype(np.float32), "b")],
                          self.shapes[y])
        return y

    def attention(self, x: str) -> str:
        """softmax(q k^T / sqrt(d)) v over a [N, S, D] sequence, projections included."""
        n, seq, d = self.shapes[x]
        q, k, v = (self.linear(x, d) for _ in range(3))
        kt = self.node("Transpose", [k], (n, d, seq), perm=[0, 2, 1])
        scores = self.node("MatMul", [q, kt], (n, seq, seq))
        scores = self.node("Div", [scores, self.const(np.float32(np.sqrt(d)))], (n, seq, seq))
        probs = self.node("Softmax", [scores], (n, seq, seq), axis=-1)
        ctx = self.node("MatMul", [probs, v], (n, seq, d))
        return self.node("Add", [ctx, x], (n, seq, d))

    def to_sequence(self, x: str) -> str:
        n, c, *sp = self.shapes[x]
        seq = int(np.prod(sp))
        r = self.node("Reshape", [x, self.const(np.array([n, c, seq], np.int64), "shape")], (n, c, seq))
        return self.node("Transpose", [r], (n, seq, c), perm=[0, 2, 1]) if self.chance(0.6) else r

    def to_matrix(self, x: str) -> str:
        s = self.shapes[x]
        return self.node("Flatten", [x], (s[0], int(np.prod(s[1:]))), axis=1)

    def batched_matmul(self, x: str) -> str:
        """x @ x^T (two computed operands, batch dims shared)."""
        s = self.shapes[x]
        perm = list(range(len(s) - 2)) + [len(s) - 1, len(s) - 2]
        xt = self.node("Transpose", [x], tuple(s[p] for p in perm), perm=perm)
        return self.node("MatMul", [x, xt], s[:-1] + (s[-2],))

    # -- the graph ---------------------------------------------------------------------------

    def step(self, x: str) -> str:
        rank = len(self.shapes[x])
        spatial = rank == (3 if self.conv1d else 4) and self.stage == "fmap"
        if spatial:
            choices = [(self.conv, 5), (self.activation, 1), (self.arithmetic, 2), (self.pool, 2), (self.residual, 2),
                       (self.concat, 2), (self.reduction, 1), (self.softmax, 1), (self.layer_norm, 1),
                       (self.transpose, 1), (self.batched_matmul, 0.5)]
        else:
            choices = [(self.linear, 4), (self.activation, 2), (self.arithmetic, 2), (self.softmax, 1),
                       (self.layer_norm, 2), (self.reduction, 1)]
            if rank == 3:
                choices += [(self.attention, 2), (self.transpose, 1), (self.batched_matmul, 0.5)]
        fns, weights = zip(*choices)
        p = np.array(weights, float)
        fn = fns[int(self.rng.choice(len(fns), p=p / p.sum()))]
        y = fn(x)
        if spatial and fn is self.transpose:
            self.stage = "seq"  # a transposed feature map is no longer NCHW
        return y

    def build(self) -> onnx.ModelProto:
        rng = self.rng
        c = int(self.pick((1, 2, 3, 4, 5, 7, 8)))
        sp = tuple(int(rng.integers(3, 9)) for _ in range(1 if self.conv1d else 2))
        shape = (1, c, *sp)
        self.shapes["x"] = shape
        x = "x"
        self.stage = "fmap"
        steps = int(rng.integers(2, self.max_ops + 1))
        for i in range(steps):
            if self.stage == "fmap" and i >= 2 and self.chance(0.2):
                x = self.to_sequence(x) if self.chance(0.5) else self.to_matrix(x)
                self.stage = "seq"
            x = self.step(x)
        graph = helper.make_graph(
            self.nodes, "random_graph", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, self.shapes[x])], initializer=self.inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=8)
        onnx.checker.check_model(model, full_check=True)
        return model


def random_graph(seed: int, *, conv1d: bool = False, max_ops: int = 8, opset: int = 17,
                 calibrate: bool = True) -> onnx.ModelProto:
    """A seeded random valid ONNX graph over ge's claimed operators (NNSmith-style), with
    one input `x` (a small NCHW feature map, or NCL with `conv1d`) and one output.

    Convolutions (plain, depthwise, grouped; odd channel counts), BatchNorm, activations,
    broadcast arithmetic, pools, residual Adds, Concats, reductions and softmax on any
    axis, LayerNorm, transposes, reshapes to sequences / matrices, MatMul / Gemm and
    attention. With `calibrate`, the weights are calibrated on the seeded input
    (`calibrate_weights`: BatchNorm statistics, unit-RMS layers) so that the output stays
    a function of the input instead of drifting to a constant.
    """
    model = _RandomGraph(seed, conv1d, max_ops, opset).build()
    if calibrate:
        try:
            model = calibrate_weights(model, random_inputs(model, seed))
        except Exception:  # a graph ge cannot import: the fuzzer reports it
            pass
    return model


def kernel_ir(model: onnx.ModelProto, dump_dir: str | os.PathLike, stage: str = "insert-sync",
              marker: str = "isa.mmad", **options):
    """Compile `model` (force_fp16 and `options`) dumping its IR into `dump_dir`; returns the
    compiled model and the text of the one kernel, after `stage`, that contains `marker`."""
    import re

    import ge

    compiled = ge.compile(model, ge.CompileOptions(precision_mode="force_fp16", keep_ir_text=False,
                                                   dump_ir=str(dump_dir), **options))
    text = next(Path(dump_dir).glob(f"*_{stage}.mlir")).read_text()
    kernels = [k for k in re.split(r"\n  (?=isa\.kernel @)", text[text.index("isa.kernel @"):]) if marker in k]
    if len(kernels) != 1:
        raise AssertionError(f"{len(kernels)} kernels contain {marker!r}, want one")
    return compiled, kernels[0]


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on onnxruntime's CPU provider (the numerics oracle)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)
