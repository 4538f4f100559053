"""`assign-layouts`: graph level -> layout level. Gives every tensor the storage format its
producer and consumers compute in on the AI Core (GE's format selection):

- Conv, pools, batch norm, LRN and concat work on NC1HWC0 feature maps; conv weights are
  converted to FRACTAL_Z at compile time (a new constant, no runtime `trans_data`).
- MatMul / Gemm weights are FRACTAL_NZ constants; their activations stay ND unless the
  producer already gives FRACTAL_NZ (the Cube's loads and stores convert ND on the way,
  nd2nz / nz2nd), and a result is FRACTAL_NZ when every consumer takes it (another MatMul,
  possibly through elementwise ops).
Which ops take which formats comes from their interfaces (dialects/graph.py): the
StorageFormats rule (feature_map, conv, matmul, channel_concat) and Elementwise.

- Elementwise ops compute in the format of their operands (converting a broadcast operand
  such as a per-channel constant along), shape-only ops read any format.
- Every other op, and the function's results, get plain tensors: a `layout.trans_data` is
  inserted at the boundary, once per value and format. Graph inputs and outputs keep the
  user's format.

int8: an activation zero point of a quant_conv2d / quant_matmul with constant weights is
first folded into its i32 bias (`absorb_zero_points`: the Cube has no zero point), and a
quantize / dequantize that the conv epilogue will compute (`_cube_epilogue_quant_ops`)
changes C0 in NC1HWC0 (i32 8 -> f16 16 -> i8 32); a standalone one computes on plain tensors.

The module's `ge.target` names the chip (`assign-layouts{target=ascend910b}` sets it when
absent; ascend910 by default); the pass checks that the chip's Cube fractals and vector
blocks are the ones the layout formats are defined with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import graph as g
from ge.dialects import layout as lt
from ge.dialects.layout import Format
from ge.transforms.layout_utils import (
    CONSTANT,
    broadcast_type,
    fold_constant,
    formatted,
    has_padding,
    padding_fill,
    padding_of,
    rebuild,
    scalar_value,
    single_element,
    trans_data,
)

NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NCHW, ND = (
    Format.NC1HWC0, Format.FRACTAL_Z, Format.FRACTAL_NZ, Format.NCHW, Format.ND,
)


def _storage_rule(op: Operation) -> str | None:
    """How `op` uses storage formats: its StorageFormats interface's rule (dialects/graph.py)."""
    formats = g.trait_of(op, g.StorageFormats)
    return formats.rule if formats is not None else None


def _is_matmul(op: Operation) -> bool:
    return _storage_rule(op) == "matmul"


def _logical(v: SSAValue) -> TensorType:
    t = lt.logical_type(v.type)
    assert isinstance(t, TensorType)
    return t


def _rank(v: SSAValue) -> int:
    return _logical(v).get_num_dims()


# Bits per element of the Cube input types a target file may list.
_CUBE_BITS = {"i4": 4, "i8": 8, "f16": 16, "bf16": 16, "f32": 32}


