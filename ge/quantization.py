"""Post-training quantization: `ge.quantize(model, calibration_data, method=...)`.

(The module is `ge.quantization`: a submodule named `ge.quantize` would replace the
`ge.quantize` function on the package as soon as it is imported.)

What Huawei's AMCT does before ATC: run the float model on a calibration set, pick an int8
range for the activation entering every Conv / MatMul / Gemm, quantize the weights
symmetrically per output channel, and hand the compiler a model it can run on the Cube in
int8. The result here is a QDQ ONNX model (QuantizeLinear -> DequantizeLinear on each
quantized activation, int8 weights and int32 biases behind DequantizeLinear, as
onnxruntime's `quantize_static(quant_format=QDQ)` writes them), so it runs in onnxruntime
as well as in ge, where the importer and the `quant-fold` pass (transforms/quant_fold.py)
turn each pattern into `graph.quantize` / `graph.quant_conv2d` / `graph.quant_matmul` /
`graph.dequantize`.

Activation ranges, per tensor (calibration on the float model, run by onnxruntime):
- "minmax": the observed [min, max] (asymmetric, zero point inside int8).
- "percentile": the `percentile` (default 99.999) of |x| as the bound, as onnxruntime's
  `PercentileCalibrater` does; [0, T] for a non-negative tensor, else [-T, T].
- "entropy": the KL-divergence threshold search of TensorRT (Migacz, "8-bit Inference
  with TensorRT", GTC 2017): a 2048-bin histogram of |x|; for each candidate cut i >= 128
  the clipped reference P (outliers folded into the last kept bin) is compared with its
  128-level quantization Q expanded back over P's non-empty bins; the cut with the smallest
  KL(P || Q) is the threshold. The merging of bins into levels, the smoothing (so that an
  empty Q bin under a non-empty P bin is a large, finite divergence) and the threshold (the
  upper edge of the last kept bin) follow MXNet's `_get_optimal_threshold`
  (python/mxnet/contrib/quantization.py), which onnxruntime's `get_entropy_threshold`
  (calibrate.py) also follows, here on the histogram of |x| as TensorRT describes it.
  Same [0, T] / [-T, T] rule as percentile.
Activations are symmetric by default (zero point 0, scale = max(|lo|, |hi|) / 127, as
TensorRT and ge's int8 Cube path want); with `symmetric=False` scale and zero point follow
onnxruntime's `compute_scale_zp` (the range always includes 0; qmin = -128, qmax = 127). Weights: int8 in [-127, 127],
scale = max|w| / 127 per output channel. Biases: int32 = round(b / (scale_x * scale_w))
(numpy round, half to even), as onnxruntime's `quantize_bias_static_impl`.

BatchNorm folding (`fold_bn=True`, the default, AMCT's "BN fold"): before calibrating, each
BatchNormalization that is a Conv's only reader (inference form, constant statistics) is
folded into the conv's weight and bias (`fold_batch_norms`), so the per-channel scale the
int8 weights take is the folded one and no float BN runs after the dequantize; the report
lists the folded BNs (`folded_bn`).

Kept in float (ATC's skip-layer config): the first and the last quantizable layer
(`keep_first_last`), every node named in `skip`, and any Conv / MatMul / Gemm whose weight
is not a constant (activation x activation products such as attention scores); Softmax,
LayerNormalization and everything else are never quantized (they run in float).

The report (`QuantizedModel.report`) lists per quantized layer the activation scale and
zero point, the weight scale range, and the error of the layer's output in the quantized
model against the float model on the calibration data (relative RMS and max abs), both run
by onnxruntime.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ge.errors import GeError, InputError
from ge.transforms.quant_fold import quantize_bias  # onnxruntime's bias rule, shared with quant-fold

METHODS = ("minmax", "percentile", "entropy")
QUANTIZABLE = ("Conv", "MatMul", "Gemm")
QMIN, QMAX = -128, 127
WEIGHT_QMAX = 127  # symmetric int8 weights use [-127, 127] (onnxruntime's symmetric range)
CALIBRATION_BATCH = 256


class QuantizeError(GeError):
    """A quantization request ge cannot honour (unknown method, bad calibration data, a
    skip list naming nodes that do not exist)."""


# --------------------------------------------------------------------------------------
# Activation ranges
# --------------------------------------------------------------------------------------


def _smooth(p: np.ndarray, eps: float = 1e-4) -> np.ndarray | None:
    """MXNet's `_smooth_distribution` on bin counts: move `eps` onto each empty bin, taken
    evenly from the others, so that KL(P || Q) stays finite. None when nothing can be moved."""
    zero = p == 0
    n_zero, n_nonzero = int(zero.sum()), int(p.size - zero.sum())
    if n_nonzero == 0:
        return None
    eps1 = eps * n_zero / n_nonzero
    if eps1 >= 1.0:
        return None
    return p.astype(np.float64) + eps * zero - eps1 * ~zero


def entropy_threshold(abs_values: np.ndarray, num_bins: int = 2048, num_levels: int = 128) -> float:
    """TensorRT's KL-divergence threshold for |x|, step for step as MXNet's
    `_get_optimal_threshold` computes it (see the module docstring)."""
    absmax = float(np.max(abs_values)) if abs_values.size else 0.0
    if absmax == 0.0:
        return 0.0
    hist, edges = np.histogram(abs_values, bins=num_bins, range=(0.0, absmax))
    hist = hist.astype(np.float64)
    best_i, best_kl = num_bins, np.inf
    for i in range(num_levels, num_bins + 1):
        kept = hist[:i]
        p = kept.copy()
        p[i - 1] += hist[i:].sum()  # the clipped outliers land in the last kept bin
        # Q: the i bins merged into `num_levels` levels of i // num_levels bins (the last
        # level takes the remainder), each level's count spread evenly over the bins where
        # P is not empty; empty P bins stay empty in Q.
        merged = i // num_levels
        level_of_bin = np.minimum(np.arange(i) // merged, num_levels - 1)
        level_sum = np.bincount(level_of_bin, weights=kept, minlength=num_levels)
        level_nonzero = np.bincount(level_of_bin, weights=(p != 0).astype(np.float64), minlength=num_levels)
        per_bin = np.divide(level_sum, level_nonzero, out=np.zeros(num_levels), where=level_nonzero > 0)
        q = np.where(p != 0, per_bin[level_of_bin], 0.0)
        ps, qs = _smooth(p), _smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        kl = float(np.sum(ps * np.log(ps / qs)))
        if kl < best_kl:
            best_i, best_kl = i, kl
    return float(edges[best_i])


def activation_range(values: np.ndarray, method: str, percentile: float = 99.999) -> tuple[float, float]:
    """The float range [lo, hi] an activation is quantized over, by calibration method."""
    if values.size == 0:
        return 0.0, 0.0
    lo, hi = float(values.min()), float(values.max())
    if method == "minmax":
        return lo, hi
    magnitude = np.abs(values.astype(np.float32, copy=False)).reshape(-1)
    if method == "percentile":
        t = float(np.percentile(magnitude, percentile))
    elif method == "entropy":
        t = entropy_threshold(magnitude)
    else:
        raise QuantizeError(f"unknown calibration method '{method}'; choose one of {', '.join(METHODS)}")
    t = min(t, max(abs(lo), abs(hi)))
    return (0.0, t) if lo >= 0 else (-t, t)


def scale_zero_point(lo: float, hi: float, symmetric: bool = False) -> tuple[np.float32, np.int8]:
    """onnxruntime's `compute_scale_zp` for int8: the range is widened to include 0.
    Symmetric: zero point 0 and scale = max(|lo|, |hi|) / 127 (TensorRT's, AMCT's)."""
    if symmetric:
        scale = np.float32(max(abs(lo), abs(hi)) / WEIGHT_QMAX)
        return (scale, np.int8(0)) if scale > 0 and np.isfinite(scale) else (np.float32(1.0), np.int8(0))
    rmin, rmax = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((rmax - rmin) / (QMAX - QMIN))
    if scale == 0 or not np.isfinite(scale):
        return np.float32(1.0), np.int8(0)
    zp = np.round(QMIN - rmin / float(scale))
    return scale, np.int8(np.clip(zp, QMIN, QMAX))


def quantize_weight(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per channel along `axis`: (int8 weights, f32 scales)."""
    moved = np.moveaxis(w.astype(np.float32), axis, 0).reshape(w.shape[axis], -1)
    absmax = np.max(np.abs(moved), axis=1) if moved.size else np.zeros(w.shape[axis], np.float32)
    scale = (absmax / WEIGHT_QMAX).astype(np.float32)
    scale[scale == 0] = 1.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -WEIGHT_QMAX, WEIGHT_QMAX).astype(np.int8)
    return q, scale


