"""`fuse`: graph/layout ops -> `fusion.group` regions, one per future kernel.

The rules (lowering/fusion_rules.py) run in GE's order of precedence: Cube kernels take
their epilogues first, then reductions with their elementwise neighbours, then pools, then
elementwise chains; every compute op left over becomes a group of its own, so after this
pass each kernel is exactly one `fusion.group`. View ops (reshape, flatten, squeeze,
unsqueeze) and constants stay outside groups: they cost no kernel.

A group grows only by ops whose outside operands do not depend on the group, so no group
can create a cycle (an output that reaches another input of the same group through ops
outside it). A group of two ops or more is formed only when it builds: `group_tiles`
(lowering/fusion_legality.py) runs the tiler and the isa lowering on it; when it does
not, the ops the rule added last are left out one by one (they stay free for the later
rules, or become kernels of their own) until it does, so fusion never breaks a compile
that the unfused kernels would pass. `fuse{debug=true}` prints every decision, `fuse{switch-file="f.json"}` reads
a GE fusion switch file.
"""

from __future__ import annotations

import heapq
import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FusedLoc, ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike, IsTerminator
from xdsl.utils.exceptions import PassFailedException

from ge import targets
from ge.dialects import dtypes, fusion, graph
from ge.dialects import layout as lt
from ge.lowering import fusion_rules as fr
from ge.lowering.fusion_legality import group_tiles
from ge.transforms.tile_capacity import nbytes

# Does a trans_data that pads (`_pads`) try the kernel that reads it as its host first
# (`Fuser._absorb_trans_data`)? Off: the producer first, as for every other conversion.
PADDED_ON_COPY_IN = True

# The rule that takes a second conv into a conv's group (`_k_partner`).
SUMMED_CONVS = "SummedConvsFusionPass"

# Ops of a decomposed activation a Cube epilogue takes whole (x * 0.5 * (1 + erf(x / sqrt 2)): 5).
_MAX_REGION = 8

# Kernel kinds of ops left alone (a group of one op).
_SINGLE_KINDS = (
    (fr.CUBE_OPS, "cube_epilogue"),
    (fr.POOL_OPS, "pool"),
    (fr.REDUCE_OPS, "reduce"),
    (fr.ELEMENTWISE_OPS, "elementwise"),
)


def op_label(op: Operation) -> str:
    """How the log names an op: its ONNX node name, else its result name, else its op name."""
    if isinstance(op.location, NameLoc):
        return op.location.desc.data
    if op.results and op.results[0].name_hint:
        return op.results[0].name_hint
    return op.name


@dataclass
class Candidate:
    rule: str
    kind: str
    ops: list[Operation] = field(default_factory=list)
    extra_rules: list[str] = field(default_factory=list)

    @property
    def rules(self) -> list[str]:
        """Names of the rules that formed the group (the anchor rule first)."""
        return ([self.rule] if self.rule else []) + self.extra_rules


