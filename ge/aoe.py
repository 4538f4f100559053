"""Operator tuning: each Cube problem's plan chosen by timing the cost model's cheapest few
in the simulator (AOE's `--job_type=2`; lowering/op_bank.py has the repository it writes).

The cost model picks a plan per problem from thousands of candidates; it is within 15% of
the simulator on most kernels, but where two plans are closer than its error it can pick
the slower one. Each Cube problem gets up to `variants` plans (`op_bank.distinct`: the cost
model's choice, then the cheapest of each other tiling within `MARGIN` of its modeled
cycles). The model is compiled and run once in timing-only mode (a kernel's cycles do not
depend on the data) with the cost model's plans, then once per rank r >= 1 for each half of
the problems -- every other problem in launch order takes its r-th plan, the rest keep the
cost model's (`INTERLEAVED`). Each problem's launches are timed in their place in the model,
with the L2 the launches before them left, and the problem keeps the plan whose launches ran
fastest. A last compile takes every problem's winner; when that run is not faster than the
cost model's plans (the winners met other neighbours than in their rounds), nothing is kept.
The result is deterministic: the simulator is.

Problems whose winner is not the cost model's go into the op bank (`OpBank`, merged into
the one already at the path); `ge.compile(..., op_bank_path=DIR)` and
`ge-compile --op-bank-path DIR` use it. Vector and data-movement kernels are not tuned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ge.compiler import CompiledModel, CompileError, CompileOptions, compile, resolve_target
from ge.lowering import op_bank

# Time every other problem (in launch order) at a time, the rest on the cost model's plans?
# A launch's cycles depend on what the launches before it left in the L2, so timing a plan
# while its neighbours change too credits it with their effect (resnet50_b16's stage-1 1 x 1
# reduce: 26,324 -> 24,171 cycles in a round where every problem changed, 26,324 either way
# with its neighbours fixed). The winners ran resnet50_b16 826,443 cycles this way (16
# compiles), 826,491 timing all problems at once (9 compiles): the same gain, but credited to
# the plans that bring it -- the problems' own gains sum to 20.5k of the 23.5k, the rest is
# what the new plans do to their neighbours' L2.
INTERLEAVED = True


@dataclass
class ProblemResult:
    """One Cube problem: its kernels, the cycles their launches took with each plan timed,
    and the rank kept."""

    key: str
    what: str
    kernels: list[str]
    plans: list[str]  # the plans timed (`CubePlan.describe`), the cost model's first
    modeled: list[float]
    simulated: dict[int, float] = field(default_factory=dict)  # rank -> its launches' cycles
    best: int = 0

    @property
    def gain(self) -> float:
        return self.simulated[0] - self.simulated[self.best]


@dataclass
class TuneResult:
    """What `tune` did: per problem the plans timed; the model's cycles with the cost
    model's plans (`default`), with every problem's winner (`tuned`); the compiles run."""

    soc_version: str
    problems: list[ProblemResult]
    default: float
    tuned: float
    compiles: int
    kept: bool  # the winners were kept: the tuned run was faster
    bank: op_bank.OpBank | None = None
    path: Path | None = None  # where the bank was written
    model: CompiledModel | None = None  # the model compiled with the bank's plans (or the default)

    def table(self) -> str:
        rows = ["| problem | kernels | plan (model's choice -> tuned) | cycles before | after |", "|---|---|---|---|---|"]
        for r in sorted(self.problems, key=lambda r: -r.gain):
            if r.best:
                before, after = (r.plans[i].split(";")[0] for i in (0, r.best))  # (not the buffers' bytes)
                rows.append(f"| {r.what} | {len(r.kernels)} | {before} -> {after} | "
                            f"{r.simulated[0]:,.0f} | {r.simulated[r.best]:,.0f} |")
        return "\n".join(rows)

    def to_json(self) -> dict:
        return {"soc_version": self.soc_version, "default_cycles": self.default, "tuned_cycles": self.tuned,
                "kept": self.kept, "compiles": self.compiles, "bank": None if self.path is None else str(self.path),
                "problems": [{"key": r.key, "what": r.what, "kernels": r.kernels, "plans": r.plans,
                              "modeled_cycles": r.modeled, "simulated_cycles": {str(k): v for k, v in r.simulated.items()},
                              "chosen": r.best} for r in self.problems]}

    def summary(self) -> str:
        changed = sum(1 for r in self.problems if r.best)
        state = "kept" if self.kept else "not kept (no faster than the cost model's plans)"
        return (f"{len(self.problems)} Cube problems tuned in {self.compiles} compiles: {changed} took another plan; "
                f"the model ran {self.default:,.0f} -> {self.tuned:,.0f} cycles ({state})")


def timing_inputs(compiled: CompiledModel) -> dict[str, np.ndarray]:
    """Zeros for every input: a timing-only run's cycles do not depend on the data."""
    return {io["name"]: np.zeros(io["shape"], dtype=io["dtype"]) for io in compiled.inputs}


