"""The true dynamic-shape mode: `input_shape_range`, kernels compiled per shape at run time.

ATC's `--input_shape_range "input_ids:[1,1~512];attention_mask:[1,1~512]"` (ge's spelling is
the same; a dim is `n`, `lo~hi`, or `-1` for any size) makes a model whose inputs may take
any shape in the ranges. `ge.compile` then builds no kernels: the model file keeps the
framework graph (ONNX bytes, the GRAPH partition) and the ranges. At run time
`DynamicCompiledModel.run` looks the inputs' shape signature up in

1. memory (this object's executors, one per signature seen),
2. the on-disk cache (`ge.runtime.kernel_cache`: `$GE_CACHE_DIR` or `~/.cache/ge`, keyed by
   the graph, target and options; checksummed, atomically written entries), else
3. compiles it once, in process, and stores it in both.

Why the graph and not the post-graph-optimize module: ge's graph level is statically shaped
(every `graph` op verifies static operand shapes, and import / graph-optimize fold `Shape`
and shape-dependent constants such as BERT's position-id slice), so a signature must be
specialized from the framework graph; the graph is parsed once per process (on the first
compile), and the cached run path reads only model files (kernel code, no MLIR).

`cache_stats` counts memory hits, disk hits, misses, compiles and corrupt entries rebuilt;
`last_run.cache` says how the last run found its kernels ("memory hit", "disk hit",
"compiled"), and `ge-run` prints it.

`compile_module_cached` is the same disk cache for an already imported graph-level module
(the torch.compile backend's dynamic-shape graphs, one module per concrete shape): keyed by
the module's text with its weight blobs, so a new process finds the shapes compiled before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ge.compiler import (
    CompiledModel,
    CompileError,
    CompileOptions,
    _check_options,
    _model_name,
    resolve_target,
)
from ge.errors import InputError, ShapeError

Range = tuple[int, int | None]  # (lo, hi); hi None: unbounded
# options that describe the shapes, not how to compile them (left out of the cache key)
_SHAPE_OPTIONS = ("input_shape", "input_shape_range", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims",
                  "dump_ir", "keep_ir_text")


def parse_shape_ranges(spec: str | Mapping[str, Any]) -> dict[str, list[Range]]:
    """`"input_ids:[1,1~512];mask:[1,-1]"` (or {name: [1, (1, 512)]}) -> {name: [(lo, hi)]}."""
    if isinstance(spec, Mapping):
        return {n: [_range_of(n, d) for d in dims] for n, dims in spec.items()}
    out: dict[str, list[Range]] = {}
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        m = re.fullmatch(r"(.+):\s*\[([^\]]*)\]", item)
        if m is None:
            raise ShapeError(f"input_shape_range entry '{item}' is not of the form name:[d0,lo~hi,...]")
        name, dims = m.group(1).strip(), [d.strip() for d in m.group(2).split(",")]
        out[name] = [_range_of(name, d) for d in dims]
    if not out:
        raise ShapeError(f"input_shape_range '{spec}' names no input")
    return out


def _range_of(name: str, dim) -> Range:
    try:
        if isinstance(dim, tuple | list):
            lo, hi = int(dim[0]), int(dim[1])
        elif isinstance(dim, str) and "~" in dim:
            lo, hi = (int(x) for x in dim.split("~"))
        else:
            lo = hi = int(dim)
    except ValueError:
        raise ShapeError(f"input_shape_range '{name}': dim '{dim}' must be n, lo~hi or -1") from None
    if lo == hi == -1:
        return (1, None)
    if lo <= 0 or hi < lo:
        raise ShapeError(f"input_shape_range '{name}': dim '{dim}' must be a positive size or range lo~hi with lo <= hi")
    return (lo, hi)


def _shown(ranges: list[Range]) -> str:
    return "[" + ",".join(str(lo) if lo == hi else f"{lo}~{'' if hi is None else hi}" if hi else "-1"
                          for lo, hi in ranges) + "]"


@dataclass
class CacheStats:
    """How the runs of a dynamic-shape model found their kernels."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    compiles: int = 0
    corrupt: int = 0  # corrupt disk entries detected, removed and rebuilt

    @property
    def hits(self) -> int:
        return self.memory_hits + self.disk_hits

    def as_dict(self) -> dict[str, int]:
        return {**dataclasses.asdict(self), "hits": self.hits}