# --------------------------------------------------------------------------------------
# Calibration data and float runs
# --------------------------------------------------------------------------------------


def load_calibration_data(data, input_names: Sequence[str]) -> dict[str, np.ndarray]:
    """Calibration inputs as {input name: array with the samples along dim 0}, from a
    `.npz` path, a dict, or a list of dicts (concatenated)."""
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.is_file():
            raise QuantizeError(f"calibration data {path}: no such file")
        try:
            with np.load(path) as npz:
                data = {k: npz[k] for k in npz.files}
        except Exception as e:  # numpy raises several kinds for a bad file
            raise QuantizeError(f"calibration data {path}: not a readable .npz file: {e}") from None
    if isinstance(data, Mapping):
        data = [data]
    batches = list(data)
    if not batches:
        raise QuantizeError("the calibration data is empty")
    out: dict[str, np.ndarray] = {}
    for name in input_names:
        missing = [i for i, b in enumerate(batches) if name not in b]
        if missing:
            given = ", ".join(sorted(batches[missing[0]])) or "none"
            raise InputError(f"the calibration data has no array for model input '{name}' (it has: {given})")
        out[name] = np.concatenate([np.asarray(b[name]) for b in batches], axis=0)
    counts = {len(a) for a in out.values()}
    if len(counts) != 1 or 0 in counts:
        raise InputError("the calibration arrays must hold the same, non-zero number of samples; got "
                         + ", ".join(f"{n}: {len(a)}" for n, a in out.items()))
    return out