class Fuser:
    """Forms groups over one block (a function body)."""

    def __init__(self, block: Block, enabled: dict[str, bool], log: list[str], target: targets.Target | None = None):
        self.block = block
        self.target = target
        self.enabled = enabled
        self.log = log
        self.order = {op: i for i, op in enumerate(block.ops)}
        self.assigned: set[Operation] = set()
        self.group_of: dict[Operation, Candidate] = {}
        self.groups: list[Candidate] = []
        self.verdicts: dict[tuple[Operation, ...], str | None] = {}  # group -> why it does not build
        self.by_structure: dict[tuple, str | None] = {}  # (target, group structure) -> the same, per run

    # -- structure ---------------------------------------------------------------

    def users(self, value: SSAValue) -> list[Operation]:
        """The ops of this block that use `value` (not detached or nested ones)."""
        return [u.operation for u in value.uses if u.operation.parent is self.block]

    def producer(self, value: SSAValue) -> Operation | None:
        if isinstance(value, OpResult) and value.op.parent is self.block:
            return value.op
        return None

    def is_compute(self, op: Operation) -> bool:
        return (
            op.dialect_name() in ("graph", "layout")
            and not op.has_trait(ConstantLike)
            and not fr.is_view(op)
        )

    def depends_on(self, value: SSAValue, group: set[Operation]) -> bool:
        """Does `value` depend on an op of `group` (through ops outside it)?"""
        first = min(self.order[o] for o in group)
        stack, seen = [value], set()
        while stack:
            p = self.producer(stack.pop())
            if p is None or p in seen or self.order[p] < first:
                continue
            if p in group:
                return True
            seen.add(p)
            stack.extend(p.operands)
        return False

    def can_join(self, op: Operation, group: set[Operation]) -> str | None:
        """None if `op` may join `group`, else the reason it may not."""
        if op in self.assigned or op in group:
            return "already in a group"
        for v in op.operands:
            if self.producer(v) in group:
                continue
            if self.depends_on(v, group):
                return f"its operand {v.name_hint or '?'} is computed from the group outside it (a cycle)"
        return None

    # -- rules -------------------------------------------------------------------------

    def run(self) -> None:
        ops = list(self.block.ops)
        self._anchored("TbeConvElemwiseFusionPass", ops, lambda o: isinstance(o, graph.Conv2dOp | graph.QuantConv2dOp),
                       self._epilogue)
        self._anchored(
            "TbeMatmulElemwiseFusionPass", ops,
            lambda o: isinstance(o, graph.MatMulOp | graph.GemmOp | graph.QuantMatMulOp), self._epilogue
        )
        self._anchored("TbeReduceElemwiseFusionPass", ops, lambda o: isinstance(o, fr.REDUCE_OPS), self._reduction)
        self._anchored("TbePoolElemwiseFusionPass", ops, lambda o: isinstance(o, fr.POOL_OPS), self._forward_elementwise)
        self._anchored("TbeEltwiseFusionPass", ops, fr.is_elementwise, self._forward_elementwise)
        for op in ops:
            if op not in self.assigned and self.is_compute(op) and not fr.is_trans_data(op):
                kind = next((k for classes, k in _SINGLE_KINDS if isinstance(op, classes)), "opaque")
                self._commit(Candidate("", kind, [op]))
        self._absorb_trans_data(ops)
        for op in ops:
            if op not in self.assigned and fr.is_trans_data(op):
                self._commit(Candidate("", "opaque", [op]))

    def _absorb_trans_data(self, ops: list[Operation]) -> None:
        """TbeTransDataFusionPass: a conversion whose input has no other user joins the
        kernel that produces it (converted on copy-out); else (or when that group would
        not build) one whose result has a single user joins that kernel (converted on
        copy-in). A conversion that pads (`_pads`) tries the user first: converted on the
        producer's copy-out, the padded bytes cross GM twice (resnet50's input, 3 channels
        in C0 = 16 blocks: 5.3x its bytes written by the cast kernel and read by conv1;
        converted on conv1's copy-in, the cast kernel 2,462 -> 1,684 cycles and conv1 5,274
        -> 4,383 at batch 1, 17,399 -> 9,425 and 42,631 -> 37,999 at batch 16)."""
        rule = "TbeTransDataFusionPass"
        pending = [op for op in ops if fr.is_trans_data(op) and op not in self.assigned]
        if not self.enabled[rule]:
            if pending:
                self.log.append(f"{rule}: switched off")
            return
        for op in pending:
            source = op.operands[0]
            producer = self.producer(source)
            users = self.users(op.results[0])
            hosts = []
            if producer in self.group_of and len(self.users(source)) == 1:
                hosts.append((self.group_of[producer], "copy-out of"))
            if len(users) == 1 and users[0] in self.group_of:
                hosts.append((self.group_of[users[0]], "copy-in of"))
                if PADDED_ON_COPY_IN and _pads(op):  # (the consumer reads the compact tensor)
                    hosts.reverse()
            host, reasons = None, []
            for cand, how in hosts:
                if self.can_join(op, set(cand.ops)) is not None:
                    continue
                reason = self.legality([*cand.ops, op])
                if reason is None or self.legality(cand.ops) is not None:
                    host = cand
                    break
                reasons.append(f"the {how} group would not build: {reason}")
            if host is None:
                self.log.append(f"{rule}: {op_label(op)} stays a kernel of its own" + "".join(f"; {r}" for r in reasons))
                continue
            host.ops.append(op)
            host.ops.sort(key=self.order.__getitem__)
            self.assigned.add(op)
            self.group_of[op] = host
            if rule not in host.rules:
                host.extra_rules.append(rule)
            self.log.append(f"{rule}: {op_label(op)} done by the {how} {op_label(host.ops[0])}'s group")

    def _anchored(self, rule: str, ops, is_anchor, grow) -> None:
        spec = fr.RULES_BY_NAME[rule]
        if not self.enabled[rule]:
            if any(is_anchor(o) and o not in self.assigned for o in ops):
                self.log.append(f"{rule}: switched off")
            return
        for op in ops:
            if op in self.assigned or not is_anchor(op):
                continue
            cand = Candidate(rule, spec.kind, [op])
            grow(cand)
            self._shrink_until_legal(cand)
            if len(cand.ops) > 1:
                self._commit(cand)

    def legality(self, ops: list[Operation]) -> str | None:
        """None if the group `ops` builds as one kernel, else why not (asked once per group)."""
        key = tuple(sorted(ops, key=self.order.__getitem__))
        if key not in self.verdicts:
            self.verdicts[key] = group_tiles(key, self.target, self.by_structure)
        return self.verdicts[key]

    def _shrink_until_legal(self, cand: Candidate) -> None:
        """Leave out the ops added last until the group builds (or only its anchor is left).
        Every prefix of a rule's growth was itself a valid (acyclic) group. When one of its
        ops does not build even alone, fusion is not what breaks the compile: the group
        stays as the rule formed it (the later stage names the op and what is missing)."""
        if len(cand.ops) > 1 and self.legality(cand.ops) is not None and any(
            self.legality([op]) is not None for op in cand.ops
        ):
            return
        while len(cand.ops) > 1:
            reason = self.legality(cand.ops)
            if reason is None:
                return
            dropped = cand.ops.pop()
            self.log.append(f"{cand.rule}: {op_label(dropped)} left out: the group would not build: {reason}")

    def _commit(self, cand: Candidate) -> None:
        cand.ops.sort(key=self.order.__getitem__)
        self.assigned.update(cand.ops)
        self.group_of.update(dict.fromkeys(cand.ops, cand))
        self.groups.append(cand)
        if cand.rule:
            self.log.append(
                f"{cand.rule}: group #{len(self.groups)} ({cand.kind}) = " + " + ".join(op_label(o) for o in cand.ops)
            )

    def _sole_user(self, cand: Candidate, value: SSAValue) -> Operation | None:
        users = self.users(value)
        if len(users) != 1:
            if len(users) > 1:
                self.log.append(
                    f"{cand.rule}: stop after {op_label(cand.ops[-1])}: its result has {len(users)} users"
                )
            return None
        user = users[0]
        return None if isinstance(user, func.ReturnOp) else user

    def _epilogue(self, cand: Candidate) -> None:
        """Cube op + bias/scale + activation + residual add + activation, in that order;
        an int8 conv's chain that assign-layouts planned for its epilogue, whole. A group
        that took a summed conv (`_k_partner`) and does not build is formed again without
        it: the Add then reads that conv's output as a plain residual (one probe when it
        builds, the group's own)."""
        rule = SUMMED_CONVS
        self._staged_epilogue(cand)
        if rule in cand.extra_rules:
            partner = cand.ops[1]
            if (reason := self.legality(cand.ops)) is None:
                self.log.append(f"{rule}: {op_label(cand.ops[0])} and {op_label(partner)} summed as one GEMM")
            else:
                self.log.append(f"{rule}: {op_label(partner)} stays a kernel of its own: the group would not build: "
                                f"{reason}")
                del cand.ops[1:]
                cand.extra_rules.remove(rule)
                self._staged_epilogue(cand, summed=False)
        chain = self._int8_layout_chain(cand)
        if chain and not set(chain) <= set(cand.ops):
            self.log.append(f"{cand.rule}: {op_label(cand.ops[0])} takes its int8 chain whole: "
                            + " + ".join(op_label(o) for o in chain))
            del cand.ops[1:]
            cand.ops.extend(chain)

    def _staged_epilogue(self, cand: Candidate, summed: bool = True) -> None:
        anchor = cand.ops[0]
        channel_axis = 1 if isinstance(anchor, graph.Conv2dOp | graph.QuantConv2dOp) else -1
        stage = 0  # 0: bias/scale allowed; 1: after activation; 2: after residual; 3: done (but a quantize); 4: done
        tail = anchor.results[0]
        while stage < 4:
            if stage in (0, 2) and len(self.users(tail)) > 1 and (region := self._pointwise_region(cand, tail)):
                # a decomposed activation (Erf-form GELU, x * sigmoid(x)) reading the tail twice
                self.log.append(f"{cand.rule}: {op_label(cand.ops[0])} takes the activation "
                                + " + ".join(op_label(o) for o in region))
                cand.ops.extend(region)
                tail, stage = region[-1].results[0], (1 if stage == 0 else 3)
                continue
            if (user := self._sole_user(cand, tail)) is None:
                return
            if stage == 3 and not isinstance(user, graph.QuantizeOp):
                return  # done; only an int8 requantize may still follow
            group = set(cand.ops)
            if (reason := self.can_join(user, group)) is not None:
                self.log.append(f"{cand.rule}: {op_label(user)} not fused: {reason}")
                return
            if stage == 0 and self._is_affine(user, tail, channel_axis):
                pass
            elif stage == 0 and self._is_partial_sum(user, tail):
                pass  # int8: the accumulator plus another int8 part's; the dequantize may follow
            elif isinstance(user, graph.QuantizeOp):  # int8: requantize for the next layer, last
                stage = 4
            elif stage in (0, 2) and isinstance(user, fr.ACTIVATION_OPS) and self._constant_rest(user, tail):
                stage = 1 if stage == 0 else 3
            elif summed and stage == 0 and tail is anchor.results[0] and (partner := self._k_partner(cand, user, tail)):
                cand.ops.append(partner)
                cand.extra_rules.append(SUMMED_CONVS)
                stage = 2
            elif stage in (0, 1) and self._is_residual(user, tail):
                stage = 2
            else:
                self.log.append(f"{cand.rule}: {op_label(user)} ({user.name}) is not an epilogue op here")
                return
            cand.ops.append(user)
            tail = user.results[0]

    def _pointwise_region(self, cand: Candidate, tail: SSAValue) -> list[Operation]:
        """The elementwise ops that compute one value from `tail` and constants alone (a
        decomposed activation such as x * 0.5 * (1 + erf(x / sqrt 2))): grown over the users
        of `tail` in block order, cut at the last op after which only one of its values is
        used outside (that op's result, the new tail); [] when there is none, or the whole
        group would not build (the region joins whole or not at all)."""
        region: list[Operation] = []
        best: list[Operation] = []
        while len(region) < _MAX_REGION:
            inside = {tail, *(r for o in region for r in o.results)}
            users = sorted({u for v in inside for u in self.users(v) if u not in region},
                           key=self.order.__getitem__)
            user = next((u for u in users if fr.is_elementwise(u) and len(u.results) == 1
                         and not isinstance(u, graph.QuantizeOp | graph.DequantizeOp)
                         and all(v in inside or self._is_constant(v) for v in u.operands)
                         and self.can_join(u, {*cand.ops, *region}) is None), None)
            if user is None:
                break
            region.append(user)
            if all(all(u in region for u in self.users(v)) for v in inside if v is not user.results[0]):
                best = list(region)  # everything but the last result is used only inside
        if not best or self.legality([*cand.ops, *best]) is not None:
            return []
        return best

    def _int8_layout_chain(self, cand: Candidate) -> list[Operation]:
        """int8: what assign-layouts computes in NC1HWC0 expecting this epilogue -- the
        sole-user chain of elementwise ops from a quant_conv2d up to the first quantize,
        cut after its last dequantize / quantize (they change C0, e.g. i32 8 -> f16 16 -> i8
        32, which only the epilogue can do). [] when there is none or an op may not join."""
        if not isinstance(cand.ops[0], graph.QuantConv2dOp):
            return []
        chain: list[Operation] = []
        tail = cand.ops[0].results[0]
        while (user := self._sole_user(cand, tail)) is not None and graph.has_trait(user, graph.Elementwise):
            if self.can_join(user, {cand.ops[0], *chain}) is not None:
                return []
            chain.append(user)
            if isinstance(user, graph.QuantizeOp):
                break
            tail = user.results[0]
        while chain and not isinstance(chain[-1], graph.QuantizeOp | graph.DequantizeOp):
            chain.pop()
        return chain

    def _constant_rest(self, op: Operation, tail: SSAValue) -> bool:
        return all(v is tail or self._is_constant(v) for v in op.operands)

    def _is_constant(self, v: SSAValue) -> bool:
        return isinstance(v, OpResult) and v.op.has_trait(ConstantLike)

    def _is_affine(self, op: Operation, tail: SSAValue, channel_axis: int) -> bool:
        """A per-channel bias or scale: Add/Sub/Mul/Div with a constant, or BatchNorm."""
        if isinstance(op, graph.BatchNormOp):
            return op.input is tail and all(self._is_constant(v) for v in op.operands[1:])
        if isinstance(op, graph.DequantizeOp):  # int8: the accumulator's per-channel deq scale
            axis = channel_axis % max(len(graph.shape_of(tail.type)), 1)
            return op.input is tail and self._is_constant(op.scale) and (
                not graph.shape_of(op.scale.type) or op.axis.value.data == axis)
        if not isinstance(op, graph.AddOp | graph.SubOp | graph.MulOp | graph.DivOp) or op.lhs is not tail:
            return False
        other = op.rhs
        if not self._is_constant(other):
            return False
        out = graph.shape_of(tail.type)
        shape = graph.shape_of(other.type)
        axis = channel_axis % len(out)
        padded = (1,) * (len(out) - len(shape)) + tuple(shape)
        return len(shape) <= len(out) and all(d == 1 or (i == axis and d == out[i]) for i, d in enumerate(padded))

    def _is_partial_sum(self, op: Operation, tail: SSAValue) -> bool:
        """An integer add of two accumulators (a weight split into int8 parts, or ConvInteger
        summed): still accumulation, so the dequantize and the rest of the epilogue may follow."""
        return self._is_residual(op, tail) and dtypes.is_integer(tail.type.element_type)

    def _k_partner(self, cand: Candidate, add: Operation, tail: SSAValue) -> Operation | None:
        """The other conv of a residual `add` right after a conv anchor, when the two are one
        GEMM with their K's concatenated (`SummedConvsFusionPass`; tile_cube.py `_k_concat`
        says exactly when): 1 x 1 convs without pads or groups whose results only meet in
        `add`, the other one free to join (`_epilogue` checks that the group builds)."""
        if not self.enabled[SUMMED_CONVS] or not self._is_residual(add, tail):
            return None
        other = add.operands[1] if add.operands[0] is tail else add.operands[0]
        partner = self.producer(other)
        if not (isinstance(partner, graph.Conv2dOp) and isinstance(cand.ops[0], graph.Conv2dOp)) \
                or partner in self.assigned or self.users(other) != [add] or len(self.users(tail)) != 1:
            return None
        for conv in (cand.ops[0], partner):
            window = lt.logical_shape(conv.weight.type)[2:]
            if tuple(window) != (1, 1) or any(graph.get_ints(conv.properties, "pads")) \
                    or conv.group.value.data != 1:
                return None
        if self.can_join(partner, set(cand.ops)) is not None:
            return None
        return partner

    def _is_residual(self, op: Operation, tail: SSAValue) -> bool:
        if not isinstance(op, graph.AddOp | graph.SumOp) or len(op.operands) != 2:
            return False
        other = op.operands[1] if op.operands[0] is tail else op.operands[0]
        return other is not tail and not self._is_constant(other) and other.type == tail.type

    def _forward_elementwise(self, cand: Candidate) -> None:
        """Absorb elementwise ops that consume the group, as long as no cycle appears."""
        self._grow_forward(cand, fr.is_elementwise)

    def _reduction(self, cand: Candidate) -> None:
        """Elementwise producers feeding the reduction (single use), then elementwise and
        further reductions consuming it (decomposed LayerNorm has two)."""
        anchor = cand.ops[0]
        frontier = [anchor]
        while frontier:
            op = frontier.pop()
            for v in op.operands:
                p = self.producer(v)
                if (
                    p is not None and fr.is_elementwise(p) and p not in self.assigned and p not in cand.ops
                    and all(u in cand.ops for u in self.users(v)) and len(p.results) == 1
                ):
                    cand.ops.append(p)
                    frontier.append(p)
        self._grow_forward(cand, lambda o: fr.is_elementwise(o) or isinstance(o, graph.ReduceOp))

    def _grow_forward(self, cand: Candidate, accepts) -> None:
        grew = True
        while grew:
            grew = False
            group = set(cand.ops)
            users = sorted(
                {u for op in cand.ops for r in op.results for u in self.users(r) if u not in group},
                key=lambda o: self.order.get(o, len(self.order)),
            )
            for user in users:
                if isinstance(user, func.ReturnOp) or not accepts(user):
                    continue
                if (reason := self.can_join(user, group)) is not None:
                    self.log.append(f"{cand.rule}: {op_label(user)} not fused: {reason}")
                    continue
                cand.ops.append(user)
                grew = True
                break