def compile_dynamic(model, options: CompileOptions, progress=None) -> DynamicCompiledModel:
    """The dynamic-shape model of an ONNX model (`ge.compile` with `input_shape_range`)."""
    import onnx

    from ge.frontend.onnx import import_model, load_onnx_model
    from ge.runtime.model_file import Model

    start = time.perf_counter()
    _check_options(options)
    given = [f for f in ("input_shape", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims")
             if getattr(options, f) not in (None, "")]
    if given:
        raise ShapeError(f"input_shape_range cannot be used with {', '.join(given)}: the ranges give every shape")
    target = resolve_target(options.soc_version)
    name = _model_name(model)
    proto = load_onnx_model(model, name)
    ranges = parse_shape_ranges(options.input_shape_range)
    inits = {t.name for t in proto.graph.initializer}
    graph_inputs = [vi for vi in proto.graph.input if vi.name not in inits]
    unknown = sorted(set(ranges) - {vi.name for vi in graph_inputs})
    if unknown:
        raise ShapeError(f"{name}: input_shape_range names {', '.join(map(repr, unknown))}, not graph inputs "
                         f"(the inputs: {', '.join(vi.name for vi in graph_inputs)})")
    inputs = []
    for vi in graph_inputs:
        dims = vi.type.tensor_type.shape.dim
        if vi.name in ranges:
            r = ranges[vi.name]
            if len(r) != len(dims):
                raise ShapeError(f"{name}: input_shape_range '{vi.name}' has {len(r)} dims; the input has rank {len(dims)}")
        elif all(d.dim_value > 0 for d in dims):
            r = [(d.dim_value, d.dim_value) for d in dims]
        else:
            raise ShapeError(f"{name}: input '{vi.name}' has a dynamic shape; give its range in input_shape_range")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type).name
        inputs.append({"name": vi.name, "dtype": dtype, "shape": [lo if lo == hi else -1 for lo, hi in r],
                       "range": [[lo, hi] for lo, hi in r]})
    # the graph must import at its smallest shapes (an unsupported op fails here, not at run time)
    import_model(proto, input_shape={io["name"]: tuple(lo for lo, _ in io["range"]) for io in inputs}, name=name)
    graph = proto.SerializeToString()
    stored = {k: v for k, v in dataclasses.asdict(options).items() if k not in _SHAPE_OPTIONS}
    report = {"model": name, "mode": "dynamic", "soc_version": target.soc_version, "target": target.name,
              "precision_mode": options.precision_mode, "kernel_level": options.kernel_level,
              "input_shape_range": {io["name"]: _shown([tuple(r) for r in io["range"]]) for io in inputs},
              "compile_seconds": {"total": round(time.perf_counter() - start, 4)}}
    metadata = {
        "name": name, "target": target.name, "soc_version": target.soc_version,
        "precision_mode": options.precision_mode, "kernel_level": options.kernel_level,
        "inputs": [], "outputs": [], "gears": [], "memory": {"arena": 0, "weights": 0},
        "streams": 0, "events": 0, "kernels": 0, "tasks": 0,
        "dynamic": {"inputs": inputs, "outputs": [o.name for o in proto.graph.output], "options": stored,
                    "graph_sha256": hashlib.sha256(graph).hexdigest()},
        "compile_report": report,
    }
    definition = {"name": name, "arena": 0, "alignment": 64, "regions": {"weights": [0, 0]}, "streams": 0,
                  "events": 0, "tensors": [], "kernels": []}
    if progress is not None:
        progress("done", 1, 1)
    compiled = DynamicCompiledModel(Model(definition, [], b"", {}, metadata, graph=graph), report)
    compiled._proto = proto
    return compiled


MODULE_CACHE_STATS = CacheStats()  # the counts of `compile_module_cached` in this process


def _canonical(text: str) -> str:
    """The module text with its resource handles renamed in order of appearance: the blob
    registry uniques handle names per process (`w`, then `w_0`), the blobs stay in the text."""
    names = dict.fromkeys(re.findall(r"dense_resource<([^>]+)>", text))
    if not names:
        return text
    renamed = {n: f"r{i}" for i, n in enumerate(names)}
    text = re.sub(r"dense_resource<([^>]+)>", lambda m: f"dense_resource<{renamed[m.group(1)]}>", text)
    return re.sub(r"^(\s*)([^\s:]+)(: \"0x)", lambda m: m.group(1) + renamed.get(m.group(2), m.group(2)) + m.group(3),
                  text, flags=re.MULTILINE)


def compile_module_cached(module, options: CompileOptions, cache_dir=None) -> CompiledModel:
    """`ge.compile(module, options)` through the on-disk kernel cache (see the module docstring)."""
    import ge
    from ge.ir import print_module
    from ge.runtime.kernel_cache import KernelCache, model_key

    stored = {k: v for k, v in dataclasses.asdict(options).items() if k not in _SHAPE_OPTIONS}
    cache = KernelCache(model_key(_canonical(print_module(module)).encode(), resolve_target(options.soc_version).name,
                                  stored), cache_dir)
    built, corrupt = cache.load("module")
    MODULE_CACHE_STATS.corrupt += corrupt
    if built is not None:
        MODULE_CACHE_STATS.disk_hits += 1
        return CompiledModel(built)
    MODULE_CACHE_STATS.misses += 1
    compiled = ge.compile(module, dataclasses.replace(options, keep_ir_text=False))
    MODULE_CACHE_STATS.compiles += 1
    cache.store("module", compiled.model)
    return compiled