def _session(model: onnx.ModelProto, outputs: Iterable[str]):
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    known = {o.name for o in m.graph.output}
    for name in outputs:
        if name not in known:
            m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
            known.add(name)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])


def model_batch(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> int:
    """How many samples one run takes: the inputs' fixed batch dim (dim 0 a number: a
    batch-1 model runs sample by sample), else CALIBRATION_BATCH."""
    fixed = {}
    for i in model.graph.input:
        dims = i.type.tensor_type.shape.dim
        if i.name in inputs and dims and dims[0].HasField("dim_value") and dims[0].dim_value > 0:
            fixed[i.name] = dims[0].dim_value
    if not fixed:
        return CALIBRATION_BATCH
    if len(set(fixed.values())) > 1:
        raise InputError("the model inputs have different fixed batch sizes: "
                         + ", ".join(f"{k}: {v}" for k, v in fixed.items()))
    batch = next(iter(fixed.values()))
    n = len(next(iter(inputs.values())))
    if n % batch:
        raise InputError(f"the model's batch is fixed at {batch} (input '{next(iter(fixed))}'); "
                         f"the calibration data has {n} samples, not a multiple of {batch}")
    return batch


def run_model(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], tensors: Sequence[str]) -> dict[str, np.ndarray]:
    """The values of `tensors` (graph outputs or intermediates) over all samples, run by
    onnxruntime in runs of the model's batch (`model_batch`) along dim 0, concatenated."""
    session = _session(model, tensors)
    n = len(next(iter(inputs.values())))
    step = model_batch(model, inputs)
    parts: dict[str, list[np.ndarray]] = {t: [] for t in tensors}
    for start in range(0, n, step):
        feed = {k: v[start:start + step] for k, v in inputs.items()}
        for name, value in zip(tensors, session.run(list(tensors), feed)):
            parts[name].append(np.atleast_1d(value))
    return {t: np.concatenate(v, axis=0) for t, v in parts.items()}


