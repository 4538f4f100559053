"""Kernel code: an `isa.kernel` decoded once into the plain program the simulator runs.

Why: the model file stores kernels in this form (the KERNELS partition) so that loading and
running a model never parses MLIR (DESIGN.md §4); `ge.runtime.simulator` builds its closures
from it whether the kernel came from a file or from IR in memory, so both run the same code.

A body is JSON: everything an instruction needs, resolved at compile time --

    {"block_dim", "num_ins", "data_dependent",
     "args": [[dtype, elements, label], ...],     GM kernel arguments in order
     "buffers": [[region, byte base, bytes, dtype, label], ...],   what operands address
     "registers": [initial value, ...],           constants; every other SSA index value a slot
     "instrs": [[op name, location], ...],        instruction id -> how messages name it
     "code": [record, ...]}                       the kernel body in program order

A record is a dict with "op" (the op name) and, for an instruction, "id". Scalar records
name registers; `scf.for` nests its body; an instruction (`isa.InstructionOp`) gets the
generic fields -- "pipe", "opnds" (buffer operands by role: [buffer index, offset register
or null]) and, when not empty, "regs" (its other index operands by operand name: register
or list of registers), "results" (result registers by name), "props" (its properties as
JSON) -- plus what its ENCODERS entry adds from the target (vector rects, Cube fractals),
which may also drop the properties it replaces. In the model file (`partition`) a body is
stored without its names (labels, locations: `strip`): kernels with the same code share one
body, and each kernel symbol keeps its body's index and its own names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    NameLoc,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ge import targets
from ge.dialects import isa
from ge.dialects.dtypes import numpy_dtype
from ge.errors import GeError
from ge.runtime.index_arith import INT_BINARY

FORMAT = "isa-code"
VERSION = 2  # 2: bodies without names
LOCAL_IDS = {s: i for i, s in enumerate(isa.LOCAL_SPACES)}
GM_BASE = len(isa.LOCAL_SPACES)  # region id of kernel argument 0
INT_BINARY_NAMES = {cls.name: fn for cls, fn in INT_BINARY.items()}


class SimulatorError(GeError):
    """The simulator cannot run this kernel (an unplanned buffer, an op without semantics)."""


def _json(attr: Attribute) -> Any:
    """A property as JSON (ints, floats, strings, lists); None for what has no JSON form."""
    cls = type(attr)
    if cls is IntegerAttr:  # (the common classes by identity: each isinstance is an ABC check)
        return int(attr.value.data)
    if cls is DenseArrayBase and attr.elt_type == i64:
        return list(isa.ints(attr))
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, DenseArrayBase):
        if attr.elt_type == i64:  # (unpacked directly: xDSL's get_values was a tenth of encoding)
            return list(isa.ints(attr))
        return list(attr.get_values())
    if isinstance(attr, ArrayAttr):
        return [_json(a) for a in attr.data]
    data = getattr(attr, "data", None)
    return data if isinstance(data, str | int | float) else None


def _loc(op: Operation) -> str:
    loc = op.location
    return f' loc("{loc.desc.data}")' if isinstance(loc, NameLoc) else ""


class Encoder:
    """One kernel being encoded: registers, buffers and instruction ids."""

    def __init__(self, kernel: isa.KernelOp, target: targets.Target):
        self.kernel, self.target = kernel, target
        self.name = kernel.sym_name.data
        self.reg_of: dict[int, int] = {}  # id(value) -> register (an SSA value's own hash is a Python call)
        self.registers: list[int] = []
        self.instrs: list[list[str]] = []
        self.buffers: dict[SSAValue, tuple[int, int, int, str]] = {}  # value -> region, base, bytes, label
        self.table: dict[tuple, int] = {}  # (region, base, bytes, dtype, label) -> index in "buffers"
        self.keys: dict[SSAValue, tuple] = {}  # buffer value -> its "buffers" entry (found once per value)
        self.labelled: dict[SSAValue, tuple[str, str]] = {}  # buffer value -> (name without hint, label suffix)
        self.table_values: list[SSAValue] = []  # the value each "buffers" entry's label names
        self.instr_ops: list[Operation] = []  # the op of each instruction id
        self.shared_labels = False
        self.kinds: dict[tuple[type, str], str] = {}  # (op class, name) -> `kind`
        self.layouts: dict[tuple[type, tuple[str, ...]], tuple] = {}  # (instruction class, buffers) -> `_layout`
        self.dtype_names: dict[Attribute, str] = {}  # element type -> its numpy name (`dtype.name` is slow)
        self.data_dependent = bool(getattr(type(kernel), "DATA_DEPENDENT", False))  # any op's class says so
        self.args = []
        for i, a in enumerate(kernel.body.block.args):
            t = a.type
            assert isinstance(t, MemRefType)
            self.labelled[a] = (f"arg{i}", f" (gm argument #{i})")
            self.buffers[a] = (GM_BASE + i, 0, isa.nbytes(t), f"%{a.name_hint or f'arg{i}'} (gm argument #{i})")
            self.args.append([self.dtype_name(t.element_type), isa.num_elements(t), a.name_hint or f"arg{i}"])

    def dtype_name(self, elem: Attribute) -> str:
        name = self.dtype_names.get(elem)
        if name is None:
            name = self.dtype_names[elem] = numpy_dtype(elem).name
        return name

    def fail(self, op: Operation, message: str) -> SimulatorError:
        return SimulatorError(f"kernel @{self.name}: {op.name}: {message}")

    def reg(self, v: SSAValue) -> int:
        r = self.reg_of.get(id(v))
        if r is None:
            r = self.reg_of[id(v)] = len(self.registers)
            self.registers.append(0)
        return r

    def instr(self, op: Operation) -> int:
        self.instrs.append([op.name, _loc(op)])
        self.instr_ops.append(op)
        return len(self.instrs) - 1

    def operand(self, op: isa.InstructionOp, role: str) -> list:
        v = op.buffer(role)
        key = self.keys.get(v)
        if key is None:
            where = self.buffers.get(v)
            if where is None:
                raise self.fail(op, f"{role} is not an isa.buffer or a kernel argument")
            region, base, size, label = where
            t = v.type
            assert isinstance(t, MemRefType)
            key = self.keys[v] = (region, base, size, self.dtype_name(t.element_type), label)
        off = op.offset_of(role)
        index = self.table.setdefault(key, len(self.table))
        if index == len(self.table_values):
            self.table_values.append(v)
        elif self.table_values[index] is not v:
            self.shared_labels = True  # two values, one entry: a twin with other names may not share it
        return [index, None if off is None else self.reg(off)]

    def block(self, block: Block) -> list[dict]:
        out = []
        op = block._first_op  # (the block's links directly: xDSL's op iterator is two Python calls per op)
        while op is not None:
            rec = self.op(op)
            if rec is not None:
                out.append(rec)
            op = op._next_op
        return out

    def kind(self, op: Operation) -> str:
        """Which record `op` makes, found once per op class and name (the isinstance tests
        against xDSL's abstract op classes were a quarter of encoding)."""
        key = (type(op), op.name)
        found = self.kinds.get(key)
        if found is None:
            found = self.kinds[key] = next((k for k, test in _KINDS if test(op)), "unknown")
            self.data_dependent = self.data_dependent or bool(getattr(type(op), "DATA_DEPENDENT", False))
        return found

    def op(self, op: Operation) -> dict | None:
        kind = self.kind(op)
        if kind == "instruction":
            return self.instruction(op)
        if kind == "yield":
            if op.operands:
                raise self.fail(op, "loop-carried values are not supported")
            return None
        if kind == "constant":
            if not isinstance(op.value, IntegerAttr):
                raise self.fail(op, "only integer / index constants run on the scalar unit")
            self.registers[self.reg(op.result)] = int(op.value.value.data)
            return None
        if kind == "binary":
            return {"op": op.name, "args": [self.reg(v) for v in op.operands], "result": self.reg(op.results[0])}
        if kind == "cmpi":
            return {"op": op.name, "predicate": op.predicate.value.data, "args": [self.reg(op.lhs), self.reg(op.rhs)],
                    "result": self.reg(op.result)}
        if kind == "select":
            return {"op": op.name, "args": [self.reg(v) for v in op.operands], "result": self.reg(op.results[0])}
        if kind == "for":
            if op.iter_args:
                raise self.fail(op, "loop-carried values are not supported")
            hint = op.attributes.get(isa.MAX_TRIPS_ATTR)
            bound = hint.value.data if isinstance(hint, IntegerAttr) else None
            rec = {"op": op.name, "args": [self.reg(op.lb), self.reg(op.ub), self.reg(op.step)],
                   "iv": self.reg(op.body.block.args[0]), "max_trips": bound,
                   "id": self.instr(op) if bound is not None else -1}
            rec["body"] = self.block(op.body.block)
            return rec
        if kind == "block_idx":
            return {"op": op.name, "result": self.reg(op.result)}
        if kind == "buffer":
            self._bind(op)
            return None
        if kind == "barrier":
            return {"op": op.name, "id": self.instr(op), "pipe": op.pipe.value}
        if kind == "flag":
            src, dst, event = op.key
            return {"op": op.name, "id": self.instr(op), "src": src.value, "dst": dst.value, "event": event}
        raise self.fail(op, "the simulator has no semantics for this op")

    def instruction(self, op: isa.InstructionOp) -> dict:
        """The generic record of an instruction, then its ENCODERS entry's additions."""
        rec: dict[str, Any] = {"op": op.name, "id": self.instr(op), "pipe": op.PIPE.value,
                               "opnds": {r: self.operand(op, r) for r in op.BUFFERS}}
        buffers = op.BUFFERS  # per instance on FixpipeOp (its scale / bias are optional)
        layout = self.layouts.get((type(op), buffers))
        if layout is None:
            layout = self.layouts[type(op), buffers] = _layout(type(op), buffers)
        operands, result_names, extra = layout
        regs: dict[str, Any] = {}
        for name in operands:
            v = getattr(op, name)
            if isinstance(v, SSAValue):
                regs[name] = None if isinstance(v.type, MemRefType) else self.reg(v)
            elif v is not None:
                regs[name] = [self.reg(x) for x in v]
        results = {name: self.reg(getattr(op, name)) for name in result_names}
        props = {k: _json(v) for k, v in op.properties.items() if k != "operandSegmentSizes"}
        if extra is not None:
            added = extra(self, op)
            props = {k: v for k, v in props.items() if k not in added.pop("replaces", ())}
            rec.update(added)
        for key, value in (("regs", regs), ("results", results), ("props", props)):
            if value:
                rec[key] = value
        return rec

    def _bind(self, op: isa.BufferOp) -> None:
        if op.byte_offset is None:
            raise self.fail(op, "the buffer has no offset: run plan-local-memory first")
        region = LOCAL_IDS[op.space]
        size = isa.nbytes(op.type)
        for k, v in enumerate(op.slots):
            base = op.slot_offset(k, self.target)
            slot = f" slot {k}" if len(op.slots) > 1 else ""
            self.labelled[v] = ("buf", f"{slot} ({op.space.value} @ {base:#x})")
            self.buffers[v] = (region, base, size, f"%{v.name_hint or 'buf'}{slot} ({op.space.value} @ {base:#x})")


def _layout(cls: type[isa.InstructionOp], buffers: tuple[str, ...]) -> tuple[list[str], list[str], Callable | None]:
    """What `Encoder.instruction` reads of an instruction class with these buffer operands,
    found once per (class, buffers) and kernel: its operands other than the buffers and their
    offsets (registers), its results, and its ENCODERS entry."""
    definition = cls.get_irdl_definition()
    offsets = {f"{r}_offset" for r in buffers}
    operands = [name for name, _ in definition.operands if name not in buffers and name not in offsets]
    extra = ENCODERS.get(cls) or next((f for c, f in ENCODERS.items() if issubclass(cls, c)), None)
    return operands, [name for name, _ in definition.results], extra


# The record each op makes, tested in this order (`Encoder.kind`).
_KINDS: tuple[tuple[str, Callable[[Operation], bool]], ...] = (
    ("yield", lambda op: isinstance(op, scf.YieldOp)),
    ("constant", lambda op: isinstance(op, arith.ConstantOp)),
    ("binary", lambda op: op.name in INT_BINARY_NAMES),
    ("cmpi", lambda op: isinstance(op, arith.CmpiOp)),
    ("select", lambda op: isinstance(op, arith.SelectOp | arith.IndexCastOp)),
    ("for", lambda op: isinstance(op, scf.ForOp)),
    ("block_idx", lambda op: isinstance(op, isa.BlockIdxOp)),
    ("buffer", lambda op: isinstance(op, isa.BufferOp)),
    ("barrier", lambda op: isinstance(op, isa.PipeBarrierOp)),
    ("flag", lambda op: isinstance(op, isa.SetFlagOp | isa.WaitFlagOp)),
    ("instruction", lambda op: isinstance(op, isa.InstructionOp)),
)


# -- what an instruction needs beyond the generic record (computed with the target) -----------


def _move(enc: Encoder, op: isa._MoveOp) -> dict:
    return {"sizes": list(op.static_sizes), "src_strides": list(op.static_src_strides),
            "dst_strides": list(op.static_dst_strides), "replaces": ("sizes", "src_strides", "dst_strides")}


def _cube(enc: Encoder, op: isa.MmadOp | isa.Img2colOp) -> dict:
    elem = (op.a if isinstance(op, isa.MmadOp) else op.src).type.element_type
    out = {"fractal": list(isa.cube_fractal(enc.target, elem))}
    if isinstance(op, isa.MmadOp):
        out["mkn"] = list(op.mkn)
    return out


def _vector(enc: Encoder, op: isa._VectorOp) -> dict:
    """Repeats and each operand's rectangles (what the mask, repeat and strides address)."""
    return {"repeats": op.repeats, "rects": {r: [[rect.base, list(rect.shape), list(rect.strides)] for rect in rects]
                                             for r, rects in op.rects(enc.target).items()},
            "replaces": ("repeat", "mask", "blk_stride", "rep_stride")}


ENCODERS: dict[type, Callable[[Encoder, Any], dict]] = {
    isa._MoveOp: _move, isa.MmadOp: _cube, isa.Img2colOp: _cube, isa._VectorOp: _vector,
}


def encode(kernel: isa.KernelOp, target: targets.Target) -> dict[str, Any]:
    """The body of `kernel` (without its name) as JSON-able data."""
    return _encode(kernel, target)[0]


def _encode(kernel: isa.KernelOp, target: targets.Target) -> tuple[dict[str, Any], Encoder]:
    enc = Encoder(kernel, target)
    code = enc.block(kernel.body.block)
    return {"block_dim": kernel.block_dim.value.data, "num_ins": kernel.num_ins.value.data,
            "buffers": [list(key) for key in enc.table],
            "data_dependent": enc.data_dependent,
            "args": enc.args, "registers": enc.registers, "instrs": enc.instrs, "code": code}, enc


def body_key(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), check_circular=False)  # (a tree: model_file._json)
    return hashlib.sha256(text.encode()).hexdigest()


