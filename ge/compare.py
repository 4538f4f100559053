"""Layer-by-layer accuracy comparison (`ge-compare`, msaccucmp-style): ge's kernel outputs
(`ge.dump`) against onnxruntime's values of the same ONNX tensors.

onnxruntime runs a copy of the ONNX model in which every node output is also a graph
output (types from `onnx.shape_inference`). ge runs the model file with the dump on; the
tensors are aligned by ONNX tensor name, so only kernel-boundary tensors are compared (a
tensor inside a fused kernel never reaches GM). Rows come in the ONNX graph's topological
order. Per tensor:

- cosine similarity of the flattened tensors (NaN when ge's value is not finite);
- max abs error;
- max relative error = max abs error / max |onnxruntime value| (relative to the tensor's
  scale: elementwise |a-b|/|b| explodes at the zeros every ReLU makes).

Divergent: cosine < 0.99 or relative error > 1e-2 at f16 precision -- a tensor stored in
f16, or any tensor of a model compiled with force_fp16 / allow_mix_precision (an f32 output
is then an f16 computation cast back) --, cosine < 0.9999 or relative error > 1e-4 at f32
precision (an f32 tensor of a must_keep_origin_dtype model);
a non-finite value where onnxruntime's is finite always diverges. The first divergent row
names its node and the nodes fused into its kernel.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Any

import numpy as np

TOLERANCES = {"float16": (0.99, 1e-2), "float32": (0.9999, 1e-4)}


@dataclass
class Row:
    node: str
    op: str
    tensor: str
    kernel: str
    fused: list[str]
    dtype: str
    precision: str  # the tolerance applied: "float16" or "float32"
    cosine: float
    max_abs: float
    max_rel: float
    divergent: bool
    note: str = ""  # why a row diverges when no metric says it (shapes that differ)


def metrics(got: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    """cosine, max abs error, max abs error / max |ref| (module docstring)."""
    g, r = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    if not g.size:
        return 1.0, 0.0, 0.0
    with np.errstate(all="ignore"):
        err = float(np.abs(g - r).max())
        scale = float(np.abs(r).max())
        norm = float(np.linalg.norm(g) * np.linalg.norm(r))
        if not np.isfinite(g).all():
            cosine = float("nan")
        elif norm == 0.0:
            cosine = 1.0 if not g.any() and not r.any() else 0.0
        else:
            cosine = float(g @ r / norm)
    rel = err / scale if scale else (0.0 if err == 0.0 else float("inf"))
    return cosine, err, rel


def divergent(dtype: str, cosine: float, rel: float) -> bool:
    min_cos, max_rel = TOLERANCES.get(dtype, TOLERANCES["float32"])
    return not (cosine >= min_cos) or not (rel <= max_rel)  # NaN fails both comparisons


def exposed_model(model):
    """A copy of the ONNX model with every node output (of a known element type) as a graph output."""
    import onnx
    from onnx import helper

    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in [*inferred.graph.value_info, *inferred.graph.output]}
    out = onnx.ModelProto()
    out.CopyFrom(inferred)
    present = {o.name for o in out.graph.output}
    for node in out.graph.node:
        for name in node.output:
            if name and name not in present and types.get(name):
                out.graph.output.append(helper.make_tensor_value_info(name, types[name], None))
                present.add(name)
    return out


def reference_values(model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's value of every tensor of the model on `inputs`."""
    import onnxruntime as ort

    exposed = exposed_model(model)
    sess = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in sess.get_inputs()}
    return dict(zip((o.name for o in sess.get_outputs()), sess.run(None, feeds)))


def precision(dtype: str, precision_mode: str | None) -> str:
    """The tolerance a tensor stored in `dtype` gets in a model of `precision_mode`."""
    return "float32" if dtype != "float16" and precision_mode == "must_keep_origin_dtype" else "float16"


def compare(model, dumped: dict[str, np.ndarray], entries: list[dict[str, Any]],
            reference: dict[str, np.ndarray], precision_mode: str | None = None) -> list[Row]:
    """One row per dumped ONNX tensor, in the ONNX graph's (topological) node order."""
    info = {e["tensor"]: e for e in entries}
    rows = []
    for node in model.graph.node:
        for name in node.output:
            if name not in dumped or name not in reference:
                continue
            got, ref, e = dumped[name], np.asarray(reference[name]), info[name]
            prec = precision(e["dtype"], precision_mode)
            if got.shape != ref.shape:
                rows.append(Row(node.name, node.op_type, name, e["kernel"], e["nodes"], e["dtype"], prec, float("nan"),
                                float("inf"), float("inf"), True,
                                f"shape {list(got.shape)}, onnxruntime {list(ref.shape)}"))
                continue
            cos, err, rel = metrics(got, ref)
            bad = divergent(prec, cos, rel) or (not np.isfinite(got).all() and np.isfinite(ref).all())
            rows.append(Row(node.name, node.op_type, name, e["kernel"], e["nodes"], e["dtype"], prec, cos, err, rel, bad))
    return rows


def table(rows: list[Row]) -> str:
    lines = [f"{'node':24s} {'op':12s} {'tensor':20s} {'stored':8s} {'cosine':>9s} {'max abs':>10s} "
             f"{'max rel':>10s}  status"]
    for r in rows:
        lines.append(f"{r.node[:24]:24s} {r.op[:12]:12s} {r.tensor[:20]:20s} {r.dtype[:8]:8s} {r.cosine:9.6f} "
                     f"{r.max_abs:10.3g} {r.max_rel:10.3g}  {'DIVERGES' if r.divergent else 'ok'} {r.note}".rstrip())
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    first = next((r for r in rows if r.divergent), None)
    if first is None:
        return f"no divergence: {len(rows)} tensor(s) compared within tolerance"
    lo_cos, hi_rel = TOLERANCES[first.precision]
    return (f"first divergent node: {first.node} ({first.op}), tensor '{first.tensor}' of kernel {first.kernel} "
            f"(fused: {', '.join(first.fused)}): {first.note + ', ' if first.note else ''}cosine {first.cosine:.6f}, max rel {first.max_rel:.3g} "
            f"(tolerance at {first.precision} precision: cosine >= {lo_cos}, max rel <= {hi_rel})")


def write_csv(rows: list[Row], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["node", "op", "tensor", "kernel", "fused_nodes", "dtype", "cosine", "max_abs", "max_rel",
                    "divergent"])
        for r in rows:
            w.writerow([r.node, r.op, r.tensor, r.kernel, " ".join(r.fused), r.dtype, f"{r.cosine:.9g}",
                        f"{r.max_abs:.9g}", f"{r.max_rel:.9g}", int(r.divergent)])
