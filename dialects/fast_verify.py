"""A faster IRDL check for ge's ops: the same verdict as xDSL's generated `verify_`.

Why: verifying resnet50's isa kernels (15k ops) took 0.9 s CPU, most of it in xDSL's
generic `OpDef.verify` -- its variadic-size bookkeeping (four lookups per op), its operand
accessors and its constraint objects -- rather than in ge's own `verify_` checks.

`install(dialect)` gives every op class of a dialect (ge's, and xDSL's arith and scf, whose
index arithmetic and loops are half the kernels' ops) a `verify_` that checks, per op:
operand and result counts (directly, or from the decoded `operandSegmentSizes`), their
types (a constraint that binds no variable -- a base type, an exact attribute, a
parametrized one of those -- as a plain test; any other through xDSL, in the same order
and with one `VerificationContext`, as `OpDef.verify` does), regions, successors,
properties, attributes and traits, then runs the op's own `verify_`. Whenever this check
finds anything wrong, or meets a shape it does not handle, it runs xDSL's generated
`verify_` instead, which raises xDSL's own message: a valid op passes both, an invalid
one fails with the same error (test_fast_verify.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Dialect, Operation
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    AttrSizedRegionSegments,
    AttrSizedResultSegments,
    AttrSizedSuccessorSegments,
    BaseAttr,
    EqAttrConstraint,
    EqIntConstraint,
    IRDLOperation,
    OptAttributeDef,
    OptionalDef,
    OptPropertyDef,
    ParamAttrConstraint,
    RangeLengthConstraint,
    RangeOf,
    VariadicDef,
    VarIRConstruct,
    VerificationContext,
    irdl_op_verify_regions,
    verify_variadic_size,
)

_Check = Callable[[Operation, VerificationContext], bool]


def _range_test(constr) -> Callable[[tuple], bool] | None:
    """A range constraint as a plain test, when it binds no variable (None: other)."""
    length = None
    if isinstance(constr, RangeLengthConstraint) and isinstance(constr.length, EqIntConstraint):
        length, constr = constr.length.value, constr.constraint
    if not isinstance(constr, RangeOf):
        return None
    inner = constr.constr
    if isinstance(inner, AnyAttr):
        return (lambda ts: True) if length is None else (lambda ts: len(ts) == length)
    if isinstance(inner, BaseAttr):  # the common case, inlined
        base = inner.attr
        if length == 1:
            return lambda ts: len(ts) == 1 and isinstance(ts[0], base)
        if length is None:
            return lambda ts: all(isinstance(t, base) for t in ts)
        return lambda ts: len(ts) == length and all(isinstance(t, base) for t in ts)
    test = _attr_test(inner)
    if test is None:
        return None
    if length is None:
        return lambda ts: all(test(t) for t in ts)
    return lambda ts: len(ts) == length and all(test(t) for t in ts)


def _types(defs) -> list[tuple[Callable[[tuple], bool] | None, Any]]:
    return [(_range_test(d.constr), d.constr) for _, d in defs]


def _check_types(tests, groups, ctx: VerificationContext) -> bool:
    for (test, constr), types in zip(tests, groups):
        if test is None:
            constr.verify(types, ctx)  # raises VerifyException
        elif not test(types):
            return False
    return True


def _values_check(op_def, construct: VarIRConstruct, option_cls) -> _Check | None:
    """The operand (or result) list check; None: leave it to xDSL."""
    defs = op_def.operands if construct == VarIRConstruct.OPERAND else op_def.results
    tests = _types(defs)
    options = [o for o in op_def.options if isinstance(o, option_cls)]
    values = (lambda op: op.operands) if construct == VarIRConstruct.OPERAND else (lambda op: op.results)
    if not any(isinstance(d, VariadicDef) for _, d in defs):
        if options:
            return None
        n = len(defs)

        def simple(op: Operation, ctx: VerificationContext) -> bool:
            vals = values(op)
            return len(vals) == n and _check_types(tests, [(v.type,) for v in vals], ctx)

        return simple
    variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
    if not options and len(variadic) == 1:  # one variadic: it takes what the others leave
        at, n = variadic[0], len(defs)
        most = 1 if isinstance(defs[at][1], OptionalDef) else None

        def one_variadic(op: Operation, ctx: VerificationContext) -> bool:
            vals = values(op)
            size = len(vals) - (n - 1)
            if size < 0 or (most is not None and size > most):
                return False
            types = [v.type for v in vals]
            groups = [(t,) for t in types[:at]] + [tuple(types[at:at + size])] + [(t,) for t in types[at + size:]]
            return _check_types(tests, groups, ctx)

        return one_variadic
    if not options or construct != VarIRConstruct.OPERAND or not options[0].as_property:
        return None
    name = options[0].attribute_name
    kinds = ["optional" if isinstance(d, OptionalDef) else "variadic" if isinstance(d, VariadicDef) else "single"
             for _, d in defs]
    decoded: dict[bytes, tuple[tuple[int, int], ...] | None] = {}

    def segments(sizes: DenseArrayBase) -> tuple[tuple[int, int], ...] | None:
        data = sizes.data.data
        if data in decoded:
            return decoded[data]
        values = [int(v) for v in sizes.get_values()]
        ok = len(values) == len(kinds) and all(
            n >= 0 and (k == "variadic" or (k == "optional" and n in (0, 1)) or n == 1)
            for n, k in zip(values, kinds))
        out = tuple((sum(values[:i]), n) for i, n in enumerate(values)) if ok else None
        decoded[data] = out
        return out

    def segmented(op: Operation, ctx: VerificationContext) -> bool:
        sizes = op.properties.get(name)
        if not isinstance(sizes, DenseArrayBase) or sizes.elt_type != i32:
            return False
        segs = segments(sizes)
        vals = op.operands
        if segs is None or sum(n for _, n in segs) != len(vals):
            return False
        return _check_types(tests, [tuple(v.type for v in vals[s:s + n]) for s, n in segs], ctx)

    return segmented


def _attr_test(constr) -> Callable[[Any], bool] | None:
    """An attribute constraint as a plain test, when it binds no variable (None: other)."""
    if isinstance(constr, AnyAttr):
        return lambda a: True
    if isinstance(constr, BaseAttr):
        base = constr.attr
        return lambda a: isinstance(a, base)
    if isinstance(constr, EqAttrConstraint):
        want = constr.attr
        return lambda a: a == want
    if isinstance(constr, ParamAttrConstraint):
        tests = [_attr_test(c) for c in constr.param_constrs]
        if any(t is None for t in tests):
            return None
        base, n = constr.base_attr, len(tests)

        def params(a) -> bool:
            if not isinstance(a, base):
                return False
            ps = a.parameters
            return len(ps) == n and all(t(p) for t, p in zip(tests, ps))

        return params
    return None


def _dict_check(defs: dict, optional_cls, container: Callable[[Operation], dict], closed: bool) -> _Check:
    """Properties (closed: no others allowed) or attributes, as `OpDef.verify` checks them."""
    items = [(name, isinstance(d, optional_cls), _attr_test(d.constr), d.constr) for name, d in defs.items()]
    names = frozenset(defs)

    def check(op: Operation, ctx: VerificationContext) -> bool:
        got = container(op)
        for name, optional, test, constr in items:
            attr = got.get(name)
            if attr is None:
                if optional and name not in got:
                    continue
                return False
            if test is None:
                constr.verify(attr, ctx)
            elif not test(attr):
                return False
        return not closed or names.issuperset(got)

    return check


def _op_check(op_def) -> _Check | None:
    """`op_def.verify` as one function that returns False (or raises) when the op is invalid;
    None when some part is left to xDSL entirely."""
    operands = _values_check(op_def, VarIRConstruct.OPERAND, AttrSizedOperandSegments)
    results = _values_check(op_def, VarIRConstruct.RESULT, AttrSizedResultSegments)
    if operands is None or results is None:
        return None
    plain_regions = not op_def.regions and not any(isinstance(o, AttrSizedRegionSegments) for o in op_def.options)
    plain_successors = (not op_def.successors
                        and not any(isinstance(o, AttrSizedSuccessorSegments) for o in op_def.options))
    properties = _dict_check(op_def.properties, OptPropertyDef, lambda op: op.properties, closed=True)
    attributes = _dict_check(op_def.attributes, OptAttributeDef, lambda op: op.attributes, closed=False)

    def check(op: Operation, ctx: VerificationContext) -> bool:
        if not (operands(op, ctx) and results(op, ctx)):
            return False
        if plain_regions:
            if op.regions:
                return False
        else:
            irdl_op_verify_regions(op, op_def, ctx)
        if plain_successors:
            if op.successors:
                return False
        else:
            verify_variadic_size(op, op_def, VarIRConstruct.SUCCESSOR)
        if not (properties(op, ctx) and attributes(op, ctx)):
            return False
        for trait in op_def.traits:
            trait.verify(op)
        return True

    return check


def _generated_parts(cls: type[IRDLOperation]):
    """(xDSL's generated verify_, the op's own verifier or None, its OpDef), or None when
    `verify_` is not the one `irdl_op_definition` generated."""
    generated = cls.verify_
    code = getattr(generated, "__code__", None)
    if code is None or code.co_freevars not in (("custom_verify", "op_def"), ("op_def",)):
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in generated.__closure__)))
    return generated, cells.get("custom_verify"), cells["op_def"]


def fast_verify_(cls: type[IRDLOperation]) -> Callable[[IRDLOperation], None] | None:
    """The faster `verify_` for `cls` (None: keep xDSL's)."""
    parts = _generated_parts(cls)
    if parts is None:
        return None
    generated, custom, op_def = parts
    check = _op_check(op_def)
    if check is None:
        return None

    def verify_(self: IRDLOperation) -> None:
        try:
            ok = check(self, VerificationContext())
        except Exception:  # xDSL's check raises its own message for it
            ok = False
        if not ok:
            generated(self)  # raises xDSL's error (were it to pass, it has run `custom` too)
            return
        if custom is not None:
            custom(self)

    verify_.__doc__ = generated.__doc__
    verify_.generated = generated  # xDSL's own (tests compare the two)
    return verify_


def install(dialect: Dialect) -> None:
    """Give every op class of `dialect` the faster `verify_` (where it applies)."""
    for cls in dialect.operations:
        new = fast_verify_(cls)
        if new is not None:
            cls.verify_ = new


__all__ = ["fast_verify_", "install"]