def check_target(target: targets.Target) -> None:
    """The layout formats assume 32-byte blocks and 16-row fractals (C0 elements of 32 B):
    refuse a chip whose vector blocks or Cube fractals are built otherwise."""
    problems = []
    if target.vector.block_bytes != lt.BLOCK_BYTES:
        problems.append(f"vector block of {target.vector.block_bytes} B (the formats use {lt.BLOCK_BYTES} B)")
    for elem, (m, k, n) in target.cube.items():
        bits = _CUBE_BITS.get(elem)
        if bits is None:
            problems.append(f"Cube input type '{elem}' (known: {', '.join(_CUBE_BITS)})")
        elif (m, k, n) != (lt.FRACTAL, 8 * lt.BLOCK_BYTES // bits, lt.FRACTAL):
            problems.append(f"{elem} Cube fractal {m}x{k}x{n} (the formats use "
                            f"{lt.FRACTAL}x{8 * lt.BLOCK_BYTES // bits}x{lt.FRACTAL})")
    if problems:
        raise PassFailedException(f"assign-layouts: target '{target.name}' does not fit the layout formats: " + "; ".join(problems))


def _nz_results(block: Block) -> set[SSAValue]:
    """Values whose every consumer takes FRACTAL_NZ: a MatMul/Gemm activation, or an
    elementwise op over the same matrix (other operands single elements or of the same
    matrix dims) whose own result is such a value."""
    wanted: set[SSAValue] = set()

    def takes_nz(v: SSAValue, user: Operation, index: int) -> bool:
        if _is_matmul(user):
            return index < 2 and _rank(v) >= 2
        if not lt.is_elementwise(user) or isinstance(user, g.CastOp) or user.results[0] not in wanted:
            return False
        out = _logical(user.results[0]).get_shape()
        return all(
            single_element(o, len(out)) or tuple(_logical(o).get_shape()[-2:]) == out[-2:] for o in user.operands
        )

    for op in reversed(list(block.ops)):
        if not _is_matmul(op) and not lt.is_elementwise(op):
            continue
        r = op.results[0]
        uses = list(r.uses)
        if uses and _rank(r) >= 2 and all(takes_nz(r, u.operation, u.index) for u in uses):
            wanted.add(r)
    return wanted


def absorb_zero_points(block: Block) -> None:
    """The Cube multiplies int8 by int8 with no zero point: an activation zero point z of a
    quant_conv2d / quant_matmul with constant weights goes into the i32 bias, exactly:
    sum((x - z) * w) + b = sum(x * w) + (b - z * sum(w)) -- per output channel (the filter's
    sum) or column (the column sum of B). A padded convolution first pads its input with z
    explicitly (`graph.pad`, then no pads: the padded taps hold z like the real ones)."""
    from ge.transforms.graph_utils import constant_value, make_constant

    for op in list(block.ops):
        if not isinstance(op, g.QuantConv2dOp | g.QuantMatMulOp):
            continue
        conv = isinstance(op, g.QuantConv2dOp)
        z = (op.input_offset if conv else op.lhs_offset).value.data
        w = constant_value(op.operands[1])
        if z == 0 or w is None or (not conv and w.ndim != 2):
            continue  # (the tile pass names what it cannot run)
        sums = w.astype(np.int64).sum(axis=(1, 2, 3) if conv else 0)
        b = constant_value(op.bias) if op.bias is not None else np.zeros(sums.shape, np.int64)
        if b is None:
            continue
        name = f"{op.results[0].name_hint or 'acc'}_bias_zp"
        new_bias = make_constant((b.astype(np.int64) - z * sums).astype(np.int32), None, name, like=op)
        block.insert_op_before(new_bias, op)
        props = dict(op.properties)
        x = op.operands[0]
        if conv:
            props["input_offset"] = g.int_attr(0)
            pads = g.get_ints(props, "pads")
            if any(pads):
                pad = g.PadOp.make([x], {"pads": g.int_array((0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3])),
                                         "mode": StringAttr("constant"), "value": g.float_attr(z)})
                pad.location = op.location
                block.insert_op_before(pad, op)
                x = pad.output
                props["pads"] = g.int_array((0, 0, 0, 0))
        else:
            props["lhs_offset"] = g.int_attr(0)
        new = type(op).make([x, op.operands[1], new_bias.output], props)
        new.location = op.location
        new.results[0].name_hint = op.results[0].name_hint
        block.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        block.erase_op(op)


def _cube_epilogue_quant_ops(block: Block) -> set[Operation]:
    """Dequantize / quantize ops that the fuse pass will put in a quantized conv's epilogue
    (the chain of sole users from graph.quant_conv2d through elementwise ops -- batch norm
    included -- ending at the first quantize): they compute in NC1HWC0 and change C0 on the way (i32 8 -> f16 16 ->
    i8 32), which the epilogue can do and a standalone vector kernel cannot."""
    out: set[Operation] = set()
    for op in block.ops:
        if not isinstance(op, g.QuantConv2dOp):
            continue
        tail = op.results[0]
        while len(uses := list(tail.uses)) == 1:
            user = uses[0].operation
            if not g.has_trait(user, g.Elementwise):  # incl. batch norm, dequantize, quantize
                break
            out.add(user)
            if isinstance(user, g.QuantizeOp):
                break
            tail = user.results[0]
    return {o for o in out if isinstance(o, g.QuantizeOp | g.DequantizeOp)}


