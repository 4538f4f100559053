"""Profiling by ONNX node: a fused kernel's cycles attributed to the ONNX nodes fused into it.

The model file records, per kernel, the nodes fused into it (`"nodes"` of each kernel entry,
in the order the fusion met them). A fused kernel is one launch: the simulator has no
per-node cycles inside it, so the rule is stated and simple: **a kernel's cycles are split
equally among its nodes** (a node fused into several kernels gets its share of each).
Nodes ge inserted (casts and format conversions, named after the tensor they produce, such
as `x_f16_nc1hwc0`) are listed like the user's nodes; their op type reads `-` unless the
ONNX model names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NodeCycles:
    """The cycles attributed to one ONNX node, and the kernels they came from."""

    node: str
    op_type: str
    cycles: float = 0.0
    kernels: list[str] = field(default_factory=list)


def kernel_nodes(definition: dict[str, Any]) -> list[list[str]]:
    """Per kernel of the model definition its nodes (the kernel's name when none is recorded)."""
    return [list(k.get("nodes") or [k["name"]]) for k in definition["kernels"]]


def by_node(report, definition: dict[str, Any], op_types: dict[str, str] | None = None) -> list[NodeCycles]:
    """The run's kernel cycles per node (equal split within a kernel), slowest first."""
    op_types = op_types or {}
    index = {k["name"]: i for i, k in enumerate(definition["kernels"])}
    nodes = kernel_nodes(definition)
    rows: dict[str, NodeCycles] = {}
    for run in report.kernels:
        names = nodes[index[run.kernel]]
        for n in names:
            row = rows.setdefault(n, NodeCycles(n, op_types.get(n, "-")))
            row.cycles += run.cycles / len(names)
            if run.kernel not in row.kernels:
                row.kernels.append(run.kernel)
    return sorted(rows.values(), key=lambda r: (-r.cycles, r.node))


def table(rows: list[NodeCycles], limit: int | None = None) -> str:
    """node, op type, kernel(s), cycles, share of all kernels' cycles."""
    total = sum(r.cycles for r in rows) or 1.0
    lines = [f"{'node':32s} {'op':16s} {'kernel':32s} {'cycles':>10s} {'share':>6s}"]
    for r in rows[:limit]:
        lines.append(f"{r.node[:32]:32s} {r.op_type[:16]:16s} {','.join(r.kernels)[:32]:32s} {r.cycles:10.0f} "
                     f"{r.cycles / total:6.1%}")
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more nodes")
    lines.append("a fused kernel's cycles are split equally among the nodes fused into it")
    return "\n".join(lines)


def name_spans_by_node(report, definition: dict[str, Any]) -> None:
    """Timeline slices of launches named by their nodes (`conv1+relu1 (k1_conv1)`)."""
    nodes = dict(zip((k["name"] for k in definition["kernels"]), kernel_nodes(definition)))
    for span in report.spans:
        if span.kind == "launch" and span.name in nodes:
            span.name = f"{'+'.join(nodes[span.name])} ({span.name})"
