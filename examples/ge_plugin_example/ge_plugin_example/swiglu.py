"""The custom operator com.example::SwiGLU (entry point `ge.ops`), with a tile-level kernel.

    A, Gate = the two halves of X along its last axis
    Y = A * sigmoid(A) * Gate                       (Y has half of X's last dim)

Declared with its numpy reference, its shape inference and a kernel written with ge's
tile-kernel API (`ge.plugin_tile.TileKernel`): ge imports the node as one opaque
`graph.custom` op, gives it a kernel of its own and calls `kernel` below when it tiles it.
Written with standard ops (Split, Sigmoid, Mul, Mul) the same computation is two kernels in
ge -- the Split is a data-movement kernel of its own -- and the `fuse-swiglu` pass
(ge_plugin_example.passes) rewrites it into this operator: one kernel that reads both halves
straight from X.
"""

import contextlib
import math

import numpy as np

DOMAIN = "com.example"
OP_TYPE = "SwiGLU"


def reference(x):
    """The semantics, in numpy (computed in float64, returned in the input's dtype)."""
    x64 = np.asarray(x, dtype=np.float64)
    h = x64.shape[-1] // 2
    a, gate = x64[..., :h], x64[..., h:]
    return (a / (1.0 + np.exp(-a)) * gate).astype(np.asarray(x).dtype)


def infer_shape(shapes):
    (x,) = shapes
    if not x or x[-1] % 2:
        raise ValueError(f"X needs an even last dim, got shape {list(x)}")
    return [(*x[:-1], x[-1] // 2)]


def silu_times_gate(b, a, gate):
    """The compute of one tile, with ge's graph-op builder."""
    return b.mul(b.mul(a, b.sigmoid(a)), gate)


# UB bytes per element of a column: A, Gate and Y tiles, double buffered (6), and the
# compute's temporaries (sigmoid(A), A * sigmoid(A) and the vector unit's scratch: 6).
UB_PER_ELEMENT = 12


def kernel(k, x, y):
    """Rows of X split over the cores; per tile: copy A and Gate in, compute, copy Y out.

    X is seen as [rows, 2, h] and Y as [rows, 1, h], so the two halves are two rectangles
    of one tensor (no Split kernel, no intermediate in global memory). A row wider than UB
    allows is cut into column chunks (multiples of 16 elements)."""
    *lead, h = y.shape
    rows = math.prod(lead)
    x3, y3 = k.view(x, [rows, 2, h]), k.view(y, [rows, 1, h])
    per_element = UB_PER_ELEMENT * y.dtype.itemsize
    cols = h if h * per_element <= k.ub_bytes else max(16, k.ub_bytes // per_element // 16 * 16)
    step = min(k.rows_that_fit(cols * per_element, rows), -(-rows // k.cores))
    with k.tiles(rows, step) as r:
        with (k.loop(h, cols) if cols < h else contextlib.nullcontext(0)) as c:
            a = k.load(x3, [r, 0, c], [step, 1, cols])
            gate = k.load(x3, [r, 1, c], [step, 1, cols])
            k.store(k.compute(silu_times_gate, a, gate), y3, [r, 0, c])


def register():
    """The `ge.ops` entry point: declare the operator to ge."""
    import ge

    ge.register_op(DOMAIN, OP_TYPE, inputs=["X"], outputs=["Y"], infer_shape=infer_shape, reference=reference,
                   kernel=kernel)
