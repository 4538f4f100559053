"""A model file as readable JSON: what `ge-compile --mode 1` prints (ATC's `--mode 1`).

Where it sits: beside the executor, on the model file's public API
(`ge.runtime.model_file.load_model`); nothing is parsed or run. `describe(model)` gathers
what a user asks of a built model:

- `inputs`, `outputs`: names, shapes (-1 for a dynamic batch), dtypes, storage formats;
- `gears`: per compiled batch size its task range, arena and streams;
- `kernels`: name, kind, the ONNX nodes fused into it, block_dim, launches and streams,
  argument types, the tile cost model's cycles and roofline bound;
- `memory`: arena, alignment, regions, every tensor with its offset and bytes, and the
  compile report's activation peak and lower bound;
- `streams`: per stream its tasks in issue order, per event who records and waits, and
  per SuperKernel its stream and tasks;
- `weights`: total bytes, count, the largest weights, and a SHA-256 of the region;
- `compile_report`: the `ge-compile --report` dict stored in the file, when present;
- `dynamic`: for an `input_shape_range` model, which builds its kernels at run time; its
  `inputs` then carry their `range` per dim.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

LARGEST_WEIGHTS = 10


def _io(io: dict[str, Any]) -> dict[str, Any]:
    return {k: io[k] for k in ("name", "shape", "dtype", "format", "origin_format", "origin_shape", "bytes")
            if k in io} | {"tensor": io["tensor"]}


def _task_label(t: dict[str, Any], kernels: list[dict[str, Any]]) -> str:
    if t["op"] == "launch":
        group = f" super_kernel {t['super_kernel']}" if t.get("super_kernel") is not None else ""
        return f"launch @{kernels[t['kernel']]['name']} block_dim {t.get('block_dim', 1)}{group}"
    if t["op"] == "copy":
        return f"copy tensor #{t['src']} -> #{t['dst']}"
    return f"{t['op']} event {t['event']}"


def _kernels(model) -> list[dict[str, Any]]:
    kernels = model.definition["kernels"]
    launches: dict[int, list[dict[str, Any]]] = {}
    for j, t in enumerate(model.tasks):
        if t["op"] == "launch":
            launches.setdefault(t["kernel"], []).append({"task": j, "stream": t["stream"]})
    out = []
    for i, k in enumerate(kernels):
        entry = {"name": k["name"], "kind": k.get("kind", ""), "nodes": list(k.get("nodes", [])),
                 "block_dim": k.get("block_dim", 1), "launches": len(launches.get(i, [])),
                 "streams": sorted({s["stream"] for s in launches.get(i, [])}),
                 "ins": [_signature(a) for a in k.get("ins", [])], "outs": [_signature(a) for a in k.get("outs", [])]}
        for key in ("modeled_cycles", "bound", "plan"):
            if key in k:
                entry[key] = k[key]
        out.append(entry)
    return out


def _signature(arg: dict[str, Any]) -> str:
    """`1x1x16x16x16xf16 NC1HWC0` for one kernel argument."""
    dims = "x".join(str(d) for d in arg.get("shape", []))
    text = f"{dims}x{arg.get('dtype', '?')}" if dims else arg.get("dtype", "?")
    return f"{text} {arg['format']}" if "format" in arg else text


def _memory(model) -> dict[str, Any]:
    d = model.definition
    report = model.metadata.get("compile_report", {}).get("memory", {})
    tensors = []
    for i, t in enumerate(d["tensors"]):
        entry = {"id": i, "kind": t.get("kind", ""), "offset": t["offset"], "bytes": t["bytes"], "shape": t["shape"],
                 "dtype": t["dtype"]}
        entry.update({k: t[k] for k in ("format", "origin_format", "origin_shape") if k in t})
        tensors.append(entry)
    memory = {"arena_bytes": d["arena"], "alignment": d["alignment"],
              "regions": {r: {"offset": o, "bytes": s} for r, (o, s) in d["regions"].items()}}
    for key in ("activation_peak_bytes", "activation_lower_bound_bytes", "no_reuse_bytes"):
        if key in report:
            memory[key] = report[key]
    memory["tensors"] = tensors
    return memory


def _streams(model) -> dict[str, Any]:
    kernels = model.definition["kernels"]
    per_stream: dict[int, list[str]] = {s: [] for s in range(model.definition["streams"])}
    events: dict[int, dict[str, list[dict[str, int]]]] = {}
    groups: dict[int, dict[str, Any]] = {}
    for j, t in enumerate(model.tasks):
        per_stream.setdefault(t["stream"], []).append(f"#{j} {_task_label(t, kernels)}")
        if t.get("super_kernel") is not None:
            groups.setdefault(t["super_kernel"], {"stream": t["stream"], "tasks": []})["tasks"].append(j)
        if t["op"] in ("record", "wait"):
            role = "records" if t["op"] == "record" else "waits"
            events.setdefault(t["event"], {"records": [], "waits": []})[role].append({"task": j, "stream": t["stream"]})
    return {
        "count": model.definition["streams"], "events": model.definition["events"],
        "tasks": [{"stream": s, "tasks": tasks} for s, tasks in sorted(per_stream.items())],
        "event_uses": [{"event": e, **uses} for e, uses in sorted(events.items())],
        "super_kernels": [{"super_kernel": g, **group} for g, group in sorted(groups.items())],
    }


def _weights(model) -> dict[str, Any]:
    weights = [(i, t) for i, t in enumerate(model.definition["tensors"]) if t.get("kind") == "weight"]
    largest = sorted(weights, key=lambda it: (-it[1]["bytes"], it[0]))[:LARGEST_WEIGHTS]
    return {
        "bytes": len(model.weights), "count": len(weights),
        "sha256": hashlib.sha256(model.weights).hexdigest(),
        "largest": [{"tensor": i, "bytes": t["bytes"], "shape": t["shape"], "dtype": t["dtype"],
                     **({"format": t["format"]} if "format" in t else {})} for i, t in largest],
    }


def describe(model) -> dict[str, Any]:
    """The JSON description of a loaded `ge.runtime.model_file.Model` (module docstring)."""
    meta = model.metadata
    out: dict[str, Any] = {
        "file": model.path, "name": model.name, "format_version": model.version,
        "target": meta.get("target"), "soc_version": meta.get("soc_version"),
        "precision_mode": meta.get("precision_mode"), "kernel_level": meta.get("kernel_level"),
        "has_ir_text": model.ir_text is not None,
        "inputs": [_io(io) for io in meta["inputs"]], "outputs": [_io(io) for io in meta["outputs"]],
        "gears": [{k: g[k] for k in ("batch", "tasks", "arena", "streams", "events") if k in g}
                  for g in meta.get("gears", [])],
        "kernels": _kernels(model), "tasks": len(model.tasks),
        "memory": _memory(model), "streams": _streams(model), "weights": _weights(model),
    }
    if "dynamic" in meta:
        out.update(_dynamic(meta["dynamic"]))
    if "compile_report" in meta:
        out["compile_report"] = meta["compile_report"]
    return out


def _dynamic(dynamic: dict[str, Any]) -> dict[str, Any]:
    """An `input_shape_range` model stores no kernels (they are compiled per input shape at run
    time, ge/dynamic.py): its inputs, with their ranges, come from the stored framework graph."""
    return {
        "inputs": [{"name": io["name"], "shape": io["shape"], "dtype": io["dtype"],
                    "range": [list(r) for r in io["range"]]} for io in dynamic["inputs"]],
        "outputs": [{"name": name} for name in dynamic["outputs"]],
        "dynamic": {"kernels": "compiled per input shape at run time (input_shape_range)",
                    "graph_sha256": dynamic["graph_sha256"]},
    }


def describe_file(path: str) -> dict[str, Any]:
    """`describe` of the model file at `path` (its load-time checks apply)."""
    from ge.runtime.model_file import load_model

    return describe(load_model(path))


def to_text(value: Any, indent: int = 0) -> str:
    """JSON with one line per key, but lists of numbers / strings (shapes, node names) and
    small flat objects kept on one line, so that a model reads like its summary."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict) and value:
        flat = json.dumps(value)
        if len(flat) <= 100 and not any(isinstance(v, dict | list) and v for v in value.values()):
            return flat
        items = [f"{inner}{json.dumps(k)}: {to_text(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        if all(not isinstance(v, dict | list) for v in value):
            return json.dumps(value)
        return "[\n" + ",\n".join(f"{inner}{to_text(v, indent + 2)}" for v in value) + f"\n{pad}]"
    return json.dumps(value)
