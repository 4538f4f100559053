"""The tile level's executable semantics: numpy on one array per buffer.

`run_tile(module, inputs)` runs a module after `bufferize` (and `tile`): the graph function
binds its inputs to GM arrays, allocates GM intermediates (zero-filled, so the padding of a
storage format stays zero), and each `tile.launch` runs its kernel once per core
(`tile.block_idx` = 0 .. block_dim - 1, one after the other). Local buffers are fresh per
core and filled with NaN (floats), so a tile program that reads a buffer it never wrote
gives NaN, not a plausible number.

Each kernel is decoded once into a flat list of Python closures over an environment of SSA
values (scalars are plain ints, buffers numpy arrays, views numpy views); `scf.for` runs its
body's list in a Python loop. One tile op is one vectorized numpy operation on a whole tile;
the graph ops inside `tile.vector` run through the reference kernels (`reference.evaluate`),
so a tile computes exactly what the graph level computes on the same elements.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
from threadpoolctl import threadpool_limits
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, TensorType, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import ConstantLike

from ge.dialects import tile as t
from ge.dialects.blobs import attr_array
from ge.dialects.dtypes import numpy_dtype
from ge.dialects.graph import argument_names
from ge.errors import GeError, InputError
from ge.runtime.index_arith import CMPI, INT_BINARY, wrap_index
from ge.runtime.reference import evaluate, find_function

Env = list
Instr = Callable[[Env], None]
_BLOCK_IDX, _RETURN = 0, 1  # reserved environment slots
_RESERVED = 2


class TileRuntimeError(GeError):
    """A tile program did something its ops do not allow (read outside a buffer without a
    pad value, an unknown op); the message names the kernel and the op."""


def _dtype(ty) -> np.dtype:
    assert isinstance(ty, MemRefType | TensorType)
    return numpy_dtype(ty.element_type)


def _shape(ty) -> tuple[int, ...]:
    return tuple(ty.get_shape())


_CUBE_SIDE = (t.MemSpace.L1, t.MemSpace.L0A, t.MemSpace.L0B)


def new_buffer(ty: MemRefType, fill_nan: bool) -> np.ndarray:
    """A buffer of type `ty`. The Cube's inputs (L1, L0A, L0B) keep f16 values in f32
    storage -- every f16 is exact in f32 -- so that mmad multiplies without converting."""
    dtype = _dtype(ty)
    if dtype == np.float16 and t.space_of(ty) in _CUBE_SIDE:
        dtype = np.dtype(np.float32)
    if fill_nan and dtype.kind == "f":
        return np.full(_shape(ty), np.nan, dtype=dtype)
    return np.zeros(_shape(ty), dtype=dtype)


# --------------------------------------------------------------------------------------
# Kernels of the tile ops (pure numpy; also used directly by tests)
# --------------------------------------------------------------------------------------


def read_rect(src: np.ndarray, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int],
              pad: float | None) -> np.ndarray | None:
    """src[offsets + i * strides] for i < sizes; elements outside `src` are `pad`.
    Returns None when an element is outside and there is no pad value."""
    inside, parts, lows, highs = True, [], [], []
    for o, n, s, d in zip(offsets, sizes, strides, src.shape):
        lo = 0 if o >= 0 else min(n, (-o + s - 1) // s)  # first i with o + i*s >= 0
        hi = min(n, (d - 1 - o) // s + 1) if o <= d - 1 else 0  # past the last i with o + i*s < d
        hi = max(hi, lo)
        if lo != 0 or hi != n:
            inside = False
        lows.append(lo)
        highs.append(hi)
        parts.append(slice(o + lo * s, o + (hi - 1) * s + 1 if hi > lo else o + lo * s, s))
    if inside:
        return src[tuple(parts)]
    if pad is None:
        return None
    out = np.full(tuple(sizes), pad, dtype=src.dtype)
    if all(h > lo for lo, h in zip(lows, highs)):
        out[tuple(slice(lo, h) for lo, h in zip(lows, highs))] = src[tuple(parts)]
    return out


def write_rect(dst: np.ndarray, offsets: Sequence[int], value: np.ndarray) -> None:
    """dst[offsets + i] = value[i]; elements falling outside `dst` are dropped."""
    dst_parts, val_parts = [], []
    for o, n, d in zip(offsets, value.shape, dst.shape):
        lo, hi = max(0, -o), min(n, d - o)
        if hi <= lo:
            return
        dst_parts.append(slice(o + lo, o + hi))
        val_parts.append(slice(lo, hi))
    dst[tuple(dst_parts)] = value[tuple(val_parts)]


def img2col(fm: np.ndarray, out_shape: tuple[int, int], m: int, k: int, c: int, h: int, *,
            kernel, strides, dilations, pads, out_size, channels: int, c0: int) -> np.ndarray:
    """The Cube A tile of `tile.img2col` (see its op documentation)."""
    tm, tk = out_shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl), (oh_n, ow_n) = kernel, strides, dilations, pads, out_size
    p = m + np.arange(tm)
    oh, ow = p // ow_n, p % ow_n
    kk = k + np.arange(tk)
    cc0 = kk % c0
    rest = kk // c0
    kwi = rest % kw
    rest = rest // kw
    khi = rest % kh
    cg = (rest // kh) * c0 + cc0  # group-relative channel
    bc = cg - c  # channel within the buffer
    five = fm.ndim == 5
    nb = fm.shape[1] * (fm.shape[4] if five else 1)
    rows, width = fm.shape[2], fm.shape[3]
    ih = (oh * sh - pt - h)[:, None] + (khi * dh)[None, :]
    iw = (ow * sw - pl)[:, None] + (kwi * dw)[None, :]
    valid = ((p < oh_n * ow_n)[:, None] & ((cg < channels) & (bc >= 0) & (bc < nb))[None, :]
             & (ih >= 0) & (ih < rows) & (iw >= 0) & (iw < width))
    ihc, iwc = np.clip(ih, 0, rows - 1), np.clip(iw, 0, width - 1)
    bcc = np.clip(bc, 0, nb - 1)[None, :]
    if five:
        vals = fm[0, bcc // c0, ihc, iwc, bcc % c0]
    else:
        vals = fm[0, bcc, ihc, iwc]
    return np.where(valid, vals, np.zeros((), dtype=fm.dtype))


def vpool(src: np.ndarray, out_hw: tuple[int, int], h: int, w: int, *, mode: str, kernel, strides,
          dilations, in_size, pads, count_include_pad: bool) -> np.ndarray:
    """The window max / average of `tile.vpool` (see its op documentation)."""
    (kh, kw), (sh, sw), (dh, dw), (hn, wn) = kernel, strides, dilations, in_size
    oh, ow = out_hw
    ct = np.float32 if src.dtype.kind == "f" and src.dtype.itemsize < 4 else src.dtype
    x = src.astype(ct, copy=False)
    lo = (-pads[0], -pads[1]) if count_include_pad else (0, 0)
    hi = (hn + pads[2], wn + pads[3]) if count_include_pad else (hn, wn)
    shape = [1] * x.ndim
    shape[2], shape[3] = oh, ow
    out = count = None
    with np.errstate(all="ignore"):
        for a in range(kh):
            r = h + np.arange(oh) * sh + a * dh
            vr = (r >= 0) & (r < hn)
            cr = (r >= lo[0]) & (r < hi[0])
            for b in range(kw):
                col = w + np.arange(ow) * sw + b * dw
                valid = (vr[:, None] & ((col >= 0) & (col < wn))[None, :]).reshape(shape)
                view = x[:, :, a * dh:a * dh + (oh - 1) * sh + 1:sh, b * dw:b * dw + (ow - 1) * sw + 1:sw]
                if mode == "max":
                    val = np.where(valid, view, -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
                    out = val if out is None else np.maximum(out, val)
                else:
                    val = np.where(valid, view, 0)
                    out = val if out is None else out + val
                    counted = (cr[:, None] & ((col >= lo[1]) & (col < hi[1]))[None, :]).reshape(shape)
                    count = counted.astype(ct) if count is None else count + counted
        if mode == "avg":
            out = out / count
    return out.astype(src.dtype)


def run_graph_block(block: Block, consts: dict[SSAValue, np.ndarray], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The graph/layout ops of a tile.vector / tile.untiled body on `args`."""
    env: dict[SSAValue, np.ndarray] = dict(consts)
    env.update(zip(block.args, args))
    for op in block.ops:
        if isinstance(op, t.YieldOp):
            return [env[v] for v in op.values]
        if op in consts:
            continue
        env.update(zip(op.results, evaluate(op, [env[v] for v in op.operands])))
    raise TileRuntimeError("a tile.vector body has no tile.yield")


