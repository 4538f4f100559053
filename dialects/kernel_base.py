"""What every kernel-symbol op shares (`tile.kernel`, `isa.kernel`): a symbol whose body's
arguments are the GM buffers it reads (`ins`) and writes (`outs`), run on `block_dim` blocks.

Custom syntax: `<op> @name ins(%a: T, ...) outs(%b: T, ...) block_dim N <extra> attributes {...} { body }`;
a subclass adds its own keywords after `block_dim` through `_parse_extra` / `_print_extra`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects.builtin import I64, FunctionType, IntegerAttr, StringAttr, SymbolRefAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

# Inside `symbols_indexed()`: per symbol table op, its symbols by name (built at the first
# lookup). None outside: every lookup scans.
_INDEX: ContextVar[dict[Operation, dict[StringAttr, Operation]] | None] = ContextVar("ge_symbol_index", default=None)


@contextmanager
def symbols_indexed() -> Iterator[None]:
    """Within this scope `lookup_symbol` finds a symbol through an index of its table, built
    at the table's first lookup, instead of scanning the table's ops. Why: every launch's
    verifier looks up its kernel, so verifying a module's launches scanned its symbols once
    per launch (densenet121: 244 launches among ~250 symbols). For a scope without
    insertions of symbols (a verify): a symbol added later is found by a scan, a removed or
    renamed one is not taken from the index."""
    token = _INDEX.set({})
    try:
        yield
    finally:
        _INDEX.reset(token)


def lookup_symbol(op: Operation, name: SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol(op, name)`: the first op of the nearest symbol table that
    names `name`, each op class's symbol trait found once per call (xDSL's per-op
    `get_trait` was most of a scan), through the table's index in `symbols_indexed()`."""
    if name.nested_references.data:
        return SymbolTable.lookup_symbol(op, name)
    anchor: Operation | None = op
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        raise ValueError(f"Operation {op} has no SymbolTable ancestor")
    want = name.root_reference
    block = anchor.regions[0].block
    indexes = _INDEX.get()
    if indexes is not None:
        index = indexes.get(anchor)
        if index is None:
            index = indexes[anchor] = {}
            for o, sym in _symbols(block):
                index.setdefault(sym, o)
        found = index.get(want)
        if found is not None and found.parent is block and _symbol_of(found) == want:
            return found
    for o, sym in _symbols(block):
        if sym == want:
            return o
    return None


def _symbol_of(op: Operation) -> StringAttr | None:
    trait = op.get_trait(SymbolOpInterface)
    return None if trait is None else trait.get_sym_attr_name(op)


def _symbols(block: Block) -> Iterator[tuple[Operation, StringAttr]]:
    """(op, its symbol name) of each symbol op of `block`, in order."""
    traits: dict[type, SymbolOpInterface | None] = {}
    for o in block.ops:
        cls = type(o)
        trait = traits.get(cls, traits)
        if trait is traits:
            trait = traits[cls] = o.get_trait(SymbolOpInterface)
        if trait is not None and (sym := trait.get_sym_attr_name(o)) is not None:
            yield o, sym


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
