"""The custom operator com.example::RMSNorm (entry point `ge.ops`).

    Y = X / sqrt(mean(X^2 over the last axis) + epsilon) * Scale

declared with its numpy reference and a decomposition into ge's graph ops, which ge then
optimizes, fuses, tiles and lowers like any other graph.
"""

import numpy as np

DOMAIN = "com.example"
OP_TYPE = "RMSNorm"
DEFAULT_EPSILON = 1e-6


def reference(x, scale, epsilon=DEFAULT_EPSILON):
    """The semantics, in numpy (computed in float64, returned in the input's dtype)."""
    x64 = np.asarray(x, dtype=np.float64)
    rms = np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + epsilon)
    return (x64 / rms * np.asarray(scale, dtype=np.float64)).astype(np.asarray(x).dtype)


def infer_shape(shapes, epsilon=DEFAULT_EPSILON):
    x, scale = shapes
    if tuple(scale) != tuple(x[-1:]):
        raise ValueError(f"Scale must have shape [{x[-1]}] (the last dim of X), got {list(scale)}")
    return [x]


def decompose(b, x, scale, epsilon=DEFAULT_EPSILON):
    """x * reciprocal(sqrt(reduce_mean(x * x) + epsilon)) * scale, with ge's graph ops."""
    mean_square = b.reduce_mean(b.mul(x, x), axes=[-1], keepdims=True)
    inv_rms = b.reciprocal(b.sqrt(b.add(mean_square, float(epsilon))))
    return b.mul(b.mul(x, inv_rms), scale)


def register():
    """The `ge.ops` entry point: declare the operator to ge."""
    import ge

    ge.register_op(DOMAIN, OP_TYPE, inputs=["X", "Scale"], outputs=["Y"], attributes={"epsilon": DEFAULT_EPSILON},
                   infer_shape=infer_shape, reference=reference, decompose=decompose)
