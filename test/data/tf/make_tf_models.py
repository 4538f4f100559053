"""Regenerate the frozen TensorFlow GraphDefs and their reference outputs in this folder.

    python test/data/tf/make_tf_models.py          # needs tensorflow-cpu (the `test` extra)

Each model is built with TensorFlow/Keras from a fixed seed, frozen with
`convert_variables_to_constants_v2` (variables -> Const nodes, as a deployed `.pb` is),
written gzipped as `<name>.pb.gz`, and run by TensorFlow on the input `make_input(name)`
(seeded numpy); `<name>.npz` holds TensorFlow's output (`output`). test/python/test_tf_frontend.py compares
ge against these without importing TensorFlow; its live test calls `build` from here.
"""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent


def _tf():
    import tensorflow as tf

    return tf


def _randomize_batch_norms(model, rng: np.random.Generator) -> None:
    """Fresh Keras BN layers have mean 0 / var 1, which would leave the BN arithmetic
    untested; give them random statistics and affine parameters."""
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.moving_mean.shape[0]
            layer.gamma.assign(rng.uniform(0.5, 1.5, c).astype(np.float32))
            layer.beta.assign(rng.normal(0, 0.2, c).astype(np.float32))
            layer.moving_mean.assign(rng.normal(0, 0.2, c).astype(np.float32))
            layer.moving_variance.assign(rng.uniform(0.5, 1.5, c).astype(np.float32))


def _round_to_bfloat16(model) -> None:
    """Weights with 8 mantissa bits: still a real network, but its low 16 bits are zero,
    so the gzipped GraphDef stays small enough to keep in the repository."""
    for v in model.weights:
        a = np.ascontiguousarray(v.numpy(), np.float32).view(np.uint32)
        v.assign(((a + 0x8000) & 0xFFFF0000).view(np.float32))


def mobilenet_v2():
    """Keras MobileNetV2, alpha 0.35, 96x96, untrained (weights=None), 10 classes."""
    import keras

    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10)
    _randomize_batch_norms(model, np.random.default_rng(1))
    _round_to_bfloat16(model)
    return model, (1, 96, 96, 3)


def small_resnet():
    """A ResNet in miniature: 7x7/2 stem + BN + ReLU + max pool, an identity block and a
    projection block (stride 2), global average pool, dense, softmax. Batch left unknown
    (None), as Keras models are saved, so the importer needs --input-shape."""
    import keras
    from keras import layers

    def block(x, filters, stride):
        shortcut = x
        y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
        y = layers.BatchNormalization()(y)
        y = layers.ReLU()(y)
        y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        if stride != 1 or x.shape[-1] != filters:
            shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x)
            shortcut = layers.BatchNormalization()(shortcut)
        return layers.ReLU()(layers.Add()([y, shortcut]))

    inp = keras.Input((32, 32, 3), name="image")
    x = layers.Conv2D(16, 7, strides=2, padding="same")(inp)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = block(x, 16, 1)
    x = block(x, 32, 2)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10)(x)
    out = layers.Softmax()(x)
    model = keras.Model(inp, out)
    _randomize_batch_norms(model, np.random.default_rng(2))
    _round_to_bfloat16(model)
    return model, (None, 32, 32, 3)