class _Assigner:
    """Assigns formats in one function body, op by op in order."""

    def __init__(self, block: Block):
        self.block = block
        self.nz = _nz_results(block)
        self.requant = _cube_epilogue_quant_ops(block)
        self.converted: dict[tuple, SSAValue] = {}  # (value, type[, constant padding]) -> converted
        self.unsqueezed: dict[tuple[SSAValue, int], SSAValue] = {}
        self.fills: dict[Operation, float] = {}  # what an op's converted constants are padded with
        self.pads: dict[SSAValue, float | None] = {}  # padding_of's memo
        self.folded: list[g.ConstantOp] = []  # constants whose value was converted at compile time
        self.last_arg_conversion: Operation | None = None  # keeps argument conversions in argument order

    # ---- conversions ------------------------------------------------------------------

    def to_type(self, v: SSAValue, want: TensorType, fill: float = 0.0) -> SSAValue:
        """`v` in type `want`: itself, a cached conversion, a folded constant (its padding
        holding `fill`), or a new `trans_data` placed right after `v`'s definition (so
        every later user shares it)."""
        if v.type == want:
            return v
        if isinstance(v.owner, lt.TransDataOp):  # convert from the original, never in two hops
            return self.to_type(v.owner.input, want, fill)
        if isinstance(v.owner, g.ConstantOp) and fill:
            if (hit := self.converted.get((v, want, fill))) is not None:
                return hit
            new = fold_constant(v.owner, want, fill)
            self.folded.append(v.owner)
            self.place(v, new)
            self.converted[(v, want, fill)] = new.results[0]
            return new.results[0]
        if (hit := self.converted.get((v, want))) is not None:
            return hit
        if isinstance(v.owner, g.ConstantOp):
            new = fold_constant(v.owner, want)  # (with the leading dims of 1 a broadcast operand needs)
            self.folded.append(v.owner)
        elif (rank := lt.logical_type(want).get_num_dims()) != _rank(v):
            hit = self.to_type(self.unsqueeze(v, rank), want)
            self.converted[(v, want)] = hit
            return hit
        else:
            new = trans_data(v, want)
        self.place(v, new)
        self.converted[(v, want)] = new.results[0]
        return new.results[0]

    def unsqueeze(self, v: SSAValue, rank: int) -> SSAValue:
        """Plain `v` with leading dims of 1 up to `rank` (a broadcast operand whose storage
        format needs the result's rank, `layout.broadcast_rank`), placed after `v`."""
        plain = self.to_type(v, _logical(v))
        if (hit := self.unsqueezed.get((plain, rank))) is not None:
            return hit
        new = g.UnsqueezeOp.make([plain], {"axes": g.int_array(range(rank - _rank(v)))})
        new.output.name_hint = f"{plain.name_hint}_{rank}d" if plain.name_hint else None
        if isinstance(plain.owner, Operation):
            new.location = plain.owner.location
        self.place(plain, new)
        self.unsqueezed[(plain, rank)] = new.output
        return new.output

    def place(self, v: SSAValue, new: Operation) -> None:
        """Insert `new` (made from `v`) right after `v`'s definition; conversions of
        arguments stay in argument order."""
        if isinstance(v.owner, Operation):
            self.block.insert_op_after(new, v.owner)
        elif self.last_arg_conversion is not None:
            self.block.insert_op_after(new, self.last_arg_conversion)
        else:
            self.block.insert_op_before(new, self.block.first_op)
        if not isinstance(v.owner, Operation):
            self.last_arg_conversion = new

    # ---- per-op plans -----------------------------------------------------------------

    def plan(self, op: Operation) -> tuple[list[TensorType], list[TensorType]] | None:
        """Operand and result types `op` computes in, or None for plain tensors."""
        rule = _storage_rule(op)
        if rule == "conv" and _rank(op.operands[0]) == 4:
            types = [formatted(op.input.type, NC1HWC0, NCHW), formatted(op.weight.type, FRACTAL_Z, NCHW)]
            types += [_logical(b) for b in op.operands[2:]]
            return types, [formatted(op.output.type, NC1HWC0, NCHW)]
        if isinstance(op, g.QuantizeOp | g.DequantizeOp) and op not in self.requant:
            return None  # standalone: its C0 changes (f16 16 <-> i8 32 / i32 8), computed on plain tensors
        if rule == "feature_map" and _rank(op.operands[0]) == 4:
            x, *params = op.operands
            return [formatted(x.type, NC1HWC0, NCHW), *map(_logical, params)], [formatted(op.results[0].type, NC1HWC0, NCHW)]
        if rule == "channel_concat":
            return self.plan_concat(op)
        if rule == "matmul":
            return self.plan_matmul(op)
        if isinstance(op, g.ShapeOp):
            return [op.input.type], [_logical(op.output)]
        if lt.is_elementwise(op):
            return self.plan_elementwise(op)
        return None

    def plan_concat(self, op: g.ConcatOp):
        """NC1HWC0 when an input already is, and every input but the last fills whole C0
        blocks along a concatenated C."""
        if _rank(op.output) != 4 or not any(lt.layout_of(v.type) for v in op.inputs):
            return None
        k = lt.c0(_logical(op.output).element_type)
        if op.axis.value.data == 1 and any(_logical(v).get_shape()[1] % k for v in op.inputs[:-1]):
            return None
        return [formatted(v.type, NC1HWC0, NCHW) for v in op.inputs], [formatted(op.output.type, NC1HWC0, NCHW)]

    def plan_matmul(self, op: g.MatMulOp | g.GemmOp):
        def operand(v: SSAValue) -> TensorType:
            keep_nz = lt.layout_of(v.type) is not None and lt.layout_of(v.type).fmt == FRACTAL_NZ
            if _rank(v) >= 2 and (keep_nz or isinstance(v.owner, g.ConstantOp)):
                return formatted(v.type, FRACTAL_NZ, ND)
            return _logical(v)

        a, b, *c = op.operands
        result = op.results[0]
        out = formatted(result.type, FRACTAL_NZ, ND) if result in self.nz else _logical(result)
        return [operand(a), operand(b), *map(_logical, c)], [out]

    def plan_elementwise(self, op: Operation):
        """The format of the first operand that holds the whole result in a storage format;
        other operands are converted along if that format can broadcast them, else the op
        computes on plain tensors."""
        result = _logical(op.results[0])
        shape = result.get_shape()
        primary = next((lt.layout_of(v.type) for v in op.operands
                        if lt.layout_of(v.type) is not None and lt.logical_shape(v.type) == shape
                        and lt.layout_of(v.type).fmt in (NC1HWC0, FRACTAL_NZ)), None)
        if primary is None:
            return None
        fmt, origin = primary.fmt, primary.origin_fmt
        out = formatted(result, fmt, origin)
        if out is None:
            return None
        k = lt.c0(result.element_type)
        types = []
        for v in op.operands:
            if single_element(v, len(shape)):
                types.append(v.type)
                continue
            want = broadcast_type(v.type, fmt, origin, len(shape))
            if want is None or lt.c0(want.element_type) != k \
                    or not lt.storage_broadcasts(fmt, origin, lt.logical_shape(want), shape):
                return None
            types.append(want)
        if has_padding(out):
            pads = [self.padding(v, want) for v, want in zip(op.operands, types)]
            fill = padding_fill(op, pads)
            if fill is None:
                return None  # its padding would not be finite (e.g. 0 / 0)
            self.fills[op] = fill
        return types, [out]

    def padding(self, v: SSAValue, want: TensorType) -> float | str | None:
        """What the padding of operand `v` holds once in type `want` (`padding_fill`)."""
        if lt.layout_of(want) is None:
            return scalar_value(v)  # a single element, broadcast into the padding
        if isinstance(v.owner, lt.TransDataOp) and v.owner.input.type == want:
            v = v.owner.input  # to_type takes the original
        if lt.layout_of(v.type) is not None:
            return padding_of(v, self.pads)
        return CONSTANT if isinstance(v.owner, g.ConstantOp) else 0.0

    # ---- the walk ---------------------------------------------------------------------

    def run(self) -> None:
        for op in list(self.block.ops):
            if isinstance(op, g.ConstantOp | lt.TransDataOp):
                continue  # converted where a consumer needs them
            planned = self.plan(op) if isinstance(op, g.GraphOp) else None
            operand_types, result_types = planned or (
                [_logical(v) for v in op.operands], [lt.logical_type(r.type) for r in op.results]
            )
            fill = self.fills.pop(op, 0.0)
            for i, (v, want) in enumerate(zip(op.operands, operand_types)):
                if (new := self.to_type(v, want, fill)) is not v:
                    op.operands[i] = new
            if [r.type for r in op.results] != result_types:
                new_op = rebuild(op, op.operands, result_types)
                self.block.insert_op_before(new_op, op)
                for old, r in zip(op.results, new_op.results):
                    old.replace_all_uses_with(r)
                self.block.erase_op(op)
        for const in self.folded:  # the original of a converted weight, if nothing else uses it
            if const.parent is not None and not const.output.uses:
                self.block.erase_op(const)


@dataclass(frozen=True)
class AssignLayoutsPass(ModulePass):
    """Storage formats for every tensor of every function (see the module docstring)."""

    name = "assign-layouts"

    target: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            current = targets.target_of(op)
            if current is not None and self.target is not None and current.name != self.target:
                raise PassFailedException(
                    f"assign-layouts: the module targets '{current.name}' but the pass was given target={self.target}"
                )
            target = current or targets.set_target(op, self.target or targets.DEFAULT_TARGET)
        except targets.TargetError as e:
            raise PassFailedException(f"assign-layouts: {e}") from None
        check_target(target)
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                absorb_zero_points(f.body.block)
                _Assigner(f.body.block).run()
