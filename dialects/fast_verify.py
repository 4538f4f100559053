"""A faster IRDL check for ge's ops: the same verdict as xDSL's generated `verify_`.

Why: verifying resnet50's isa kernels (15k ops) took 0.9 s CPU, most of it in xDSL's
generic `OpDef.verify` -- its variadic-size bookkeeping (four lookups per op), its operand
accessors and its constraint objects -- rather than in ge's own `verify_` checks.

`install(dialect)` gives every op class of a dialect (ge's, and xDSL's arith and scf, whose
index arithmetic and loops are half the kernels' ops) a `verify_` that checks, per op:
operand and result counts (directly, or from the decoded `operandSegmentSizes`), their
types (a base type, an exact attribute, a parametrized one, an `AnyOf` or a variable of
those -- arith's `T` -- as a plain test, a variable bound as xDSL binds it; any other
through xDSL, in the same order and with one `VerificationContext`, as `OpDef.verify`
does), regions, successors, properties, attributes and traits (IsolatedFromAbove in one
pass over the body: xDSL's walks every operand's owner up to the kernel, O(ops x depth)),
then runs the op's own `verify_`. Whenever this check
finds anything wrong, or meets a shape it does not handle, it runs xDSL's generated
`verify_` instead, which raises xDSL's own message: a valid op passes both, an invalid
one fails with the same error (test_fast_verify.py).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Block, Dialect, ErasedSSAValue, Operation
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
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
    VarConstraint,
    VariadicDef,
    VarIRConstruct,
    VerificationContext,
    irdl_op_verify_regions,
    verify_variadic_size,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

_Check = Callable[[Operation, Any], bool]
_Test = Callable[[Any, Any], bool]  # (attribute, context) -> ok


class _Binds(dict):
    """The constraint variables of one op's check when no constraint goes to xDSL: what
    `VerificationContext.set_attr_variable` does, on a plain dict (cheaper to make)."""

    __slots__ = ()

    def set_attr_variable(self, key: str, attr) -> bool:
        existing = self.get(key)
        if existing is None:
            self[key] = attr
            return True
        if existing != attr:
            raise VerifyException(f"attribute {existing} expected from variable '{key}', but got {attr}")
        return False


def _range_spec(constr) -> tuple[int | None, _Test | None, Any]:
    """(required length or None, the test of each value or None: left to xDSL, constr)."""
    length, whole = None, constr
    if isinstance(constr, RangeLengthConstraint) and isinstance(constr.length, EqIntConstraint):
        length, constr = constr.length.value, constr.constraint
    test = _attr_test(constr.constr) if isinstance(constr, RangeOf) else None
    return length, test, whole


def _group_ok(spec, types: tuple, ctx) -> bool:
    length, test, constr = spec
    if test is None:
        constr.verify(types, ctx)  # raises VerifyException
        return True
    return (length is None or len(types) == length) and all(test(t, ctx) for t in types)


def _values_check(op_def, construct: VarIRConstruct, option_cls) -> tuple[_Check | None, bool]:
    """The operand (or result) list check (None: leave it to xDSL), and whether it needs
    xDSL's VerificationContext (a constraint it delegates)."""
    defs = op_def.operands if construct == VarIRConstruct.OPERAND else op_def.results
    specs = [_range_spec(d.constr) for _, d in defs]
    delegates = any(test is None for _, test, _ in specs)
    options = [o for o in op_def.options if isinstance(o, option_cls)]
    operands = construct == VarIRConstruct.OPERAND
    if not any(isinstance(d, VariadicDef) for _, d in defs):
        if options:
            return None, delegates
        n = len(defs)
        if not delegates and all(length == 1 for length, _, _ in specs):  # one value per def: a test each
            tests = [test for _, test, _ in specs]

            def singles(op: Operation, ctx) -> bool:
                vals = op._operands if operands else op.results
                if len(vals) != n:
                    return False
                for v, test in zip(vals, tests):
                    if not test(v.type, ctx):
                        return False
                return True

            return singles, delegates

        def simple(op: Operation, ctx) -> bool:
            vals = op._operands if operands else op.results
            return len(vals) == n and all(_group_ok(spec, (v.type,), ctx) for spec, v in zip(specs, vals))

        return simple, delegates
    variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
    if not options and len(variadic) == 1:  # one variadic: it takes what the others leave
        at, n = variadic[0], len(defs)
        most = 1 if isinstance(defs[at][1], OptionalDef) else None

        def one_variadic(op: Operation, ctx) -> bool:
            vals = op._operands if operands else op.results
            size = len(vals) - (n - 1)
            if size < 0 or (most is not None and size > most):
                return False
            types = [v.type for v in vals]
            groups = [(t,) for t in types[:at]] + [tuple(types[at:at + size])] + [(t,) for t in types[at + size:]]
            return all(_group_ok(spec, g, ctx) for spec, g in zip(specs, groups))

        return one_variadic, delegates
    if not options or not operands or not options[0].as_property:
        return None, delegates
    name = options[0].attribute_name
    kinds = ["optional" if isinstance(d, OptionalDef) else "variadic" if isinstance(d, VariadicDef) else "single"
             for _, d in defs]
    plans: dict[bytes, tuple | None] = {}

    def plan_of(sizes: DenseArrayBase) -> tuple | None:
        """(operand count, (index, test) per plainly tested operand, (start, size, spec) per
        group left to xDSL) for these segment sizes; None if they are invalid."""
        data = sizes.data.data
        if data in plans:
            return plans[data]
        values = [int(v) for v in sizes.get_values()]
        plan = None
        if len(values) == len(kinds) and all(
                n >= 0 and (k == "variadic" or (k == "optional" and n in (0, 1)) or n == 1)
                for n, k in zip(values, kinds)):
            flat, groups, start, ok = [], [], 0, True
            for n, spec in zip(values, specs):
                length, test, _ = spec
                if test is None:
                    groups.append((start, n, spec))
                elif length is not None and n != length:
                    ok = False
                else:
                    flat.extend((i, test) for i in range(start, start + n))
                start += n
            plan = (start, tuple(flat), tuple(groups)) if ok else None
        plans[data] = plan
        return plan

    def segmented(op: Operation, ctx) -> bool:
        sizes = op.properties.get(name)
        if not isinstance(sizes, DenseArrayBase) or sizes.elt_type != i32:
            return False
        plan = plan_of(sizes)
        vals = op._operands
        if plan is None or plan[0] != len(vals):
            return False
        for i, test in plan[1]:
            if not test(vals[i].type, ctx):
                return False
        return all(_group_ok(spec, tuple(v.type for v in vals[s:s + n]), ctx) for s, n, spec in plan[2])

    return segmented, delegates


