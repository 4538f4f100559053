"""The model file (`.om`): a built `task.model` as one binary file the executor loads fast.

DESIGN.md §4 "model file", after GE's OM file (ascend.md §4.7): a fixed 256-byte header,
a partition table, then the partitions. All integers are little-endian.

    header   magic "GEOMODEL" | format version u32 | header size u32 | total length u64 |
             partition count u32 | flags u32 | SHA-256 checksum (32 B) | model name (32 B) |
             target (16 B) | zeros up to 256 B
    table    per partition: kind u32 | flags u32 | offset u64 | size u64
    data     the partitions, each starting on a 64-byte boundary

The checksum is the SHA-256 of the whole file with the checksum field zeroed, so any flipped
byte is caught. Partitions (kinds numbered as GE's where GE has one):

- MODEL_DEF (0), JSON: the GM arena and its regions, stream and event counts, every
  buffer and view as a tensor (offset, bytes, shape, dtype, storage format), the kernels
  (name, kind, block_dim, argument types).
- WEIGHTS (1), raw bytes: the weights region of the arena, each weight at its offset.
- TASK_INFO (2), JSON: the tasks in issue order (launch, copy, record, wait), tensors by id.
- KERNELS (3, GE's TBE_KERNELS), JSON: the kernels' code. At the isa level, kernel code
  (`ge.runtime.kernel_code`): `{"format": "isa-code", "version", "level": "isa", "target",
  "bodies": [...], "kernels": {symbol: body index}}` -- each distinct kernel body once, as
  the simulator's decoded program, so nothing on the load path parses MLIR. The debug
  levels (graph, tile) keep `{"format": "mlir", "level", "text"}`: one module holding only
  the kernel symbols (the weights are in WEIGHTS), parsed once at load.
- METADATA (8, GE's MODEL_INOUT_INFO), JSON: inputs and outputs (names, shapes, dtypes),
  target, precision mode, dynamic-batch gears, memory and stream summary.

Gears (`model_from_gears`, `ge.gears`: dynamic batch, image size or dims): one static
variant per gear in one file. The tensors, kernels and tasks of all gears are pooled
(kernel symbols prefixed per gear: `b<batch>_`, `hw<h>_<w>_`, `d<dims>_`), every
gear's weights sit in one shared weights region (identical blobs stored once), and each
gear's inputs, outputs and workspace start right after it, so the arena is the weights
plus the largest gear's activations. METADATA's `gears` gives per gear its label
(`batch=4`, `224x224`, `dims=16,16`), kind and values, its batch (None unless a batch
gear), its task range `[first, end)`, its inputs and outputs (tensor ids) and its memory and
streams; the top-level inputs show the dims that differ between gears as -1.
- IR_TEXT (64, optional), UTF-8: the task-level module without its weight blobs (they are
  in WEIGHTS), for inspection only.
- GRAPH (65, dynamic-shape models only): the framework graph (ONNX bytes) that `ge.dynamic`
  compiles per input-shape signature at run time; METADATA's `dynamic` gives the inputs with
  their shape ranges, and the other partitions are empty (the kernels live in the cache).

Nothing on the load path parses MLIR: the tasks and tensors are plain JSON and the weights
a view of the file's bytes. A truncated, corrupted, foreign, newer or inconsistent file
raises a `ge.errors.ModelFormatError` subclass whose message names the file and the fault.
"""

from __future__ import annotations

import bisect
import gc
import hashlib
import io
import itertools
import json
import struct
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import BFloat16Type, IntegerAttr, MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from ge.errors import ModelFormatError

MAGIC = b"GEOMODEL"
FORMAT_VERSION = 2  # 2: kernel code in KERNELS (1: MLIR text)
HEADER_SIZE = 256
PARTITION_ALIGNMENT = 64
_HEADER = struct.Struct("<8sIIQII32s32s16s")
_ENTRY = struct.Struct("<IIQQ")
_CHECKSUM = slice(32, 64)  # where the checksum sits in the header


