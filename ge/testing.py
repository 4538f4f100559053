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