def _materialize(block: Block, cand: Candidate) -> fusion.GroupOp:
    """Move the candidate's ops into a new fusion.group placed where its last op was."""
    members = set(cand.ops)
    inputs: list[SSAValue] = []
    inner = fr.scalar_operands(cand.ops)  # one-value constants: immediates inside the group
    for op in cand.ops:
        for v in op.operands:
            if not (isinstance(v, OpResult) and v.op in members) and v not in inner and v not in inputs:
                inputs.append(v)
    outputs = [r for op in cand.ops for r in op.results
               if any(u.operation not in members and u.operation.parent is block for u in r.uses)]
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    for v, arg in zip(inputs, body.args):
        arg.name_hint = v.name_hint
    for op in cand.ops:
        for v in op.operands:
            if v in inner and v not in mapping:  # right before its first reader (a pool stays first)
                body.add_op(scalar := inner[v].clone())
                scalar.results[0].name_hint = v.name_hint
                mapping[v] = scalar.results[0]
        clone = op.clone(value_mapper=mapping)
        body.add_op(clone)
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    body.add_op(fusion.YieldOp(*[mapping[r] for r in outputs]))
    group = fusion.GroupOp(inputs, [r.type for r in outputs], cand.kind, cand.rules, Region(body))
    # (named after its compute ops: a layout conversion it does on copy-in comes first in
    # program order but is not what the kernel computes)
    group.location = _location([op_label(o) for o in sorted(cand.ops, key=fr.is_trans_data)])
    block.insert_op_after(group, cand.ops[-1])
    for old, new in zip(outputs, group.results):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for op in reversed(cand.ops):
        block.erase_op(op)
    return group


