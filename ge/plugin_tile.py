"""The tile-kernel API of custom operators: what `ge.register_op(..., kernel=build)` writes with.

A custom operator with a tile kernel imports as one opaque `graph.custom` op that becomes a
kernel of its own (ge/plugins.py). When the `tile` pass reaches that kernel it calls the
plugin's builder as `build(k, *inputs, *outputs, **attrs)`: `k` is a `TileKernel`, the
inputs and outputs are `Gm` tensors (shape, dtype) in global memory. The builder writes
the kernel in Ascend C's CopyIn / Compute / CopyOut style:

    def swiglu_kernel(k, x, y):                      # x: [rows, 2h], y: [rows, h]
        rows, h = y.shape
        step = k.rows_that_fit(bytes_per_row=12 * h * y.dtype.itemsize, total=rows)
        with k.tiles(rows, step) as r:              # tiles of rows, split over the cores
            a = k.load(x, [r, 0], [step, h])       # GM -> UB
            gate = k.load(x, [r, h], [step, h])
            out = k.compute(lambda b, a, g: b.mul(b.mul(a, b.sigmoid(a)), g), a, gate)
            k.store(out, y, [r, 0])                # UB -> GM

- `k.tiles(extent, step)` loops over [0, extent) by `step`, the iterations split into
  contiguous ranges over the AI cores (`block_dim`); it yields the offset. One per kernel,
  outermost; `k.loop(extent, step)` is a sequential loop inside it.
- `k.load(src, offsets, sizes)` copies a rectangle of a GM tensor into a new UB tile (an
  offset is an int or a loop's offset; elements past the edge of `src` in the last tile
  read as 0). `k.store(tile, dst, offsets)` copies a tile out (clipped at the edge).
- `k.compute(fn, *tiles)` runs `fn(b, *values)` on the tiles in one `tile.vector`: `b` is
  ge's `GraphBuilder` (`b.mul`, `b.sigmoid`, `b.reduce_mean(v, axes=[-1], keepdims=True)`,
  numbers as scalars), restricted to the primitives the vector unit has instruction
  sequences for (`ge.lowering.isa_vector.is_primitive`); it returns the result tile(s).
- `k.view(t, shape)` is a row-major reshape of a GM tensor; `k.attrs` the node's
  attributes; `k.ub_bytes`, `k.cores` the target's UB capacity and vector cores, and
  `k.rows_that_fit(bytes_per_row, total)` the rows whose tiles (counted by the caller, with
  double buffering and the compute's temporaries) fit in UB.

UB tiles made inside a loop are double buffered. ge checks what the builder wrote: a
rectangle that leaves its tensor, a tile stored into an input or with another rank, a
non-primitive compute op, UB overflow, and -- on first use per input types -- the kernel's
results on random inputs (tile interpreter) against the operator's numpy reference, with
every output element written. Each failure is a PluginError naming the plugin, the
operator and the ONNX node. The tile cycles recorded on the kernel are an estimate (the
sum of each copy's and compute's modeled cost, no overlap); the simulator measures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from ge.dialects import graph as g
from ge.dialects import tile as t
from ge.dialects.dtypes import numpy_dtype
from ge.lowering.index_builder import Index
from ge.lowering.tile_cost import Machine
from ge.lowering.tile_ir import KernelBuilder


class KernelMistake(Exception):
    """The builder used the API in a way ge cannot build (reported as a PluginError)."""


@dataclass(frozen=True)
class Gm:
    """A tensor in global memory: a kernel input or output, or a view of one."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    value: SSAValue
    output: bool