def strip(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A body without what only names things (argument and buffer labels, locations): the
    code kernels of the same shape share whatever their tensors and ONNX nodes are called."""
    code = dict(body, args=[a[:2] for a in body["args"]], buffers=[b[:4] for b in body["buffers"]],
                instrs=[name for name, _ in body["instrs"]])
    names = {"args": [a[2] for a in body["args"]], "buffers": [b[4] for b in body["buffers"]],
             "locs": [loc for _, loc in body["instrs"]]}
    return code, names


def label(code: dict[str, Any], names: dict[str, list[str]]) -> dict[str, Any]:
    """The body `strip` took apart."""
    return dict(code, args=[[*a, n] for a, n in zip(code["args"], names["args"])],
                buffers=[[*b, n] for b, n in zip(code["buffers"], names["buffers"])],
                instrs=[[i, loc] for i, loc in zip(code["instrs"], names["locs"])])


@dataclass
class Encoded:
    """A kernel's encoding as plain data (`encode_kernels`, which may run in a forked copy of
    the compile): its code and names (`strip`) and where its labelled values and
    instructions stand (`_Places`), for the twins that take its code with their own names."""

    code: dict[str, Any]
    names: dict[str, list[str]]
    places: _Places


def encode_kernels(kernels: Sequence[isa.KernelOp], target: targets.Target) -> dict[str, Encoded]:
    """Each kernel's `Encoded`, by symbol (what `partition` takes as `ahead`)."""
    out = {}
    for k in kernels:
        body, enc = _encode(k, target)
        code, names = strip(body)
        out[k.sym_name.data] = Encoded(code, names, _Places(k, enc))
    return out