def _attr_test(constr) -> Callable[[Any, Any], bool] | None:
    """An attribute constraint as a plain test `test(attr, ctx)` (None: left to xDSL). A
    variable binds in `ctx` as xDSL binds it (`set_attr_variable`: the first value binds,
    a different later one raises), so plain and xDSL-checked constraints share it."""
    if isinstance(constr, AnyAttr):
        return lambda a, ctx: True
    if isinstance(constr, BaseAttr):
        base = constr.attr
        return lambda a, ctx: isinstance(a, base)
    if isinstance(constr, EqAttrConstraint):
        want = constr.attr
        return lambda a, ctx: a == want
    if isinstance(constr, VarConstraint):
        inner, name = _attr_test(constr.constraint), constr.name
        if inner is None:
            return None
        return lambda a, ctx: not ctx.set_attr_variable(name, a) or inner(a, ctx)
    if isinstance(constr, AnyOf):  # xDSL picks the alternative by the attribute's class
        based = {cls: _attr_test(c) for cls, c in constr._based_constrs.items()}
        abstract = None if constr._abstr_constr is None else _attr_test(constr._abstr_constr)
        if any(t is None for t in based.values()) or (constr._abstr_constr is not None and abstract is None):
            return None

        def any_of(a, ctx) -> bool:
            test = based.get(a.__class__, abstract)
            return test is not None and test(a, ctx)

        return any_of
    if isinstance(constr, ParamAttrConstraint):
        tests = [_attr_test(c) for c in constr.param_constrs]
        if any(t is None for t in tests):
            return None
        base, n = constr.base_attr, len(tests)
        fields = tuple(f for f, _ in base.get_irdl_definition().parameters)
        direct = list(zip(tests, fields)) if len(fields) == n else None

        def params(a, ctx) -> bool:
            if direct is not None and a.__class__ is base:  # its fields, without building `parameters`
                for t, f in direct:
                    if not t(getattr(a, f), ctx):
                        return False
                return True
            if not isinstance(a, base):
                return False
            ps = a.parameters
            return len(ps) == n and all(t(p, ctx) for t, p in zip(tests, ps))

        return params
    return None