class PartitionKind(IntEnum):
    MODEL_DEF = 0
    WEIGHTS = 1
    TASK_INFO = 2
    KERNELS = 3
    METADATA = 8
    IR_TEXT = 64
    GRAPH = 65


REQUIRED = (PartitionKind.MODEL_DEF, PartitionKind.WEIGHTS, PartitionKind.TASK_INFO, PartitionKind.KERNELS,
            PartitionKind.METADATA)


class TruncatedModelError(ModelFormatError):
    """The file ends before the header or the length its header gives."""


class NotAModelError(ModelFormatError):
    """The file does not start with the model file magic."""


class UnsupportedVersionError(ModelFormatError):
    """A model file format version this ge cannot read."""


class CorruptModelError(ModelFormatError):
    """The checksum does not match, or a partition does not decode."""


class InconsistentModelError(ModelFormatError):
    """The partition table or the partitions contradict each other or the file's size."""


@dataclass
class Model:
    """The contents of a model file."""

    definition: dict[str, Any]
    tasks: list[dict[str, Any]]
    weights: bytes | memoryview
    kernels: dict[str, Any]
    metadata: dict[str, Any]
    ir_text: str | None = None
    graph: bytes | None = None  # the framework graph of a dynamic-shape model (GRAPH)
    version: int = FORMAT_VERSION
    path: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return self.definition["name"]


# --------------------------------------------------------------------------------------
# task.model -> Model
# --------------------------------------------------------------------------------------


def dtype_name(elem: Attribute) -> str:
    """The numpy name of an element type ("float32", "float16", "bool", ...)."""
    from ge.dialects.dtypes import numpy_dtype

    return "bfloat16" if isinstance(elem, BFloat16Type) else numpy_dtype(elem).name


def tensor_entry(t: Attribute, offset: int | None = None, kind: str | None = None) -> dict[str, Any]:
    """How the model definition describes a buffer of type `t` (at `offset` of the arena;
    `kind` is "input", "output", "weight", "buffer" or "view" for the task level's tensors)."""
    from ge.dialects import layout, task

    assert isinstance(t, TensorType | MemRefType)
    entry: dict[str, Any] = {} if offset is None else {"offset": offset}
    if kind is not None:
        entry["kind"] = kind
    entry.update(bytes=task.byte_size(t), shape=list(t.get_shape()), dtype=dtype_name(t.element_type))
    if (enc := layout.layout_of(t)) is not None:
        entry.update(format=enc.format.data, origin_format=enc.origin_format.data, origin_shape=list(enc.shape))
    return entry


def _int_attr(op: Operation, name: str) -> int | None:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _kernel_entry(op: Operation) -> dict[str, Any]:
    from ge.dialects import task

    signature = task.kernel_signature(op)
    assert signature is not None
    kind = op.attributes.get("ge.kind") or op.properties.get("kind")
    entry = {
        "name": op.properties["sym_name"].data,
        "kind": kind.data if isinstance(kind, StringAttr) else "",
        "block_dim": task.kernel_block_dim(op),
        "ins": [tensor_entry(t) for t in signature[0]],
        "outs": [tensor_entry(t) for t in signature[1]],
        "nodes": _label(op).split(",") if _label(op) else [],  # the ONNX nodes fused into the kernel
    }
    # the tile cost model's estimate and roofline bound, when the kernel still carries them
    for key, attr in (("modeled_cycles", "tile.cycles"), ("bound", "tile.bound")):
        if (value := _int_attr(op, attr)) is not None:
            entry[key] = value
    if isinstance(plan := op.attributes.get("tile.plan"), StringAttr):  # the tiles chosen (or tuned: ge-aoe)
        entry["plan"] = plan.data
    return entry


def _label(op: Operation) -> str:
    from xdsl.dialects.builtin import FusedLoc, NameLoc

    loc = op.location
    if isinstance(loc, FusedLoc):
        return ",".join(x.desc.data for x in loc.locations.data if isinstance(x, NameLoc))
    return loc.desc.data if isinstance(loc, NameLoc) else ""