# --------------------------------------------------------------------------------------
# Decoding: ops -> closures
# --------------------------------------------------------------------------------------



class _Decoder:
    """Turns one kernel body (or the graph function) into closures over an environment
    list: every SSA value gets a slot number at decode time (slot 0: the core index, slot
    1: the returned values)."""

    def __init__(self, where: str):
        self.where = where
        self.slots: dict[SSAValue, int] = {}

    def s(self, v: SSAValue) -> int:
        if v not in self.slots:
            self.slots[v] = len(self.slots) + _RESERVED
        return self.slots[v]

    @property
    def size(self) -> int:
        return len(self.slots) + _RESERVED

    def fail(self, op: Operation, message: str) -> TileRuntimeError:
        return TileRuntimeError(f"{self.where}: {op.name}: {message}")

    def block(self, block: Block) -> list[Instr]:
        out = []
        for op in block.ops:
            instr = self.op(op)
            if instr is not None:
                out.append(instr)
        return out

    def op(self, op: Operation) -> Instr | None:
        s = self.s
        if isinstance(op, scf.YieldOp):
            if op.operands:
                raise self.fail(op, "loop-carried values are not supported")
            return None
        if isinstance(op, arith.ConstantOp):
            value = op.value
            v = int(value.value.data) if isinstance(value, IntegerAttr) else float(value.value.data)
            if isinstance(value, IntegerAttr) and value.type == i1:
                v = bool(value.value.data)
            r = s(op.result)
            return lambda env: env.__setitem__(r, v)
        if type(op) in INT_BINARY:
            fn, a, b, r = INT_BINARY[type(op)], s(op.operands[0]), s(op.operands[1]), s(op.results[0])
            return lambda env: env.__setitem__(r, fn(env[a], env[b]))
        if isinstance(op, arith.CmpiOp):
            fn, a, b, r = CMPI[op.predicate.value.data], s(op.lhs), s(op.rhs), s(op.result)
            return lambda env: env.__setitem__(r, bool(fn(env[a], env[b])))
        if isinstance(op, arith.SelectOp):
            c, a, b, r = s(op.cond), s(op.lhs), s(op.rhs), s(op.result)
            return lambda env: env.__setitem__(r, env[a] if env[c] else env[b])
        if isinstance(op, arith.IndexCastOp):
            a, r = s(op.input), s(op.result)
            return lambda env: env.__setitem__(r, env[a])
        if isinstance(op, scf.ForOp):
            return self.for_(op)
        if isinstance(op, t.BlockIdxOp):
            r = s(op.result)
            return lambda env: env.__setitem__(r, env[_BLOCK_IDX])
        if isinstance(op, t.AllocOp):
            ty, r = op.result.type, s(op.result)
            local = t.space_of(ty) != t.MemSpace.GM
            return lambda env: env.__setitem__(r, new_buffer(ty, fill_nan=local))
        if isinstance(op, t.ViewOp):
            a, r, shape = s(op.source), s(op.result), _shape(op.result.type)
            return lambda env: env.__setitem__(r, env[a].reshape(shape))
        if isinstance(op, t.ConstOp):
            r = s(op.result)
            data = np.ascontiguousarray(attr_array(op.value)).reshape(_shape(op.result.type))
            data = data.astype(_dtype(op.result.type), copy=False)
            return lambda env: env.__setitem__(r, data)
        if isinstance(op, t.CopyOp):
            return self.copy(op)
        if isinstance(op, t.LoadIndexOp):
            a, r, offs, bound = s(op.source), s(op.result), tuple(s(v) for v in op.offsets), op.bound.value.data
            return lambda env: env.__setitem__(r, wrap_index(int(env[a][tuple(env[v] for v in offs)]), bound))
        if isinstance(op, t.Img2colOp):
            return self.img2col(op)
        if isinstance(op, t.MmadOp):
            return self.mmad(op)
        if isinstance(op, t.VectorOp | t.UntiledOp):
            return self.vector(op)
        if isinstance(op, t.VPoolOp):
            return self.vpool(op)
        raise self.fail(op, "the tile interpreter has no semantics for this op")

    def for_(self, op: scf.ForOp) -> Instr:
        if op.iter_args:
            raise self.fail(op, "loop-carried values are not supported")
        body = self.block(op.body.block)
        lb, ub, step, iv = self.s(op.lb), self.s(op.ub), self.s(op.step), self.s(op.body.block.args[0])

        def run(env: Env) -> None:
            for i in range(env[lb], env[ub], env[step]):
                env[iv] = i
                for instr in body:
                    instr(env)

        return run

    def copy(self, op: t.CopyOp) -> Instr:
        src, dst = self.s(op.source), self.s(op.dest)
        so, do = tuple(self.s(v) for v in op.source_offsets), tuple(self.s(v) for v in op.dest_offsets)
        sizes, strides, perm = op.static_sizes, op.static_strides, op.static_perm
        permute = perm != tuple(range(len(perm)))
        pad = None if op.pad is None else float(op.pad.value.data)
        fail = self.fail
        window = tuple(self.s(v) for v in op.window)

        def run(env: Env) -> None:
            offsets = [env[v] for v in so]
            source = env[src]
            rect = read_rect(source, offsets, sizes, strides, pad)
            if rect is None:
                raise fail(op, f"reads outside the source {list(source.shape)} at offsets {offsets} sizes "
                               f"{list(sizes)} and has no pad value")
            if window:  # positions outside the copy's own window read as pad
                keep = np.ones(sizes, dtype=bool)
                for d, n in enumerate(sizes):
                    i = np.arange(n).reshape([-1 if e == d else 1 for e in range(len(sizes))])
                    keep &= (i >= env[window[2 * d]]) & (i < env[window[2 * d + 1]])
                rect = np.where(keep, rect, np.asarray(pad, dtype=rect.dtype))
            if permute:
                rect = rect.transpose(perm)
            write_rect(env[dst], [env[v] for v in do], rect)

        return run

    def img2col(self, op: t.Img2colOp) -> Instr:
        src, dst = self.s(op.source), self.s(op.dest)
        m, k, c, h = self.s(op.m), self.s(op.k), self.s(op.c), self.s(op.h)
        params = dict(
            kernel=t._ints(op.kernel), strides=t._ints(op.strides), dilations=t._ints(op.dilations),
            pads=t._ints(op.pads), out_size=t._ints(op.out_size), channels=op.channels.value.data,
            c0=op.c0.value.data,
        )
        gather = _Img2col(_shape(op.dest.type), **params)

        def run(env: Env) -> None:
            env[dst][...] = gather(env[src], env[m], env[k], env[c], env[h])

        return run

    def mmad(self, op: t.MmadOp) -> Instr:
        a, b, c, init = self.s(op.a), self.s(op.b), self.s(op.c), self.s(op.init)
        column = None if op.b_column is None else self.s(op.b_column)
        n = op.c.type.get_shape()[1]
        acc = _dtype(op.c.type)

        def run(env: Env) -> None:
            rhs = env[b] if column is None else env[b][:, env[column]:env[column] + n]
            lhs, rhs, out = env[a].astype(acc, copy=False), rhs.astype(acc, copy=False), env[c]
            if env[init]:
                np.matmul(lhs, rhs, out=out)
            else:
                out += lhs @ rhs

        return run

    def vector(self, op: t.VectorOp | t.UntiledOp) -> Instr:
        block = op.body.block
        consts = {}
        for inner in block.ops:
            if inner.has_trait(ConstantLike):
                consts.update(zip(inner.results, evaluate(inner, [])))
        ins, outs = tuple(self.s(v) for v in op.ins), tuple(self.s(v) for v in op.outs)
        in_shapes = [_shape(a.type) for a in block.args]
        where = self.where

        def run(env: Env) -> None:
            args = [env[v].reshape(shape) for v, shape in zip(ins, in_shapes)]
            try:
                results = run_graph_block(block, consts, args)
            except (NotImplementedError, RuntimeError) as e:
                raise TileRuntimeError(f"{where}: {op.name}: {e}") from None
            for v, r in zip(outs, results):
                env[v].reshape(-1)[...] = np.asarray(r).reshape(-1)

        return run

    def vpool(self, op: t.VPoolOp) -> Instr:
        src, dst, h, w = self.s(op.source), self.s(op.dest), self.s(op.h), self.s(op.w)
        params = dict(
            mode=op.mode.data, kernel=t._ints(op.kernel), strides=t._ints(op.strides),
            dilations=t._ints(op.dilations), in_size=t._ints(op.in_size), pads=t._ints(op.pads),
            count_include_pad=op.count_include_pad is not None,
        )
        out_hw = _shape(op.dest.type)[2:4]

        def run(env: Env) -> None:
            env[dst][...] = vpool(env[src], out_hw, env[h], env[w], **params)

        return run