def _dict_check(defs: dict, optional_cls, container: Callable[[Operation], dict],
                closed: bool) -> tuple[_Check | None, bool]:
    """Properties (closed: no others allowed) or attributes, as `OpDef.verify` checks them
    (None: nothing to check); and whether a constraint goes to xDSL (it needs the
    VerificationContext)."""
    items = [(name, isinstance(d, optional_cls), _attr_test(d.constr), d.constr) for name, d in defs.items()]
    names = frozenset(defs)
    if not items and not closed:
        return None, False

    def check(op: Operation, ctx) -> bool:
        got = container(op)
        for name, optional, test, constr in items:
            attr = got.get(name)
            if attr is None:
                if optional and name not in got:
                    continue
                return False
            if test is None:
                constr.verify(attr, ctx)
            elif not test(attr, ctx):
                return False
        return not closed or names.issuperset(got)

    return check, any(test is None for _, _, test, _ in items)


def _isolated(op: Operation) -> bool:
    """IsolatedFromAbove's verdict in one pass over `op`'s body (xDSL's walks each operand's
    owner up to `op`): every operand of an op nested in `op`, not inside a nested isolated
    op, is defined inside `op` (a result of a nested op or an argument of a nested block).
    False: xDSL's own check decides (and words the error)."""
    defined: set = set()
    used = []
    stack = [(region, True) for region in op.regions]
    while stack:
        region, checked = stack.pop()
        for block in region.blocks:
            defined.update(block._args)
            child = block._first_op
            while child is not None:
                defined.update(child.results)
                if checked:
                    used.append(child._operands)
                if child.regions:
                    inner = checked and not child.has_trait(IsolatedFromAbove)
                    stack.extend((r, inner) for r in child.regions)
                child = child._next_op
    return all(defined.issuperset(values) for values in used)


def _trait_check(trait) -> Callable[[Operation], bool] | None:
    """The trait's check (None: it checks nothing, OpTrait's own `verify`)."""
    if type(trait).verify is OpTrait.verify:
        return None
    if type(trait) is IsolatedFromAbove:
        return _isolated

    def verify(op: Operation) -> bool:
        trait.verify(op)  # raises
        return True

    return verify