@dataclass
class _First:
    """The first kernel of a structure in a partition: its encoder (None when encoded
    ahead), its body's index, and where its names are (made once it has a twin)."""

    kernel: isa.KernelOp
    enc: Encoder | None
    at: int
    places: _Places | None


def partition(kernels: Sequence[isa.KernelOp], target: targets.Target,
              twins: Mapping[str, str] | None = None, ahead: Mapping[str, Encoded] | None = None) -> dict[str, Any]:
    """The KERNELS partition of an isa-level model: each distinct code once ("bodies"), and
    per kernel symbol its body's index and its own names (`strip`). `twins` (from
    `ge.compile`'s kernel dedup: a kernel symbol -> the earlier kernel it is a renamed copy
    of) spares computing `structure_key`s: a kernel not in it is encoded, a twin takes its
    original's encoding (the same partition: kernels of equal code share a body either way).
    `ahead`: kernels encoded already (`encode_kernels`, as they are now), by symbol."""
    from ge.lowering.kernel_dedup import structure_key

    bodies = _Bodies()
    refs: dict[str, dict] = {}
    encoded: dict[Any, _First] = {}  # structure -> its first kernel
    for k in kernels:
        shape = structure_key(k) if twins is None else twins.get(k.sym_name.data, k.sym_name.data)
        first = encoded.get(shape)
        if first is not None:  # the same code as a kernel encoded already: only its names are new
            if first.places is None:
                first.places = _Places(first.kernel, first.enc)
            names = names_like(first.places, k)
            if names is not None:
                refs[k.sym_name.data] = {"body": first.at, "names": names}
                continue
        done = ahead.get(k.sym_name.data) if ahead else None
        if done is None:
            body, enc = _encode(k, target)
            code, names = strip(body)
            places = None
        else:
            code, names, enc, places = done.code, done.names, None, done.places
        at = bodies.index(code)
        encoded.setdefault(shape, _First(k, enc, at, places))
        refs[k.sym_name.data] = {"body": at, "names": names}
    return {"format": FORMAT, "version": VERSION, "level": "isa", "target": target.name, "bodies": bodies.codes,
            "kernels": refs}