@dataclass(frozen=True)
class Tile:
    """A tile in UB (from `load` or `compute`)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    buf: SSAValue


class TileKernel:
    """The builder's handle on the kernel being written (see the module docstring)."""

    def __init__(self, b: KernelBuilder, mach: Machine, attrs: dict, inputs: list[Gm], outputs: list[Gm]):
        self._b, self._mach = b, mach
        self.attrs = dict(attrs)
        self.inputs, self.outputs = inputs, outputs
        self.ub_bytes: int = mach.target.memory.ub
        self.cores: int = mach.cores(cube=False)
        self.blocks = 1
        self.cycles = 0.0
        self._max: dict[SSAValue, int] = {}  # a loop offset -> its largest value
        self._outer: Operation | None = None  # the outermost loop (UB tiles are allocated before it)
        self._trips = [1]  # iterations (per core) of the enclosing loops
        self._parallel = False
        self._tiles = 0

    # -- facts -------------------------------------------------------------------------

    def rows_that_fit(self, bytes_per_row: int, total: int) -> int:
        """The most rows (at most `total`) whose `bytes_per_row` fit in UB; 1 at least (a row
        that does not fit is then UB overflow, reported by ge)."""
        return max(1, min(total, self.ub_bytes // max(1, bytes_per_row)))

    # -- loops ---------------------------------------------------------------------------

    @contextmanager
    def tiles(self, extent: int, step: int) -> Iterator[SSAValue]:
        """Offsets 0, step, ... < extent, the iterations split over the cores (outermost, once)."""
        if self._parallel:
            raise KernelMistake("k.tiles is the one parallel loop of a kernel; use k.loop inside it")
        if self._b.at is not self._b.top:
            raise KernelMistake("k.tiles must be the outermost loop")
        count = self._count(extent, step)
        self._parallel = True
        self.blocks = min(self.cores, count)
        lo, hi = self._b.block_range(count, self.blocks)
        with self._loop(lo, hi, count, step, math.ceil(count / self.blocks), "tile") as off:
            yield off

    @contextmanager
    def loop(self, extent: int, step: int) -> Iterator[SSAValue]:
        """Offsets 0, step, ... < extent, one after the other on each core."""
        count = self._count(extent, step)
        with self._loop(0, count, count, step, count, "i") as off:
            yield off

    def _count(self, extent: int, step: int) -> int:
        if not (isinstance(extent, int) and isinstance(step, int)) or extent < 1 or step < 1:
            raise KernelMistake(f"a loop needs an extent and a step >= 1 (ints), got {extent!r}, {step!r}")
        return -(-extent // step)

    @contextmanager
    def _loop(self, lo: Index, hi: Index, count: int, step: int, trips: int, name: str) -> Iterator[SSAValue]:
        b = self._b
        outermost = b.at is b.top
        with b.loop(lo, hi, name=name) as i:
            if outermost:
                self._outer = b.top.last_op
            off = b.mul(i, step, f"{name}_off")
            if isinstance(off, int):
                off = b.const(off)
            self._max[off] = (count - 1) * step
            self._trips.append(trips)
            try:
                yield off
            finally:
                self._trips.pop()

    # -- data --------------------------------------------------------------------------

    def view(self, tensor: Gm, shape: Sequence[int]) -> Gm:
        """`tensor` seen row-major with another shape (the same elements, no copy)."""
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != math.prod(tensor.shape):
            raise KernelMistake(f"a view of {tensor.name} {list(tensor.shape)} as {list(shape)} changes the element "
                                "count")
        return Gm(tensor.name, shape, tensor.dtype, self._b.view(tensor.value, shape, f"{tensor.name}_view"),
                  tensor.output)

    def load(self, src: Gm, offsets: Sequence[Index], sizes: Sequence[int]) -> Tile:
        """A new UB tile holding src[offsets : offsets + sizes] (0 past the edge of `src`)."""
        if not isinstance(src, Gm):
            raise KernelMistake(f"k.load reads a kernel input or output (a Gm tensor), got {src!r}")
        sizes = tuple(sizes)
        leaves = self._rect("k.load", src, offsets, sizes)
        buf = self._alloc(sizes, src, f"{src.name}_ub")
        self._b.copy(src.value, offsets, buf, None, sizes, pad=0.0 if leaves else None)
        self._cost(self._mach.dma("gm_to_ub", self._bytes(sizes, src.dtype), self.blocks))
        return Tile(sizes, src.dtype, buf)

    def store(self, tile: Tile, dst: Gm, offsets: Sequence[Index]) -> None:
        """dst[offsets : offsets + tile.shape] = tile (clipped at the edge of `dst`)."""
        if not isinstance(tile, Tile):
            raise KernelMistake(f"k.store writes a UB tile (from k.load or k.compute), got {tile!r}")
        if not isinstance(dst, Gm) or not dst.output:
            raise KernelMistake(f"k.store writes an output of the kernel, not {getattr(dst, 'name', dst)!r}")
        if tile.dtype != dst.dtype:
            raise KernelMistake(f"a {tile.dtype} tile stored into {dst.name} of {dst.dtype}")
        self._rect("k.store", dst, offsets, tile.shape)
        self._b.copy(tile.buf, [0] * len(tile.shape), dst.value, offsets, tile.shape)
        self._cost(self._mach.dma("ub_to_gm", self._bytes(tile.shape, tile.dtype), self.blocks))

    def _rect(self, what: str, tensor: Gm, offsets: Sequence[Index], sizes: Sequence[int]) -> bool:
        """Check a rectangle of `tensor`; True when the last tile of a loop may reach past it."""
        if len(offsets) != len(tensor.shape) or len(sizes) != len(tensor.shape):
            raise KernelMistake(f"{what}: {tensor.name} has rank {len(tensor.shape)} ({list(tensor.shape)}), got "
                                f"{len(offsets)} offsets and a {list(sizes)} rectangle")
        leaves = False
        for d, (o, n, dim) in enumerate(zip(offsets, sizes, tensor.shape)):
            if not isinstance(n, int | np.integer) or n < 1:
                raise KernelMistake(f"{what}: size {n!r} of dim {d} is not an int >= 1")
            if isinstance(o, int | np.integer):
                if o < 0 or o + n > dim:
                    raise KernelMistake(f"{what}: the rectangle [{o}, {o + n}) of dim {d} leaves {tensor.name}, whose "
                                        f"shape is {list(tensor.shape)}")
            elif o in self._max:
                if n > dim:
                    raise KernelMistake(f"{what}: a tile of {n} along dim {d} is larger than {tensor.name}'s "
                                        f"{dim} (shape {list(tensor.shape)})")
                leaves = leaves or self._max[o] + n > dim
            else:
                raise KernelMistake(f"{what}: offset {o!r} of dim {d} is neither an int nor a loop's offset")
        return leaves

    def _alloc(self, shape: Sequence[int], like: Gm | Tile, name: str) -> SSAValue:
        from ge.dialects.dtypes import element_type

        count = 2 if self._outer is not None and self._b.at is not self._b.top else 1
        op = t.AllocOp(t.buffer_type(shape, element_type(like.dtype), t.MemSpace.UB), count)
        op.result.name_hint = name
        if count == 2:
            assert self._outer is not None
            self._b.top.insert_op_before(op, self._outer)
        else:
            self._b.add(op)
        return op.result

    # -- compute -------------------------------------------------------------------------

    def compute(self, fn: Callable[..., SSAValue | Sequence[SSAValue]], *tiles: Tile) -> Tile | list[Tile]:
        """Run `fn(b, *values)` (graph ops built with `b`) on the tiles; the result tile(s)."""
        from ge.dialects.blobs import dense_attr
        from ge.dialects.dtypes import element_type
        from ge.lowering.isa_vector import is_primitive
        from ge.plugins import GraphBuilder

        if not tiles or not all(isinstance(x, Tile) for x in tiles):
            raise KernelMistake(f"k.compute takes UB tiles (from k.load or k.compute), got {tiles!r}")
        body = Block(arg_types=[TensorType(element_type(x.dtype), list(x.shape)) for x in tiles])

        def emit(cls, operands, props):
            op = cls.make(operands, props)
            body.add_op(op)
            return op

        def constant(arr):
            op = g.ConstantOp(dense_attr(arr, g.tensor(element_type(arr.dtype), arr.shape)))
            body.add_op(op)
            return op.output

        outs = fn(GraphBuilder(emit, constant), *body.args)
        outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        for v in outs:
            if not isinstance(v, SSAValue) or not isinstance(v.type, TensorType) or v.owner.parent is not body:
                raise KernelMistake(f"k.compute: the function must return values it computed with its builder, got "
                                    f"{v!r}")
        for op in body.ops:
            if not isinstance(op, g.ConstantOp) and not is_primitive(op):
                raise KernelMistake(f"k.compute: {op.name} has no vector instruction sequence (use the primitives "
                                    "of transforms/decompose.py)")
            if isinstance(op, g.ConstantOp) and math.prod(op.output.type.get_shape()) != 1:
                raise KernelMistake("k.compute: constants inside a compute must be scalars; load arrays as tiles")
        results = []
        for v in outs:
            shape = tuple(v.type.get_shape())
            dtype = np.dtype(numpy_dtype(v.type.element_type))
            results.append(Tile(shape, dtype, self._alloc(shape, Tile(shape, dtype, v), "out_ub")))
        body.add_op(t.YieldOp(*outs))
        self._b.add(t.VectorOp([x.buf for x in tiles], [r.buf for r in results], Region(body)))
        for op in list(body.ops)[:-1]:
            sizes = [self._bytes(v.type.get_shape(), numpy_dtype(v.type.element_type))
                     for v in (*op.operands, *op.results)]
            self._cost(self._mach.vector(max(sizes, default=0)))
        return results[0] if len(results) == 1 else results

    # -- cost ----------------------------------------------------------------------------

    @staticmethod
    def _bytes(shape: Sequence[int], dtype) -> int:
        return math.prod(shape) * np.dtype(dtype).itemsize

    def _cost(self, cycles: float) -> None:
        self.cycles += cycles * math.prod(self._trips)


# --------------------------------------------------------------------------------------
# What the `tile` pass calls (lowering/tile.py)
# --------------------------------------------------------------------------------------


def is_custom_group(block: Block) -> bool:
    """Is the kernel body one `graph.custom` op (a plugin's tile kernel builds it)?"""
    ops = list(block.ops)[:-1]
    return len(ops) == 1 and isinstance(ops[0], g.CustomOp)


@dataclass(frozen=True)
class BuiltKernel:
    what: str
    plan: str
    blocks: int
    cycles: float


def build_custom_kernel(b: KernelBuilder, block: Block, gm: dict[SSAValue, SSAValue], mach: Machine,
                        where: str) -> BuiltKernel:
    """Write the kernel of the `graph.custom` op of `block` into `b.kernel` with its plugin's
    builder, then check it (see the module docstring); `where` names the kernel and its node."""
    from xdsl.utils.exceptions import VerifyException

    from ge.errors import GeError
    from ge.plugins import PluginError, custom_attrs, custom_entry
    from ge.transforms.tile_capacity import TileCapacityError, check_kernel

    op = next(iter(block.ops))
    assert isinstance(op, g.CustomOp)
    entry = custom_entry(dict(op.properties))
    attrs = custom_attrs(dict(op.properties))
    label = f"{entry.label}, {where}"

    def gm_tensor(name: str, v: SSAValue, output: bool) -> Gm:
        if v not in gm:
            raise PluginError(f"{label}: output '{name}' is never used; a tile kernel needs every output used")
        return Gm(name, tuple(v.type.get_shape()), np.dtype(numpy_dtype(v.type.element_type)), gm[v], output)

    inputs = [gm_tensor(n, v, False) for n, v in zip(entry.inputs, op.operands)]
    outputs = [gm_tensor(n, v, True) for n, v in zip(entry.outputs, op.results)]
    k = TileKernel(b, mach, attrs, inputs, outputs)
    try:
        entry.kernel(k, *inputs, *outputs, **attrs)
    except KernelMistake as e:
        raise PluginError(f"{label}: the tile kernel: {e}") from None
    except GeError:
        raise
    except Exception as e:
        raise PluginError(f"{label}: the tile kernel builder raised {type(e).__name__}: {e}") from e
    for out in outputs:
        if not _written(out.value, b.kernel):
            raise PluginError(f"{label}: the tile kernel never stores output '{out.name}'")
    b.kernel.properties["block_dim"] = IntegerAttr(k.blocks, i64)
    try:
        b.kernel.verify()
        check_kernel(b.kernel, mach.target)
    except (VerifyException, TileCapacityError) as e:
        raise PluginError(f"{label}: the tile kernel does not build: {e}") from None
    _check_numerics(entry, attrs, b.kernel, inputs, outputs, label)
    shapes = " ".join("x".join(map(str, x.shape)) for x in inputs)
    return BuiltKernel(f"custom {entry.domain}::{entry.op_type} (plugin {entry.plugin}) on {shapes}",
                       f"plugin tile kernel on {k.blocks} cores (cycles: estimate, no overlap)", k.blocks, k.cycles)


def _written(arg: SSAValue, kernel: Operation) -> bool:
    """Does some copy of the kernel write `arg` (or a view of it)?"""
    targets = {arg}
    for op in kernel.walk():
        if isinstance(op, t.ViewOp) and op.source in targets:
            targets.add(op.result)
    return any(isinstance(op, t.CopyOp) and op.dest in targets for op in kernel.walk())


def _check_numerics(entry, attrs: dict, kernel: t.KernelOp, inputs: list[Gm], outputs: list[Gm], label: str) -> None:
    """On first use per input types and attributes: the kernel (tile interpreter, on every
    core) against the reference on random inputs; every float output element written."""
    from ge.dialects.dtypes import element_type
    from ge.plugins import PluginError
    from ge.runtime.tile_interp import KernelProgram

    types = [TensorType(element_type(x.dtype), list(x.shape)) for x in inputs]
    key = ("tile", tuple(types), tuple(sorted((k, repr(v)) for k, v in attrs.items())))
    if key in entry._checked or not all(x.dtype.kind == "f" for x in inputs):
        return
    arrays = entry.random_inputs(types)
    want = entry.reference_outputs(arrays, attrs)
    got = [np.full(x.shape, np.nan, dtype=x.dtype) for x in outputs]
    try:
        KernelProgram(kernel).run([*[a.copy() for a in arrays], *got])
    except Exception as e:
        raise PluginError(f"{label}: the tile kernel fails on random inputs: {type(e).__name__}: {e}") from None
    for out, g_, w in zip(outputs, got, want):
        unwritten = np.isnan(g_) & ~np.isnan(np.asarray(w, np.float64))
        if unwritten.any():
            first = [int(i) for i in np.argwhere(unwritten)[0]]
            raise PluginError(f"{label}: the tile kernel leaves {int(unwritten.sum())} of {g_.size} elements of "
                              f"output '{out.name}' {list(out.shape)} unwritten (the first at {first})")
    entry.compare("tile kernel", got, want, [x.shape for x in inputs], label)
    entry._checked.add(key)