class _Img2col:
    """`img2col` as one gather: the address of an NC1HWC0 / NCHW element is linear in
    (ih, iw) and in (channel, kh, kw), so A = F[row + col] over the flattened feature map
    with a per-pixel `row` and a per-K `col` offset (both cached: tiles repeat them); masks
    cover the left/right pads, pixels past the output and channels past the group. Rows
    outside the buffer (never produced by `tile`, which loads every row a tile needs) take
    the general `img2col`."""

    def __init__(self, shape, **params):
        self.shape, self.params = shape, params
        self.rows: dict[tuple, tuple | None] = {}
        self.cols: dict[tuple, tuple] = {}

    def row_part(self, m: int, h: int, fm: np.ndarray):
        key = (m, h, fm.shape)
        hit = self.rows.get(key, False)
        if hit is not False:
            return hit
        p = self.params
        (kh, _), (sh, sw), (dh, _), (pt, pl), (oh_n, ow_n) = p["kernel"], p["strides"], p["dilations"], p["pads"], p["out_size"]
        rows, width = fm.shape[2], fm.shape[3]
        pix = m + np.arange(self.shape[0])
        pvalid = pix < oh_n * ow_n
        oh, ow = pix // ow_n, pix % ow_n
        row0 = oh * sh - pt - h
        live = row0[pvalid]
        if live.size and (live.min() < 0 or live.max() + (kh - 1) * dh >= rows):
            out = None
        else:
            iw0 = ow * sw - pl
            row0 = np.where(pvalid, row0, 0)
            off = (row0 * width + iw0) * (fm.shape[4] if fm.ndim == 5 else 1)
            out = (off, iw0, pvalid, bool(pvalid.all()))
        if len(self.rows) > 4096:
            self.rows.clear()
        self.rows[key] = out
        return out

    def col_part(self, k: int, c: int, fm: np.ndarray):
        key = (k, c, fm.shape)
        hit = self.cols.get(key)
        if hit is not None:
            return hit
        p = self.params
        (kh, kw), (dh, dw), c0, channels = p["kernel"], p["dilations"], p["c0"], p["channels"]
        rows, width = fm.shape[2], fm.shape[3]
        kk = k + np.arange(self.shape[1])
        cc0 = kk % c0
        rest = kk // c0
        kwd = rest % kw * dw
        rest = rest // kw
        khd = rest % kh * dh
        cg = (rest // kh) * c0 + cc0
        bc = cg - c
        five = fm.ndim == 5
        nb = fm.shape[1] * (fm.shape[4] if five else 1)
        cvalid = (cg < channels) & (bc >= 0) & (bc < nb)
        bc = np.where(cvalid, bc, 0)
        if five:  # [1, C1, R, W, C0]: ((c1 * R + ih) * W + iw) * C0 + c0
            off = ((bc // c0 * rows + khd) * width + kwd) * c0 + bc % c0
        else:  # [1, C, R, W]: (ch * R + ih) * W + iw
            off = (bc * rows + khd) * width + kwd
        out = (off, kwd, cvalid, bool(cvalid.all()))
        self.cols[key] = out
        return out

    def __call__(self, fm: np.ndarray, m: int, k: int, c: int, h: int) -> np.ndarray:
        p = self.params
        r = self.row_part(m, h, fm)
        if r is None:
            return img2col(fm, self.shape, m, k, c, h, **p)
        row_off, iw0, pvalid, all_p = r
        col_off, kwd, cvalid, all_c = self.col_part(k, c, fm)
        (_, kw), (_, sw), (_, dw), (_, pl), (_, ow_n) = p["kernel"], p["strides"], p["dilations"], p["pads"], p["out_size"]
        width = fm.shape[3]
        idx = row_off[:, None] + col_off[None, :]
        valid = None
        if not (all_p and all_c):
            valid = pvalid[:, None] & cvalid[None, :]
        if pl > 0 or (ow_n - 1) * sw - pl + (kw - 1) * dw >= width:
            iw = iw0[:, None] + kwd[None, :]
            inside = (iw >= 0) & (iw < width)
            valid = inside if valid is None else valid & inside
        if valid is None:
            return fm.reshape(-1).take(idx)
        vals = fm.reshape(-1).take(np.where(valid, idx, 0))
        return np.where(valid, vals, np.zeros((), dtype=fm.dtype))


@contextlib.contextmanager
def _blas_threads(n: int) -> Iterator[None]:
    """Run with `n` BLAS threads: the interpreter multiplies thousands of small tiles, for
    which BLAS threads only add synchronization (measured 30x slower on a busy 2-core
    machine)."""
    with threadpool_limits(limits=n, user_api="blas"):
        yield


class KernelProgram:
    """One decoded `tile.kernel`: `run(args)` executes it on every core."""

    def __init__(self, kernel: t.KernelOp):
        self.name = kernel.sym_name.data
        self.block_dim = kernel.block_dim.value.data
        decoder = _Decoder(f"kernel @{self.name}")
        self.args = tuple(decoder.s(a) for a in kernel.body.block.args)
        self.body = decoder.block(kernel.body.block)
        self.size = decoder.size

    def run(self, buffers: Sequence[np.ndarray]) -> None:
        for bid in range(self.block_dim):
            env: Env = [None] * self.size
            env[_BLOCK_IDX] = bid
            for slot, buf in zip(self.args, buffers):
                env[slot] = buf
            for instr in self.body:
                instr(env)


class TileProgram:
    """A module at the tile level, decoded once; `run(inputs)` may be called many times."""

    def __init__(self, module: ModuleOp, entry: str = "main"):
        self.function = find_function(module, entry)
        self.kernels = {op.sym_name.data: KernelProgram(op) for op in module.ops if isinstance(op, t.KernelOp)}
        self.decoder = _Decoder(f"@{self.function.sym_name.data}")
        self.args = tuple(self.decoder.s(a) for a in self.function.body.block.args)
        self.steps = self._decode(self.function.body.block)

    def _decode(self, block: Block) -> list[Instr]:
        decoder = self.decoder
        steps: list[Instr] = []
        for op in block.ops:
            if isinstance(op, t.LaunchOp):
                kernel = self.kernels[op.callee.root_reference.data]
                operands = tuple(decoder.s(v) for v in op.operands)
                steps.append(lambda env, k=kernel, vs=operands: k.run([env[v] for v in vs]))
            elif isinstance(op, func.ReturnOp):
                values = tuple(decoder.s(v) for v in op.arguments)
                steps.append(lambda env, vs=values: env.__setitem__(_RETURN, [env[v] for v in vs]))
            else:
                steps.append(decoder.op(op))
        return steps

    def run(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
        args = self.function.body.block.args
        if isinstance(inputs, Mapping):
            names = argument_names(self.function)
            missing = [n for n in names if n not in inputs]
            if missing:
                raise InputError(f"@{self.function.sym_name.data} takes inputs {names}; missing {missing}")
            inputs = [inputs[n] for n in names]
        if len(inputs) != len(args):
            raise InputError(f"@{self.function.sym_name.data} takes {len(args)} inputs, got {len(inputs)}")
        env: Env = [None] * self.decoder.size
        with _blas_threads(1):
            self._run(env, args, inputs)
        return env[_RETURN]

    def _run(self, env: Env, args, inputs) -> None:
        for a, slot, x in zip(args, self.args, inputs):
            arr = np.asarray(x)
            if arr.shape != _shape(a.type):
                raise InputError(f"input %{a.name_hint or a.index} has type {a.type} but got shape {list(arr.shape)}")
            env[slot] = np.array(arr, dtype=_dtype(a.type))
        for step in self.steps:
            step(env)


def run_tile(module: ModuleOp, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray], entry: str = "main") -> list[np.ndarray]:
    """Run function `entry` of a tile-level module on `inputs` (by name or in order)."""
    return TileProgram(module, entry).run(inputs)