class _Bodies:
    """The distinct codes of a partition in order: a code is stored unless one with the same
    `body_key` is. Why not a key per code: `body_key` (JSON with sorted keys) was a third
    of `partition`; codes are keyed only when another code has the same instructions,
    registers, block_dim and num_ins (a necessary condition for the same key)."""

    def __init__(self):
        self.codes: list[dict[str, Any]] = []
        self.alike: dict[tuple, list[list]] = {}  # signature -> [[body_key or None, index], ...]

    def index(self, code: dict[str, Any]) -> int:
        """Where `code` is stored (the first stored code with its `body_key`, else appended)."""
        sig = (code["block_dim"], code["num_ins"], len(code["registers"]), tuple(code["instrs"]))
        members = self.alike.setdefault(sig, [])
        key = body_key(code) if members else None
        for member in members:
            if member[0] is None:
                member[0] = body_key(self.codes[member[1]])
            if member[0] == key:
                return member[1]
        members.append([key, len(self.codes)])
        self.codes.append(code)
        return len(self.codes) - 1


def _flat(kernel: Operation) -> tuple[list[SSAValue], list[Operation]]:
    """The values defined in `kernel` (in `kernel_dedup.defined_values` order) and its ops
    (in `walk` order), in one pass (the twins of a model are many: two generator walks each
    were most of `names_like`)."""
    values: list[SSAValue] = []
    ops: list[Operation] = []

    def visit(op: Operation) -> None:
        ops.append(op)
        for r in op.regions:
            for b in r.blocks:
                values.extend(b.args)
                o = b._first_op  # (as `Encoder.block`)
                while o is not None:
                    visit(o)
                    values.extend(o.results)
                    o = o._next_op

    visit(kernel)
    return values, ops


