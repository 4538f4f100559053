"""`irdl_op_definition` with the assembly format compiled on first use.

Why: xDSL's `irdl_op_definition` parses each op's `assembly_format` string into a format
program when the class is defined -- a quarter of the CPU time of importing ge's dialects
(resnet50's `ge-compile` process never prints nor parses an op: its model file stores no
IR text by default). Here the op is defined without the format, then given `parse` and
`print` that build xDSL's own `FormatProgram` from the same string and OpDef on their
first call: the same text in and out, only later. The OpDef keeps the format string.
"""

from __future__ import annotations

from typing import TypeVar

from xdsl.irdl import IRDLOperation, PyRDLOpDefinitionError
from xdsl.irdl import irdl_op_definition as _eager_definition

OpT = TypeVar("OpT", bound=type[IRDLOperation])


class _Format:
    """One op's format program, compiled from its string when first asked for."""

    __slots__ = ("op_def", "program", "text")

    def __init__(self, text: str, op_def) -> None:
        self.text, self.op_def, self.program = text, op_def, None

    def get(self):
        if self.program is None:
            from xdsl.irdl.declarative_assembly_format import FormatProgram
            from xdsl.utils.exceptions import ParseError

            try:
                self.program = FormatProgram.from_str(self.text, self.op_def)
            except ParseError as e:
                raise PyRDLOpDefinitionError("Error during the parsing of the assembly format: ", e.args) from e
        return self.program


def irdl_op_definition(cls: OpT) -> OpT:
    """xDSL's `irdl_op_definition`, the assembly format compiled lazily (module docstring)."""
    text = cls.assembly_format
    if text is None:
        return _eager_definition(cls)
    cls.assembly_format = None  # (xDSL would compile it now)
    try:
        _eager_definition(cls)
    finally:
        cls.assembly_format = text
    op_def = cls.get_irdl_definition()
    op_def.assembly_format = text
    fmt = _Format(text, op_def)

    @classmethod
    def parse(klass, parser):
        return fmt.get().parse(parser, klass)

    def print_(self, printer):
        return fmt.get().print(printer, self)

    cls.parse, cls.print = parse, print_
    return cls


__all__ = ["irdl_op_definition"]