class DynamicCompiledModel(CompiledModel):
    """A dynamic-shape model: `run` compiles each new input-shape signature once and caches
    it (see the module docstring); `cache_stats`, `signatures`, `last_run.cache`."""

    def __init__(self, model, report: dict[str, Any] | None = None, cache_dir=None):
        from ge.runtime.kernel_cache import KernelCache, model_key

        super().__init__(model, report)
        dynamic = model.metadata["dynamic"]
        self.dynamic_inputs: list[dict[str, Any]] = dynamic["inputs"]
        fields = {f.name for f in dataclasses.fields(CompileOptions)}
        self.options = CompileOptions(**{k: tuple(v) if isinstance(v, list) else v
                                         for k, v in dynamic["options"].items() if k in fields})
        self.key = model_key(model.graph, model.metadata["target"], dynamic["options"])
        self.cache = KernelCache(self.key, cache_dir)
        self.cache_stats = CacheStats()
        self._executors: dict[str, Any] = {}
        self._prepared: tuple[str, Any, str] | None = None  # `prepare`'s signature, executor and how
        self._proto = None

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return self.dynamic_inputs

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return [{"name": n} for n in self.model.metadata["dynamic"]["outputs"]]

    @property
    def signatures(self) -> list[str]:
        """The shape signatures compiled or loaded in this process."""
        return list(self._executors)

    @property
    def executor(self):
        if self._executor is None:
            raise InputError(f"{self.model.name}: a dynamic-shape model has an executor per input shape; run it first")
        return self._executor

    def _shapes(self, inputs: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        names = [io["name"] for io in self.dynamic_inputs]
        missing, extra = [n for n in names if n not in inputs], sorted(set(inputs) - set(names))
        if missing or extra:
            raise InputError(f"{self.model.name}: the model takes inputs {', '.join(map(repr, names))}; "
                             + "; ".join(p for p in (f"missing {', '.join(map(repr, missing))}" if missing else "",
                                                     f"unexpected {', '.join(map(repr, extra))}" if extra else "") if p))
        shapes = {}
        for io in self.dynamic_inputs:
            shape = tuple(np.shape(inputs[io["name"]]))
            ranges = [tuple(r) for r in io["range"]]
            if len(shape) != len(ranges) or any(not (lo <= d and (hi is None or d <= hi))
                                                for d, (lo, hi) in zip(shape, ranges)):
                raise InputError(f"{self.model.name}: input '{io['name']}' has shape {list(shape)}, outside its "
                                 f"input_shape_range {_shown(ranges)}")
            shapes[io["name"]] = shape
        return shapes

    def _executor_for(self, shapes: dict[str, tuple[int, ...]]) -> tuple[Any, str]:
        from ge.runtime.executor import Executor
        from ge.runtime.kernel_cache import signature_text

        signature = signature_text(shapes)
        if signature in self._executors:
            self.cache_stats.memory_hits += 1
            return self._executors[signature], "memory hit"
        built, corrupt = self.cache.load(signature)
        self.cache_stats.corrupt += corrupt
        if built is not None:
            self.cache_stats.disk_hits += 1
            how = "disk hit"
        else:
            self.cache_stats.misses += 1
            built = self._compile(shapes)
            self.cache_stats.compiles += 1
            self.cache.store(signature, built)
            how = "compiled"
        self._executors[signature] = Executor(built)
        return self._executors[signature], how

    def _compile(self, shapes: dict[str, tuple[int, ...]]):
        """One signature through the pipeline, in process (the graph parsed once)."""
        import ge

        if self._proto is None:
            import onnx

            self._proto = onnx.load_model_from_string(self.model.graph)
        options = dataclasses.replace(self.options, input_shape=dict(shapes), keep_ir_text=False)
        try:
            return ge.compile(self._proto, options).model
        except CompileError as e:
            raise CompileError(f"{e} (input shapes {', '.join(f'{n} {list(s)}' for n, s in shapes.items())})") from None

    def prepare(self, inputs: Mapping[str, np.ndarray]):
        """The executor that will run `inputs` (found, loaded or compiled now, counted once): for
        tools that attach to it before the run, such as `ge-run --dump`."""
        from ge.runtime.kernel_cache import signature_text

        shapes = self._shapes(inputs)
        executor, how = self._executor_for(shapes)
        self._prepared = (signature_text(shapes), executor, how)
        self._executor = executor
        return executor

    def run(self, inputs: Mapping[str, np.ndarray], trace: bool = False, timing_only: bool = False,
            allow_hazards: bool = False) -> dict[str, np.ndarray]:
        from ge.runtime.kernel_cache import signature_text

        shapes = self._shapes(inputs)
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared[0] == signature_text(shapes):
            executor, how = prepared[1:]
        else:
            executor, how = self._executor_for(shapes)
        self._executor = executor
        try:
            return executor.run(inputs, trace=trace, timing_only=timing_only, allow_hazards=allow_hazards)
        finally:
            if executor.last_report is not None:
                executor.last_report.cache = how