class _Places:
    """Where, in `_flat`'s order, a first kernel's labelled values and instructions stand:
    a twin's are at the same places. With its buffer table's keys and whether two values
    share an entry (`names_like`), it is plain data (it crosses a pipe: `encode_kernels`)."""

    def __init__(self, first: isa.KernelOp, enc: Encoder):
        values, ops = _flat(first)
        value_at = {v: i for i, v in enumerate(values)}
        op_at = {op: i for i, op in enumerate(ops)}
        self.sizes = (len(values), len(ops))
        self.values = [value_at[v] for v in enc.table_values]
        self.defaults = [enc.labelled[v] for v in enc.table_values]
        self.instrs = [op_at[op] for op in enc.instr_ops]
        self.table = list(enc.table)
        self.shared_labels = enc.shared_labels


def names_like(places: _Places, twin: isa.KernelOp) -> dict[str, list[str]] | None:
    """`strip`'s names of `twin`, a kernel with the structure of the first kernel that
    `places` describes: its values and ops stand where the first's do, so each label and
    location is the first's with the twin's own name hint and location. None when the
    buffer table could differ (an entry shared by two values of the first, or two entries
    whose twin labels coincide): encode it instead."""
    if places.shared_labels:
        return None
    values, ops = _flat(twin)
    if (len(values), len(ops)) != places.sizes:
        raise ValueError(f"kernel @{twin.sym_name.data} does not have its twin's structure")
    labels = [f"%{values[i].name_hint or default}{suffix}" for i, (default, suffix) in zip(places.values, places.defaults)]
    keys = {(*key[:4], new) for key, new in zip(places.table, labels)}
    if len(keys) != len(labels):
        return None
    return {"args": [a.name_hint or f"arg{i}" for i, a in enumerate(twin.body.block.args)],
            "buffers": labels, "locs": [_loc(ops[i]) for i in places.instrs]}