def tiny_transformer():
    """A GPT-style block in plain TF ops: token embedding (GatherV2), layer norm spelled
    as Mean/Sub/Square/Rsqrt, multi-head attention with BatchMatMulV2 and a causal mask
    sliced with StridedSlice by the run-time sequence length (Shape -> StridedSlice ->
    Pack -> Reshape), erf GELU with Pow, residuals, a ConcatV2 and a final Softmax."""
    tf = _tf()
    rng = np.random.default_rng(3)
    vocab, seq, d, heads = 50, 8, 32, 4
    dh = d // heads
    w = {k: tf.constant(rng.normal(0, 0.2, s).astype(np.float32)) for k, s in {
        "emb": (vocab, d), "pos": (16, d), "qkv": (d, 3 * d), "proj": (d, d), "fc1": (d, 4 * d),
        "fc2": (4 * d, d), "g1": (d,), "g2": (d,), "head": (2 * d, vocab),
    }.items()}
    b = {k: tf.constant(rng.normal(0, 0.1, n).astype(np.float32)) for k, n in {
        "qkv": 3 * d, "proj": d, "fc1": 4 * d, "fc2": d, "head": vocab}.items()}
    mask = tf.constant(np.triu(np.full((16, 16), -1e9, np.float32), 1))

    def layer_norm(x, g):
        mu = tf.reduce_mean(x, axis=-1, keepdims=True)
        var = tf.reduce_mean(tf.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * tf.math.rsqrt(var + 1e-5) * g

    def fn(tokens):
        n = tf.shape(tokens)[0]
        t = tf.shape(tokens)[1]
        x = tf.gather(w["emb"], tokens) + w["pos"][:t]
        h = layer_norm(x, w["g1"])
        qkv = tf.nn.bias_add(tf.matmul(tf.reshape(h, [-1, d]), w["qkv"]), b["qkv"])
        qkv = tf.transpose(tf.reshape(qkv, tf.stack([n, t, 3, heads, dh])), [2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(dh)) + mask[:t, :t]
        att = tf.nn.softmax(att, axis=-1)
        y = tf.reshape(tf.transpose(tf.matmul(att, v), [0, 2, 1, 3]), [-1, d])
        x = x + tf.reshape(tf.matmul(y, w["proj"]) + b["proj"], tf.shape(x))
        h = tf.reshape(layer_norm(x, w["g2"]), [-1, d])
        f = tf.matmul(h, w["fc1"]) + b["fc1"]
        f = 0.5 * f * (1.0 + tf.math.erf(f * tf.pow(2.0, -0.5)))
        x = x + tf.reshape(tf.matmul(f, w["fc2"]) + b["fc2"], tf.shape(x))
        x = tf.concat([x, tf.nn.relu6(x)], axis=-1)
        logits = tf.reshape(tf.matmul(tf.reshape(x, [-1, 2 * d]), w["head"]) + b["head"], [n, t, vocab])
        return tf.nn.softmax(logits[:, -1, :])

    return fn, (1, seq), tf.int32


def op_cases() -> dict:
    """Small graphs for the ops and attribute forms the three models leave out:
    {name: (fn, {input name: shape})}; float32 inputs, several outputs each."""
    tf = _tf()
    rng = np.random.default_rng(4)

    def c(*shape):
        return tf.constant(rng.normal(0, 0.5, shape).astype(np.float32))

    f1, bn = c(3, 3, 4, 6), [c(6), c(6), c(6), tf.constant(rng.uniform(0.5, 2, 6).astype(np.float32))]
    dw = c(3, 3, 6, 2)

    def conv_bn_pool(x):
        y = tf.nn.conv2d(x, f1, strides=1, padding="VALID", dilations=2)
        y = tf.compat.v1.nn.fused_batch_norm(y, bn[0], bn[1], bn[2], bn[3], epsilon=1e-3, is_training=False)[0]
        y = tf.nn.depthwise_conv2d(tf.sigmoid(y), dw, strides=[1, 2, 2, 1], padding="SAME")
        a = tf.nn.avg_pool2d(y, 3, 2, "SAME")
        m = tf.tanh(tf.nn.max_pool2d(y, 2, 1, "VALID"))
        z = tf.concat([m, tf.pad(m, [[0, 0], [0, 0], [0, 0], [1, 2]])], axis=3)
        return a, tf.squeeze(tf.reduce_sum(z, axis=[1, 2], keepdims=True), axis=[1, 2]), tf.reduce_max(z, axis=-1)

    k = c(3, 4)

    def elementwise(x, y):
        a = tf.maximum(x, 0.1) + tf.minimum(y, k) / (tf.abs(y) + 1.0)
        b = tf.sqrt(tf.square(x) + 1.0) * tf.math.rsqrt(tf.abs(y) + 0.5) - tf.pow(tf.abs(x), 1.5)
        t = tf.cast(tf.cast(x * 4.0, tf.int32), tf.float32)
        return tf.transpose(tf.expand_dims(a, 1), [2, 0, 1, 3]), tf.reduce_max(b, axis=-1), t

    def slicing(x):
        s = tf.shape(x)
        r = tf.reshape(x, tf.stack([s[0] * s[1], -1]))
        return (x[..., 1:3], x[:, tf.newaxis, 1, ::-2], x[-1, 2:, :, -2], r,
                tf.gather(x, [4, 0, 2], axis=1), tf.reduce_mean(x[:, 1:4:2], axis=[0, 3]))

    w, v = c(5, 4), c(10, 3)

    def matmul(x, y):
        return tf.matmul(x, y, adjoint_b=True), tf.matmul(tf.reshape(x, [-1, 4]), w, transpose_b=True), \
            tf.matmul(tf.reshape(y, [-1, 4]), v, transpose_a=True), tf.nn.softmax(x, axis=1)

    e1 = c(4, 5)

    def einsum(x, y):
        return (tf.einsum("bij,bkj->bik", x, y), tf.einsum("abc->cab", x), tf.einsum("abc->ac", x),
                tf.einsum("bij,jk->bik", y, e1), tf.einsum("abc,c->ab", x, tf.reduce_sum(e1, 1)),
                tf.einsum("bij,bkl->bjl", x, y))

    def masks(x, y):
        band = tf.linalg.band_part(x, 1, 2)
        sel = tf.where(tf.logical_or(x > 0.3, tf.logical_not(y < 0.0)), x, -y)
        return (band, sel, tf.math.squared_difference(x, y), tf.math.erfc(x),
                tf.fill(tf.shape(x)[1:], 0.5) * y[0])

    return {
        "einsum": (einsum, {"x": (2, 3, 4), "y": (2, 5, 4)}),
        "masks": (masks, {"x": (2, 4, 5), "y": (2, 4, 5)}),
        "conv_bn_pool": (conv_bn_pool, {"x": (1, 12, 12, 4)}),
        "elementwise": (elementwise, {"x": (2, 3, 4), "y": (2, 3, 4)}),
        "slicing": (slicing, {"x": (2, 5, 6, 4)}),
        "matmul": (matmul, {"x": (2, 3, 4), "y": (2, 5, 4)}),
    }


def op_case_inputs(shapes: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}


def keras_transformer():
    """A Keras GPT-style block: Embedding, LayerNormalization, causal MultiHeadAttention
    (Einsum, MatrixBandPart, SelectV2), Dense with GELU (Erfc), residuals."""
    import keras
    from keras import layers

    inp = keras.Input((8,), dtype="int32", name="tokens")
    x = layers.Embedding(50, 32)(inp)
    h = layers.LayerNormalization()(x)
    x = x + layers.MultiHeadAttention(4, 8)(h, h, use_causal_mask=True)
    h = layers.Dense(64, activation="gelu")(layers.LayerNormalization()(x))
    x = x + layers.Dense(32)(h)
    model = keras.Model(inp, layers.Dense(50)(x[:, -1]))
    _round_to_bfloat16(model)
    return model, (1, 8), _tf().int32


def _freeze(fn, spec_shape, dtype, names=("input",)):
    tf = _tf()
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    shapes = spec_shape if isinstance(spec_shape, dict) else {names[0]: spec_shape}
    specs = [tf.TensorSpec(s, dtype, name=n) for n, s in shapes.items()]
    concrete = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen, frozen.graph.as_graph_def()


def build(name: str):
    """(GraphDef, input, TensorFlow's output) of one model, built from its seed."""
    tf = _tf()
    import keras

    keras.utils.set_random_seed(0)
    made = MODELS[name]()
    if hasattr(made[0], "layers"):  # a Keras model
        model, spec, *dtype = made
        fn, dtype = (lambda x: model(x, training=False)), (dtype or [tf.float32])[0]
    else:
        fn, spec, dtype = made
    x = make_input(name)
    frozen, graph_def = _freeze(fn, spec, dtype)
    y = frozen(tf.constant(x))
    y = y[0] if isinstance(y, list | tuple) else y
    return graph_def, x, np.asarray(y)


INPUTS = {"mobilenet_v2": (1, 96, 96, 3), "small_resnet": (2, 32, 32, 3), "tiny_transformer": (1, 8),
          "keras_transformer": (1, 8)}


def make_input(name: str) -> np.ndarray:
    """The seeded input each model is checked on (tokens for the transformer)."""
    rng = np.random.default_rng(10)
    if name in ("tiny_transformer", "keras_transformer"):
        return rng.integers(0, 50, INPUTS[name]).astype(np.int32)
    return rng.uniform(-1, 1, INPUTS[name]).astype(np.float32)


MODELS = {"mobilenet_v2": mobilenet_v2, "small_resnet": small_resnet, "tiny_transformer": tiny_transformer,
          "keras_transformer": keras_transformer}


def build_op_case(name: str):
    """(GraphDef, inputs, TensorFlow's outputs) of one op case."""
    tf = _tf()
    fn, shapes = op_cases()[name]
    frozen, graph_def = _freeze(fn, shapes, tf.float32)
    inputs = op_case_inputs(shapes)
    outs = frozen(*(tf.constant(x) for x in inputs.values()))
    return graph_def, inputs, [np.asarray(o) for o in outs]


def main(names: list[str]) -> None:
    for name in [n for n in names if n in op_cases()] or ([] if names else op_cases()):
        graph_def, _, outs = build_op_case(name)
        (HERE / f"op_{name}.pb").write_bytes(graph_def.SerializeToString())
        np.savez(HERE / f"op_{name}.npz", **{f"output_{i}": o for i, o in enumerate(outs)})
        print(f"op_{name}: {len(graph_def.node)} nodes, ops: {', '.join(sorted({n.op for n in graph_def.node}))}")
    for name in [n for n in names if n in MODELS] or ([] if names else MODELS):
        graph_def, _, y = build(name)
        (HERE / f"{name}.pb.gz").write_bytes(gzip.compress(graph_def.SerializeToString(), mtime=0))
        np.savez(HERE / f"{name}.npz", output=y)
        ops = sorted({n.op for n in graph_def.node})
        print(f"{name}: {len(graph_def.node)} nodes, output {y.shape}; ops: {', '.join(ops)}")


if __name__ == "__main__":
    main(sys.argv[1:])
