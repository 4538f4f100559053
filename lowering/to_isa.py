"""`to-isa`: tile kernels -> isa kernels (DESIGN.md §2, the lowering from [tile] to [isa]).

Every `tile.kernel` becomes an `isa.kernel` with the same GM arguments; every `tile.launch`
becomes an `isa.launch`. Inside a kernel:

- `tile.alloc` in a local memory -> a flat `isa.buffer` (one slot per reserved copy), not
  yet placed (`plan-local-memory` gives offsets). L1 and UB keep the tile's row-major
  order; L0A holds its matrix as ZZ fractals, L0B as ZN, L0C as NZ (the orders
  `isa.mmad` reads and writes).
- `tile.copy` -> the move instruction of its data path (GM->L1 / GM->UB on MTE2, L1->L0A /
  L1->L0B / L1->UB on MTE1, UB->GM / UB->L1 on MTE3, UB->UB on V; L0C->* on FIX where
  the target has FixPipe, else only L0C->UB, by `copy_l0c_to_ub` on V: `moves_of`). A
  copy's rectangle becomes element strides on both sides: the permutation goes into the
  destination strides, a fractal buffer's dims are split into their (outer, inner) fractal
  digits. Reads past the source (conv pads, edge tiles) and writes past a GM destination
  (edge tiles) become the move's `window`, computed from the dynamic offsets.
- The int8 epilogue on a FixPipe target: an L0C -> UB read-out of an i32 accumulator whose
  only reader is a `tile.vector` that starts dequantize (f32 cast, multiply by a constant
  scale: an immediate or a per-channel UB vector) [, f16 cast] [, ReLU] [, quantize to
  int8] becomes one `isa.fixpipe` in a quant mode (DEQF16 / VDEQF16 / REQ8 / VREQ8,
  `FixQuant`), emitted where the vector op runs (after the scale's copy-in); the vector
  op lowers only what is left (a residual add in f16, ...), or nothing when FixPipe
  writes its result buffer directly.
- The f16 epilogue on a target without FixPipe (the 910, `L0cBias`): an f32 accumulator
  whose epilogue starts `+ per-channel bias` then `cast -> f16` [, ReLU] gets the bias in
  L0C before its mmads (`isa.broadcast_ub_to_l0c`, mmad init false; armed one L0C rotation
  ahead in long loops) and a converting read-out (`copy_l0c_to_ub` f32 -> f16 [+ ReLU]); the
  vector op lowers only what is left. A bias read from a GM argument is copied in and cast
  once, at the kernel's start, where the tiles' broadcasts read it (`resident_bias_plans`).
- `tile.img2col` -> `isa.img2col` (Load3D, writes ZZ), `tile.mmad` -> `isa.mmad`.
- `tile.load_index` -> `isa.load_scalar` (S pipe); its kernel gets `isa.data_dependent`.
- `tile.vector` -> Vector instructions (lowering/isa_vector.py), `tile.vpool` ->
  lowering/isa_pool.py.
- `scf.for` loops stay loops. A loop in which a multi-buffered buffer lives (the innermost
  loop containing all its uses) is emitted by `IsaBuilder.pipelined`: the body once per
  slot, so that `insert-sync` gives each slot its own flags and the loads of one tile
  overlap the compute on the other (double buffering). A Vector loop split over the
  cores whose shares are not whole rounds of slots runs its leftover tile in the last
  round instead (`pipelined(..., guarded=True)`: the later slots each in a loop of at most
  one trip), so that it does not wait for the drain after the rounds; so does a Cube tile
  loop whose every core takes less than one round (`SHORT_ROUNDS`: one tile per core at
  batch 1). A buffer reserved
  twice that rotates in no loop gets one copy. `to-isa{double-buffer=false}` gives every buffer one
  copy and emits plain loops.

No synchronization is emitted here: `insert-sync` derives it from the buffers each
instruction touches. The usual pipeline is `to-isa,plan-local-memory,insert-sync`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import graph as g
from ge.dialects import isa
from ge.dialects import tile as t
from ge.dialects.interning import int_attr, scope_cached
from ge.errors import GeError
from ge.lowering.index_builder import Index, create_op
from ge.lowering.isa_builder import IsaBuilder, buffer_type, move_op
from ge.transforms.tile_capacity import describe_kernel


class IsaLoweringError(PassFailedException, GeError):
    """A tile kernel uses something the isa level cannot express; names kernel and op."""


Atom = tuple[int, int]  # (count, element stride): one mixed-radix digit of a buffer's index


# --------------------------------------------------------------------------------------
# Buffer layouts: logical (tile) index -> physical element offset
# --------------------------------------------------------------------------------------


def _merge(atoms: Sequence[Atom]) -> list[Atom]:
    """Adjacent digits that address consecutive elements become one; size-1 digits vanish."""
    out: list[Atom] = []
    for n, s in atoms:
        if n == 1:
            continue
        if out and out[-1][1] == n * s:
            out[-1] = (out[-1][0] * n, s)
        else:
            out.append((n, s))
    return out


def row_major_atoms(shape: Sequence[int]) -> list[Atom]:
    return [(math.prod(shape), 1)] if math.prod(shape) > 1 else []


def fractal_atoms(space: t.MemSpace, shape: Sequence[int], frac: tuple[int, int, int]) -> list[Atom]:
    """The digits of an L0 matrix in its fractal order, in logical (row, column) order."""
    m0, k0, n0 = frac
    rows, cols = shape
    if space == t.MemSpace.L0A:  # [m, k] as ZZ: [m/m0, k/k0, m0, k0]
        r0, c0 = m0, k0
        r_outer, r_inner, c_outer, c_inner = cols * r0, c0, r0 * c0, 1
    elif space == t.MemSpace.L0B:  # [k, n] as ZN: [k/k0, n/n0, n0, k0]
        r0, c0 = k0, n0
        r_outer, r_inner, c_outer, c_inner = cols * r0, 1, r0 * c0, r0
    else:  # L0C [m, n] as NZ: [n/n0, m/m0, m0, n0]
        r0, c0 = m0, n0
        r_outer, r_inner, c_outer, c_inner = r0 * c0, c0, rows * c0, 1
    return [(rows // r0, r_outer), (r0, r_inner), (cols // c0, c_outer), (c0, c_inner)]


def split_dims(atoms: Sequence[Atom], shape: Sequence[int]) -> list[list[Atom]] | None:
    """The digits of each dim of `shape` (a view of the buffer), or None when a dim does
    not cover whole digits in a way strides can express."""
    rest = [a for a in atoms if a[0] > 1]
    out: list[list[Atom]] = []
    for size in reversed(shape):
        mine: list[Atom] = []
        need = size
        while need > 1:
            if not rest:
                return None
            n, s = rest.pop()
            if n <= need:
                if need % n:
                    return None
                mine.insert(0, (n, s))
                need //= n
            else:
                if n % need:
                    return None
                mine.insert(0, (need, s))
                rest.append((n // need, s * need))
                need = 1
        out.insert(0, mine)
    return out if not rest else None


def refine(a: Sequence[Atom], b: Sequence[int]) -> list[Atom] | None:
    """`a`'s digits split so that their counts are the radices `b` (outer to inner)."""
    out: list[Atom] = []
    rest = [x for x in a if x[0] > 1]
    for radix in reversed(b):
        need = radix
        mine: list[Atom] = []
        while need > 1:
            if not rest:
                return None
            n, s = rest.pop()
            if n <= need and need % n == 0:
                mine.insert(0, (n, s))
                need //= n
            elif n > need and n % need == 0:
                mine.insert(0, (need, s))
                rest.append((n // need, s * need))
                need = 1
            else:
                return None
        if len(mine) > 1:
            # one radix made of several digits only works if they are consecutive
            merged = _merge(mine)
            if len(merged) > 1:
                return None
            mine = merged
        out.insert(0, mine[0] if mine else (1, 0))
    return out if not rest else None


def common_radices(x: Sequence[int], y: Sequence[int]) -> list[int] | None:
    """The coarsest radix list refining both `x` and `y` (equal products), outer to inner."""
    xs, ys = list(reversed(x)), list(reversed(y))
    out: list[int] = []
    a = b = 1
    i = j = 0
    xs = [n for n in xs if n > 1]
    ys = [n for n in ys if n > 1]
    while i < len(xs) or j < len(ys):
        if a == 1 and i < len(xs):
            a = xs[i]
            i += 1
        if b == 1 and j < len(ys):
            b = ys[j]
            j += 1
        step = min(a, b)
        if a % step or b % step:
            return None
        out.insert(0, step)
        a //= step
        b //= step
    return out if a == 1 and b == 1 else None



# --------------------------------------------------------------------------------------
# The int8 epilogue in FixPipe's quant mode
# --------------------------------------------------------------------------------------


@dataclass
class FixQuant:
    """An L0C read-out (`copy`) that FixPipe dequantizes [, ReLUs] [, requantizes] on the way
    for `vector`: `ops` are the region ops it computes, `value` their last result (now in UB);
    `scale` the per-channel scale's block argument (or None: `deq_value`), `deq_elem` what
    the dequantize rounds to; `into` the out buffer FixPipe writes when `value` is yielded."""

    copy: t.CopyOp
    vector: t.VectorOp
    acc: SSAValue  # the UB accumulator alloc the read-out wrote
    arg: SSAValue  # its block argument in the region
    ops: list[Operation]
    value: SSAValue
    deq_elem: Attribute
    scale: SSAValue | None = None
    deq_value: float | None = None
    relu: bool = False
    quant: tuple[float, int] | None = None
    into: SSAValue | None = None
    bias: SSAValue | None = None  # an i32 per-channel bias tile added first (block argument)

    @property
    def mode(self) -> str:
        return ("V" if self.scale is not None else "") + ("REQ8" if self.quant is not None else "DEQF16")

    @property
    def elem(self) -> Attribute:
        return self.value.type.element_type


def _only_use(v: SSAValue) -> Operation | None:
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


def _elem_of(v: SSAValue) -> Attribute:
    ty = v.type
    assert isinstance(ty, TensorType | MemRefType)
    return ty.element_type


def _splat(op: Operation | None) -> float | None:
    """The one value of a constant tensor (None if it is not a constant or not one value)."""
    if not isinstance(op, g.ConstantOp):
        return None
    from ge.runtime.reference import evaluate

    (value,) = evaluate(op, [])
    flat = value.reshape(-1)
    return float(flat[0]) if flat.size and (flat == flat[0]).all() else None


def _block_arg(v: SSAValue, arg: SSAValue, elem: Attribute) -> bool:
    """Whether `v` is another argument of `arg`'s region (a tile in UB) of type `elem`."""
    return v is not arg and v.owner is arg.owner and _elem_of(v) == elem


def _deq_chain(arg: SSAValue) -> dict | None:
    """The dequantize at the head of a region: `arg` (i32) [+ an i32 bias tile] -> f32 cast
    -> * scale, or one graph.dequantize with offset 0; {"ops", "value", "scale" (block arg) |
    "deq_value", "bias"}."""
    head, x, found = _only_use(arg), arg, {"ops": []}
    if isinstance(head, g.AddOp) and _elem_of(head.results[0]) == i32:
        (b,) = [v for v in head.operands if v is not arg] or [None]
        if b is None or not _block_arg(b, arg, i32):
            return None
        found = {"ops": [head], "bias": b}
        x = head.results[0]
        head = _only_use(x)
    if isinstance(head, g.DequantizeOp) and head.operands[0] is x and \
            g.get_int(head.properties, "offset") == 0:
        s = head.operands[1]
        found["ops"].append(head)
        found["value"] = head.results[0]
    elif isinstance(head, g.CastOp) and _elem_of(head.results[0]) == f32:
        mul = _only_use(head.results[0])
        if not isinstance(mul, g.MulOp):
            return None
        others = [v for v in mul.operands if v is not head.results[0]]
        if len(others) != 1 or _elem_of(others[0]) != f32:
            return None
        s = others[0]
        found["ops"] += [head, mul]
        found["value"] = mul.results[0]
    else:
        return None
    if (value := _splat(s.owner)) is not None:
        found["deq_value"] = value
    elif _block_arg(s, arg, f32):  # a scale tile in UB
        found["scale"] = s
    else:
        return None
    return found


def plan_fixquant(vector: t.VectorOp, copy: t.CopyOp, acc: SSAValue) -> FixQuant | None:
    """The FixPipe quant mode that takes the head of `vector`'s region, if any."""
    block = vector.body.block
    args = [a for a, v in zip(block.args, vector.ins) if v is acc or (isinstance(v.owner, t.ViewOp) and
                                                                       v.owner.source is acc)]
    if len(args) != 1 or _elem_of(args[0]) != i32:
        return None
    arg = args[0]
    chain = _deq_chain(arg)
    if chain is None:
        return None
    ops, value = chain["ops"], chain["value"]
    deq_elem, relu = _elem_of(value), False
    while (user := _only_use(value)) is not None:
        if isinstance(user, g.CastOp) and deq_elem == f32 and _elem_of(user.results[0]) == f16:
            deq_elem = f16
        elif isinstance(user, g.ReluOp) and not relu:
            relu = True
        else:
            break
        ops.append(user)
        value = user.results[0]
    quant = None
    if isinstance(user, g.QuantizeOp):
        quant = (g.get_float(user.properties, "scale"), g.get_int(user.properties, "offset"))
        ops.append(user)
        value = user.results[0]
    elif deq_elem != f16:
        return None  # FixPipe dequantizes to f16 (DEQF16) or requantizes to int8 (REQ8): not to f32
    plan = FixQuant(copy, vector, acc, arg, ops, value, deq_elem, chain.get("scale"), chain.get("deq_value"),
                    relu, quant, bias=chain.get("bias"))
    yielded = [o for r, o in zip(block.last_op.operands, vector.outs) if r is value]
    if len(yielded) == 1 and len(list(value.uses)) == 1:
        plan.into = yielded[0]
    return plan



def _epilogue_reader(copy: t.CopyOp, acc: SSAValue) -> t.VectorOp | None:
    """The one reader of the read-out's UB tile `acc` (directly or through views) besides
    `copy`, when it is a `tile.vector` in the copy's block: the epilogue a converting
    read-out can take the head of."""
    users = [u.operation for u in acc.uses]
    views = [u for u in users if isinstance(u, t.ViewOp)]
    readers = {u.operation for v in views for u in v.result.uses} | set(users)
    readers -= {copy, *views}
    if len(readers) != 1 or not isinstance(vec := readers.pop(), t.VectorOp):
        return None
    return vec if vec.parent_block() is copy.parent_block() else None


def _sliced_readers(copy: t.CopyOp, acc: SSAValue) -> dict[t.CopyOp, t.VectorOp] | None:
    """A sliced epilogue's read-outs (tile_cube's `epi_split`): in one block, L0C -> `acc`
    copies each followed by the `tile.vector` that reads `acc` (through views too) before
    the next copy -- nothing else uses `acc`. Its read-out pairs by copy, or None. (Each
    slice's read-out converts on the way: `acc` is retyped for all of them at once.)"""
    users = [u.operation for u in acc.uses]
    views = [u for u in users if isinstance(u, t.ViewOp)]
    view_results = {v.result for v in views}
    ops = {u.operation for v in views for u in v.result.uses} | set(users)
    ops -= set(views)
    block = copy.parent_block()
    if any(o.parent_block() is not block for o in ops):
        return None
    order = sorted(ops, key=block.get_operation_index)
    pairs: dict[t.CopyOp, t.VectorOp] = {}
    for c, v in zip(order[::2], order[1::2]):
        if not (isinstance(c, t.CopyOp) and (c.dest is acc or c.dest in view_results)
                and t.space_of(c.source.type) == t.MemSpace.L0C and isinstance(v, t.VectorOp)):
            return None
        pairs[c] = v
    if len(order) % 2 or len(pairs) < 2 or copy not in pairs:
        return None
    return pairs


def plan_fixquants(kernel: t.KernelOp, target: targets.Target) -> dict[Operation, FixQuant]:
    """Every L0C -> UB read-out of the kernel that FixPipe's quant mode can take, by its copy
    and by its vector op (FixPipe targets only)."""
    plans: dict[Operation, FixQuant] = {}
    if not target.isa.fixpipe:
        return plans
    for op in kernel.walk():
        if not isinstance(op, t.CopyOp) or t.space_of(op.source.type) != t.MemSpace.L0C or \
                t.space_of(op.dest.type) != t.MemSpace.UB or _elem_of(op.source) != i32:
            continue
        acc = _alloc_of(op.dest)
        if not isinstance(acc.owner, t.AllocOp) or (vec := _epilogue_reader(op, acc)) is None:
            continue
        plan = plan_fixquant(vec, op, acc)
        if plan is not None:
            plans[op] = plans[vec] = plan
    return plans


# --------------------------------------------------------------------------------------
# The 910's epilogue: the bias in L0C, the cast (and ReLU) on the read-out
# --------------------------------------------------------------------------------------


# Does a sliced epilogue's every row slice convert f32 -> f16 on its read-out (`_sliced_readers`)?
# bert_base's q projection (4 slices of 32 x 256): a vconv of 291 cycles per slice less.
SLICED_READ_OUT = True


@dataclass
class L0cBias(FixQuant):
    """On a chip without FixPipe (the 910): an f32 accumulator's epilogue that starts
    `acc + bias` (a per-output-channel tile, f32 or `cast(f16 bias)`), then `cast -> f16`
    [, ReLU right after the cast] -- or the cast [, ReLU] alone. The bias goes into the L0C
    tile before its mmad chain (`isa.broadcast_ub_to_l0c`, TBE's bias_l0c: the mmads then
    accumulate onto it, their `init` false), and the read-out `copy_l0c_to_ub` converts f32
    -> f16 [and ReLUs] on the way (CCE copy_matrix_cc_to_ubuf's CRMODE_F32toF16_NONE /
    _RELU); the vector op lowers only what is left. `anchor` is the first op of the read-out's
    block holding mmads (the K loop, or the first mmad of an unrolled chain) -- the bias's
    copy-in (`bias_copy`, moved there), its f16 -> f32 cast and the broadcasts are emitted
    before it."""

    c_alloc: SSAValue | None = None  # the L0C tile
    anchor: Operation | None = None
    bias_copy: t.CopyOp | None = None
    bias_alloc: SSAValue | None = None  # the bias's UB tile
    bias_cast: bool = False  # the bias tile is f16 (cast to f32 in UB before the broadcast)
    mmads: tuple[Operation, ...] = ()
    resident: bool = False  # the whole bias in UB from the kernel's start (`resident_bias_plans`)


def _alloc_of(v: SSAValue) -> SSAValue:
    return v.owner.source if isinstance(v.owner, t.ViewOp) else v


def _static(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _rect_ids(copy: t.CopyOp, ids, dest_shape: Sequence[int]):
    """Where a copy with static offsets puts each element of `ids` (its source, numbered):
    the destination array of those numbers, -1 where it writes nothing; None if an offset
    is not a constant."""
    import numpy as np

    so = [_static(v) for v in copy.source_offsets]
    do = [_static(v) for v in copy.dest_offsets]
    if None in so or None in do or copy.window or copy.pad is not None:
        return None
    sizes, steps, perm = copy.static_sizes, copy.static_strides, copy.static_perm
    rect = ids[tuple(slice(o, o + (n - 1) * st + 1, st) for o, n, st in zip(so, sizes, steps))]
    if tuple(rect.shape) != tuple(sizes):
        return None
    moved = rect.transpose(perm)
    out = np.full(tuple(dest_shape), -1, dtype=np.int64)
    region = tuple(slice(o, o + n) for o, n in zip(do, moved.shape))
    if tuple(out[region].shape) != tuple(moved.shape):
        return None
    out[region] = moved
    return out


def _bias_columns(copy: t.CopyOp, c_shape: tuple[int, int], arg: SSAValue, bias: SSAValue) -> bool:
    """Whether bias tile element j is the bias of L0C column j for every j < n: the read-out
    (static offsets) writes every L0C element once into the accumulator tile, and the
    region's broadcast of `bias` against `arg` (row-major over their region shapes) reads
    element j for each element of L0C column j."""
    import numpy as np

    m, n = c_shape
    src_shape = tuple(copy.source.type.get_shape())
    dest_shape = tuple(copy.dest.type.get_shape())
    if math.prod(src_shape) != m * n:
        return False
    ids = np.arange(m * n, dtype=np.int64).reshape(src_shape)
    placed = _rect_ids(copy, ids, dest_shape)
    if placed is None:
        return False
    acc_shape = tuple(arg.type.get_shape())
    flat = placed.reshape(-1)
    if flat.size != math.prod(acc_shape) or not np.array_equal(np.sort(flat[flat >= 0]), np.arange(m * n)):
        return False
    b_shape = tuple(bias.type.get_shape())
    if math.prod(b_shape) != n:
        return False
    b_full = (1,) * (len(acc_shape) - len(b_shape)) + b_shape
    if len(b_full) != len(acc_shape) or any(b not in (1, a) for a, b in zip(acc_shape, b_full)):
        return False
    bidx = np.arange(n, dtype=np.int64).reshape(b_full)
    per_acc = np.broadcast_to(bidx, acc_shape).reshape(-1)
    where = flat >= 0
    return bool(np.array_equal(per_acc[where], flat[where] % n))


def _head_chain(arg: SSAValue) -> dict | None:
    """`arg` (f32) [+ bias (f32 tile, or cast of an f16 tile, used only here)] -> cast f16
    [-> ReLU]: {"ops", "value", "bias" (block arg) | None, "bias_cast", "relu"}."""
    head, x, found = _only_use(arg), arg, {"ops": [], "bias": None, "bias_cast": False, "relu": False}
    if isinstance(head, g.AddOp) and _elem_of(head.results[0]) == f32:
        (b,) = [v for v in head.operands if v is not arg] or [None]
        if b is None:
            return None
        if isinstance(b.owner, g.CastOp) and _only_use(b) is head and _elem_of(b.owner.operands[0]) == f16 and \
                _block_arg(b.owner.operands[0], arg, f16) and _only_use(b.owner.operands[0]) is b.owner:
            found["ops"].append(b.owner)
            found["bias"], found["bias_cast"] = b.owner.operands[0], True
        elif _block_arg(b, arg, f32) and _only_use(b) is head:
            found["bias"] = b
        else:
            return None
        found["ops"].append(head)
        x = head.results[0]
        head = _only_use(x)
    if not (isinstance(head, g.CastOp) and _elem_of(head.results[0]) == f16):
        return None
    found["ops"].append(head)
    x = head.results[0]
    relu = _only_use(x)
    if isinstance(relu, g.ReluOp):
        found["ops"].append(relu)
        found["relu"] = True
        x = relu.results[0]
    found["value"] = x
    return found


def _anchor_of(block: Block, inner: Operation) -> Operation | None:
    """The op of `block` that is or contains `inner`."""
    op = inner
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _defined_before(v: SSAValue, anchor: Operation) -> bool:
    """Whether `v`, used in `anchor`'s block, is available just before `anchor` (a value
    of an enclosing block dominates the whole block)."""
    owner = v.owner
    block = anchor.parent_block()
    if isinstance(owner, Operation) and owner.parent_block() is block:
        return block.get_operation_index(owner) < block.get_operation_index(anchor)
    return True


def plan_l0c_bias(vector: t.VectorOp, copy: t.CopyOp, acc: SSAValue, c_alloc: SSAValue,
                  slices: Sequence[Operation] = ()) -> L0cBias | None:
    """The 910 epilogue head (`L0cBias`) of `vector`, reading L0C tile `c_alloc` out by
    `copy` into `acc`, if it matches (`slices`: the other row slices' read-outs of the tile)."""
    block = vector.body.block
    args = [a for a, v in zip(block.args, vector.ins) if _alloc_of(v) is acc]
    if len(args) != 1 or _elem_of(args[0]) != f32:
        return None
    arg = args[0]
    chain = _head_chain(arg)
    if chain is None:
        return None
    c_shape = tuple(c_alloc.type.get_shape())
    if len(c_shape) != 2 or c_shape[0] % 16 or c_shape[1] % 16:
        return None
    users = [u.operation for u in c_alloc.uses]
    views = [u for u in users if isinstance(u, t.ViewOp)]
    readers = users + [u.operation for v in views for u in v.result.uses]
    mmads = tuple(u for u in readers if isinstance(u, t.MmadOp))
    if not mmads or any(not isinstance(u, t.MmadOp | t.ViewOp) and u is not copy and u not in slices for u in readers):
        return None
    plan = L0cBias(copy, vector, acc, arg, chain["ops"], chain["value"], f16, relu=chain["relu"], c_alloc=c_alloc,
                   mmads=mmads)
    if chain["bias"] is not None:
        m, n = c_shape
        if m // 16 - 1 > isa.BroadcastUbToL0cOp.MAX_FIELD or n // 16 > isa.BroadcastUbToL0cOp.MAX_FIELD:
            return None
        bias_in = vector.ins[list(block.args).index(chain["bias"])]
        b_alloc = _alloc_of(bias_in)
        if not isinstance(b_alloc.owner, t.AllocOp) or math.prod(b_alloc.type.get_shape()) != n:
            return None
        if not _bias_columns(copy, c_shape, arg, chain["bias"]):
            return None
        block_ = copy.parent_block()
        anchors = {_anchor_of(block_, mm) for mm in mmads}
        if None in anchors or any(block_.get_operation_index(a) > block_.get_operation_index(copy) for a in anchors):
            return None
        anchor = min(anchors, key=block_.get_operation_index)  # the first op of the chain (a K loop, or an mmad)
        fill = [u.operation for u in b_alloc.uses if isinstance(u.operation, t.CopyOp) and u.operation.dest is b_alloc]
        others = [u.operation for u in b_alloc.uses if u.operation is not vector and u.operation not in fill]
        if len(fill) != 1 or others or fill[0].parent_block() is not copy.parent_block():
            return None
        bias_copy = fill[0]
        if any(not _defined_before(v, anchor) for v in bias_copy.operands if v is not b_alloc):
            return None
        for mm in mmads:  # the chain starts at the anchor: init on (at most) its first step
            init = mm.init
            if _static(init) is None and not isinstance(init.owner, arith.CmpiOp):
                return None
        plan.bias, plan.anchor, plan.bias_copy, plan.bias_alloc, plan.bias_cast = \
            chain["bias"], anchor, bias_copy, b_alloc, chain["bias_cast"]
    yielded = [o for r, o in zip(block.last_op.operands, vector.outs) if r is plan.value]
    if len(yielded) == 1 and len(list(plan.value.uses)) == 1 and \
            math.prod(yielded[0].type.get_shape()) == math.prod(acc.type.get_shape()):
        plan.into = yielded[0]
    return plan


def plan_l0c_biases(kernel: t.KernelOp, target: targets.Target) -> dict[Operation, L0cBias]:
    """Every f32 L0C -> UB read-out of the kernel whose epilogue `L0cBias` takes (targets
    without FixPipe only), by its copy, its vector op, its anchor, its bias copy and its mmads."""
    plans: dict[Operation, L0cBias] = {}
    if target.isa.fixpipe:
        return plans
    sliced: set[SSAValue] = set()  # the UB tiles of sliced epilogues already planned
    for op in kernel.walk():
        if not isinstance(op, t.CopyOp) or t.space_of(op.source.type) != t.MemSpace.L0C or \
                t.space_of(op.dest.type) != t.MemSpace.UB or _elem_of(op.source) != f32:
            continue
        acc, c_alloc = _alloc_of(op.dest), _alloc_of(op.source)
        if not isinstance(acc.owner, t.AllocOp) or not isinstance(c_alloc.owner, t.AllocOp):
            continue
        if (vec := _epilogue_reader(op, acc)) is None:
            if SLICED_READ_OUT and acc not in sliced and (pairs := _sliced_readers(op, acc)) is not None:
                sliced.add(acc)
                # every slice converts on its read-out, or none does (`acc` is retyped once);
                # a bias stays on the Vector unit (it would go into L0C once per tile, not per slice)
                found = [plan_l0c_bias(v, c, acc, c_alloc, tuple(pairs)) for c, v in pairs.items()]
                if all(q is not None and q.bias is None and q.into is found[0].into
                       and _alloc_of(q.copy.source) is c_alloc for q in found):
                    for q in found:
                        plans[q.copy] = plans[q.vector] = q
            continue
        plan = plan_l0c_bias(vec, op, acc, c_alloc)
        if plan is None:
            continue
        plans[op] = plans[vec] = plan
        if plan.anchor is not None:
            plans[plan.anchor] = plans[plan.bias_copy] = plan
            for mm in plan.mmads:
                plans[mm] = plan
    return plans


def read_out_plans(kernel: t.KernelOp, target: targets.Target) -> list[L0cBias]:
    """The converting L0C read-outs to-isa's default lowering takes in `kernel` (chips
    without FixPipe, `plan_l0c_biases`): the tile-level UB check counts their accumulator
    tiles as to-isa keeps them (transforms/tile_capacity.py)."""
    return list({id(q): q for q in plan_l0c_biases(kernel, target).values()}.values())


# Is a bias the L0C broadcasts read from a copy of the whole bias made at the kernel's start?
RESIDENT_BIAS = True


def bias_extent(plan: L0cBias) -> int:
    """Elements of the GM bias `plan` reads kept in UB (`resident_bias_plans`): zero padded
    to whole tiles (the last tile reads past a bias that is not)."""
    n = math.prod(plan.bias_alloc.type.get_shape())
    return -(-plan.bias_copy.source.type.get_shape()[0] // n) * n


def resident_bias_plans(kernel: t.KernelOp, plans: Sequence[L0cBias], target: targets.Target) -> list[L0cBias]:
    """The plans of `kernel` whose tiles broadcast their bias from one copy of the whole
    bias (f32, cast once if it is f16) made in UB at the kernel's start, instead of a
    copy-in and a cast per tile. Why: the per-tile copy-in into a UB slot waits for the
    Vector unit to have read the slot's last bias, and MTE2 runs in order, so every load
    behind it -- the next tiles' Cube operands -- waited for the Vector unit too; and each
    tile saves a vconv. For biases read from a GM argument whose padded copy fits UB beside
    the kernel's tile buffers, in epilogues that read no other GM operand: with a residual
    (loaded per tile anyway, with the same wait) the kernels measured slower (resnet50_b16's
    residual 1 x 1 convs +1,900 to +3,800 cycles each; insert-sync then orders the
    broadcasts before the next mmads through MTE2's queue), so those keep the per-tile copy.
    resnet50 at batch 1: 222,338 -> 217,976 cycles; squeezenet 80,301 -> 78,388."""
    chosen = [q for q in {id(q): q for q in plans}.values() if q.bias is not None and q.bias_copy is not None and
              isinstance(q.bias_copy.source, BlockArgument) and len(q.bias_copy.source.type.get_shape()) == 1 and
              all(_alloc_of(v) in (q.acc, q.bias_alloc) for v in q.vector.ins)]
    if not RESIDENT_BIAS or not chosen:
        return []
    al = target.alignment.ub
    used = sum(isa.align_up(isa.nbytes(op.result.type), al) * op.count.value.data for op in kernel.walk()
               if isinstance(op, t.AllocOp) and t.space_of(op.result.type) == t.MemSpace.UB)
    for q in {q.bias_copy.source: q for q in chosen}.values():
        total = bias_extent(q)
        used += isa.align_up(total * isa.itemsize(q.bias_copy.source.type), al) + isa.align_up(total * 4, al)
    return chosen if used <= target.memory.ub else []


def split_at_tile_dims(plan: FixQuant, sizes: list[int], ss: list[int], ds: list[int]):
    """The read-out's dims split where they cross a dim of the accumulator tile (a [256]
    run over [16, 16] becomes [16, 16]): the same elements, and a per-channel index linear
    in each dim."""
    bounds = sorted(set(isa.row_major(tuple(plan.arg.type.get_shape()))) - {1})
    out = [list(sizes), list(ss), list(ds)]
    d = 0
    while d < len(out[0]):
        n, s_, t_ = out[0][d], out[1][d], out[2][d]
        k = next((b // t_ for b in bounds if t_ and b % t_ == 0 and 1 < b // t_ < n and n % (b // t_) == 0), None)
        if k is None:
            d += 1
            continue
        out[0][d:d + 1], out[1][d:d + 1], out[2][d:d + 1] = [n // k, k], [s_ * k, s_], [t_ * k, t_]
    return out


def channel_strides(plan: FixQuant, vec: SSAValue, sizes: Sequence[int], ds: Sequence[int]) -> list[int] | None:
    """Per dim of a read-out into the accumulator tile (row-major, element strides `ds`),
    the stride of the index into `vec` (a scale or bias tile broadcast over the tile); None
    if that index is not linear in the move's dims."""
    import numpy as np

    acc_shape = tuple(plan.arg.type.get_shape())
    s_shape = tuple(vec.type.get_shape())
    s_shape = (1,) * (len(acc_shape) - len(s_shape)) + s_shape
    rm = isa.row_major(s_shape)
    weights = np.array([r if n > 1 else 0 for r, n in zip(rm, s_shape)], dtype=np.int64)

    def index(flat):
        return np.stack(np.unravel_index(flat, acc_shape), -1) @ weights

    grid = np.indices(sizes).reshape(len(sizes), -1)
    pos = (grid * np.array(ds)[:, None]).sum(0)
    if pos.size == 0 or pos.max() >= math.prod(acc_shape):
        return None
    out = [int(index(np.array([d]))[0]) if n > 1 else 0 for n, d in zip(sizes, ds)]
    if not (index(pos) == (grid * np.array(out)[:, None]).sum(0)).all():
        return None
    return out


# --------------------------------------------------------------------------------------
# The lowering of one kernel
# --------------------------------------------------------------------------------------


@dataclass
class Buffer:
    """An isa buffer for a tile alloc (or a GM argument): its slots and its digits."""

    slots: list[SSAValue]
    shape: tuple[int, ...]
    atoms: list[Atom]
    space: t.MemSpace
    count: int = 1


@dataclass
class Side:
    """One side of a copy: per tile dim, the digits (count, element stride) of its
    rectangle, and the element offset of the rectangle's origin."""

    dims: list[list[Atom]]
    offset: Index


@dataclass
class CopyStatics:
    """What lowering a `tile.copy` needs that does not change between its emissions (a
    pipelined loop emits its body once per slot, and fusion probes lower the same kernels):
    its operands and properties, the digits of both sides, and each dim's split into the
    digits both sides agree on (filled in by the first emission)."""

    sizes: tuple[int, ...]
    steps: tuple[int, ...]
    perm: tuple[int, ...]
    moved: list[int]
    inv: list[int]
    source: SSAValue
    dest: SSAValue
    source_offsets: Sequence[SSAValue]
    dest_offsets: Sequence[SSAValue]
    pad: float | None
    src_space: t.MemSpace
    dst_space: t.MemSpace
    windowed: bool  # has its own window operands
    src_digits: list[list[Atom]] | None = None  # per dim, the source buffer's digits
    dst_digits: list[list[Atom]] | None = None
    split: list[tuple[list[int], list[Atom], list[Atom]]] | None = None  # per dim: radices, source, destination
    plain: tuple | None = None  # (move class, sizes, strides, props) of a plain move (no window, no quant)

    @staticmethod
    def of(op: t.CopyOp) -> CopyStatics:
        sizes, steps, perm = op.static_sizes, op.static_strides, op.static_perm
        inv = [0] * len(sizes)
        for e, p in enumerate(perm):
            inv[p] = e
        # each named operand read once: xDSL finds a variadic one through the segment sizes on every read
        source, dest = op.source, op.dest
        return CopyStatics(sizes, steps, perm, [sizes[p] for p in perm], inv, source, dest, op.source_offsets,
                           op.dest_offsets, None if op.pad is None else float(op.pad.value.data),
                           t.space_of(source.type), t.space_of(dest.type), bool(op.window))


@dataclass
class KernelLowering:
    """The state of lowering one tile kernel; also the context the vector and pool
    lowerings get (`b`, `target`, `buffer`, `index`)."""

    tile_kernel: t.KernelOp
    b: IsaBuilder
    target: targets.Target
    values: dict[SSAValue, Index] = field(default_factory=dict)
    buffers: dict[SSAValue, Buffer] = field(default_factory=dict)
    views: dict[SSAValue, tuple[SSAValue, tuple[int, ...]]] = field(default_factory=dict)  # value -> `base(value)`
    slot: dict[SSAValue, int] = field(default_factory=dict)
    home: dict[SSAValue, Operation] = field(default_factory=dict)  # multi-buffer -> its loop
    fixquants: dict[Operation, FixQuant] = field(default_factory=dict)  # by copy and by vector op
    retyped: dict[SSAValue, Attribute] = field(default_factory=dict)  # accumulator alloc -> FixPipe's output type
    unbacked: set[SSAValue] = field(default_factory=set)  # accumulator allocs FixPipe bypasses
    l0c_steps: dict[Operation, L0cBias] = field(default_factory=dict)  # anchor, bias copy, mmads -> their plan
    bias_f32: dict[int, list[SSAValue]] = field(default_factory=dict)  # plan id -> its f32 bias buffer's slots
    bias_resident: dict[SSAValue, SSAValue] = field(default_factory=dict)  # GM bias -> its f32 copy in UB
    armed: dict[int, tuple[scf.ForOp, int]] = field(default_factory=dict)  # plan id -> (its loop, slots) when ahead
    # the tile.vector lowered last and what its scratch buffers hold from its inputs (`slice_blocks`)
    last_blocks: tuple[Operation, dict] | None = None
    copies: dict[Operation, CopyStatics] = field(default_factory=dict)  # each tile.copy's fixed parts
    handlers: dict[type, Callable | None] = field(default_factory=dict)  # op class -> its `lower_op` branch
    slices: dict[int, list[Operation]] = field(default_factory=dict)  # plan id -> its `bias_slice` (`arm`)

    # -- the context interface ---------------------------------------------------------------

    def fail(self, op: Operation, message: str) -> IsaLoweringError:
        return IsaLoweringError(f"{describe_kernel(self.tile_kernel)}: {op.name}: {message}")

    def base(self, v: SSAValue) -> tuple[SSAValue, tuple[int, ...]]:
        """The alloc (or GM argument) behind a tile memref value, and the value's shape."""
        hit = self.views.get(v)
        if hit is not None:
            return hit
        ty = v.type
        assert isinstance(ty, MemRefType)
        hit = self.views[v] = (v, tuple(ty.get_shape()))  # (an alloc or argument: its own base, kept)
        return hit

    def buffer(self, v: SSAValue) -> tuple[SSAValue, Index]:
        alloc, _ = self.base(v)
        buf = self.buffers[alloc]
        return buf.slots[self.slot.get(alloc, 0) % len(buf.slots)], 0

    def index(self, v: SSAValue) -> Index:
        hit = self.values.get(v)
        if hit is not None:
            return hit
        owner = v.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            value = owner.value.value.data
            # kept: the tile kernel's constants are looked up again at every emission
            hit = self.values[v] = value if isinstance(v.type, IndexType) else self.b.const(value, v.type)
            return hit
        raise KeyError(v)

    # -- buffers -------------------------------------------------------------------------------

    def declare(self, op: t.AllocOp) -> None:
        ty = op.result.type
        assert isinstance(ty, MemRefType)
        space = t.space_of(ty)
        shape = tuple(ty.get_shape())
        n = math.prod(shape)
        if space in (t.MemSpace.L0A, t.MemSpace.L0B, t.MemSpace.L0C):
            elem = op.result.type.element_type
            frac = isa.cube_fractal(self.target, elem if space != t.MemSpace.L0C else self._cube_input(op))
            if len(shape) != 2 or shape[0] % (frac[0] if space != t.MemSpace.L0B else frac[1]) or \
                    shape[1] % (frac[1] if space == t.MemSpace.L0A else frac[2]):
                raise self.fail(op, f"a {space.value} buffer must be a matrix of whole {frac} fractals, got {list(shape)}")
            atoms = fractal_atoms(space, shape, frac)
        else:
            atoms = row_major_atoms(shape)
        count = op.count.value.data if op.result in self.home else 1  # copies only where they rotate
        name = op.result.name_hint or space.value
        if op.result in self.unbacked:  # FixPipe writes the out buffer: only the copy's digits are needed
            self.buffers[op.result] = Buffer([], shape, atoms, space, count)
            return
        elem = self.retyped.get(op.result, ty.element_type)
        slots = self.b.buffer(isa.MemSpace(space.value), [n], elem, slots=count, name=name)
        self.buffers[op.result] = Buffer(slots, shape, atoms, space, count)

    def _cube_input(self, op: t.AllocOp) -> Attribute:
        """The element type of the mmad inputs that accumulate into L0C buffer `op`."""
        for use in op.result.uses:
            user = use.operation
            if isinstance(user, t.MmadOp):
                a = user.a.type
                assert isinstance(a, MemRefType)
                return a.element_type
        raise self.fail(op, "an L0C buffer that no tile.mmad writes")

    # -- copies --------------------------------------------------------------------------------

    def side(self, op: Operation, v: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int],
             steps: Sequence[int], per_dim: list[list[Atom]] | None = None) -> Side:
        """The digits and origin of a rectangle of `v` (`per_dim`: `v`'s digits per dim, when known)."""
        if per_dim is None:
            per_dim = self.view_digits(op, v)
        dims: list[list[Atom]] = []
        offset: Index = 0
        for d, (atoms, o, n, s) in enumerate(zip(per_dim, offsets, sizes, steps)):
            part, contrib = self.digits(op, atoms, self.index(o), n, s, d)
            dims.append(part)
            offset = self.b.add_(offset, contrib)
        return Side(dims, offset)

    def view_digits(self, op: Operation, v: SSAValue) -> list[list[Atom]]:
        """The digits of each dim of `v` (a view of its buffer)."""
        alloc, shape = self.base(v)
        per_dim = split_dims(self.buffers[alloc].atoms, shape)
        if per_dim is None:
            raise self.fail(op, f"the view {list(shape)} does not follow the digits of its buffer")
        return per_dim

    def digits(self, op: Operation, atoms: list[Atom], o: Index, n: int, s: int, d: int) -> tuple[list[Atom], Index]:
        """Rectangle dim `d` (offset o, count n, step s) over one dim's digits: its own
        digits and the element offset of its origin."""
        if not atoms:
            return [(n, 0)], 0
        if len(atoms) == 1:
            return [(n, s * atoms[0][1])], self.b.mul(o, atoms[0][1])
        if s != 1 and n > 1:
            raise self.fail(op, f"a strided read across the fractal digits of dim {d}")
        (_, stride), inner = atoms[0], atoms[1:]
        block = math.prod(c for c, _ in inner)
        if n % block == 0:
            if isinstance(o, int) and o % block:
                raise self.fail(op, f"dim {d} starts at {o}, inside a fractal of {block}")
            return [(n // block, stride), *inner], self.b.mul(self.b.div(o, block), stride)
        if n < block:
            part, contrib = self.digits(op, inner, self.b.rem(o, block), n, 1, d)
            return part, self.b.add_(self.b.mul(self.b.div(o, block), stride), contrib)
        raise self.fail(op, f"dim {d}: {n} elements do not fit the fractal digits {atoms}")

    def window(self, v: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int],
               steps: Sequence[int]) -> list[tuple[Index, Index]] | None:
        """Per tile dim, the (lo, hi) of the positions inside `v` when some may be outside."""
        _, shape = self.base(v)
        out: list[tuple[Index, Index]] = []
        needed = False
        for o, n, s, extent in zip(offsets, sizes, steps, shape):
            o = self.index(o)
            if isinstance(o, int):
                lo = min(n, -(o // s)) if o < 0 else 0  # the first i with o + i * s >= 0
                hi = min(n, (extent - 1 - o) // s + 1) if o <= extent - 1 else 0
                out.append((lo, max(hi, lo)))
                needed |= lo != 0 or hi != n
            else:
                neg = self.b.sub(0, o)
                lo = neg if s == 1 else self.b._binary(arith.CeilDivSIOp, neg, s)
                last = self.b.sub(extent - 1, o)
                hi = self.b.add_(last if s == 1 else self.b._binary(arith.FloorDivSIOp, last, s), 1)
                out.append((lo, hi))
                needed = True
        return out if needed else None

    def copy(self, op: t.CopyOp, quant: FixQuant | None = None) -> None:
        st = self.copies.get(op)
        if st is None:
            st = self.copies[op] = CopyStatics.of(op)
        sizes, steps, inv, rank = st.sizes, st.steps, st.inv, len(st.sizes)
        ones = [1] * rank
        if st.src_digits is None:
            st.src_digits = self.view_digits(op, st.source)
        src = self.side(op, st.source, st.source_offsets, sizes, steps, st.src_digits)
        if st.dst_digits is None:
            st.dst_digits = self.view_digits(op, st.dest)
        dst_moved = self.side(op, st.dest, st.dest_offsets, st.moved, ones, st.dst_digits)
        pad = st.pad
        win = self.window(st.source, st.source_offsets, sizes, steps) if pad is not None else None
        dst_win = None
        if st.dst_space == t.MemSpace.GM:
            w = self.window(st.dest, st.dest_offsets, st.moved, ones)
            dst_win = None if w is None else [w[inv[d]] for d in range(rank)]
        if win is not None and dst_win is not None:
            raise self.fail(op, "both the source and the destination may be partly outside their buffers")
        if st.windowed:
            win = self.explicit_window(op, win)
        win = win or dst_win
        if win is None and quant is None and st.plain is not None:
            self.emit_plain(op, st, src.offset, dst_moved.offset)
            return
        split = st.split or []
        # each rectangle dim split into the digits both sides agree on
        sizes_out: list[int] = []
        s_str: list[int] = []
        d_str: list[int] = []
        windows: list[tuple[Index, Index]] = []
        for d in range(rank):
            if st.split is None:  # (destination digits by rectangle (source) dim)
                split.append(self.split_dim(op, d, src.dims[d], dst_moved.dims[inv[d]]))
            radices, sa, da = split[d]
            if win is not None and len(radices) > 1 and win[d] != (0, sizes[d]):
                raise self.fail(op, f"dim {d} crosses fractal digits and the edge of its buffer")
            for r, (_, ss), (_, ds) in zip(radices, sa, da):
                sizes_out.append(r)
                s_str.append(ss)
                d_str.append(ds)
                if win is not None:
                    windows.append(win[d] if len(radices) == 1 else (0, r))
        st.split = split
        self.emit_move(op, st.src_space, st.dst_space, src.offset, dst_moved.offset, sizes_out, s_str, d_str,
                       windows if win is not None else None, pad, quant, st)

    def split_dim(self, op: t.CopyOp, d: int, src: list[Atom], dst: list[Atom]) -> tuple[list[int], list[Atom], list[Atom]]:
        """Rectangle dim `d` of a copy as the radices both sides' digits agree on, with each
        side's (count, stride) per radix."""
        radices = common_radices([c for c, _ in src], [c for c, _ in dst])
        if radices is None:
            raise self.fail(op, f"dim {d}: source digits {src} and destination digits {dst} do not match")
        if not radices:
            radices = [1]
        sa, da = refine(src, radices), refine(dst, radices)
        if sa is None or da is None:
            raise self.fail(op, f"dim {d}: cannot split {src} / {dst} into {radices}")
        return radices, sa, da

    def emit_plain(self, op: t.CopyOp, st: CopyStatics, so: Index, do: Index) -> None:
        """`emit_move` of a copy with no window and no quant mode, from its kept move."""
        cls, sizes, (ss, ds), props = st.plain
        src_buf, _ = self.buffer(st.source)
        dst_buf, _ = self.buffer(st.dest)
        self.b.add(move_op(cls, src_buf, dst_buf, sizes, src_offset=self.b.offset(so), dst_offset=self.b.offset(do),
                           src_strides=ss, dst_strides=ds, props=props))

    def explicit_window(self, op: t.CopyOp, win: list[tuple[Index, Index]] | None) -> list[tuple[Index, Index]] | None:
        """The copy's own window (Trilu's rows), intersected with the source's bounds."""
        if not op.window:
            return win
        mine = [(self.index(op.window[2 * d]), self.index(op.window[2 * d + 1])) for d in range(len(op.window) // 2)]
        if win is None:
            return mine
        return [(lo if lo2 == 0 else self.b._binary(arith.MaxSIOp, lo, lo2), hi if hi2 == n else
                 self.b._binary(arith.MinSIOp, hi, hi2)) for (lo, hi), (lo2, hi2), n in zip(win, mine, op.static_sizes)]

    def load_index(self, op: t.LoadIndexOp) -> None:
        """A Gather index into the scalar unit's registers (the kernel becomes data dependent)."""
        n = len(op.offsets)
        src = self.side(op, op.source, op.offsets, [1] * n, [1] * n)
        buf, _ = self.buffer(op.source)
        new = self.b.add(isa.LoadScalarOp(buf, op.bound.value.data, self.b.offset(src.offset)))
        new.result.name_hint = op.result.name_hint
        self.values[op.result] = new.result
        self.b.kernel.attributes[isa.DATA_DEPENDENT_ATTR] = UnitAttr()

    def emit_move(self, op: t.CopyOp, src_space: t.MemSpace, dst_space: t.MemSpace, so: Index, do: Index,
                  sizes: list[int], ss: list[int], ds: list[int], windows: list[tuple[Index, Index]] | None,
                  pad: float | None, quant: FixQuant | None = None, st: CopyStatics | None = None) -> None:
        """The move of a copy (`st`: its statics, which keep a plain move for the next emission)."""
        dims = simplify(sizes, ss, ds, windows)
        sizes, ss, ds, windows = dims
        cls = moves_of(self.target).get((src_space, dst_space))
        if cls is None:
            why = " (it has no FixPipe: L0C is read out into UB only)" if src_space == t.MemSpace.L0C else ""
            raise self.fail(op, f"no isa move from {src_space.value} to {dst_space.value} on {self.target.name}{why}")
        src_buf, _ = self.buffer(op.source if st is None else st.source)
        dst_buf, _ = self.buffer((op.dest if st is None else st.dest) if quant is None or quant.into is None
                                 else quant.into)
        flat = [self.b.value(x) for lohi in windows for x in lohi] if windows is not None else []
        common = dict(src_offset=self.b.offset(so), dst_offset=self.b.offset(do), src_strides=ss, dst_strides=ds,
                      window=flat, pad=pad if windows is not None else None)
        if quant is None:
            props = None
            if cls.__init__ is isa._MoveOp.__init__:
                props = self.move_props(cls, sizes, ss, ds, common["pad"])
                if windows is None and st is not None:
                    st.plain = (cls, sizes, (ss, ds), props)
            self.b.add(move_op(cls, src_buf, dst_buf, sizes, **common, props=props))
            return
        if isinstance(quant, L0cBias):  # the 910's converting read-out: f32 -> f16 [, ReLU]
            extra = {"relu": UnitAttr()} if quant.relu else {}
            self.b.add(cls(src_buf, dst_buf, sizes, **common, **extra))
            return
        if windows is None:
            sizes, ss, ds = split_at_tile_dims(quant, sizes, ss, ds)
            common.update(src_strides=ss, dst_strides=ds)
        props, tiles = self.quant_props(op, quant, sizes, ds, do, windows)
        self.b.add(isa.FixpipeOp(src_buf, dst_buf, sizes, **tiles, **common, **props))

    def move_props(self, cls: type[isa._MoveOp], sizes: list[int], ss: list[int], ds: list[int],
                   pad: float | None) -> dict[str, Attribute]:
        """`cls.move_props(sizes, ss, ds, pad, {})`, kept for the compile: the same moves recur
        in every slot's copy of a loop body and in the kernels of repeated blocks."""
        key = (cls, tuple(sizes), tuple(ss), tuple(ds), pad, pad is not None and math.copysign(1.0, pad) < 0)  # (-0.0)
        return scope_cached("isa_move_props", key, lambda: cls.move_props(sizes, ss, ds, pad, {}))

    def quant_props(self, op: t.CopyOp, quant: FixQuant, sizes: list[int], ds: list[int], do: Index,
                    windows) -> tuple[dict[str, Attribute], dict[str, SSAValue]]:
        """FixPipe's quant-mode properties of the read-out `quant` takes (and its scale / bias buffers)."""
        props: dict[str, Attribute] = {"quant_pre": StringAttr(quant.mode)}
        if quant.relu:
            props["relu"] = UnitAttr()
        if quant.quant is not None:
            props["quant_scale"] = FloatAttr(quant.quant[0], f32)
            props["quant_offset"] = int_attr(quant.quant[1])
            if quant.deq_elem == f32:
                props["deq_f32"] = UnitAttr()
        tiles: dict[str, SSAValue] = {}
        for role, vec in (("scale", quant.scale), ("bias", quant.bias)):
            if vec is None:
                continue
            strides = channel_strides(quant, vec, sizes, ds) if do == 0 and windows is None else None
            if strides is None:
                raise self.fail(op, f"the per-channel {role} is not linear in the read-out's dims {sizes} (strides {ds})")
            props[f"{role}_strides"] = isa.int_array(strides)
            tiles[role], _ = self.buffer(quant.vector.ins[list(quant.vector.body.block.args).index(vec)])
        if quant.scale is None:
            props["deq_value"] = FloatAttr(quant.deq_value, f32)
        return props, tiles

    # -- compute -------------------------------------------------------------------------------

    def img2col(self, op: t.Img2colOp) -> None:
        _, fm_shape = self.base(op.source)
        dst_shape = tuple(op.dest.type.get_shape())
        src_buf, _ = self.buffer(op.source)
        dst_buf, _ = self.buffer(op.dest)
        props = {name: getattr(op, name) for name in ("kernel", "strides", "dilations", "pads", "out_size",
                                                       "channels", "c0")}
        idx = [self.b.value(self.index(v)) for v in (op.m, op.k, op.c, op.h)]
        new = create_op(isa.Img2colOp, [src_buf, [], dst_buf, [], *idx],
                        {"sizes": isa.int_array(dst_shape), "fm": isa.int_array(fm_shape[1:]), **props})
        self.b.add(new)

    def mmad(self, op: t.MmadOp) -> None:
        (m, k), n = op.a.type.get_shape(), op.c.type.get_shape()[1]
        c, _ = self.buffer(op.c)
        a, _ = self.buffer(op.a)
        b, _ = self.buffer(op.b)
        b_offset = []
        if op.b_column is not None:  # one K block (ZN): column j's fractal starts at element j x 16
            off = self.b.offset(self.b.mul(self.index(op.b_column), k))
            b_offset = [] if off is None else [off]
        init = self.index(op.init)
        plan = self.l0c_steps.get(op)
        if plan is not None and plan.anchor is not None:  # accumulates onto the bias in L0C
            init = 0
        init_v = self.b.value(init) if not isinstance(init, int) else self.b.const(init, i1)
        # (`create_op`: the op `isa.MmadOp(c, a, b, m, k, n, init=init_v)` builds)
        self.b.add(create_op(isa.MmadOp, [c, [], a, [], b, b_offset, [init_v]],
                             {"m": int_attr(m), "k": int_attr(k), "n": int_attr(n)}))

    # -- structure -----------------------------------------------------------------------------

    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        kind = type(op)
        handler = self.handlers.get(kind, _UNKNOWN)
        if handler is _UNKNOWN:
            name = _HANDLERS.get(kind, _UNKNOWN)
            if name is _UNKNOWN:
                name = _HANDLERS[kind] = _handler_of(op)
            handler = self.handlers[kind] = None if name is None else getattr(type(self), name)
        if handler is None:
            return
        if self.l0c_steps:
            plan = self.l0c_steps.get(op)
            if plan is not None:
                if op is plan.bias_copy:
                    return  # emitted before the anchor
                if op is plan.anchor and id(plan) not in self.armed:
                    self.l0c_bias_in(plan)
        handler(self, op)

    def view(self, op: t.ViewOp) -> None:
        alloc, _ = self.base(op.source)
        self.views[op.result] = (alloc, tuple(op.result.type.get_shape()))

    def block_idx(self, op: t.BlockIdxOp) -> None:
        self.values[op.result] = self.b.block_idx()

    def copy_op(self, op: t.CopyOp) -> None:
        if op not in self.fixquants:  # else emitted with its vector op, after the scale's copy-in
            self.copy(op)

    def vector(self, op: t.VectorOp) -> None:
        from ge.lowering.isa_vector import lower_vector

        quant = self.fixquants.get(op)
        if quant is not None:
            self.copy(quant.copy, quant)
        blocks = self.slice_blocks(op)
        with self.b.scratch():
            lower_vector(self, op, quant, blocks)
        self.last_blocks = (op, blocks)
        if isinstance(quant, L0cBias) and id(quant) in self.armed:  # this L0C slot's next tile
            loop, slots = self.armed[id(quant)]
            self.arm(quant, loop, self.b.add_(self.values[loop.body.block.args[0]], slots))

    def vpool(self, op: t.VPoolOp) -> None:
        from ge.lowering.isa_pool import lower_vpool

        with self.b.scratch():
            lower_vpool(self, op)

    def unknown(self, op: Operation) -> None:
        raise self.fail(op, "has no isa lowering")

    def slice_blocks(self, op: t.VectorOp) -> dict:
        """What the scratch buffers hold from the inputs of the tile.vector before `op` in its
        block (isa_vector's `blocks`: one-value constants spread over a block, their
        reciprocals, a bias row repeated), when only copies, views and index arithmetic run
        between -- the row slices of a sliced Cube epilogue: the next slice then skips those
        copies and vrecs. Entries whose source buffer a copy between rewrote are dropped;
        an empty dict when anything else runs between."""
        if self.last_blocks is None:
            return {}
        last, blocks = self.last_blocks
        written: set[SSAValue] = set()
        prev = op.prev_op
        while prev is not last:
            if prev is None:
                return {}
            if isinstance(prev, t.CopyOp):
                written.add(self.base(prev.dest)[0])
            elif not (isinstance(prev, t.ViewOp) or prev.dialect_name() == "arith"):
                return {}
            prev = prev.prev_op
        rewritten = {slot for a in written if a in self.buffers for slot in self.buffers[a].slots}
        return {buf: held for buf, held in blocks.items() if held[0] not in rewritten}

    def ahead_plans(self, loop: scf.ForOp, homed: list[SSAValue], slots: int) -> list[L0cBias]:
        """The plans whose bias goes into L0C one rotation ahead in `loop` (`arm`): the anchor
        in its body, the L0C tile and the bias tile rotating in it over all `slots`, the bias
        copy's offsets computed in the body by index arithmetic alone, and not a constant trip
        count below two rotations (there the guarded loops and their flags cost more than the
        order saves: resnet50 at batch 1). Then a tile's bias is broadcast after the epilogue
        of the tile before it in the same L0C slot, and the mmads of the tile in the other
        slot need not wait for that epilogue (V runs in order)."""
        out = []
        body = loop.body.block
        seen = set()
        for plan in self.l0c_steps.values():
            if id(plan) in seen or plan.anchor is None or plan.anchor.parent_block() is not body:
                continue
            seen.add(id(plan))
            if slots < 2 or any(a not in homed or self.buffers[a].count != slots for a in (plan.c_alloc, plan.bias_alloc)):
                continue
            if plan.copy.parent_block() is not body or self.bias_slice(plan, body) is None:
                continue
            lo, hi = _static(loop.lb), _static(loop.ub)
            if lo is not None and hi is not None and hi - lo < 2 * slots:
                continue  # a rotation or two: the guarded loops and their flags cost more than the order saves
            out.append(plan)
        return out

    @staticmethod
    def bias_slice(plan: L0cBias, body: Block) -> list[Operation] | None:
        """The ops of `body` before the anchor that the bias copy's operands come from (index
        arithmetic and views only; None otherwise), in order."""
        before = set(list(body.ops)[:body.get_operation_index(plan.anchor)])
        need: set[Operation] = set()
        work = [v.owner for v in plan.bias_copy.operands if isinstance(v.owner, Operation)]
        while work:
            o = work.pop()
            if o not in before or o in need:
                continue
            if not (o.dialect_name() == "arith" and not o.regions) and not isinstance(o, t.ViewOp):
                return None
            need.add(o)
            work += [v.owner for v in o.operands if isinstance(v.owner, Operation)]
        return [o for o in body.ops if o in need]

    def arm(self, plan: L0cBias, loop: scf.ForOp, it: Index) -> None:
        """The bias of `loop`'s iteration `it`, if it runs (a loop of at most one trip up to
        the loop's end), into the current slot of its L0C tile: the index arithmetic the bias
        copy needs lowered again for that iteration (the current one's values restored after),
        then `l0c_bias_in`."""
        body = loop.body.block
        iv = body.args[0]
        prefix = self.slices.get(id(plan))
        if prefix is None:  # (the same ops for every iteration the plan is armed for)
            prefix = self.slices[id(plan)] = self.bias_slice(plan, body) or []
        keys = [iv, *(r for o in prefix for r in o.results)]
        saved = {v: self.values[v] for v in keys if v in self.values}
        hi = self.index(loop.ub)
        end = min(it + 1, hi) if isinstance(it, int) and isinstance(hi, int) else self.b.min_(self.b.add_(it, 1), hi)
        with self.b.loop(it, end, 1, "armed", max_trips=1) as j:
            self.values[iv] = j
            for o in prefix:
                self.lower_op(o)
            self.l0c_bias_in(plan)
        for v in keys:
            self.values.pop(v, None)
        self.values.update(saved)

    def resident_biases(self, plans: Sequence[L0cBias]) -> None:
        """At the kernel's start, each GM bias the plans read (`resident_bias_plans`), zero
        padded, into UB, and cast to f32 there if it is f16."""
        from ge.lowering.isa_vector import FlatVector, Tensor

        vec = FlatVector(self.b, self.target)
        for q in plans:
            gm, _ = self.buffer(q.bias_copy.source)
            if gm in self.bias_resident:
                continue
            total, n, elem = bias_extent(q), gm.type.get_shape()[0], gm.type.element_type
            staged = Tensor(self.b.buffer(isa.MemSpace.UB, [total], elem, name="bias_all")[0], 0, (total,), elem)
            if total > n:  # zeros, then the bias over them
                vec.dup(staged, 0.0)
            self.b.add(move_op(isa.CopyGmToUbOp, gm, staged.buf, [n]))
            if elem != f32:
                wide = Tensor(self.b.buffer(isa.MemSpace.UB, [total], f32, name="bias_all_f32")[0], 0, (total,), f32)
                vec.convert(staged, wide)
                staged = wide
            self.bias_resident[gm] = staged.buf

    def l0c_bias_in(self, plan: L0cBias) -> None:
        """The bias into the L0C tile before its mmad chain: its copy-in, its f16 -> f32 cast
        in UB, then one `broadcast_ub_to_l0c` per row fractal of the NZ tile (count = the
        column fractals, dst_gap = the other row fractals: every row gets the bias); with a
        resident bias (`resident_bias_plans`) only the broadcasts, from the tile's columns."""
        src_offset = None
        if plan.resident:
            gm, _ = self.buffer(plan.bias_copy.source)
            src = self.bias_resident[gm]
            src_offset = self.b.offset(self.index(plan.bias_copy.source_offsets[0]))
        else:
            self.copy(plan.bias_copy)
            src, _ = self.buffer(plan.bias_alloc)
        n = math.prod(plan.bias_alloc.type.get_shape())
        if plan.bias_cast and not plan.resident:
            bias = self.buffers[plan.bias_alloc]
            slots = self.bias_f32.get(id(plan))
            if slots is None:
                slots = self.bias_f32[id(plan)] = self.b.buffer(isa.MemSpace.UB, [n], f32, slots=len(bias.slots),
                                                                name="bias_f32")
            dst = slots[self.slot.get(plan.bias_alloc, 0) % len(slots)]
            from ge.lowering.isa_vector import FlatVector, Tensor

            FlatVector(self.b, self.target).convert(Tensor(src, 0, (n,), f16), Tensor(dst, 0, (n,), f32))
            src = dst
        c_buf, _ = self.buffer(plan.c_alloc)
        m, nc = plan.c_alloc.type.get_shape()
        m1, n1 = m // isa.FRACTAL_ROWS, nc // isa.FRACTAL_ROWS
        props = {"count": int_attr(n1), "len": int_attr(1), "src_gap": int_attr(0), "dst_gap": int_attr(m1 - 1)}
        so = [] if src_offset is None else [src_offset]
        for i in range(m1):  # (`create_op`: the op `BroadcastUbToL0cOp(src, c_buf, n1, 1, 0, m1 - 1, dst_offset=...)` builds)
            off = self.b.offset(i * isa.FRACTAL_ELEMS)
            self.b.add(create_op(isa.BroadcastUbToL0cOp, [src, so, c_buf, [] if off is None else [off]], props))

    def arith(self, op: Operation) -> None:
        operands = [self.b.value(self.index(v)) for v in op.operands]
        if op.regions or op.successors:
            new = op.clone()
            for i, v in enumerate(operands):
                new.operands[i] = v
        else:  # what `clone` makes, with the new operands from the start
            new = type(op).create(operands=operands, result_types=op.result_types, properties=op.properties,
                                  attributes=op.attributes, location=op.location)
        self.b.add(new)
        for old, r in zip(op.results, new.results):
            r.name_hint = old.name_hint
            self.values[old] = r

    def shares(self, loop: scf.ForOp) -> list[int] | None:
        """Each core's trip count of the block-split `loop` (lo = block * per, or its min
        with the total; hi = min(lo + per, total): tile_ir.block_range, a concat's pieces);
        None for any other loop."""
        per_op, hi_op = loop.lb.owner, loop.ub.owner
        if isinstance(per_op, arith.MinUIOp) and isinstance(hi_op, arith.MinUIOp) and \
                _static(per_op.rhs) is not None and _static(per_op.rhs) == _static(hi_op.rhs):
            per_op = per_op.lhs.owner  # (a total below blocks * per: the last cores run nothing)
        if isinstance(per_op, t.BlockIdxOp):
            per = 1
        elif isinstance(per_op, arith.MuliOp) and isinstance(per_op.lhs.owner, t.BlockIdxOp):
            per = _static(per_op.rhs)
        else:
            return None
        if not isinstance(hi_op, arith.MinUIOp) or per is None:
            return None
        add, total = hi_op.lhs.owner, _static(hi_op.rhs)
        if not (isinstance(add, arith.AddiOp) and add.lhs is loop.lb and _static(add.rhs) == per) or total is None:
            return None
        return [min(per, max(0, total - b * per)) for b in range(self.tile_kernel.block_dim.value.data)]

    def loop(self, op: scf.ForOp) -> None:
        if op.iter_args:
            raise self.fail(op, "loop-carried values are not supported")
        body = op.body.block
        lo, hi, step = self.index(op.lb), self.index(op.ub), self.index(op.step)
        homed = [a for a, loop in self.home.items() if loop is op]
        name = body.args[0].name_hint or "i"
        if homed and step == 1:
            slots = max(self.buffers[a].count for a in homed)
            plans = self.ahead_plans(op, homed, slots)
            for plan in plans:  # the first `slots` iterations' biases, before the loop
                self.armed[id(plan)] = (op, slots)
                for s_ in range(slots):
                    saved = {a: self.slot.get(a, 0) for a in homed}
                    for a in homed:
                        self.slot[a] = s_
                    self.arm(plan, op, self.b.add_(lo, s_) if s_ else lo)
                    self.slot.update(saved)

            def emit(it: Index, s: int) -> None:
                saved = {a: self.slot.get(a, 0) for a in homed}
                for a in homed:
                    self.slot[a] = s
                self.values[body.args[0]] = it
                self.lower_block(body)
                self.slot.update(saved)

            shares = self.shares(op) or ()
            # the Cube's output tiles rotate here and no core runs a whole round (one tile per
            # core at batch 1): the tile in the last round, so the loop of rounds (empty)
            # drains nothing before it (resnet50's classifier 5,139 -> 5,043 cycles)
            short = SHORT_ROUNDS and bool(shares) and max(shares) < slots and \
                any(t.space_of(a.type) == t.MemSpace.L0C for a in homed)
            guarded = GUARDED_ROUNDS and any(n % slots for n in shares) and (short or (
                not plans and not any(isinstance(o, scf.ForOp | t.MmadOp) for o in body.walk())))
            self.b.pipelined(lo, hi, slots, emit, name, guarded=guarded)
            return
        bound = op.attributes.get(isa.MAX_TRIPS_ATTR)
        with self.b.loop(lo, hi, step if isinstance(step, int) else 1, name,
                         max_trips=None if bound is None else bound.value.data) as it:
            if not isinstance(step, int):
                raise self.fail(op, "a loop step that is not a constant")
            self.values[body.args[0]] = it
            self.lower_block(body)


_UNKNOWN = object()  # (a class `KernelLowering.handlers` has not seen yet)
_HANDLERS: dict[type, str | None] = {}  # op class -> `_handler_of` (a fact of the class, not of a compile)


def _handler_of(op: Operation) -> str | None:
    """The name of the `KernelLowering` method that lowers ops of `op`'s class (None: nothing
    to emit). It depends on the class only, so `lower_op` looks it up once per class."""
    if isinstance(op, arith.ConstantOp | scf.YieldOp):
        return None
    for cls, name in ((t.AllocOp, "declare"), (t.ViewOp, "view"), (t.BlockIdxOp, "block_idx"), (t.CopyOp, "copy_op"),
                      (t.LoadIndexOp, "load_index"), (t.Img2colOp, "img2col"), (t.MmadOp, "mmad"),
                      (t.VectorOp, "vector"), (t.VPoolOp, "vpool"), (scf.ForOp, "loop")):
        if isinstance(op, cls):
            return name
    return "arith" if op.dialect_name() == "arith" else "unknown"


GUARDED_ROUNDS = True  # a multi-buffered loop's leftover iterations in its last round, not in a loop after it
# ... and a Cube tile loop whose every core's share is below one round (`KernelLowering.loop`)
SHORT_ROUNDS = True


MOVES = {
    (t.MemSpace.GM, t.MemSpace.L1): isa.CopyGmToL1Op,
    (t.MemSpace.GM, t.MemSpace.L0B): isa.CopyGmToL0bOp,
    (t.MemSpace.GM, t.MemSpace.UB): isa.CopyGmToUbOp,
    (t.MemSpace.UB, t.MemSpace.GM): isa.CopyUbToGmOp,
    (t.MemSpace.UB, t.MemSpace.L1): isa.CopyUbToL1Op,
    (t.MemSpace.L1, t.MemSpace.UB): isa.CopyL1ToUbOp,
    (t.MemSpace.L1, t.MemSpace.L0A): isa.CopyL1ToL0aOp,
    (t.MemSpace.L1, t.MemSpace.L0B): isa.CopyL1ToL0bOp,
    (t.MemSpace.UB, t.MemSpace.UB): isa.CopyUbToUbOp,
    (t.MemSpace.L0C, t.MemSpace.UB): isa.FixpipeOp,
    (t.MemSpace.L0C, t.MemSpace.GM): isa.FixpipeOp,
    (t.MemSpace.L0C, t.MemSpace.L1): isa.FixpipeOp,
}
# A core without FixPipe (`isa.fixpipe = false`, the coupled 910) reads L0C out only into
# UB, on the Vector pipe; the tile level stages every Cube result in UB anyway.
MOVES_WITHOUT_FIXPIPE = {**{k: v for k, v in MOVES.items() if v is not isa.FixpipeOp},
                         (t.MemSpace.L0C, t.MemSpace.UB): isa.CopyL0cToUbOp}


def moves_of(target: targets.Target) -> dict[tuple[t.MemSpace, t.MemSpace], type[isa._MoveOp]]:
    """The move instruction of each data path on `target`."""
    return MOVES if target.isa.fixpipe else MOVES_WITHOUT_FIXPIPE


def simplify(sizes: list[int], ss: list[int], ds: list[int], windows: list[tuple[Index, Index]] | None):
    """Drop size-1 dims and merge dims that are contiguous on both sides (fewer, longer
    bursts; the windowed dims stay as they are). A rank-0 move is one element."""
    if not sizes:
        sizes, ss, ds, windows = [1], [1], [1], None if windows is None else [(0, 1)]
    keep = [i for i, n in enumerate(sizes) if n > 1 or (windows is not None and windows[i] != (0, 1))]
    if not keep:
        keep = [len(sizes) - 1]
    keep.sort(key=lambda i: -ss[i])  # any dim order moves the same elements; this one merges most
    sizes, ss, ds = [sizes[i] for i in keep], [ss[i] for i in keep], [ds[i] for i in keep]
    windows = None if windows is None else [windows[i] for i in keep]
    out_n, out_s, out_d = [sizes[-1]], [ss[-1]], [ds[-1]]
    out_w = None if windows is None else [windows[-1]]
    for i in range(len(sizes) - 2, -1, -1):
        n, s, d = sizes[i], ss[i], ds[i]
        plain = windows is None or (windows[i] == (0, n) and out_w[0] == (0, out_n[0]))
        if plain and s == out_n[0] * out_s[0] and d == out_n[0] * out_d[0]:
            out_n[0] *= n
            out_s[0] = out_s[0]
            if out_w is not None:
                out_w[0] = (0, out_n[0])
            continue
        out_n.insert(0, n)
        out_s.insert(0, s)
        out_d.insert(0, d)
        if out_w is not None:
            out_w.insert(0, windows[i])
    return out_n, out_s, out_d, out_w


# --------------------------------------------------------------------------------------
# Double buffering: where each multi-buffer rotates
# --------------------------------------------------------------------------------------


def _loops_of(op: Operation, top: Operation) -> list[Operation]:
    out = []
    p = op.parent_op()
    while p is not None and p is not top:
        if isinstance(p, scf.ForOp):
            out.insert(0, p)
        p = p.parent_op()
    return out


def _users(v: SSAValue) -> Iterator[Operation]:
    for use in v.uses:
        user = use.operation
        if isinstance(user, t.ViewOp):
            yield from _users(user.result)
        else:
            yield user


def rotation_loops(kernel: t.KernelOp) -> dict[SSAValue, Operation]:
    """For every multi-buffered alloc, the innermost loop that contains all its uses: one
    iteration of that loop fills and drains one copy, so the copies alternate per iteration."""
    out: dict[SSAValue, Operation] = {}
    for op in kernel.body.walk():
        if not isinstance(op, t.AllocOp) or op.count.value.data < 2:
            continue
        common: list[Operation] | None = None
        for user in _users(op.result):
            loops = _loops_of(user, kernel)
            if common is None:
                common = loops
            else:
                n = 0
                while n < min(len(common), len(loops)) and common[n] is loops[n]:
                    n += 1
                common = common[:n]
        if common:
            out[op.result] = common[-1]
    return out


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


def isa_type(ty: Attribute) -> Attribute:
    assert isinstance(ty, MemRefType)
    return buffer_type(ty.get_shape(), ty.element_type, isa.MemSpace.GM)


def lower_kernel(kernel: t.KernelOp, target: targets.Target, double_buffer: bool = True,
                 fixpipe_quant: bool = True, l0c_bias: bool = True, resident_bias: bool = True) -> isa.KernelOp:
    args = kernel.body.block.args
    types = [isa_type(a.type) for a in args]
    n_in = kernel.num_ins.value.data
    b = IsaBuilder.new_kernel(kernel.sym_name.data, types[:n_in], types[n_in:], kernel.block_dim.value.data,
                              [a.name_hint or f"arg{i}" for i, a in enumerate(args)])
    k = KernelLowering(kernel, b, target)
    for a, new in zip(args, b.args):
        ty = a.type
        assert isinstance(ty, MemRefType)
        shape = tuple(ty.get_shape())
        k.buffers[a] = Buffer([new], shape, row_major_atoms(shape), t.MemSpace.GM)
    k.home = rotation_loops(kernel) if double_buffer else {}
    k.fixquants = plan_fixquants(kernel, target) if fixpipe_quant else {}
    if l0c_bias:
        l0c = plan_l0c_biases(kernel, target)
        k.fixquants.update({op: q for op, q in l0c.items() if op in (q.copy, q.vector)})
        k.l0c_steps = {op: q for op, q in l0c.items() if op not in (q.copy, q.vector)}
        resident = resident_bias_plans(kernel, list(k.l0c_steps.values()), target) if resident_bias else []
        for q in resident:
            q.resident = True
        k.resident_biases(resident)
    k.retyped = {q.acc: q.elem for q in k.fixquants.values()}
    k.unbacked = {q.acc for q in k.fixquants.values() if q.into is not None}
    k.lower_block(kernel.body.block)
    new = b.kernel
    new.location = kernel.location  # the ONNX nodes fused into the kernel (the model file records them)
    for name, attr in kernel.attributes.items():
        new.attributes[name] = attr
    kind = getattr(kernel, "kind", None)
    if kind is not None:
        new.attributes["ge.kind"] = kind if isinstance(kind, StringAttr) else StringAttr(str(kind))
    return new


def lower_module(module: ModuleOp, target: targets.Target, double_buffer: bool = True,
                 fixpipe_quant: bool = True, l0c_bias: bool = True, resident_bias: bool = True) -> None:
    for op in list(module.body.block.ops):
        if isinstance(op, t.KernelOp):
            new = lower_kernel(op, target, double_buffer, fixpipe_quant, l0c_bias, resident_bias)
            module.body.block.insert_op_before(new, op)
            op.detach()
            op.erase()
    # The launches are in the graph functions: the (many) isa kernels need no walk.
    launches = [op for top in module.body.block.ops if not isinstance(top, isa.KernelOp) for op in top.walk()]
    for op in launches:
        if isinstance(op, t.LaunchOp):
            launch = isa.LaunchOp(op.callee.root_reference.data, list(op.ins), list(op.outs))
            launch.attributes.update(op.attributes)
            op.parent_block().insert_op_before(launch, op)
            op.detach()
            op.erase()


@dataclass(frozen=True)
class ToIsaPass(ModulePass):
    """Tile kernels -> isa kernels; launches -> isa launches. `double-buffer=false` keeps
    one copy of every buffer (for measuring what double buffering buys);
    `fixpipe-quant=false` leaves the int8 epilogue on the Vector unit on a FixPipe chip (for
    measuring what FixPipe's quant mode buys); `l0c-bias=false` keeps the 910's Cube epilogue
    on the Vector unit (bias add and f32 -> f16 cast after a plain read-out) instead of the
    bias in L0C and the converting read-out (`L0cBias`); `resident-bias=false` copies and
    casts the bias per tile instead of once per kernel (`resident_bias_plans`)."""

    name = "to-isa"
    double_buffer: bool = True
    fixpipe_quant: bool = True
    l0c_bias: bool = True
    resident_bias: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, targets.target_of(op), self.double_buffer, self.fixpipe_quant, self.l0c_bias,
                     self.resident_bias)
