"""Dump: every tensor the kernels write to GM, saved as .npy under its ONNX tensor name
(`ge-run --dump DIR`), like GE's dump_mode=output.

Only kernel-boundary tensors exist: a tensor inside a fused kernel stays in the AI Core's
local buffers and never reaches GM, so it cannot be dumped (GE's dump of fused ops is the
same). The executor calls `Dumper.on_launch` after each launch (`Executor.on_launch`); the
outputs are copied at once, since the memory plan reuses their bytes later.

Names: the task-level IR stored in the model file names each tensor after the ONNX tensor
it holds (`%r = task.buffer ...`); tensors ge inserted (casts, format conversions) carry
names such as `x_f16_nc1hwc0`. Formats: the model file keeps storage shapes only, so a
tensor is turned back into its origin format (NC1HWC0 / FRACTAL_NZ / FRACTAL_Z -> NCHW / ND,
padding dropped, `ge.runtime.layouts.to_origin`) when its ONNX shape is known (given from
the ONNX model's static shapes with `ge-run --compare model.onnx`; onnxruntime's values'
shapes in `ge-compare`) and the storage shape is that
format's storage of it; otherwise it is saved as stored. Values are saved in the stored
dtype (f16 stays f16). `manifest.json` lists every file: tensor, kernel, nodes, storage
shape, origin shape, format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ge.errors import InputError

_DECL = re.compile(r"^\s*%([^\s=]+) = task\.(input|output|weight|buffer|view)\b", re.M)


def tensor_names(model) -> list[str]:
    """The ONNX-level name of every tensor of the model definition (stored with the tensor;
    model files written before that carry it in their task-level IR text)."""
    tensors = model.definition["tensors"]
    if tensors and all("name" in t for t in tensors):
        return [t["name"] for t in tensors]
    where = model.path or model.name
    if not model.ir_text:
        raise InputError(f"{where}: the model file has no task-level IR, so its tensors have no names; "
                         "compile it again keeping the IR to dump it")
    names = _DECL.findall(model.ir_text)
    if len(names) != len(tensors):
        raise InputError(f"{where}: the stored IR declares {len(names)} tensors but the model has {len(tensors)}: "
                         "the tensors cannot be named")
    return [n for n, _ in names]


def _elem(dtype: np.dtype):
    from xdsl.dialects.builtin import Float16Type, Float32Type

    return {"float16": Float16Type(), "float32": Float32Type()}.get(np.dtype(dtype).name)


def to_origin(x: np.ndarray, origin_shape: Sequence[int]) -> tuple[np.ndarray, str]:
    """`x` (a stored array) as the tensor of `origin_shape`, and the format it was found in
    ("ND" when stored plainly, "stored" when no format of `ge.dialects.layout` fits)."""
    from xdsl.dialects.builtin import TensorType

    from ge.dialects import layout as lt
    from ge.runtime import layouts

    origin = tuple(int(d) for d in origin_shape)
    if x.shape == origin:
        return x, "ND"
    elem = _elem(x.dtype)
    if elem is not None and all(d > 0 for d in origin):
        formats = [lt.Format.NC1HWC0, lt.Format.FRACTAL_Z] if len(origin) == 4 else []
        formats += [lt.Format.FRACTAL_NZ] if len(origin) >= 2 else []
        for fmt in formats:
            base = lt.Format.NCHW if fmt != lt.Format.FRACTAL_NZ or len(origin) == 4 else lt.Format.ND
            try:
                t = lt.encode(TensorType(elem, origin), fmt, base)
            except Exception:  # a format that cannot hold this shape
                continue
            if tuple(t.get_shape()) == x.shape:
                return layouts.to_origin(x, t), fmt.value
    if tuple(d for d in x.shape if d != 1) == tuple(d for d in origin if d != 1):
        return x.reshape(origin), "ND"  # the same elements in the same order, unit dims added or dropped
    return x, "stored"


def onnx_shapes(onnx_path: str | Path, model=None) -> dict[str, list[int]]:
    """Every tensor's static shape in an ONNX model (after shape inference)."""
    import onnx

    m = model if model is not None else onnx.load(str(onnx_path))
    m = onnx.shape_inference.infer_shapes(m)
    out = {}
    g = m.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            out[vi.name] = [d.dim_value for d in dims]
    for init in g.initializer:
        out[init.name] = list(init.dims)
    return out


def file_name(tensor: str) -> str:
    """A file name for a tensor name (characters other than letters, digits, `_.-` become `_`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tensor) + ".npy"


class Dumper:
    """Collects kernel outputs during a run and writes them to `directory`. `only`: node or
    tensor names; a kernel output is kept if its tensor is named, or its kernel fuses a named node."""

    def __init__(self, model, directory: str | Path, only: Sequence[str] | None = None,
                 origin_shapes: dict[str, list[int]] | None = None):
        self.model = model
        self.dir = Path(directory)
        self.names = tensor_names(model)
        self.only = set(only) if only else None
        self.origin = origin_shapes or {}
        kernels = model.definition["kernels"]
        if self.only is not None:
            known = set(self.names) | {n for k in kernels for n in k.get("nodes", [])}
            unknown = sorted(self.only - known)
            if unknown:
                raise InputError(f"--dump-nodes: {', '.join(map(repr, unknown))} is neither a node of a kernel nor a "
                                 f"tensor of {model.path or model.name}")
        self.arrays: dict[str, np.ndarray] = {}
        self.entries: list[dict[str, Any]] = []

    def attach(self, executor) -> None:
        executor.on_launch = self.on_launch

    def on_launch(self, j: int, task: dict[str, Any], outs: list[np.ndarray]) -> None:
        kernel = self.model.definition["kernels"][task["kernel"]]
        nodes = list(kernel.get("nodes", []))
        for tid, view in zip(task["outs"], outs):
            name = self.names[tid]
            if self.only is not None and name not in self.only and self.only.isdisjoint(nodes):
                continue
            stored = np.array(view, copy=True)
            value, fmt = (to_origin(stored, self.origin[name]) if name in self.origin else (stored, "stored"))
            self.arrays[name] = value
            self.entries = [e for e in self.entries if e["tensor"] != name]
            self.entries.append({"tensor": name, "file": file_name(name), "task": j, "kernel": kernel["name"],
                                 "nodes": nodes, "dtype": str(stored.dtype), "storage_shape": list(stored.shape),
                                 "shape": list(value.shape), "format": fmt})

    def finish(self) -> str:
        """Write the .npy files and manifest.json; returns a one-line summary."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for e in self.entries:
            np.save(self.dir / e["file"], self.arrays[e["tensor"]])
        (self.dir / "manifest.json").write_text(json.dumps({"model": str(self.model.path), "tensors": self.entries},
                                                           indent=1))
        return f"dumped {len(self.entries)} kernel output tensor(s) to {self.dir}"