def _timed_compile(model, options: CompileOptions, trial: op_bank.Trial):
    """Compile under `trial`, run timing-only: (model, total cycles, {problem: [cycles,
    kernels, what, index of its first launch]})."""
    from ge.lowering.tile import recorded_reports

    with op_bank.using(trial), recorded_reports() as reports:
        compiled = compile(model, options)
    compiled.run(timing_inputs(compiled), timing_only=True)
    run = compiled.last_run
    per_key: dict[str, list] = {}
    for i, k in enumerate(run.kernels):
        r = reports.get(k.kernel)
        key = None if r is None else trial.taken.get(id(r.chosen))
        if key is not None:
            entry = per_key.setdefault(key, [0.0, [], r.what, i])
            entry[0] += k.cycles
            entry[1].append(k.kernel)
    return compiled, float(run.total_cycles), per_key


def tune(model, options: CompileOptions | None = None, op_bank_path: str | Path | None = None,
         variants: int = op_bank.VARIANTS, progress: Callable[[str], None] | None = None) -> TuneResult:
    """Tune `model`'s Cube plans under `options` (see the module docstring); with
    `op_bank_path`, merge the winners into the bank there."""
    options = replace(options or CompileOptions(), op_bank_path=None)
    progress = progress or (lambda line: None)
    if options.kernel_level != "isa":
        raise CompileError("operator tuning times the kernels on the simulator: it needs kernel_level 'isa'")
    if options.input_shape_range or options.dynamic_batch_size or options.dynamic_image_size or options.dynamic_dims:
        raise CompileError("operator tuning takes a static model: give --input-shape without gears or ranges")
    target = resolve_target(options.soc_version)
    bank = op_bank.OpBank(target.soc_version)
    if op_bank_path is not None:  # (read first: a bank that cannot be read stops the tuning before it starts)
        Path(op_bank_path).mkdir(parents=True, exist_ok=True)
        bank = op_bank.OpBank.load(op_bank_path, target.soc_version)
    trial = op_bank.Trial(variants=variants)
    _, default, per_key = _timed_compile(model, options, trial)
    compiles = 1
    problems = {key: ProblemResult(key, what, kernels, [a.describe() for a in trial.alternatives[key]],
                                   [a.cycles for a in trial.alternatives[key]], {0: cycles})
                for key, (cycles, kernels, what, _) in per_key.items()}
    progress(f"the cost model's plans: the model ran {default:,.0f} cycles")
    first = sorted(problems, key=lambda key: per_key[key][3])  # in launch order
    for half, group in enumerate((first[0::2], first[1::2]) if INTERLEAVED else (first,)):
        for rank in range(1, variants):
            timed = [key for key in group if rank < len(trial.alternatives[key])]
            if not timed:
                break
            trial.fixed = dict.fromkeys(timed, rank)
            _, total, per_key = _timed_compile(model, options, trial)
            compiles += 1
            for key in timed:
                if key in per_key:  # (plans do not change which kernels there are)
                    problems[key].simulated[rank] = per_key[key][0]
            where = f" (half {half + 1})" if INTERLEAVED else ""
            progress(f"plan {rank} of {len(timed)} problems{where}: the model ran {total:,.0f} cycles")
    for r in problems.values():
        r.best = min(r.simulated, key=lambda rank: (r.simulated[rank], rank))
    trial.fixed = {k: r.best for k, r in problems.items()}
    compiled, tuned = None, default
    if any(r.best for r in problems.values()):
        compiled, tuned, _ = _timed_compile(model, options, trial)
        compiles += 1
    kept = tuned < default
    if not kept:
        for r in problems.values():
            r.best = 0
    result = TuneResult(target.soc_version, list(problems.values()), default, tuned, compiles, kept,
                        model=compiled if kept else None)
    for r in problems.values():
        if r.best:
            bank.add(r.key, trial.alternatives[r.key][r.best], what=r.what,
                     default_cycles=round(r.simulated[0]), tuned_cycles=round(r.simulated[r.best]))
        else:
            bank.drop(r.key)  # (tuned again: the cost model's plan is the fastest now)
    result.bank = bank
    if op_bank_path is not None:
        result.path = bank.save(op_bank_path)
    return result
