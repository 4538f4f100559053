"""The fusion rules of the `fuse` pass, and the fusion switch file that turns them on and off.

Rule names follow GE's UB-fusion pass names, so an ATC user's `--fusion_switch_file` reads
the same here. Each rule says which op anchors a group, which ops it may absorb, and what
kind of kernel the group becomes. The switch file comes in GE's two spellings:

    {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"TbeEltwiseFusionPass": "off"}}}

    # one rule per line
    TbeEltwiseFusionPass:off
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ge.dialects import graph
from ge.errors import GeError

# Ops that compute nothing (views of the same bytes): they never become kernels.
VIEW_OPS = (graph.ReshapeOp, graph.FlattenOp, graph.SqueezeOp, graph.UnsqueezeOp, graph.IdentityOp, graph.DropoutOp)



def ops_with(*traits) -> tuple[type, ...]:
    """The graph ops that carry any of the interfaces `traits` (dialects/graph.py)."""
    return tuple(cls for cls in graph.Graph.operations if any(graph.has_trait(cls, t) for t in traits))


# Ops with the Elementwise interface (BatchNorm at inference is a per-channel scale and shift:
# elementwise with a broadcast).
ELEMENTWISE_OPS = ops_with(graph.Elementwise)
# Pointwise nonlinearities a Cube epilogue absorbs after its bias (GE's conv + relu fusions).
ACTIVATION_OPS = ops_with(graph.Activation)


def ops_by_format_rule(*rules: str) -> tuple[type, ...]:
    """The graph ops whose StorageFormats interface has one of `rules`."""
    return tuple(cls for cls in graph.Graph.operations
                 if (f := cls.get_trait(graph.StorageFormats)) is not None and f.rule in rules)


# Cube ops (the Cube reads their FRACTAL weights); pools (feature-map ops that are neither
# elementwise nor normalizations).
CUBE_OPS = ops_by_format_rule("conv", "matmul")
POOL_OPS = tuple(cls for cls in ops_by_format_rule("feature_map")
                 if not graph.has_trait(cls, graph.Elementwise) and not graph.has_trait(cls, graph.Normalization))
# Reductions and normalizations (a reduction used elementwise on its own input).
REDUCE_OPS = ops_with(graph.Reduction, graph.Normalization)


def is_view(op) -> bool:
    return isinstance(op, VIEW_OPS)


def is_trans_data(op) -> bool:
    return op.name == "layout.trans_data"


def is_elementwise(op) -> bool:
    return graph.has_trait(op, graph.Elementwise) and not is_view(op)


def scalar_operands(ops) -> dict:
    """The constant operands a Vector kernel of `ops` takes as immediates (vadds / vmuls /
    vmaxs / vmins, or one block written by vdup), not as GM inputs every tile reads:
    {constant value: the one-element `graph.constant` to put inside the group}. Any
    constant of one value everywhere (one element, or a splat of a plain tensor whose
    shape does not widen the result) read by an elementwise op that also reads a computed
    value; integer and float element types (booleans stay inputs). In a Cube kernel only
    one-element constants, its epilogue's immediates (bert's GELU: x / sqrt(2), + 1, * 0.5
    as vmuls / vadds, not one-value tiles read and spread per output tile; a per-channel
    bias stays an input even when all its values are equal, a dequantize scale too);
    batch norm's per-channel parameters stay inputs."""
    import numpy as np

    from ge.dialects import dtypes
    from ge.dialects.layout import layout_of
    from ge.transforms.graph_utils import constant_value, make_constant

    ops = list(ops)
    cube = any(isinstance(op, CUBE_OPS) for op in ops)
    users: dict = {}
    for op in ops:
        for v in op.operands:
            if isinstance(v.owner, graph.ConstantOp):
                users.setdefault(v, []).append(op)
    out = {}
    for v, readers in users.items():
        t = v.type
        if dtypes.is_bool(t.element_type) or not all(
                is_elementwise(op) and not isinstance(op, graph.BatchNormOp) for op in readers) or any(
                all(isinstance(w.owner, graph.ConstantOp) for w in op.operands) for op in readers):
            continue
        one = [1] * len(graph.shape_of(t))
        if graph.shape_of(t) != tuple(one) and (layout_of(t) is not None or any(
                isinstance(op, graph.DequantizeOp) or _widens(op, v) for op in readers)):
            continue
        if cube and any(isinstance(op, graph.DequantizeOp) for op in readers):
            continue  # (a dequantize scale of a Cube kernel: FixPipe's quant mode reads it)
        arr = constant_value(v)
        if arr is None or arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]) or (cube and arr.size > 1):
            continue  # (NaN: no immediate)
        if arr.size == 1:
            out[v] = v.owner
        else:
            const = make_constant(arr.reshape(-1)[:1].reshape(one), t.element_type, v.name_hint or "scalar", v.owner)
            const.output.name_hint = v.name_hint
            out[v] = const
    return out


def _widens(op, v) -> bool:
    """Does operand `v` take part in the broadcast shape of `op`'s result (so that a
    one-element stand-in would change it)?"""
    import numpy as np

    others = [graph.shape_of(w.type) for w in op.operands if w is not v]
    ones = (1,) * len(graph.shape_of(v.type))
    try:
        return tuple(np.broadcast_shapes(ones, *others)) != tuple(graph.shape_of(op.results[0].type))
    except ValueError:  # operands that do not broadcast numpy's way (a storage format's channel)
        return True