def _op_check(op_def) -> tuple[_Check, list[Callable[[Operation], bool]], bool, bool] | None:
    """`op_def.verify` as one function that returns False (or raises) when the op is invalid,
    its trait checks (the function's last step), whether it needs xDSL's
    VerificationContext and whether the op def has no regions and no successors; None when
    some part is left to xDSL entirely."""
    operands, delegates_operands = _values_check(op_def, VarIRConstruct.OPERAND, AttrSizedOperandSegments)
    results, delegates_results = _values_check(op_def, VarIRConstruct.RESULT, AttrSizedResultSegments)
    if operands is None or results is None:
        return None
    plain_regions = not op_def.regions and not any(isinstance(o, AttrSizedRegionSegments) for o in op_def.options)
    plain_successors = (not op_def.successors
                        and not any(isinstance(o, AttrSizedSuccessorSegments) for o in op_def.options))
    properties, delegates_properties = _dict_check(op_def.properties, OptPropertyDef, lambda op: op.properties,
                                                   closed=True)
    attributes, delegates_attributes = _dict_check(op_def.attributes, OptAttributeDef, lambda op: op.attributes,
                                                   closed=False)
    traits = [check for check in map(_trait_check, op_def.traits) if check is not None]
    needs_context = (delegates_operands or delegates_results or delegates_properties or delegates_attributes
                     or not plain_regions)

    def generic(op: Operation, ctx) -> bool:
        """The checks before the traits'."""
        if not (operands(op, ctx) and results(op, ctx)):
            return False
        if plain_regions:
            if op.regions:
                return False
        else:
            irdl_op_verify_regions(op, op_def, ctx)
        if plain_successors:
            if op._successors:
                return False
        else:
            verify_variadic_size(op, op_def, VarIRConstruct.SUCCESSOR)
        if properties is not None and not properties(op, ctx):
            return False
        if attributes is not None and not attributes(op, ctx):
            return False
        return True

    def check(op: Operation, ctx) -> bool:
        if not generic(op, ctx):
            return False
        for trait in traits:
            if not trait(op):
                return False
        return True

    return check, traits, needs_context, plain_regions and plain_successors


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
    made = _op_check(op_def)
    if made is None:
        return None
    check, traits, needs_context, plain = made
    context = VerificationContext if needs_context else _Binds  # (a plain dict when xDSL gets no constraint)

    def verify_(self: IRDLOperation) -> None:
        try:
            ok = check(self, context())
        except Exception:  # xDSL's check raises its own message for it
            ok = False
        if not ok:
            generated(self)  # raises xDSL's error (were it to pass, it has run `custom` too)
            return
        if custom is not None:
            custom(self)

    verify_.__doc__ = generated.__doc__
    verify_.generated = generated  # xDSL's own (tests compare the two)
    if plain:  # (an op of such a class without regions: `_Walk` may skip its signature's checks)
        verify_.after_signature = _after_signature(traits, custom, generated)
    return verify_


def _after_signature(traits: list[Callable[[Operation], bool]], custom, generated) -> Callable[[Operation], None]:
    """`verify_` for an op whose signature -- class, operand and result types, properties
    and attributes -- has passed `verify_` in this walk: the checks that depend only on
    those (counts, types, constraints: xDSL's `OpDef.verify` before the traits) gave the
    same verdict then; its traits and its own verifier still run, and a failing trait
    goes to xDSL's `verify_` for its message, as in `verify_`."""

    def verify_(self: IRDLOperation) -> None:
        for trait in traits:
            try:
                ok = trait(self)
            except Exception:
                ok = False
            if not ok:
                generated(self)
                return
        if custom is not None:
            custom(self)

    return verify_


def install(dialect: Dialect) -> None:
    """Give every op class of `dialect` the faster `verify_` (where it applies)."""
    for cls in dialect.operations:
        new = fast_verify_(cls)
        if new is not None:
            cls.verify_ = new


def verify(op: Operation) -> None:
    """`op.verify()`: xDSL's checks, in its order, with its messages -- each op's operands
    not erased, its successors, the terminator of its block, its nested regions (every
    block's parent pointers, an empty block), then its `verify_` (a VerifyException turned
    into xDSL's "Operation does not verify" diagnostic). Why: xDSL's recursion through
    `Operation`, `Region` and `Block.verify` was a sixth of verifying a model's isa
    kernels (densenet121: 64k ops); here it is one function per op, with each op class's
    terminator traits looked up once per call, and the IRDL checks of each op signature
    once per call (`_Walk`)."""
    _Walk().op(op)


