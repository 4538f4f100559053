"""The Python API of the whole compiler: `ge.compile`, `ge.CompileOptions`, `ge.load_model`.

Where it sits: on top of every level (DESIGN.md §2). `compile` runs, in process on one
module and timed per stage, what ATC runs:

    import ONNX -> graph-optimize{precision} -> decompose -> assign-layouts -> eliminate-trans-data ->
    fuse{switch-file} -> bufferize -> tile{target} -> to-isa -> plan-local-memory ->
    insert-sync -> build-model{disable-reuse-memory, single-stream} -> model file

and returns a `CompiledModel` (`.run`, `.save`, `.report`). `ge-compile` and `ge-run`
are thin wrappers over this module, and `ge.backend` uses it for device="NPU".

`kernel_level="tile"` stops after `tile`: the kernels then run in the tile interpreter
-- functional only, cycles are the tile cost model's estimates -- a fast debug mode.
Gears (`ge.gears`): an input shape with -1s plus one of `dynamic_batch_size`,
`dynamic_image_size`, `dynamic_dims` compiles one static gear per listed shape assignment
into one model that shares the weights. `input_shape_range` compiles nothing up front: the
model keeps its graph and compiles kernels per input shape at run time (`ge.dynamic`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

from ge import targets
from ge.errors import GeError, ShapeError
from ge.forked import Forked, can_fork

if TYPE_CHECKING:
    import numpy as np
    import onnx
    from xdsl.dialects.builtin import ModuleOp

log = logging.getLogger("ge.compile")

PRECISION_MODES = ("force_fp16", "must_keep_origin_dtype", "allow_mix_precision")
KERNEL_LEVELS = ("isa", "tile")
ISA_STAGES = ("to-isa", "plan-local-memory", "insert-sync")
# The stages after which the module is verified besides the last one: the graph level's and
# the kernel level's ends (cheap: few ops). The tile and isa kernels are verified once, after
# the pipeline's last stage (resnet50: the tile level's check took 0.26 s CPU, the isa
# level's 0.78 s); `verify_each` verifies after every stage (to name the stage that broke the
# IR), and a custom pass is always verified before and after it runs.
VERIFY_AFTER = ("eliminate-trans-data", "bufferize")
BUILTIN_STAGES = ("graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data", "fuse", "bufferize",
                  "tile", *ISA_STAGES)


class CompileError(GeError):
    """A stage of the compiler refused the model (a kernel that does not fit, a lowering
    that does not exist); the message names the model, the stage and the reason."""


@dataclass(frozen=True)
class CompileOptions:
    """ATC's options, by their Python names (`ge-compile --help` has the CLI spelling)."""

    soc_version: str = targets.DEFAULT_TARGET
    precision_mode: str = "force_fp16"
    input_shape: str | Mapping[str, Sequence[int]] | None = None
    dynamic_batch_size: str | Sequence[int] | None = None
    dynamic_image_size: str | Sequence[Sequence[int]] | None = None  # "h1,w1;h2,w2" (ge.gears)
    dynamic_dims: str | Sequence[Sequence[int]] | None = None  # "d1,d2;d3,d4": every -1 per gear (ge.gears)
    input_shape_range: str | None = None  # "input_ids:[1,1~512]": kernels compiled per shape at run time (ge.dynamic)
    fusion_switch_file: str | None = None
    op_bank_path: str | None = None  # operator tuning's repository (ge.aoe; ATC's --op_bank_path): tuned Cube plans
    disable_reuse_memory: bool = False
    enable_single_stream: bool = False
    super_kernel: bool = True  # each stream's consecutive launches dispatched once (transforms/super_kernel.py)
    kernel_level: str = "isa"
    dump_ir: str | None = None  # a directory: the IR after every stage, re-parsable by ge-opt
    keep_ir_text: bool = False  # store the task-level IR text in the model file (inspection only; printing it is slow)
    double_buffer: bool = True  # ge's own switch (not ATC's): to-isa{double-buffer=false} to measure what it buys
    passes: str | Sequence[str] = ()  # custom passes (ge.register_pass / `ge.passes` entry points) to run at their stage
    kernels_once: bool = True  # lower identical kernels once and copy them (same result; False: each on its own)
    reuse_probes: bool = True  # with kernels_once: take the kernels fuse's legality probes built (same result)
    verify_each: bool = False  # verify the whole module after every stage (a debugging aid; off: at VERIFY_AFTER)
    verify_aside: bool = True  # the final verify in a forked copy while the model file is built (same checks)
    sync_ahead: bool = True  # with reuse_probes: the probes' kernels' sync planned in a forked copy after fuse (same result)