@dataclass(frozen=True)
class FusionRule:
    name: str
    category: str  # "UBFusion" or "GraphFusion", as in GE's switch file
    kind: str  # the fusion.group kind it produces
    doc: str


RULES: tuple[FusionRule, ...] = (
    FusionRule(
        "TbeConvElemwiseFusionPass", "UBFusion", "cube_epilogue",
        "Conv2d + per-channel bias/scale (Add/Mul with a constant, BatchNorm) + activation (also a decomposed "
        "one such as Erf GELU or x * sigmoid(x), taken whole) + one residual Add (+ activation): the epilogue "
        "runs on the conv result while it is still on chip.",
    ),
    FusionRule(
        "TbeMatmulElemwiseFusionPass", "UBFusion", "cube_epilogue",
        "MatMul/Gemm + bias/scale + activation + residual Add, as for convolutions.",
    ),
    FusionRule(
        "TbeReduceElemwiseFusionPass", "UBFusion", "reduce",
        "A reduction (Softmax, LayerNorm, ReduceMean, LRN, ...) with the elementwise ops that feed it and "
        "that consume it, incl. decomposed LayerNorm/Softmax patterns (two reductions in one kernel).",
    ),
    FusionRule(
        "TbePoolElemwiseFusionPass", "UBFusion", "pool",
        "A pooling op with the elementwise ops that follow it.",
    ),
    FusionRule(
        "TbeEltwiseFusionPass", "UBFusion", "elementwise",
        "Chains of elementwise and broadcast ops into one vector kernel.",
    ),
    FusionRule(
        "TbeTransDataFusionPass", "UBFusion", "opaque",
        "A layout conversion (trans_data) done by the copy-in or copy-out of the kernel next to it.",
    ),
    FusionRule(
        "SummedConvsFusionPass", "UBFusion", "cube_epilogue",
        "Part of a conv's epilogue (ours, not GE's): a residual Add of two 1 x 1 convs of one output shape "
        "(ResNet's projection shortcut and its block's last conv) as one Cube GEMM, their K's concatenated: "
        "each K chunk reads its conv's feature map, L0C sums the two, and the shortcut's output never goes "
        "to GM. Off: the shortcut is a kernel of its own and the Add reads its output.",
    ),
)
RULES_BY_NAME = {r.name: r for r in RULES}
CATEGORIES = ("GraphFusion", "UBFusion")


class FusionSwitchError(GeError):
    """A fusion switch file that cannot be read or names an unknown rule."""


def _known() -> str:
    return ", ".join(r.name for r in RULES)


def parse_switch_file(path: str | Path) -> dict[str, bool]:
    """Read a fusion switch file; returns {rule name: enabled} for every rule."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise FusionSwitchError(f"{path}: cannot read the fusion switch file: {e.strerror}") from None
    return parse_switch_text(text, str(path))


def parse_switch_text(text: str, where: str = "<switch>") -> dict[str, bool]:
    enabled = {r.name: True for r in RULES}
    stripped = text.lstrip()
    if stripped.startswith("{"):
        _apply_json(text, where, enabled)
    else:
        _apply_lines(text, where, enabled)
    return enabled


def _state(value: object, where: str, what: str) -> bool:
    if isinstance(value, str) and value.lower() in ("on", "off"):
        return value.lower() == "on"
    raise FusionSwitchError(f"{where}: {what} must be \"on\" or \"off\", got {value!r}")


def _apply_json(text: str, where: str, enabled: dict[str, bool]) -> None:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise FusionSwitchError(f"{where}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    switch = doc.get("Switch") if isinstance(doc, dict) else None
    if not isinstance(switch, dict):
        raise FusionSwitchError(f'{where}: expected {{"Switch": {{"GraphFusion": {{...}}, "UBFusion": {{...}}}}}}')
    for category, entries in switch.items():
        if category not in CATEGORIES:
            raise FusionSwitchError(f"{where}: unknown section '{category}' (expected {', '.join(CATEGORIES)})")
        if not isinstance(entries, dict):
            raise FusionSwitchError(f"{where}: section '{category}' must map rule names to \"on\"/\"off\"")
        in_category = [r.name for r in RULES if r.category == category]
        if "ALL" in entries:
            state = _state(entries["ALL"], where, f"{category}.ALL")
            for name in in_category:
                enabled[name] = state
        for name, value in entries.items():
            if name == "ALL":
                continue
            if name not in in_category:
                raise FusionSwitchError(
                    f"{where}: unknown {category} rule '{name}'; known rules: "
                    + (", ".join(in_category) or f"none in {category}") + f" (all rules: {_known()})"
                )
            enabled[name] = _state(value, where, f"{category}.{name}")


def _apply_lines(text: str, where: str, enabled: dict[str, bool]) -> None:
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, value = (p.strip() for p in line.partition(":"))
        if not sep:
            raise FusionSwitchError(f"{where}:{lineno}: expected 'RuleName:on' or 'RuleName:off', got '{raw.strip()}'")
        state = _state(value, f"{where}:{lineno}", name)
        if name == "ALL":
            for rule in enabled:
                enabled[rule] = state
        elif name in enabled:
            enabled[name] = state
        else:
            raise FusionSwitchError(f"{where}:{lineno}: unknown fusion rule '{name}'; known rules: {_known()}")