class _Walk:
    """One `verify` call: the terminator traits of each op class seen (a class's traits are
    fixed), and the signatures of the ops without regions that passed their `verify_` --
    their class, the identities of their operand and result types and of their properties
    and attributes (an attribute is immutable; the IR, which holds them, does not change
    during the walk): another op of one signature gets the same verdict from the checks
    that read only those, and runs only its traits and its own verifier (`_after_signature`;
    resnet50's isa kernels: 16k ops, 2k signatures). Nothing is kept across calls."""

    __slots__ = ("after", "passed", "traits")

    def __init__(self):
        self.traits: dict[type, tuple[bool, bool]] = {}  # class -> (IsTerminator, NoTerminator)
        self.passed: dict[tuple, Operation] = {}  # signature -> an op of it that passed (it keeps the ids alive)
        self.after: dict[type, Callable[[Operation], None] | None] = {}  # class -> its `_after_signature`

    def traits_of(self, cls: type) -> tuple[bool, bool]:
        found = self.traits.get(cls)
        if found is None:
            found = self.traits[cls] = (cls.has_trait(IsTerminator), cls.has_trait(NoTerminator))
        return found

    def op(self, op: Operation) -> None:
        cls = type(op)
        if cls.verify is not _OPERATION_VERIFY or op._successors:  # its own `verify`, or branches: xDSL's
            op.verify()
            return
        for operand in op._operands:
            if isinstance(operand, ErasedSSAValue):
                raise ValueError("Erased SSA value is used by the operation")
        block = op.parent
        region = None if block is None else block.parent
        if region is not None and block._last_op is op:
            if len(region.blocks) == 1:
                if (parent := region.parent) is not None and not self.traits_of(type(parent))[1] \
                        and not self.traits_of(cls)[0]:
                    raise VerifyException(f"Operation {op.name} terminates block in "
                                          "single-block region but is not a terminator")
            elif len(region.blocks) > 1 and not self.traits_of(cls)[0]:
                raise VerifyException(f"Operation {op.name} terminates block in multi-block "
                                      "region but is not a terminator")
        for r in op.regions:
            for b in r.blocks:
                self.block(b)
                if b.parent is not r:
                    raise ValueError("Parent pointer of block does not refer to containing region")
        try:
            self.verify_(op, cls)
        except VerifyException as err:
            op.emit_error(f"Operation does not verify: {err}", err)

    def verify_(self, op: Operation, cls: type) -> None:
        """`op.verify_()`, its signature's checks once per walk."""
        after = self.after.get(cls, self)
        if after is self:
            after = self.after[cls] = getattr(cls.verify_, "after_signature", None)
        if after is None or op.regions:
            op.verify_()
            return
        props, attrs = op.properties, op.attributes
        # (built by C-level maps: a comprehension per part cost as much as the checks it saves)
        key = (cls, *map(id, map(_TYPE, op._operands)), None, *map(id, map(_TYPE, op.results)), None,
               *props, *map(id, props.values()), None, *attrs, *map(id, attrs.values()))
        if key in self.passed:
            after(op)
        else:
            op.verify_()
            self.passed[key] = op

    def block(self, block: Block) -> None:
        """`Block.verify`."""
        child = block._first_op
        if child is None:
            if (region := block.parent) is not None and (parent := region.parent) is not None \
                    and len(region.blocks) == 1 and not self.traits_of(type(parent))[1]:
                raise VerifyException(f"Operation {parent.name} contains empty block in "
                                      "single-block region that expects at least a terminator")
            return
        while child is not None:
            if child.parent is not block:
                raise ValueError("Parent pointer of operation does not refer to containing region")
            self.op(child)
            child = child._next_op


_OPERATION_VERIFY = Operation.verify
_TYPE = attrgetter("_type")  # an SSA value's type, without the `type` property's call

__all__ = ["fast_verify_", "install", "verify"]
