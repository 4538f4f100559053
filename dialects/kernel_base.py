"""What every kernel-symbol op shares (`tile.kernel`, `isa.kernel`): a symbol whose body's
arguments are the GM buffers it reads (`ins`) and writes (`outs`), run on `block_dim` blocks.

Custom syntax: `<op> @name ins(%a: T, ...) outs(%b: T, ...) block_dim N <extra> attributes {...} { body }`;
a subclass adds its own keywords after `block_dim` through `_parse_extra` / `_print_extra`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, FunctionType, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import IRDLOperation, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException


class KernelBase(IRDLOperation):
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    num_ins = prop_def(IntegerAttr[I64])
    block_dim = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), NoTerminator())

    @staticmethod
    def kernel_props(name: str, types: Sequence[Attribute], num_ins: int, block_dim: int) -> dict[str, Attribute]:
        return {
            "sym_name": StringAttr(name), "function_type": FunctionType.from_lists(list(types), []),
            "num_ins": IntegerAttr(num_ins, i64), "block_dim": IntegerAttr(block_dim, i64),
        }

    @staticmethod
    def entry_region(types: Sequence[Attribute], body: Region | None) -> Region:
        return body if body is not None else Region(Block(arg_types=list(types)))

    @property
    def ins(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[: self.num_ins.value.data])

    @property
    def outs(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[self.num_ins.value.data:])

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        """Properties the subclass spells after `block_dim N`."""
        return {}

    def _print_extra(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_symbol_name().data

        def arguments(keyword: str) -> list[Parser.Argument]:
            parser.parse_keyword(keyword)
            return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)

        ins, outs = arguments("ins"), arguments("outs")
        parser.parse_keyword("block_dim")
        block_dim = parser.parse_integer(allow_negative=False, allow_boolean=False)
        extra = cls._parse_extra(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region([*ins, *outs])
        props = cls.kernel_props(name, [a.type for a in (*ins, *outs)], len(ins), block_dim)
        op = cls.build(properties={**props, **extra}, regions=[region])
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        for keyword, args in (("ins", self.ins), ("outs", self.outs)):
            printer.print_string(f" {keyword}(")
            printer.print_list(args, printer.print_block_argument)
            printer.print_string(")")
        printer.print_string(f" block_dim {self.block_dim.value.data}")
        self._print_extra(printer)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_signature(self) -> None:
        """The checks every kernel op makes; subclasses add the memory-space check."""
        args = self.body.block.args
        if [a.type for a in args] != list(self.function_type.inputs.data):
            raise VerifyException("the body's arguments must match the kernel's ins and outs")
        if not 0 <= self.num_ins.value.data <= len(args):
            raise VerifyException(f"num_ins {self.num_ins.value.data} is out of range for {len(args)} arguments")
        if self.block_dim.value.data < 1:
            raise VerifyException(f"block_dim must be >= 1, got {self.block_dim.value.data}")