def _location(names: list[str]) -> NameLoc | FusedLoc:
    """loc("conv1") for one op, loc(fused["conv1", "relu1"]) for several."""
    locs = [NameLoc(StringAttr(n), NoneAttr()) for n in names]
    return locs[0] if len(locs) == 1 else FusedLoc(ArrayAttr(locs), NoneAttr())


def _topological_sort(block: Block) -> None:
    """Reorder the block so every value is defined before use, keeping the old order
    wherever dependencies allow (groups sit where their last member was)."""
    ops = list(block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    waiting = {op: 0 for op in ops}
    dependents: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        producers = {v.op for v in op.operands if isinstance(v, OpResult) and v.op in pos}
        waiting[op] = len(producers)
        for p in producers:
            dependents[p].append(op)
    heap = [pos[op] for op in ops if waiting[op] == 0]
    heapq.heapify(heap)
    ordered = []
    while heap:
        op = ops[heapq.heappop(heap)]
        ordered.append(op)
        for d in dependents[op]:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(heap, pos[d])
    if ordered == ops:
        return
    terminator = ops[-1] if ops and ops[-1].has_trait(IsTerminator) else None
    for op in ops:
        op.detach()
    for op in ordered:
        if op is not terminator:
            block.add_op(op)
    if terminator is not None:
        block.add_op(terminator)


def fuse_function(fn: func.FuncOp, enabled: dict[str, bool], log: list[str],
                  target: targets.Target | None = None) -> int:
    """Fuse one function body; returns the number of groups (kernels)."""
    block = fn.body.block
    fuser = Fuser(block, enabled, log, target)
    fuser.run()
    for cand in fuser.groups:
        _materialize(block, cand)
    _topological_sort(block)
    return len(fuser.groups)


def count_kernels(module: ModuleOp) -> int:
    return sum(1 for op in module.walk() if isinstance(op, fusion.GroupOp))


def enabled_rules(switch_file: str | None) -> dict[str, bool]:
    if switch_file is None:
        return {r.name: True for r in fr.RULES}
    return fr.parse_switch_file(switch_file)


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Group graph/layout ops into `fusion.group` kernels."""

    name = "fuse"
    switch_file: str | None = None
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        enabled = enabled_rules(self.switch_file)
        try:
            target = targets.target_of(op) or targets.load_target(targets.DEFAULT_TARGET)
        except targets.TargetError as e:
            raise PassFailedException(f"fuse: {e}") from None
        log: list[str] = []
        total = 0
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                total += fuse_function(fn, enabled, log, target)
        if self.debug:
            for line in log:
                print(f"[fuse] {line}", file=sys.stderr)
            print(f"[fuse] {total} kernels", file=sys.stderr)


def _pads(op: Operation) -> bool:
    """Does trans_data `op` write more bytes than it reads (a storage format padding a dim
    to whole blocks: NCHW -> NC1HWC0 with C not a multiple of C0)?"""
    return nbytes(op.results[0].type) > nbytes(op.operands[0].type)
