"""Operator tuning's repository: Cube plans chosen by timing candidates in the simulator.

GE's counterpart is AOE's operator tuning (`aoe --job_type=2`), which times an operator's
tiling candidates on the chip and writes the winners to a custom repository that ATC reads
back (`--op_bank_path`, TUNE_BANK_PATH). Here `ge.aoe` times the cost model's cheapest few
plans of each Cube problem in the simulator's timing-only mode and keeps, per problem, the
one that ran fastest; `ge.compile(..., op_bank_path=DIR)` plans a problem found in the bank
with its tuned plan and every other one with the cost model, as before.

A problem is known by a digest of `tile_cube.plan_cube`'s memo key: its shapes, formats,
epilogue and the tiler's switches, so a bank never hands a plan to another problem (nor to
the same problem under other switches). The bank is one JSON file per chip,
`DIR/<soc_version>/cube_plans.json`, readable and editable by hand.

While a compile runs, the source of tuned plans is a context variable (`using`): a loaded
`OpBank`, or the tuner's `Trial` (which plan of each problem's alternatives to take).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from ge.errors import GeError

log = logging.getLogger("ge.op_bank")

BANK_FILE = "cube_plans.json"
FORMAT = 1


class OpBankError(GeError):
    """An op bank that cannot be read: not JSON, another format, a plan ge cannot take."""


class PlanSource(Protocol):
    def plan(self, key: str, alternatives: Callable[[int], list], fits: Callable[[object], bool]) -> object | None:
        """The plan of the problem `key`, or None for the cost model's;
        `alternatives(n)`: the cost model's choice, then its n cheapest plans
        (`tile_cube._plans`: without `_plan_cube`'s last step, B from GM and the Cube's
        bias decided per plan, the choice may be another); `fits(plan)`: do its buffers fit
        the target's memories (a bank written by another ge may hold one that does not)."""


_SOURCE: ContextVar[PlanSource | None] = ContextVar("ge_op_bank", default=None)


def current() -> PlanSource | None:
    return _SOURCE.get()


@contextmanager
def using(source: PlanSource | None) -> Iterator[PlanSource | None]:
    """Plan Cube problems from `source` inside the block; None keeps the source in use (the
    cost model's plans outside any)."""
    if source is None:
        yield _SOURCE.get()
        return
    token = _SOURCE.set(source)
    try:
        yield source
    finally:
        _SOURCE.reset(token)


def digest(key: tuple) -> str:
    """A problem's name in the bank: the first 24 hex digits of the SHA-1 of its memo key's
    repr (ints, strings, floats and tuples of them: the same on every run)."""
    return hashlib.sha1(repr(key).encode()).hexdigest()[:24]


def plan_to_json(plan) -> dict:
    out = asdict(plan)
    out["usage"] = [list(u) for u in plan.usage]
    return out


def plan_from_json(d: dict):
    from ge.lowering.tile_cube import CubePlan

    try:
        return CubePlan(**{**d, "usage": tuple(tuple(u) for u in d.get("usage", ()))})
    except TypeError as e:
        raise OpBankError(f"a plan ge cannot take ({e})") from None


def bank_file(directory: str | Path, soc_version: str) -> Path:
    return Path(directory) / soc_version / BANK_FILE


@dataclass
class OpBank:
    """The tuned plans of one chip by problem digest, each entry {"plan": CubePlan fields,
    "what": the kernel, "default": / "tuned": simulated cycles when tuned}."""

    soc_version: str
    entries: dict[str, dict] = field(default_factory=dict)
    _plans: dict[str, object] = field(default_factory=dict, repr=False)
    used: set[str] = field(default_factory=set)  # the problems a compile took from the bank

    @classmethod
    def load(cls, directory: str | Path, soc_version: str) -> OpBank:
        """The bank under `directory` for `soc_version`; empty when it has none yet."""
        path = bank_file(directory, soc_version)
        if not Path(directory).is_dir():
            raise OpBankError(f"op bank path {directory}: no such directory")
        if not path.is_file():
            return cls(soc_version)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise OpBankError(f"op bank {path}: not a bank ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("plans"), dict):
            raise OpBankError(f"op bank {path}: not a format-{FORMAT} bank (a dict with 'format' and 'plans')")
        bank = cls(soc_version, dict(data["plans"]))
        for key, entry in bank.entries.items():
            try:
                bank._plans[key] = plan_from_json(entry["plan"])
            except (KeyError, TypeError, OpBankError) as e:
                raise OpBankError(f"op bank {path}: entry {key}: {e}") from None
        return bank

    def save(self, directory: str | Path) -> Path:
        path = bank_file(directory, self.soc_version)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "soc_version": self.soc_version, "plans": dict(sorted(self.entries.items()))}
        path.write_text(json.dumps(data, indent=1) + "\n")
        return path

    def add(self, key: str, plan, **info) -> None:
        self.entries[key] = {"plan": plan_to_json(plan), **info}
        self._plans[key] = plan

    def drop(self, key: str) -> None:
        self.entries.pop(key, None)
        self._plans.pop(key, None)

    def plan(self, key: str, alternatives: Callable[[int], list], fits: Callable[[object], bool]) -> object | None:
        plan = self._plans.get(key)
        if plan is not None and not fits(plan):
            log.warning("op bank entry %s (%s): its buffers exceed the chip's memories; the cost model plans it",
                        key, self.entries[key].get("what", "a Cube problem"))
            return None
        if plan is not None:
            self.used.add(key)
        return plan


# How many of a problem's cheapest plans the tuner times, and how far above the cheapest's
# modeled cycles one may be: the cost model is within 15% on most kernels
# (bench/results/tile_cost_accuracy.*), so a plan priced much higher rarely runs faster.
VARIANTS = 8
SEARCHED = 24
MARGIN = 1.25


def distinct(plans: list, variants: int = VARIANTS, margin: float = MARGIN) -> list:
    """Of `plans` (cheapest first), the cheapest of each tiling -- tile sizes, K chunking,
    order, stacking and the B / bias paths; plans differing only in cores or buffer counts
    simulate alike -- while within `margin` of the cheapest, at most `variants`."""
    out, seen = [], set()
    for plan in plans:
        shape = (plan.tm, plan.tn, plan.tk, plan.kl1, plan.order, plan.stack, plan.b_direct, plan.a_whole,
                 plan.batch_inner, plan.cube_bias)
        if shape in seen or plan.cycles > margin * plans[0].cycles:
            continue
        seen.add(shape)
        out.append(plan)
        if len(out) == variants:
            break
    return out


@dataclass
class Trial:
    """The tuner's source: each problem's alternatives (`distinct`, computed on first
    sight and kept across the tuner's compiles) and which one this compile takes (`choice`,
    the same index for every problem; the last alternative when it has fewer)."""

    choice: int = 0
    variants: int = VARIANTS
    fixed: dict[str, int] = field(default_factory=dict)  # a problem's own choice, over `choice`
    alternatives: dict[str, list] = field(default_factory=dict)
    taken: dict[int, str] = field(default_factory=dict)  # id(plan handed out) -> its problem

    def plan(self, key: str, alternatives: Callable[[int], list], fits: Callable[[object], bool]) -> object:
        alts = self.alternatives.get(key)
        if alts is None:
            alts = self.alternatives[key] = distinct(alternatives(SEARCHED), self.variants)
        plan = alts[min(self.fixed.get(key, self.choice), len(alts) - 1)]
        self.taken[id(plan)] = key
        return plan