def kernel_level(kernels: list[Operation]) -> str:
    """The level of a model's kernels: "graph" (func.func), "tile" or "isa"."""
    levels = {"graph" if k.name == "func.func" else k.dialect_name() for k in kernels}
    if len(levels) > 1:
        raise ModelFormatError(f"the kernels mix levels: {', '.join(sorted(levels))}")
    return levels.pop() if levels else "graph"


def _decl_kind(op: Operation) -> str:
    from ge.dialects import task

    kinds = {task.InputOp: "input", task.OutputOp: "output", task.WeightOp: "weight", task.BufferOp: "buffer"}
    return kinds.get(type(op), "view")


@dataclass
class _Parts:
    """One built module as model file pieces, before they are serialized."""

    model: Model
    kernel_ops: list[Operation]  # clones, renamed with the prefix (an isa module's own kernels without one)


def _parts(module: ModuleOp, prefix: str = "") -> _Parts:
    """The model file contents of a module lowered by `build-model`; kernel symbols get `prefix`."""
    from ge import targets
    from ge.dialects import blobs, task

    models = [op for op in module.ops if isinstance(op, task.ModelOp)]
    if len(models) != 1:
        raise ModelFormatError(f"expected one task.model in the module (run build-model), found {len(models)}")
    model = models[0]
    tensors: list[dict[str, Any]] = []
    ids: dict[SSAValue, int] = {}
    seen_names: dict[str, int] = {}
    for op in model.body.block.ops:
        if isinstance(op, (*task.DECL_OPS, task.ViewOp)):
            ids[op.results[0]] = len(tensors)
            tensors.append(tensor_entry(op.results[0].type, task.offset_of(op.results[0]), _decl_kind(op)))
            # the ONNX value's name (ge-run --dump); unnamed ones numbered as the IR printer does
            hint = op.results[0].name_hint
            if hint is None:
                tensors[-1]["name"] = str(seen_names.setdefault("", 0))
                seen_names[""] += 1
            else:
                n = seen_names[hint] = seen_names.get(hint, -1) + 1
                tensors[-1]["name"] = hint if n == 0 else f"{hint}_{n}"
    callees = {op.callee.string_value() for op in model.body.block.ops if isinstance(op, task.LaunchOp)}
    kernel_ops = [op for op in module.ops if op.properties.get("sym_name") is not None
                  and op.properties["sym_name"].data in callees]
    kernel_index = {k.properties["sym_name"].data: i for i, k in enumerate(kernel_ops)}
    w_offset, w_size = model.region_span("weights")
    weights = bytearray(w_size)
    region = np.frombuffer(weights, np.uint8)  # written in place: no bytes copy of each weight
    inputs, outputs, tasks = [], [], []
    for op in model.body.block.ops:
        if isinstance(op, task.WeightOp):
            data = np.ascontiguousarray(blobs.attr_array(op.value)).reshape(-1).view(np.uint8)
            start = op.offset.value.data - w_offset
            region[start:start + data.size] = data
        elif isinstance(op, task.InputOp | task.OutputOp):
            io = inputs if isinstance(op, task.InputOp) else outputs
            io.append({"index": op.index.value.data, "name": op.io_name.data, "tensor": ids[op.result]}
                      | {k: v for k, v in tensors[ids[op.result]].items() if k not in ("offset", "kind", "name")})
        elif isinstance(op, task.LaunchOp):
            tasks.append({"op": "launch", "kernel": kernel_index[op.callee.string_value()],
                          "stream": op.stream.value.data, "block_dim": op.block_dim.value.data,
                          "ins": [ids[v] for v in op.ins], "outs": [ids[v] for v in op.outs], "name": _label(op)}
                         | ({} if op.super_kernel is None else {"super_kernel": op.super_kernel.value.data}))
        elif isinstance(op, task.CopyOp):
            tasks.append({"op": "copy", "stream": op.stream.value.data, "src": ids[op.source], "dst": ids[op.dest]})
        elif isinstance(op, task.EventRecordOp | task.EventWaitOp):
            kind = "record" if isinstance(op, task.EventRecordOp) else "wait"
            tasks.append({"op": kind, "event": op.event.value.data, "stream": op.stream.value.data})
    inputs.sort(key=lambda d: d["index"])
    outputs.sort(key=lambda d: d["index"])
    regions = {r: list(model.region_span(r)) for r in task.REGIONS}
    clones = []
    share = not prefix and kernel_level(kernel_ops) == "isa"  # kernel code only reads them: no copies (compile time)
    for k in kernel_ops:
        if share:
            clones.append(k)
            continue
        clone = k.clone()
        clone.properties["sym_name"] = StringAttr(prefix + k.properties["sym_name"].data)
        clones.append(clone)
    definition = {
        "name": model.sym_name.data, "arena": model.arena.value.data, "alignment": model.alignment.value.data,
        "regions": regions, "streams": model.streams.value.data, "events": model.events.value.data,
        "tensors": tensors, "kernels": [_kernel_entry(k) for k in clones],
    }
    target = targets.target_of(module) or targets.load_target(targets.DEFAULT_TARGET)
    precision = module.attributes.get("ge.precision_mode")
    metadata = {
        "name": model.sym_name.data, "target": target.name, "soc_version": target.soc_version,
        "precision_mode": precision.data if isinstance(precision, StringAttr) else None,
        "kernel_level": kernel_level(kernel_ops),
        "inputs": inputs, "outputs": outputs, "gears": [],
        "memory": {"arena": definition["arena"], **{r: s for r, (_, s) in regions.items()}},
        "streams": definition["streams"], "events": definition["events"],
        "kernels": len(kernel_ops), "tasks": len(tasks),
    }
    return _Parts(Model(definition, tasks, memoryview(weights).toreadonly(), {}, metadata), clones)


