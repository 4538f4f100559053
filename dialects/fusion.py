"""The `fusion` dialect: `fusion.group` regions, each a future kernel.

A group holds the graph/layout ops that will become one kernel (a Cube kernel with its
epilogue, a vector kernel for an elementwise chain, a reduction with its neighbours). It is
isolated from above: everything it reads comes in through explicit inputs (block arguments),
everything it produces leaves through `fusion.yield`. `kind` says which kernel template the
tiling stage uses; `rules` names the fusion rules that formed it (the names a fusion switch
file turns on and off), so every kernel can be traced back to the decisions that made it.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from ge.dialects.fast_verify import install as install_fast_verify
from ge.dialects.lazy_format import irdl_op_definition  # (the assembly format compiled on first use)

KINDS = ("cube_epilogue", "elementwise", "reduce", "pool", "opaque")


@irdl_op_definition
class GroupOp(IRDLOperation):
    """A fused kernel: inputs -> region -> results."""

    name = "fusion.group"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    kind = prop_def(StringAttr)
    rules = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())
    assembly_format = "$kind $rules `ins` `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"

    def __init__(self, inputs: list[SSAValue], result_types: list[Attribute], kind: str, rules: list[str], body: Region):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"kind": StringAttr(kind), "rules": ArrayAttr([StringAttr(r) for r in rules])},
            regions=[body],
        )

    @property
    def rule_names(self) -> list[str]:
        return [r.data for r in self.rules.data]

    def verify_(self) -> None:
        if self.kind.data not in KINDS:
            raise VerifyException(f"unknown group kind '{self.kind.data}' (one of {', '.join(KINDS)})")
        block = self.body.block
        _same_types("the body's arguments", block.args, "must match the inputs", self.inputs)
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("the body must end with fusion.yield")
        _same_types("fusion.yield gives", last.values, "but the group returns", self.outputs)
        if not any(op is not last for op in block.ops):
            raise VerifyException("a group must contain at least one op")


def _same_types(what: str, values, relation: str, others) -> None:
    a, b = [v.type for v in values], [v.type for v in others]
    if a != b:
        raise VerifyException(f"{what} ({', '.join(map(str, a))}) {relation} ({', '.join(map(str, b))})")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a fusion.group body with the values the group returns."""

    name = "fusion.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(GroupOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


Fusion = Dialect("fusion", [GroupOp, YieldOp], [])
install_fast_verify(Fusion)  # xDSL's verdict, faster (dialects/fast_verify.py)
