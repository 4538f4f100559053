"""Dynamic shapes: first-run compile latency and cached-run overhead of `--input-shape-range`,
against a static compile of the same shape and a `--dynamic-dims` gear model.

Model: `ge.zoo_dynamic.dynamic_bert` (1 layer, hidden 32, f32), batch 1. Per sequence length:

- static compile: `ge.compile` with that input shape (what one gear costs);
- first run: a dynamic-shape model meets the shape for the first time (compile + run);
- disk hit: a fresh model object (empty memory cache) loads the entry from the disk cache and runs;
- memory hit: the same shape again (the cached executor; best of 5);
- static run: the statically compiled model's run (best of 5); the overhead is memory hit - static run
  (within the noise of the run itself), and "lookup" is what the dynamic mode adds to a run:
  the range check of the input shapes plus the signature lookup (best of 200).

Wall-clock seconds on this machine (shared cores: compare rows, not absolute values).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time

from _common import markdown, parser

import ge
from ge import zoo
from ge.runtime.kernel_cache import KernelCache
from ge.zoo_dynamic import BERT_INPUTS, dynamic_bert

SEQS = (7, 16, 33, 64, 128)
OPTIONS = {"precision_mode": "must_keep_origin_dtype"}


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _best(fn, repeat: int = 5) -> float:
    return min(_timed(fn)[0] for _ in range(repeat))


def _measure(model, dynamic, seq: int, cache: str) -> dict:
    """One sequence length: static compile and run, then the dynamic model's miss, disk hit and memory hit."""
    inputs = zoo.bert_inputs(1, seq)
    shape = ";".join(f"{n}:1,{seq}" for n in BERT_INPUTS)
    static_compile, static = _timed(lambda: ge.compile(model, ge.CompileOptions(input_shape=shape, **OPTIONS)))
    static.run(inputs)
    static_run = _best(lambda: static.run(inputs))
    first, _ = _timed(lambda: dynamic.run(inputs))
    assert dynamic.last_run.cache == "compiled"
    fresh = type(dynamic)(dynamic.model, cache_dir=cache)
    disk, _ = _timed(lambda: fresh.run(inputs))
    assert fresh.last_run.cache == "disk hit"
    memory = _best(lambda: dynamic.run(inputs))
    assert dynamic.last_run.cache == "memory hit"
    stats = dataclasses.replace(dynamic.cache_stats)
    lookup = _best(lambda: dynamic._executor_for(dynamic._shapes(inputs)), repeat=200)
    dynamic.cache_stats = stats  # the lookups alone are not runs
    return {"seq": seq, "static_compile_s": round(static_compile, 3), "first_run_s": round(first, 3),
            "disk_hit_run_s": round(disk, 3), "memory_hit_run_s": round(memory, 4),
            "static_run_s": round(static_run, 4), "cached_run_overhead_s": round(memory - static_run, 4),
            "lookup_us": round(lookup * 1e6, 1)}


def main(argv=None) -> int:
    args = parser(__doc__, "dynamic", [str(s) for s in SEQS[:2]]).parse_args(argv)
    seqs = SEQS[:2] if args.quick else tuple(int(s) for s in args.models.split(",")) if args.models else SEQS
    model = dynamic_bert(max_seq=max(128, *seqs))
    rows, results = [], []
    with tempfile.TemporaryDirectory() as cache:
        ranges = ";".join(f"{n}:[1,1~{max(128, *seqs)}]" for n in BERT_INPUTS)
        dynamic = ge.compile(model, ge.CompileOptions(input_shape_range=ranges, **OPTIONS))
        dynamic.cache = KernelCache(dynamic.key, cache)  # a fresh cache directory, not the user's
        for seq in seqs:
            entry = _measure(model, dynamic, seq, cache)
            results.append(entry)
            rows.append([seq, f"{entry['static_compile_s']:.2f}", f"{entry['first_run_s']:.2f}",
                         f"{entry['disk_hit_run_s']:.3f}", f"{entry['memory_hit_run_s'] * 1e3:.1f}",
                         f"{entry['static_run_s'] * 1e3:.1f}", f"{entry['cached_run_overhead_s'] * 1e3:+.2f}",
                         f"{entry['lookup_us']:.1f}"])
            print(f"seq {seq}: {entry}", file=sys.stderr)
        stats = dynamic.cache_stats.as_dict()
    gear_spec = ";".join(",".join([str(s)] * 3) for s in seqs)
    gears_compile, gears = _timed(lambda: ge.compile(model, ge.CompileOptions(
        input_shape=";".join(f"{n}:1,-1" for n in BERT_INPUTS), dynamic_dims=gear_spec, **OPTIONS)))
    table = markdown(["seq", "static compile s", "first run s", "disk hit s", "memory hit ms", "static run ms",
                      "overhead ms", "lookup µs"], rows)
    text = (f"{table}\n\ndynamic-dims gear model of all {len(seqs)} lengths: compiled in {gears_compile:.2f} s "
            f"({len(gears.gears)} gears); cache statistics of the dynamic model: {stats}\n")
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"model": "dynamic_bert(hidden=32, layers=1)", "options": OPTIONS,
                                     "rows": results, "gears_compile_s": round(gears_compile, 3),
                                     "cache_stats": stats}, indent=2))
    args.json.with_suffix(".txt").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