Progress = Callable[[str, int, int], None]  # (stage, number of stages done, total)


# --------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------


def resolve_target(soc_version: str) -> targets.Target:
    """A target by ge's name ("ascend910") or ATC's soc_version ("Ascend910A")."""
    names = targets.available_targets()
    if soc_version in names:
        return targets.load_target(soc_version)
    for name in names:
        target = targets.load_target(name)
        if soc_version.lower() in (name.lower(), target.soc_version.lower()):
            return target
    known = ", ".join(f"{n} ({targets.load_target(n).soc_version})" for n in names)
    raise CompileError(f"unknown soc version '{soc_version}'; known: {known}")


def compile_gears(options: CompileOptions):
    """The `ge.gears.Gear`s `options` asks for (one static gear without a gear option)."""
    from ge.gears import parse_gears

    return parse_gears(options.input_shape, options.dynamic_batch_size, options.dynamic_image_size,
                       options.dynamic_dims)


def _check_options(options: CompileOptions) -> None:
    if options.precision_mode not in PRECISION_MODES:
        raise CompileError(f"precision mode '{options.precision_mode}' is not one of {', '.join(PRECISION_MODES)}")
    if options.kernel_level not in KERNEL_LEVELS:
        raise CompileError(f"kernel level '{options.kernel_level}' is not one of {', '.join(KERNEL_LEVELS)}")
    if options.fusion_switch_file is not None and not Path(options.fusion_switch_file).is_file():
        raise CompileError(f"fusion switch file {options.fusion_switch_file}: no such file")
    if options.op_bank_path is not None and not Path(options.op_bank_path).is_dir():
        raise CompileError(f"op bank path {options.op_bank_path}: no such directory")


# --------------------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------------------


def _pass(name: str, **options):
    from ge.transforms import get_all_ge_passes

    passes = get_all_ge_passes()
    if name not in passes:
        raise CompileError(f"the '{name}' pass is not available in this build of ge; compile with "
                           "kernel_level='tile' (ge-compile --kernel-level tile) to stop at the tile level")
    p = passes[name]()(**options)
    return with_debug(p) if log.isEnabledFor(logging.DEBUG) else p


def with_debug(p):
    """The pass with its `debug` option on, when it has one: at `--log debug` the passes
    print their decisions (graph-optimize's stages, fuse's rules, tile's choices) on stderr."""
    if dataclasses.is_dataclass(p) and "debug" in {f.name for f in dataclasses.fields(p)}:
        return dataclasses.replace(p, debug=True)
    return p


def pass_stages(options: CompileOptions, target: targets.Target) -> list[tuple[str, Any]]:
    """(stage name, pass instance) from graph-optimize to the kernels' last pass."""
    stages = [
        ("graph-optimize", _pass("graph-optimize", precision=options.precision_mode)),
        ("decompose", _pass("decompose")),
        ("assign-layouts", _pass("assign-layouts", target=target.name)),
        ("eliminate-trans-data", _pass("eliminate-trans-data")),
        ("fuse", _pass("fuse", switch_file=options.fusion_switch_file)),
        ("bufferize", _pass("bufferize")),
        ("tile", _pass("tile", target=target.name)),
    ]
    if options.kernel_level == "isa":
        stages += [(name, _pass(name, double_buffer=options.double_buffer) if name == "to-isa" else _pass(name))
                   for name in ISA_STAGES]
    from ge.plugins import with_custom_passes

    return with_custom_passes(stages, options.passes)


def _count(module: ModuleOp, test: Callable[[Any], bool]) -> int:
    return sum(1 for op in module.walk() if test(op))


def _is_graph_compute(op) -> bool:
    return op.dialect_name() == "graph" and op.name != "graph.constant"


@dataclass
class _GearResult:
    gear: Any  # ge.gears.Gear
    module: ModuleOp
    stats: dict[str, Any] = field(default_factory=dict)
    # the pipeline's final verify running in a forked copy (stage, ge.forked.Forked), or None
    verifying: tuple[str, Any] | None = None
    ahead: Any = None  # the probes' kernels' sync being planned in a forked copy (insert_sync.PlansAhead), or None