def _kernels_partition(level: str, kernel_ops: list[Operation], target: str,
                       twins: Mapping[str, str] | None = None, ahead: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The KERNELS partition: kernel code (isa; `twins` and `ahead` as `kernel_code.partition`
    takes them), else the kernel symbols in one module that names the target."""
    from ge.ir import print_module

    if level == "isa":
        from ge import targets
        from ge.runtime import kernel_code

        return kernel_code.partition(kernel_ops, targets.load_target(target), twins, ahead)
    module = ModuleOp(kernel_ops)
    module.attributes["ge.target"] = StringAttr(target)
    return {"format": "mlir", "level": level, "text": print_module(module)}


def model_from_module(module: ModuleOp, gears: list[dict[str, Any]] | None = None, with_ir: bool = True,
                      twins: Mapping[str, str] | None = None, ahead: Mapping[str, Any] | None = None) -> Model:
    """The model file contents of a module lowered by `build-model` (one `task.model`);
    `twins`: which kernels are renamed copies of which, `ahead`: kernels encoded already
    (`kernel_code.partition`)."""
    parts = _parts(module)
    model = parts.model
    model.metadata["gears"] = list(gears or [])
    model.kernels = _kernels_partition(model.metadata["kernel_level"], parts.kernel_ops, model.metadata["target"], twins,
                                       ahead)
    model.ir_text = _ir_text(module) if with_ir else None
    return model


# --------------------------------------------------------------------------------------
# Gears: several static variants in one model
# --------------------------------------------------------------------------------------


class _SharedWeights:
    """The weights region shared by all gears: each distinct blob stored once, aligned."""

    def __init__(self, alignment: int):
        self.alignment = alignment
        self.data = bytearray()
        self.placed: dict[bytes, int] = {}

    def place(self, blob: bytes) -> int:
        key = hashlib.sha256(blob).digest() + len(blob).to_bytes(8, "little")
        if key not in self.placed:
            self.placed[key] = len(self.data)
            self.data += blob
            self.data += bytes(-len(self.data) % self.alignment)
        return self.placed[key]


def _relocate(model: Model, shared: _SharedWeights) -> list[int | None]:
    """New offsets of a gear's weight tensors (and views into them) in the shared weights
    region; None for the others, which move along with the gear's activations."""
    w_start, w_size = model.definition["regions"]["weights"]
    tensors = model.definition["tensors"]
    decls = sorted((t["offset"], t["bytes"]) for t in tensors if t.get("kind") == "weight")
    new_base = {}
    for offset, size in decls:
        new_base[offset] = shared.place(bytes(model.weights[offset - w_start: offset - w_start + size]))
    starts = [o for o, _ in decls]
    offsets = []
    for t in tensors:
        o = t["offset"]
        if w_start <= o < w_start + w_size and t["bytes"]:
            base = starts[bisect.bisect_right(starts, o) - 1]
            offsets.append(new_base[base] + o - base)
        else:
            offsets.append(None)
    return offsets


def model_from_gears(gears: list[tuple[Any, ModuleOp]], with_ir: bool = True) -> Model:
    """One model file holding a built module per gear (`gears`: (`ge.gears.Gear`, module))."""
    if not gears:
        raise ModelFormatError("a dynamic-gear model needs at least one gear")
    parts = [_parts(module, gear.prefix) for gear, module in gears]
    first = parts[0].model
    shared = _SharedWeights(first.definition["alignment"])
    relocations = [_relocate(p.model, shared) for p in parts]
    weights_size = len(shared.data)
    tensors: list[dict[str, Any]] = []
    kernels: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    gear_meta = []
    arena = weights_size
    for (gear, _), p, new_offsets in zip(gears, parts, relocations):
        d, m = p.model.definition, p.model.metadata
        t0, k0 = len(tensors), len(kernels)
        w_size = d["regions"]["weights"][1]
        for t, o in zip(d["tensors"], new_offsets):
            tensors.append(t | {"offset": o if o is not None else t["offset"] - w_size + weights_size})
        kernels += d["kernels"]
        first_task = len(tasks)
        g0 = 1 + max((t.get("super_kernel", -1) for t in tasks), default=-1)  # SuperKernels numbered across gears
        for task in p.model.tasks:
            task = dict(task)
            for key in ("ins", "outs"):
                if key in task:
                    task[key] = [i + t0 for i in task[key]]
            for key in ("src", "dst"):
                if key in task:
                    task[key] += t0
            if "kernel" in task:
                task["kernel"] += k0
            if "super_kernel" in task:
                task["super_kernel"] += g0
            tasks.append(task)
        regions = {r: [o - w_size + weights_size, s] for r, (o, s) in d["regions"].items() if r != "weights"}
        regions["weights"] = [0, weights_size]
        gear_arena = d["arena"] - w_size + weights_size
        arena = max(arena, gear_arena)
        gear_meta.append({
            "gear": gear.label, "kind": gear.kind, "values": list(gear.values), "batch": gear.batch,
            "tasks": [first_task, len(tasks)], "arena": gear_arena, "regions": regions,
            "streams": d["streams"], "events": d["events"],
            "inputs": [io | {"tensor": io["tensor"] + t0} for io in m["inputs"]],
            "outputs": [io | {"tensor": io["tensor"] + t0} for io in m["outputs"]],
        })
    largest = max(gear_meta, key=lambda g: g["arena"])
    definition = {
        "name": first.definition["name"], "arena": arena, "alignment": first.definition["alignment"],
        "regions": largest["regions"], "streams": max(g["streams"] for g in gear_meta),
        "events": max(g["events"] for g in gear_meta), "tensors": tensors, "kernels": kernels,
    }
    metadata = dict(first.metadata)
    metadata.update(
        inputs=_dynamic_ios([g["inputs"] for g in gear_meta]),
        outputs=_dynamic_ios([g["outputs"] for g in gear_meta]),
        gears=gear_meta, memory={"arena": arena, "weights": weights_size},
        streams=definition["streams"], events=definition["events"], kernels=len(kernels), tasks=len(tasks),
    )
    kernel_ops = [k for p in parts for k in p.kernel_ops]
    ir_text = None
    if with_ir:
        ir_text = "".join(f"// gear {g.label}\n{_ir_text(module)}" for g, module in gears)
    return Model(definition, tasks, bytes(shared.data), _kernels_partition(metadata["kernel_level"], kernel_ops, metadata["target"]),
                 metadata, ir_text)


def gear_label(gear: dict[str, Any]) -> str:
    """A METADATA gear's label (files written before image-size / dims gears have only a batch)."""
    return gear.get("gear") or f"batch={gear['batch']}"


def _dynamic_ios(per_gear: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The graph inputs/outputs as the user sees them: -1 where gears differ (the first
    gear's tensor ids, which the file checks need)."""
    out = []
    for ios in zip(*per_gear):
        shape = [d if len(set(dims)) == 1 else -1 for d, *dims in zip(ios[0]["shape"], *(io["shape"] for io in ios))]
        out.append(ios[0] | {"shape": shape})
    return out


def _ir_text(module: ModuleOp) -> str:
    """The module as text, its `dense_resource` handles without their blobs."""
    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    out.write("\n")
    return out.getvalue()


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------


def _json(value: Any) -> bytes:
    """Compact JSON. Without the encoder's circular-reference bookkeeping (an id per list and
    dict: a fifth of dumping a model's kernel code); the partitions are trees built here."""
    return json.dumps(value, separators=(",", ":"), check_circular=False).encode()


def _pad(n: int) -> int:
    return -n % PARTITION_ALIGNMENT


def _fixed(text: str, size: int) -> bytes:
    return text.encode()[:size].ljust(size, b"\0")


def save_model(path: str | Path, model: Model) -> int:
    """Write `model` to `path`; returns the file's size in bytes."""
    parts: list[tuple[PartitionKind, bytes | memoryview]] = [
        (PartitionKind.MODEL_DEF, _json(model.definition)),
        (PartitionKind.WEIGHTS, model.weights),
        (PartitionKind.TASK_INFO, _json(model.tasks)),
        (PartitionKind.KERNELS, _json(model.kernels)),
        (PartitionKind.METADATA, _json(model.metadata)),
    ]
    if model.ir_text is not None:
        parts.append((PartitionKind.IR_TEXT, model.ir_text.encode()))
    if model.graph is not None:
        parts.append((PartitionKind.GRAPH, model.graph))
    top = HEADER_SIZE + _ENTRY.size * len(parts)
    table, layout = [], []
    for kind, data in parts:
        top += _pad(top)
        table.append(_ENTRY.pack(kind, 0, top, len(data)))
        layout.append((top, data))
        top += len(data)
    header = bytearray(_HEADER.pack(
        MAGIC, FORMAT_VERSION, HEADER_SIZE, top, len(parts), 0, bytes(32),
        _fixed(model.definition["name"], 32), _fixed(str(model.metadata.get("target", "")), 16),
    ).ljust(HEADER_SIZE, b"\0"))
    digest = hashlib.sha256(header)
    chunks: list[bytes | memoryview] = [b"".join(table)]
    pos = HEADER_SIZE + len(chunks[0])
    for offset, data in layout:
        chunks += [bytes(offset - pos), data]
        pos = offset + len(data)
    for chunk in chunks:
        digest.update(chunk)
    header[_CHECKSUM] = digest.digest()
    with open(path, "wb") as f:
        f.write(header)
        for chunk in chunks:
            f.write(chunk)
    return top


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def load_model(path: str | Path) -> Model:
    """Read and check a model file (see the module docstring for what is checked)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ModelFormatError(f"{path}: cannot read the model file: {e.strerror or e}") from None
    model = read_model(data, str(path))
    model.path = str(path)
    return model


def read_model(data: bytes, name: str = "<bytes>") -> Model:
    """Decode model file bytes; `name` is how errors name the file."""
    with no_gc():  # the kernel code is many small objects, none of them cyclic garbage
        return _read_model(data, name)


@contextmanager
def no_gc() -> Iterator[None]:
    """Run without the cyclic garbage collector: decoding builds many small containers,
    and each collection would walk all of them again (it was 4/5 of the load time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_model(data: bytes, name: str) -> Model:
    view = memoryview(data)
    parts = _partitions(view, name)

    def decode(kind: PartitionKind) -> Any:
        try:
            return json.loads(bytes(parts[kind]))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptModelError(f"{name}: the {kind.name} partition is not valid JSON ({e})") from None

    model = Model(
        decode(PartitionKind.MODEL_DEF), decode(PartitionKind.TASK_INFO), parts[PartitionKind.WEIGHTS],
        decode(PartitionKind.KERNELS), decode(PartitionKind.METADATA),
    )
    if PartitionKind.IR_TEXT in parts:
        try:
            model.ir_text = bytes(parts[PartitionKind.IR_TEXT]).decode()
        except UnicodeDecodeError:
            raise CorruptModelError(f"{name}: the IR_TEXT partition is not UTF-8") from None
    if PartitionKind.GRAPH in parts:
        model.graph = bytes(parts[PartitionKind.GRAPH])
    _check_contents(model, name)
    from ge.runtime.model_checks import check_model  # signature and block_dim vs the target

    check_model(model, name)
    return model


def _partitions(view: memoryview, name: str) -> dict[PartitionKind, memoryview]:
    """The partitions of a file, after checking its header, checksum and table."""
    size = len(view)
    if size >= len(MAGIC) and bytes(view[: len(MAGIC)]) != MAGIC:
        raise NotAModelError(
            f"{name}: not a ge model file (it starts with {bytes(view[:len(MAGIC)])!r}, expected {MAGIC!r})"
        )
    if size < HEADER_SIZE:
        raise TruncatedModelError(f"{name}: truncated: {size} bytes, shorter than the {HEADER_SIZE}-byte header")
    _, version, header_size, total, count, _, checksum, _, _ = _HEADER.unpack_from(view)
    if version != FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"{name}: model file format version {version} is not supported (this ge reads version {FORMAT_VERSION})"
        )
    if header_size != HEADER_SIZE:
        raise InconsistentModelError(f"{name}: the header claims {header_size} bytes; version {version} has {HEADER_SIZE}")
    if size < total:
        raise TruncatedModelError(f"{name}: truncated: the header says {total} bytes, the file has {size}")
    if size > total:
        raise InconsistentModelError(f"{name}: {size - total} unexpected bytes after the {total} the header gives")
    digest = hashlib.sha256(view[:32])
    digest.update(bytes(32))
    digest.update(view[64:])
    if digest.digest() != checksum:
        raise CorruptModelError(f"{name}: corrupted: the checksum does not match the contents")
    table_end = HEADER_SIZE + count * _ENTRY.size
    if table_end > total:
        raise InconsistentModelError(f"{name}: a table of {count} partitions does not fit in {total} bytes")
    parts: dict[PartitionKind, memoryview] = {}
    spans = []
    for i in range(count):
        kind, _, offset, length = _ENTRY.unpack_from(view, HEADER_SIZE + i * _ENTRY.size)
        try:
            kind = PartitionKind(kind)
        except ValueError:
            raise InconsistentModelError(f"{name}: partition #{i} has unknown kind {kind}") from None
        if offset < table_end or offset + length > total:
            raise InconsistentModelError(
                f"{name}: partition #{i} ({kind.name}) at bytes [{offset}, {offset + length}) lies outside the "
                f"data area [{table_end}, {total})"
            )
        if kind in parts:
            raise InconsistentModelError(f"{name}: partition {kind.name} appears twice")
        spans.append((offset, offset + length, kind))
        parts[kind] = view[offset:offset + length]
    spans.sort(key=lambda s: (s[0], s[1]))
    for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
        if start_b < end_a:
            raise InconsistentModelError(f"{name}: partitions {a.name} and {b.name} overlap")
    missing = [k.name for k in REQUIRED if k not in parts]
    if missing:
        raise InconsistentModelError(f"{name}: missing partition(s) {', '.join(missing)}")
    return parts


def _check_contents(model: Model, name: str) -> None:
    """The partitions agree: tensors inside the arena, tasks naming existing kernels,
    tensors, streams and events, the weights partition the size of the weights region."""
    d = model.definition
    try:
        arena, tensors, kernels = int(d["arena"]), d["tensors"], d["kernels"]
        streams, events = int(d["streams"]), int(d["events"])
        w_size = d["regions"]["weights"][1]
        for i, t in enumerate(tensors):
            if not 0 <= t["offset"] <= t["offset"] + t["bytes"] <= arena:
                raise InconsistentModelError(
                    f"{name}: tensor #{i} at [{t['offset']}, {t['offset'] + t['bytes']}) lies outside the "
                    f"{arena}-byte arena"
                )
        if len(model.weights) != w_size:
            raise InconsistentModelError(
                f"{name}: the WEIGHTS partition holds {len(model.weights)} bytes, the weights region {w_size}"
            )

        def tensor(i: int, where: str) -> None:
            if not (isinstance(i, int) and 0 <= i < len(tensors)):
                raise InconsistentModelError(f"{name}: {where} names tensor #{i}; the model has {len(tensors)}")

        seen: set[Any] = set()  # SuperKernels met so far
        last: dict[int, Any] = {}  # stream -> super_kernel of its last task
        for j, t in enumerate(model.tasks):
            op, where = t["op"], f"task #{j} ({t['op']})"
            if not 0 <= t["stream"] < streams:
                raise InconsistentModelError(f"{name}: {where} runs on stream {t['stream']}; the model has {streams}")
            group = t.get("super_kernel") if op == "launch" else None
            if group is not None and group in seen and last.get(t["stream"]) != group:  # (met before, not as this stream's last task)
                raise InconsistentModelError(
                    f"{name}: {where} is a sub-kernel of super_kernel {group} but does not follow its other sub-kernels "
                    "on their stream")
            if group is not None:
                seen.add(group)
            last[t["stream"]] = group
            if op == "launch":
                if not 0 <= t["kernel"] < len(kernels):
                    raise InconsistentModelError(f"{name}: {where} names kernel #{t['kernel']}; the model has {len(kernels)}")
                for i in (*t["ins"], *t["outs"]):
                    tensor(i, where)
            elif op == "copy":
                tensor(t["src"], where)
                tensor(t["dst"], where)
            elif op in ("record", "wait"):
                if not 0 <= t["event"] < events:
                    raise InconsistentModelError(f"{name}: {where} uses event {t['event']}; the model has {events}")
            else:
                raise InconsistentModelError(f"{name}: {where}: unknown task kind '{op}'")
        for io in (*model.metadata["inputs"], *model.metadata["outputs"]):
            tensor(io["tensor"], f"graph input/output '{io['name']}'")
        for gear in model.metadata.get("gears", []):
            if "tasks" not in gear:
                continue
            first, end = gear["tasks"]
            if not 0 <= first <= end <= len(model.tasks):
                raise InconsistentModelError(
                    f"{name}: gear {gear_label(gear)} runs tasks [{first}, {end}); the model has {len(model.tasks)}"
                )
            for io in (*gear["inputs"], *gear["outputs"]):
                tensor(io["tensor"], f"gear {gear_label(gear)} input/output '{io['name']}'")
    except (KeyError, TypeError, ValueError) as e:
        raise InconsistentModelError(f"{name}: the model definition is malformed ({type(e).__name__}: {e})") from None