# --------------------------------------------------------------------------------------
# BatchNorm folding (AMCT's "BN fold", onnxruntime's quantizer pre-processing)
# --------------------------------------------------------------------------------------


def _bn_foldable(bn: onnx.NodeProto, conv: onnx.NodeProto | None, readers: Mapping[str, int],
                 inits: Mapping[str, onnx.TensorProto], graph_outputs: set[str]) -> bool:
    """Conv -> BatchNormalization in inference form, the conv's output read by the BN only,
    every parameter a constant: the BN is a per-output-channel affine map of the conv."""
    if conv is None or conv.op_type != "Conv" or len(bn.output) != 1 or len(bn.input) != 5:
        return False
    if any(a.name == "training_mode" and a.i for a in bn.attribute):
        return False
    if readers.get(bn.input[0]) != 1 or bn.input[0] in graph_outputs:
        return False
    params = list(bn.input[1:5]) + list(conv.input[1:3])
    if not all(x in inits for x in params if x):
        return False
    channels = inits[conv.input[1]].dims[0] if inits[conv.input[1]].dims else -1
    return all(list(inits[x].dims) == [channels] for x in bn.input[1:5])


def fold_batch_norms(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """The model with each foldable BatchNormalization (`_bn_foldable`) folded into its
    Conv's weight and bias, and {BN node: conv node} of those folded. Per output channel
    k = gamma / sqrt(var + eps); w' = w * k, b' = (b - mean) * k + beta, computed in f64
    and cast back to the weight's dtype. So the int8 conv's epilogue is the BN too, instead
    of a float BN after the dequantize."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    readers: dict[str, int] = {}
    for n in g.node:
        for x in n.input:
            readers[x] = readers.get(x, 0) + 1
    graph_outputs = {o.name for o in g.output}
    producer = {o: n for n in g.node for o in n.output}
    taken = set(inits) | set(producer) | {i.name for i in g.input}

    def fresh(base: str) -> str:
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name

    keep, new_inits, folded = [], [], {}
    for n in g.node:
        conv = producer.get(n.input[0]) if n.op_type == "BatchNormalization" and n.input else None
        if not _bn_foldable(n, conv, readers, inits, graph_outputs):
            keep.append(n)
            continue
        eps = next((a.f for a in n.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (numpy_helper.to_array(inits[x]).astype(np.float64) for x in n.input[1:5])
        w0 = numpy_helper.to_array(inits[conv.input[1]])
        w = w0.astype(np.float64)
        has_bias = len(conv.input) > 2 and conv.input[2]
        b = numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64) if has_bias else np.zeros(w.shape[0])
        k = gamma / np.sqrt(var + eps)
        conv_name = conv.name or conv.output[0]
        w_name, b_name = fresh(f"{conv_name}_w_bn"), fresh(f"{conv_name}_b_bn")
        new_inits.append(numpy_helper.from_array((w * k.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w0.dtype), w_name))
        new_inits.append(numpy_helper.from_array(((b - mean) * k + beta).astype(w0.dtype), b_name))
        conv.input[:] = [conv.input[0], w_name, b_name]
        conv.output[0] = n.output[0]
        folded[n.name or n.output[0]] = conv_name
    if not folded:
        return model, folded
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(new_inits)
    used = {x for n in g.node for x in n.input}
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    # Old models (IR < 4) list initializers as graph inputs too, and need them there.
    inputs = [i for i in g.input if i.name in used or i.name not in inits]
    if m.ir_version < 4:
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in new_inits]
    del g.input[:]
    g.input.extend(inputs)
    folded_values = {n.input[0] for n in model.graph.node if (n.name or n.output[0]) in folded}
    vi = [v for v in g.value_info if v.name not in folded_values]
    del g.value_info[:]
    g.value_info.extend(vi)
    return m, folded


# --------------------------------------------------------------------------------------
# Which layers
# --------------------------------------------------------------------------------------


@dataclass
class LayerReport:
    """One quantized layer: its activation quantization, weight scales, and output error."""

    node: str
    op_type: str
    activation: str
    scale: float
    zero_point: int
    weight_scale_min: float
    weight_scale_max: float
    rel_error: float = float("nan")  # RMS(quantized - float) / RMS(float) of the layer's output
    max_abs_error: float = float("nan")


@dataclass
class QuantizationReport:
    method: str
    layers: list[LayerReport] = field(default_factory=list)
    kept_float: dict[str, str] = field(default_factory=dict)  # node -> why it stays float
    folded_bn: dict[str, str] = field(default_factory=dict)  # BatchNormalization -> the Conv it is folded into

    def table(self) -> str:
        rows = [f"quantization ({self.method}): {len(self.layers)} layer(s) int8, {len(self.kept_float)} kept float",
                f"{'layer':<28} {'op':<6} {'act scale':>11} {'zp':>5} {'w scale min..max':>21} {'rel err':>9}"]
        for r in self.layers:
            rows.append(f"{r.node:<28} {r.op_type:<6} {r.scale:>11.4g} {r.zero_point:>5} "
                        f"{r.weight_scale_min:>10.3g}..{r.weight_scale_max:<10.3g} {r.rel_error:>9.4f}")
        rows += [f"{name:<28} float: {why}" for name, why in self.kept_float.items()]
        rows += [f"{bn:<28} folded into {conv}" for bn, conv in self.folded_bn.items()]
        return "\n".join(rows)

    def to_json(self) -> dict:
        return {"method": self.method, "layers": [asdict(r) for r in self.layers], "kept_float": self.kept_float,
                "folded_bn": self.folded_bn}


@dataclass
class QuantizedModel:
    """`ge.quantize`'s result: the QDQ ONNX model and the report."""

    model: onnx.ModelProto
    report: QuantizationReport

    def save(self, path: str | os.PathLike, report: str | os.PathLike | None = None) -> None:
        onnx.save_model(self.model, str(path))
        if report is not None:
            Path(report).write_text(json.dumps(self.report.to_json(), indent=1))


def _node_names(model: onnx.ModelProto) -> list[str]:
    return [n.name or n.output[0] for n in model.graph.node]


def _weight_axis(node: onnx.NodeProto, w: np.ndarray) -> int | None:
    """The output-channel axis of a quantizable node's constant weight, or None."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Conv":
        return 0 if w.ndim >= 3 else None
    if node.op_type == "Gemm":
        if attrs.get("transA", 0):
            return None
        return 0 if attrs.get("transB", 0) else 1
    return 1 if w.ndim == 2 else None  # MatMul with a 2-D weight: output channels are columns


def select_layers(model: onnx.ModelProto, skip: Sequence[str], keep_first_last: bool) -> tuple[list, dict[str, str]]:
    """The (node, weight axis) pairs to quantize, and {node: reason} for those kept float."""
    inits = {t.name: t for t in model.graph.initializer}
    names = _node_names(model)
    unknown = [s for s in skip if s not in names]
    if unknown:
        raise QuantizeError(f"the skip list names node(s) the model does not have: {', '.join(unknown)}")
    candidates, kept = [], {}
    for node, name in zip(model.graph.node, names):
        if node.op_type not in QUANTIZABLE:
            continue
        if len(node.input) < 2 or node.input[1] not in inits or node.input[0] in inits:
            kept[name] = "its weight is not a constant"
            continue
        w = numpy_helper.to_array(inits[node.input[1]])
        axis = _weight_axis(node, w)
        if w.dtype != np.float32 or axis is None:
            kept[name] = "weight layout not quantizable (needs f32, Conv OIHW / Gemm without transA / 2-D MatMul)"
            continue
        candidates.append((node, name, axis))
    if keep_first_last and candidates:
        for _node, name, _ in {candidates[0][1]: candidates[0], candidates[-1][1]: candidates[-1]}.values():
            kept[name] = "first or last layer (kept float by rule)"
    chosen = []
    for node, name, axis in candidates:
        if name in skip:
            kept[name] = "in the skip list"
        elif name not in kept:
            chosen.append((node, name, axis))
    return chosen, kept


# --------------------------------------------------------------------------------------
# Writing the QDQ model
# --------------------------------------------------------------------------------------


class _QdqWriter:
    """Adds Q/DQ nodes and quantized initializers to a copy of the float model."""

    def __init__(self, model: onnx.ModelProto):
        self.model = onnx.ModelProto()
        self.model.CopyFrom(model)
        self.inits = {t.name: t for t in self.model.graph.initializer}
        self.before: dict[int, list[onnx.NodeProto]] = {}
        self.dequantized: dict[str, str] = {}

    def _init(self, name: str, arr: np.ndarray) -> str:
        """A new initializer, renamed if the model already has a value of that name."""
        taken = {t.name for t in self.model.graph.initializer} | {o for n in self.model.graph.node for o in n.output}
        base, i = name, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        self.model.graph.initializer.append(numpy_helper.from_array(arr, name))
        return name

    def activation(self, index: int, tensor: str, scale, zp) -> str:
        """Q -> DQ on `tensor` (once per tensor), inserted before node `index`."""
        if tensor in self.dequantized:
            return self.dequantized[tensor]
        s = self._init(f"{tensor}_scale", np.array(scale, np.float32))
        z = self._init(f"{tensor}_zero_point", np.array(zp, np.int8))
        q = helper.make_node("QuantizeLinear", [tensor, s, z], [f"{tensor}_quantized"], name=f"{tensor}_QuantizeLinear")
        dq = helper.make_node("DequantizeLinear", [q.output[0], s, z], [f"{tensor}_dequantized"],
                              name=f"{tensor}_DequantizeLinear")
        self.before.setdefault(index, []).extend([q, dq])
        self.dequantized[tensor] = dq.output[0]
        return dq.output[0]

    def constant(self, index: int, name: str, q: np.ndarray, scale: np.ndarray, axis: int) -> str:
        """An int8 / int32 initializer behind a DequantizeLinear (per channel along `axis`)."""
        qn = self._init(f"{name}_quantized", q)
        s = self._init(f"{name}_quantized_scale", scale.astype(np.float32))
        z = self._init(f"{name}_quantized_zero_point", np.zeros(scale.shape, q.dtype))
        dq = helper.make_node("DequantizeLinear", [qn, s, z], [f"{name}_DequantizeLinear_Output"],
                              name=f"{name}_DequantizeLinear", axis=axis)
        self.before.setdefault(index, []).append(dq)
        return dq.output[0]

    def finish(self) -> onnx.ModelProto:
        nodes = []
        for i, node in enumerate(self.model.graph.node):
            nodes.extend(self.before.get(i, []))
            nodes.append(node)
        del self.model.graph.node[:]
        self.model.graph.node.extend(nodes)
        used = {i for n in nodes for i in n.input}
        keep = [t for t in self.model.graph.initializer if t.name in used]
        del self.model.graph.initializer[:]
        self.model.graph.initializer.extend(keep)
        return self.model


def _at_least_opset_13(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model converted to opset 13 if older: per-channel DequantizeLinear (axis) needs it."""
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    if version >= 13:
        return model
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, 13)
    except Exception as e:  # the converter raises several kinds
        raise QuantizeError(f"the model's opset {version} cannot be converted to 13 for quantization: {e}") from None


