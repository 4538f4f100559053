"""The example's passes (entry point `ge.passes`): patterns of standard ONNX ops -> the
example's custom operators.

`fuse-rmsnorm`: RMSNorm written with standard ONNX ops -> com.example::RMSNorm.

Recognized (as exported from PyTorch's `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w`):

    square = Pow(x, 2) | Mul(x, x)
    ms     = ReduceMean(square, axes=[last], keepdims=1)
    rms    = Sqrt(Add(ms, eps))                 (eps a one-element constant, either side)
    norm   = Mul(x, Reciprocal(rms)) | Mul(x, Div(1, rms)) | Div(x, rms)   (Mul either side)
    y      = Mul(norm, w)                       (either side; w of shape [last dim])

The matched ops are replaced by the operator's registered decomposition, built once
through `ge.plugins.expand_op`, so a model written either way compiles to the same kernels.

`fuse-swiglu`: SwiGLU as exported from PyTorch's `a, g = x.chunk(2, -1); F.silu(a) * g`

    a, g = Split(x, axis=last, two equal halves)
    y    = Mul(Mul(a, Sigmoid(a)), g)           (each Mul either side)

-> com.example::SwiGLU(x), an operator with its own tile kernel: one kernel where ge builds
two (the Split is a data-movement kernel of its own).
"""

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ge import GraphPass
from ge.dialects import graph
from ge.plugins import GraphBuilder, constant_value, expand_op
from ge_plugin_example import swiglu
from ge_plugin_example.ops import DOMAIN, OP_TYPE


def _owner(value, cls):
    return value.owner if isinstance(value.owner, cls) else None


def _scalar(value) -> float | None:
    arr = constant_value(value)
    return float(arr.reshape(-1)[0]) if arr is not None and arr.size == 1 else None


def _either(op, test):
    """(a, b) with test(b) true, trying both operand orders of a binary op."""
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        found = test(b)
        if found is not None:
            return a, found
    return None


def _rms(value):
    """sqrt(mean(x^2, last axis) + eps) -> (x, eps), else None."""
    sqrt = _owner(value, graph.SqrtOp)
    add = sqrt and _owner(sqrt.input, graph.AddOp)
    if add is None:
        return None
    parts = _either(add, _scalar)
    mean = parts and _owner(parts[0], graph.ReduceMeanOp)
    if mean is None or not graph.has_flag(mean.properties, "keepdims"):
        return None
    rank = mean.input.type.get_num_dims()
    if tuple(graph.get_ints(mean.properties, "axes")) != (rank - 1,):
        return None
    square = mean.input.owner
    if isinstance(square, graph.MulOp) and square.lhs is square.rhs:
        x = square.lhs
    elif isinstance(square, graph.PowOp) and _scalar(square.rhs) == 2.0:
        x = square.lhs
    else:
        return None
    return x, parts[1]


def _normalized(value):
    """x / rms in any of its spellings -> (x, eps), else None."""
    op = value.owner
    if isinstance(op, graph.DivOp):
        found = _rms(op.rhs)
        return found if found is not None and found[0] is op.lhs else None
    if not isinstance(op, graph.MulOp):
        return None
    for x, inv in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        rms = None
        if isinstance(inv.owner, graph.ReciprocalOp):
            rms = inv.owner.input
        elif isinstance(inv.owner, graph.DivOp) and _scalar(inv.owner.lhs) == 1.0:
            rms = inv.owner.rhs
        found = rms is not None and _rms(rms)
        if found and found[0] is x:
            return found
    return None


@dataclass(frozen=True)
class FuseRMSNormPass(GraphPass):
    """RMSNorm spelled with standard ops -> com.example::RMSNorm (see the module docstring)."""

    name = "fuse-rmsnorm"
    stage = "after-import"

    def run(self, module: ModuleOp) -> None:
        for op in list(module.walk()):
            if not isinstance(op, graph.MulOp) or op.parent is None:
                continue
            for norm, w in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                found = _normalized(norm)
                if found is None or tuple(w.type.get_shape()) != tuple(op.output.type.get_shape()[-1:]):
                    continue
                x, eps = found
                if op.output.type != x.type:
                    continue
                (y,) = expand_op(GraphBuilder.before(op, "rmsnorm"), DOMAIN, OP_TYPE, x, w, epsilon=float(np.float32(eps)))
                op.output.replace_all_uses_with(y)
                op.detach()
                op.erase()
                break
        _remove_dead(module)


def _silu_of(value):
    """a * sigmoid(a) (either order) -> a, else None."""
    mul = _owner(value, graph.MulOp)
    if mul is None:
        return None
    for a, s in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        sig = _owner(s, graph.SigmoidOp)
        if sig is not None and sig.input is a:
            return a
    return None


def _halves(a, gate):
    """x when a and gate are the first and second half of x (a two-way Split along the
    last axis), else None."""
    split = a.owner
    if not isinstance(split, graph.SplitOp) or gate.owner is not split or len(split.results) != 2:
        return None
    if (split.results[0], split.results[1]) != (a, gate):
        return None
    rank = split.input.type.get_num_dims()
    sizes = graph.get_ints(split.properties, "sizes")
    if graph.get_int(split.properties, "axis") != rank - 1 or sizes[0] != sizes[1]:
        return None
    return split.input


@dataclass(frozen=True)
class FuseSwiGLUPass(GraphPass):
    """SwiGLU spelled with standard ops -> com.example::SwiGLU (see the module docstring)."""

    name = "fuse-swiglu"
    stage = "after-import"

    def run(self, module: ModuleOp) -> None:
        for op in list(module.walk()):
            if not isinstance(op, graph.MulOp) or op.parent is None:
                continue
            for silu, gate in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                a = _silu_of(silu)
                x = a is not None and _halves(a, gate)
                if not x or op.output.type != gate.type:
                    continue
                (y,) = expand_op(GraphBuilder.before(op, "swiglu"), swiglu.DOMAIN, swiglu.OP_TYPE, x)
                op.output.replace_all_uses_with(y)
                op.detach()
                op.erase()
                break
        _remove_dead(module)


def _remove_dead(module: ModuleOp) -> None:
    """Erase the matched ops the rewrite left without users (graph ops have no side effects)."""
    changed = True
    while changed:
        changed = False
        for op in list(module.walk()):
            if op.dialect_name() == "graph" and op.results and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True