class _Pipeline:
    """Runs the stages on one gear after another, timing each stage."""

    def __init__(self, source, name: str, options: CompileOptions, target: targets.Target,
                 progress: Progress | None):
        self.source, self.name, self.options, self.target = source, name, options, target
        self.progress = progress
        self.seconds: dict[str, float] = {}
        self.done, self.total = 0, 0

    def timed(self, stage: str, fn: Callable[[], Any]) -> Any:
        if self.progress is not None:
            self.progress(stage, self.done, self.total)
        start = time.perf_counter()
        try:
            result = fn()
        except (PassFailedException, DiagnosticException, VerifyException) as e:
            raise CompileError(f"{self.name}: {stage} failed: {e}") from None
        elapsed = time.perf_counter() - start
        self.seconds[stage] = self.seconds.get(stage, 0.0) + elapsed
        self.done += 1
        log.info("%s: %s took %.3f s", self.name, stage, elapsed)
        return result

    def untimed(self, what: str, fn: Callable[[], Any]) -> Any:
        """`fn` timed under `what` but not counted as a stage (for progress)."""
        start = time.perf_counter()
        result = fn()
        self.seconds[what] = self.seconds.get(what, 0.0) + time.perf_counter() - start
        return result

    def kernels_once(self, stages: list[tuple[str, Any]]) -> bool:
        """Lower each distinct kernel once? Not when the IR of every stage is dumped or
        custom passes run among the isa stages (they see the whole module)."""
        names = [s for s, _ in stages]
        return (self.options.kernels_once and self.options.dump_ir is None
                and names[names.index(ISA_STAGES[0]):] == list(ISA_STAGES))

    def probe_kernels(self, stages: list[tuple[str, Any]]):
        """Where fuse's probes keep their kernels for the isa stages (an empty scope when
        they are not reused: kernels lowered one by one, or `to-isa` not on its defaults)."""
        from ge.lowering.fusion_legality import ProbeScope

        isa = ISA_STAGES[0] in [s for s, _ in stages]
        return ProbeScope(self.options.reuse_probes and self.options.double_buffer and isa and self.kernels_once(stages))

    def plans_ahead(self, stages: list[tuple[str, Any]], probes) -> bool:
        """Plan the sync of the kernels fuse's probes kept in a forked copy now (insert_sync
        `PlansAhead`)? When insert-sync will take them (the probes reused, its `jobs` not 1)
        and this process may fork."""
        names = [s for s, _ in stages]
        return (self.options.sync_ahead and probes.enabled and bool(probes.kernels) and ISA_STAGES[2] in names
                and stages[names.index(ISA_STAGES[2])][1].jobs != 1 and can_fork())

    def verifies(self, stages: list[tuple[str, Any]], i: int) -> bool:
        """Verify the module after stage i? At the end of each level and of the pipeline,
        before and after a custom pass, or after every stage with `verify_each`."""
        names = [name for name, _ in stages]
        custom = [name not in BUILTIN_STAGES for name in names] + [False]
        return (self.options.verify_each or i == len(names) - 1 or names[i] in VERIFY_AFTER
                or custom[i] or custom[i + 1])

    def build(self, module: ModuleOp, build) -> tuple[list, int]:
        """build-model, then (`super_kernel`) each stream's consecutive launches grouped into
        SuperKernels (transforms/super_kernel.py) in the same stage: (the build reports, the
        SuperKernels)."""
        from ge.dialects import task
        from ge.lowering.build_model import build_model
        from ge.transforms.super_kernel import group_launches

        reports = build_model(module, build)
        if not self.options.super_kernel:
            return reports, 0
        return reports, sum(len(group_launches(m)) for m in module.ops if isinstance(m, task.ModelOp))

    def dump(self, module: ModuleOp, prefix: str, number: int, stage: str) -> None:
        if self.options.dump_ir is None:
            return
        from ge.ir import print_module

        directory = Path(self.options.dump_ir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{prefix}{number:02d}_{stage}.mlir").write_text(print_module(module))

    def gear(self, gear) -> _GearResult:
        from ge.dialects.kernel_base import symbols_indexed
        from ge.ir import make_context
        from ge.lowering.build_model import BuildOptions
        from ge.transforms.insert_sync import PlansAhead, planned_ahead

        prefix = gear.prefix
        module = self.timed("import", lambda: _import(self.source, dict(gear.shapes), self.name))
        self.dump(module, prefix, 0, "import")
        result = _GearResult(gear, module)
        try:
            ctx = make_context()
            _pass("quant-fold").apply(ctx, module)  # QDQ -> int8 Cube ops with the import (README "INT8 quantization")
            stages = pass_stages(self.options, self.target)
            once = None  # the isa stages on one copy of each distinct kernel (lowering/kernel_dedup.py)
            probes = self.probe_kernels(stages)
            for number, (stage, p) in enumerate(stages, start=1):
                if stage == ISA_STAGES[0] and self.kernels_once(stages):
                    once = self.untimed("kernel-copies", lambda: _distinct_kernels(module, probes))
                on = module if once is None else once.work
                check = self.verifies(stages, number - 1)
                later = check and once is not None and number == len(stages) and self.options.verify_aside and can_fork()
                with (probes if stage in ("fuse", "tile")  # tile copies the probes' tilings
                      else planned_ahead(result.ahead) if stage == ISA_STAGES[2] else contextlib.nullcontext()):
                    self.timed(stage, lambda p=p, on=on, check=check and not later: (p.apply(ctx, on), check and _verify(on)))
                if stage == ISA_STAGES[2] and result.ahead is not None:  # what insert-sync did not take
                    result.ahead.stop()
                    result.ahead = None
                if stage == "fuse" and self.plans_ahead(stages, probes):
                    result.ahead = self.untimed("fuse", lambda: PlansAhead([k for *_, k in probes.kernels.values()],
                                                                           self.target))
                if later:  # the distinct isa kernels encoded for the model file, then verified, beside the rest
                    result.verifying = stage, self.untimed(stage, lambda on=on: Forked(
                        partial(_verify, on), first=partial(_encoded, on, self.target)))
                if once is not None and stage == ISA_STAGES[1]:
                    self.untimed("kernel-copies", once.add_probe_kernels)
                    if result.ahead is not None:
                        for copy, original in once.from_probe:
                            result.ahead.copied(copy, original)
                if once is not None and stage == ISA_STAGES[-1]:
                    with symbols_indexed():  # (it verifies the launches it lowers)
                        self.untimed("kernel-copies", once.finish)
                    result.stats["distinct_kernels"], result.stats["twins"], once = once.distinct, once.twins(), None
                self.dump(module, prefix, number, stage)
                if stage == "graph-optimize":
                    result.stats["graph_ops"] = _count(module, _is_graph_compute)
                elif stage == "eliminate-trans-data":
                    result.stats["trans_data"] = _count(module, lambda op: op.name == "layout.trans_data")
            build = BuildOptions(not self.options.disable_reuse_memory, self.options.enable_single_stream,
                                 merge_ineffective_streams=self.options.super_kernel)
            reports, result.stats["super_kernels"] = self.timed("build-model", lambda: self.build(module, build))
            self.dump(module, prefix, number + 1, "build-model")
            result.stats["build"] = reports[0]
            return result
        except BaseException:
            _stop_verifying([result])
            raise

    def encoded(self, result: _GearResult) -> dict | None:
        """The distinct isa kernels' encoding for the model file (runtime/kernel_code.py
        `encode_kernels`), made by the forked copy that verifies them (`gear`) while this
        process copied the twins and built the task model; None without one, or when it
        failed (the kernels are then encoded here)."""
        if result.verifying is None:
            return None
        outcome, encoded = result.verifying[1].first_result()
        return encoded if outcome == "ok" else None

    def verified(self, result: _GearResult) -> None:
        """The answer of `result`'s final verify in a forked copy (`gear`), waited for and
        counted in its stage: its error raised as the stage's would have been; a copy that
        died or failed otherwise leaves the verify to this process, on the whole module."""
        if result.verifying is None:
            return
        stage, worker = result.verifying
        result.verifying = None
        outcome, error = self.untimed(stage, worker.result)
        if outcome == "ok":
            return
        if outcome == "raised" and isinstance(error, PassFailedException | DiagnosticException | VerifyException):
            raise CompileError(f"{self.name}: {stage} failed: {error}") from None
        try:
            self.untimed(stage, lambda: _verify(result.module))
        except (PassFailedException, DiagnosticException, VerifyException) as e:
            raise CompileError(f"{self.name}: {stage} failed: {e}") from None


def _stop_verifying(results: list[_GearResult]) -> None:
    """The forked copies not waited for (the compile failed first) stopped: the verifies,
    and the sync plans ahead that insert-sync did not take."""
    for r in results:
        if r.verifying is not None:
            r.verifying[1].stop()
            r.verifying = None
        if r.ahead is not None:
            r.ahead.stop()
            r.ahead = None


def _encoded(module: ModuleOp, target: targets.Target) -> dict:
    """`module`'s isa kernels encoded as the model file stores them (by symbol)."""
    from ge.runtime.kernel_code import encode_kernels
    from ge.transforms.plan_local_memory import isa_kernels

    return encode_kernels(isa_kernels(module), target)


def _verify(module: ModuleOp) -> None:
    """`module.verify()` (fast_verify.verify: the same checks and messages), its launches
    finding their kernels through an index of the module's symbols (`symbols_indexed`:
    xDSL's lookup scans them once per launch)."""
    from ge.dialects.fast_verify import verify
    from ge.dialects.kernel_base import symbols_indexed

    with symbols_indexed():
        verify(module)


def _distinct_kernels(module: ModuleOp, probes):
    from ge.lowering.kernel_dedup import DistinctKernels

    return DistinctKernels(module, probes.kernels)


def _import(source, shapes: dict[str, tuple[int, ...]], name: str) -> ModuleOp:
    """The graph-level module of one gear: an ONNX model imported, or a copy of an already
    imported graph-level module (from `ge.from_torch` or `ge.load_onnx`: shapes are fixed)."""
    from xdsl.dialects.builtin import ModuleOp

    from ge.frontend.onnx import import_model
    from ge.torch_backend import TorchSource  # (imports torch only when it imports a module)

    if isinstance(source, TorchSource):
        return source.imported(shapes)
    if isinstance(source, ModuleOp):
        if shapes:
            raise ShapeError(f"{name}: input_shape does not apply to an already imported graph; its shapes are fixed")
        return source.clone()
    if isinstance(source, str | os.PathLike) and Path(source).suffix != ".pb":  # (`tf.is_tf_source`'s
        return import_model(source, input_shape=shapes, name=name)  # test for a path, without importing tf)
    from ge.frontend import tf

    if tf.is_tf_source(source):  # a TensorFlow GraphDef (.pb path or message; ATC's --framework 3)
        return tf.import_graphdef(source, input_shape=shapes, name=name)
    return import_model(source, input_shape=shapes, name=name)


def _torch_module(model, example_inputs):
    """A torch.nn.Module with its example inputs, imported per gear by `ge.from_torch`
    (None if `model` is not one)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not isinstance(model, torch.nn.Module):
        return None
    if example_inputs is None:
        raise CompileError(f"{type(model).__name__}: compiling a torch module needs example_inputs "
                           "(their shapes and dtypes are the compiled ones)")
    from ge.torch_backend import TorchSource

    return TorchSource(model, example_inputs)


def _gear_stats(result: _GearResult) -> dict[str, Any]:
    build = result.stats["build"]
    return {
        "graph_ops": result.stats["graph_ops"], "trans_data": result.stats["trans_data"],
        "kernels": len(_kernel_symbols(result.module)),
        "distinct_kernels": result.stats.get("distinct_kernels"),  # lowered once each (None: not counted)
        "launches": build.launches, "copies": build.copies,
        "streams": build.schedule.num_streams, "events": len(build.schedule.events),
        "super_kernels": result.stats.get("super_kernels", 0),  # runs of launches dispatched once
        "memory": {
            "activation_peak_bytes": build.plan.peak,
            "activation_lower_bound_bytes": build.plan.lower_bound,
            "no_reuse_bytes": build.plan.no_reuse,
            "weights_bytes": build.regions["weights"][1],
            "arena_bytes": build.arena,
        },
    }


def _report(name: str, options: CompileOptions, target: targets.Target, seconds: dict[str, float],
            gears: list[_GearResult], model) -> dict[str, Any]:
    per_gear = [{"gear": g.gear.label, "batch": g.gear.batch, "shapes": {n: list(s) for n, s in g.gear.shapes.items()},
                 **_gear_stats(g)} for g in gears]
    top = max(per_gear, key=lambda s: s["memory"]["activation_peak_bytes"])
    report = {
        "model": name, "soc_version": target.soc_version, "target": target.name,
        "precision_mode": options.precision_mode, "kernel_level": options.kernel_level,
        "compile_seconds": {**{k: round(v, 4) for k, v in seconds.items()}, "total": round(sum(seconds.values()), 4)},
        **{k: v for k, v in top.items() if k not in ("gear", "batch", "shapes", "memory")},
        "memory": {**top["memory"], "weights_bytes": len(model.weights)},
    }
    if gears[0].gear.kind is not None:
        report["gears"] = per_gear
    return report


def _kernel_symbols(module: ModuleOp):
    from ge.dialects import task

    callees = {op.callee.string_value() for m in module.ops if isinstance(m, task.ModelOp)
               for op in m.body.block.ops if isinstance(op, task.LaunchOp)}
    return [op for op in module.ops if "sym_name" in op.properties and op.properties["sym_name"].data in callees]


def _model_name(model) -> str:
    import onnx

    if isinstance(model, str | Path):
        return Path(model).name
    if isinstance(model, onnx.ModelProto) and model.graph.name:
        return model.graph.name
    return "<model>"


# The cyclic garbage collector's thresholds while compiling. Why: the IR is millions of
# small cyclic containers (ops, values, uses); at Python's default (a young collection per
# 700 allocations, an older one per 10 of those) the collector walked them a seventh of a
# resnet50 compile's CPU time. Collections still run, just less often (same peak memory).
COMPILE_GC_THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def _fewer_collections():
    import gc

    saved = gc.get_threshold()
    gc.set_threshold(*COMPILE_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def compile(model: str | Path | bytes | onnx.ModelProto | ModuleOp, options: CompileOptions | None = None,
            progress: Progress | None = None, example_inputs: Sequence | None = None) -> CompiledModel:
    """Compile an ONNX model (path, bytes or ModelProto), a graph-level ModuleOp (from
    `ge.from_torch` / `ge.load_onnx`) or a torch.nn.Module with `example_inputs` for an NPU;
    see the module docstring."""
    from ge.dialects.interning import intern_scope

    with _fewer_collections(), intern_scope():  # integer attributes interned for this compile only
        compiled, _ = _compile(model, options, progress, example_inputs)
        return compiled


def compile_to_file(model: str | Path | bytes | onnx.ModelProto | ModuleOp, path: str | Path,
                    options: CompileOptions | None = None, progress: Progress | None = None) -> tuple[CompiledModel, int]:
    """`compile(model, options).save(path)` and the file's size -- `ge-compile`'s path: the
    file is written while the final verify's forked copy (`verify_aside`) may still run, and
    removed when that verify fails (its error raised as `compile` raises it). The report's
    `compile_seconds` do not count the wait for that copy after serialize."""
    from ge.dialects.interning import intern_scope

    with _fewer_collections(), intern_scope():
        compiled, settle = _compile(model, options, progress, None, settle_later=True)
        try:
            size = compiled.save(path)
        except BaseException:
            settle.stop()
            raise
        try:
            settle()
        except BaseException:  # the model file of a compile that failed goes
            Path(path).unlink(missing_ok=True)
            raise
        return compiled, size


class _Settle:
    """Waits for a compile's forked verifies (`_Pipeline.verified`); `stop` drops them."""

    def __init__(self, pipeline: _Pipeline | None = None, results: list[_GearResult] | None = None):
        self.pipeline, self.results = pipeline, results or []

    def __call__(self) -> None:
        try:
            for r in self.results:
                self.pipeline.verified(r)
        finally:
            self.stop()

    def stop(self) -> None:
        _stop_verifying(self.results)


def _op_bank(options: CompileOptions, target: targets.Target):
    """The op bank of `options.op_bank_path` for `target` (lowering/op_bank.py), or None."""
    from ge.lowering import op_bank

    if options.op_bank_path is None:
        return None
    try:
        return op_bank.OpBank.load(options.op_bank_path, target.soc_version)
    except op_bank.OpBankError as e:
        raise CompileError(str(e)) from None


def _compile(model, options: CompileOptions | None, progress: Progress | None,
             example_inputs: Sequence | None, settle_later: bool = False) -> tuple[CompiledModel, _Settle]:
    """The compiled model and its final verifies: waited for here, or, `settle_later`, by
    the caller (`compile_to_file`)."""
    from ge.lowering import op_bank
    from ge.runtime.model_file import model_from_gears, model_from_module

    options = options or CompileOptions()
    _check_options(options)
    target = resolve_target(options.soc_version)
    if options.input_shape_range:
        from ge.dynamic import compile_dynamic

        return compile_dynamic(model, options, progress), _Settle()
    gears = compile_gears(options)
    name = type(model).__name__ if (torch_source := _torch_module(model, example_inputs)) is not None else _model_name(model)
    model = torch_source if torch_source is not None else model
    source = str(model) if isinstance(model, Path) else model
    pipeline = _Pipeline(source, name, options, target, progress)
    pipeline.total = len(gears) * (len(pass_stages(options, target)) + 2) + 1
    results: list[_GearResult] = []
    bank = _op_bank(options, target)
    try:
        with op_bank.using(bank):  # (without one, the tuner's source stays: ge/aoe.py)
            for gear in gears:
                results.append(pipeline.gear(gear))
        if results[0].gear.kind is None:
            built = pipeline.timed("serialize", lambda: model_from_module(
                results[0].module, with_ir=options.keep_ir_text, twins=results[0].stats.get("twins"),
                ahead=pipeline.encoded(results[0])))
        else:
            pairs = [(r.gear, r.module) for r in results]
            built = pipeline.timed("serialize", lambda: model_from_gears(pairs, with_ir=options.keep_ir_text))
        settle = _Settle(pipeline, results)
        if not settle_later:
            settle()
    except BaseException:
        _stop_verifying(results)
        raise
    report = _report(name, options, target, pipeline.seconds, results, built)
    if bank is not None:
        report["op_bank"] = {"path": str(options.op_bank_path), "plans": len(bank.entries), "used": len(bank.used)}
    built.metadata["compile_report"] = report
    if progress is not None:
        progress("done", pipeline.total, pipeline.total)
    for r in results:
        log.debug("%s: %s", name, r.stats["build"].summary())
    return CompiledModel(built, report), settle


# --------------------------------------------------------------------------------------
# The compiled model
# --------------------------------------------------------------------------------------


class CompiledModel:
    """A built model: `run({name: array}) -> {name: array}`, `save(path)`, `report`."""

    def __init__(self, model, report: dict[str, Any] | None = None):
        self.model = model  # ge.runtime.model_file.Model
        self.report = report if report is not None else model.metadata.get("compile_report", {})
        self._executor = None

    @property
    def executor(self):
        """The executor (built on first use: it parses and decodes the kernels)."""
        if self._executor is None:
            from ge.runtime.executor import Executor

            self._executor = Executor(self.model)
        return self._executor

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return self.model.metadata["inputs"]

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return self.model.metadata["outputs"]

    @property
    def batch_sizes(self) -> list[int]:
        return [g["batch"] for g in self.model.metadata.get("gears", []) if "tasks" in g]

    @property
    def gears(self) -> list[str]:
        """The compiled gears' labels (`batch=4`, `224x224`, `dims=16,16,16`); [] if static."""
        return [g.get("gear", f"batch={g['batch']}") for g in self.model.metadata.get("gears", []) if "tasks" in g]

    @property
    def last_run(self):
        """The `RunReport` of the last `run` (cycles, per-kernel table, timeline)."""
        return self.executor.last_report

    def run(self, inputs: Mapping[str, np.ndarray], trace: bool = False, timing_only: bool = False,
            allow_hazards: bool = False) -> dict[str, np.ndarray]:
        """Run on the simulator (see `Executor.run`: a reported hazard raises unless
        `allow_hazards`; `timing_only` returns no outputs)."""
        return self.executor.run(inputs, trace=trace, timing_only=timing_only, allow_hazards=allow_hazards)

    def save(self, path: str | Path) -> int:
        """Write the model file; returns its size in bytes."""
        from ge.runtime.model_file import save_model

        size = save_model(path, self.model)
        self.report = {**self.report, "model_file_bytes": size}  # the file keeps the report without its own size
        return size


def load_model(path: str | Path) -> CompiledModel:
    """Load a model file written by `CompiledModel.save` or `ge-compile`."""
    from ge.runtime.model_file import load_model as read

    model = read(path)
    if "dynamic" in model.metadata:  # an input_shape_range model: kernels per shape at run time
        from ge.dynamic import DynamicCompiledModel

        return DynamicCompiledModel(model)
    return CompiledModel(model)