def _bias_index(node: onnx.NodeProto) -> int | None:
    if node.op_type not in ("Conv", "Gemm") or len(node.input) < 3 or not node.input[2]:
        return None
    if node.op_type == "Gemm":
        beta = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "beta"), 1.0)
        alpha = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "alpha"), 1.0)
        if beta != 1.0 or alpha != 1.0:
            return None
    return 2


def quantize(
    model,
    calibration_data,
    method: str = "minmax",
    skip: Sequence[str] = (),
    keep_first_last: bool = True,
    percentile: float = 99.999,
    symmetric: bool = True,
    report_error: bool = True,
    fold_bn: bool = True,
) -> QuantizedModel:
    """Post-training int8 quantization of an ONNX model (path, bytes or ModelProto).

    `calibration_data`: a `.npz` path, a dict {input name: samples along dim 0}, or a
    list of such dicts. `symmetric`: activations with zero point 0 (what ge's int8 Cube
    path runs); False gives asymmetric ranges (zero point = the activation offset).
    `fold_bn`: fold each Conv -> BatchNormalization into the conv first (`fold_batch_norms`,
    AMCT's default), so the BN is not left in float after the int8 conv's dequantize.
    Returns a `QuantizedModel` (`.model` a QDQ ONNX model, `.report`).
    """
    from ge.frontend.onnx import load_onnx_model

    if method not in METHODS:
        raise QuantizeError(f"unknown calibration method '{method}'; choose one of {', '.join(METHODS)}")
    proto = _at_least_opset_13(load_onnx_model(model))
    proto, folded = fold_batch_norms(proto) if fold_bn else (proto, {})
    init_names = {t.name for t in proto.graph.initializer}
    inputs = load_calibration_data(calibration_data, [i.name for i in proto.graph.input if i.name not in init_names])
    chosen, kept = select_layers(proto, list(skip), keep_first_last)
    report = QuantizationReport(method, kept_float=kept, folded_bn=folded)
    if not chosen:
        return QuantizedModel(proto, report)

    activations = list(dict.fromkeys(node.input[0] for node, _, _ in chosen))
    outputs = [node.output[0] for node, _, _ in chosen]
    float_values = run_model(proto, inputs, list(dict.fromkeys(activations + outputs)))
    ranges = {a: scale_zero_point(*activation_range(float_values[a], method, percentile), symmetric)
              for a in activations}

    writer = _QdqWriter(proto)
    index = {id(n): i for i, n in enumerate(proto.graph.node)}
    inits = {t.name: t for t in proto.graph.initializer}
    for node, name, axis in chosen:
        i = index[id(node)]
        target = writer.model.graph.node[i]
        scale_x, zp_x = ranges[node.input[0]]
        w = numpy_helper.to_array(inits[node.input[1]])
        wq, w_scale = quantize_weight(w, axis)
        target.input[0] = writer.activation(i, node.input[0], scale_x, zp_x)
        target.input[1] = writer.constant(i, node.input[1], wq, w_scale, axis)
        b = _bias_index(node)
        if b is not None and node.input[b] in inits:
            bias = numpy_helper.to_array(inits[node.input[b]])
            if bias.ndim == 1 and bias.shape[0] == w_scale.shape[0]:
                b_scale = (np.float64(scale_x) * w_scale.astype(np.float64)).astype(np.float32)
                target.input[b] = writer.constant(i, node.input[b], quantize_bias(bias, b_scale), b_scale, 0)
        report.layers.append(LayerReport(name, node.op_type, node.input[0], float(scale_x), int(zp_x),
                                         float(w_scale.min()), float(w_scale.max())))
    qdq = writer.finish()
    if report_error:
        quantized_values = run_model(qdq, inputs, outputs)
        for r, out in zip(report.layers, outputs):
            ref, got = float_values[out].astype(np.float64), quantized_values[out].astype(np.float64)
            rms = float(np.sqrt(np.mean(ref**2))) or 1.0
            r.rel_error = float(np.sqrt(np.mean((got - ref) ** 2))) / rms
            r.max_abs_error = float(np.max(np.abs(got - ref)))
    return QuantizedModel(qdq, report)
