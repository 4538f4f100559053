"""Activation memory per model: ge's plan vs the lower bound, no reuse and an
onnxruntime-style planner, on the same lifetimes.

    python bench/memory.py [--json bench/results/memory.json]

For each light model (seeded random weights) and the transformer encoder layer, the
pipeline of bench/build_model.py (`graph-optimize{precision=must_keep_origin_dtype}`,
`assign-layouts`, `eliminate-trans-data`, `fuse`) then `build-model`, with several streams
(the default) and with `single-stream=true`. `build_model`'s BuildReport gives the
workspace tensors with their sizes and lifetimes in steps (lowering/memory_plan.py) and
ge's plan of them: its peak, the lower bound (the most bytes live at one step: no plan
does better) and the no-reuse sum.

On the SAME tensors (sizes rounded up to the same 512-byte GM alignment, the same
lifetimes) runs `inorder_best_fit`, a model of onnxruntime's memory-pattern planner
(onnxruntime/core/framework/mem_pattern_planner.h, `MemPatternPlanner::TraceAllocation` /
`TraceFree`, which the session uses when `enable_mem_pattern` is on): tensors are
allocated in execution order, when the step that writes them runs, and freed after the
last step that uses them. An allocation takes the best-fitting hole (the smallest that
holds it) among the free ranges between the live blocks, which are coalesced by
construction since only live blocks are recorded; the space between the top live block
and the end of the arena counts as a hole too. When nothing fits, the tensor goes right
above the top live block and the arena grows to hold it. Not modeled: onnxruntime's
in-place reuse of an input by an elementwise output (`MayInplace`) and its separate
arenas per device / for initializers; ge's lifetimes do not let a kernel's output share
its inputs' bytes either, so both planners see the same problem.

Sizes, not times: one run is enough.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import onnx
from _common import markdown, mib

import ge
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes
from ge.lowering.build_model import BuildOptions, BuildReport, build_model
from ge.lowering.memory_plan import Tensor, align_up, check_no_overlap
from ge.testing import LIGHT_MODELS, encoder_layer_model, light_model_path, with_random_weights

PIPELINE = "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data,fuse"
RESULTS = Path(__file__).parent / "results"


def inorder_best_fit(tensors: Sequence[Tensor], alignment: int) -> tuple[list[int], int]:
    """Offsets and arena size from onnxruntime's memory-pattern planner: in execution order,
    each tensor in the best-fitting free range between live blocks (or above them, growing
    the arena), freed after its last step."""
    sizes = [align_up(t.size, alignment) for t in tensors]
    steps = max((t.end for t in tensors), default=-1) + 1
    starting: list[list[int]] = [[] for _ in range(steps)]
    ending: list[list[int]] = [[] for _ in range(steps)]
    for i, t in enumerate(tensors):
        starting[t.start].append(i)
        ending[t.end].append(i)
    offsets = [-1] * len(tensors)
    live: list[tuple[int, int]] = []  # (offset, tensor) of the live blocks, sorted by offset
    arena = 0
    for s in range(steps):
        for i in starting[s]:
            size, top = sizes[i], 0
            best, waste = None, None
            for offset, j in live:
                gap = offset - top
                if gap >= size and (waste is None or gap - size < waste):
                    best, waste = top, gap - size
                top = max(top, offset + sizes[j])
            if arena - top >= size and (waste is None or arena - top - size < waste):
                best = top
            offsets[i] = top if best is None else best
            arena = max(arena, offsets[i] + size)
            live.append((offsets[i], i))
            live.sort()
        done = set(ending[s])
        live = [(o, j) for o, j in live if j not in done]
    return offsets, arena


def row(report: BuildReport) -> dict:
    """ge's plan and the onnxruntime-style plan of one built graph function's workspace."""
    tensors, alignment = report.tensors, report.alignment
    offsets, arena = inorder_best_fit(tensors, alignment)
    check_no_overlap(tensors, offsets, alignment)
    check_no_overlap(tensors, report.plan.offsets, alignment)
    return {
        "tensors": len(tensors), "steps": report.launches + report.copies,
        "streams": report.schedule.num_streams,
        "lower_bound": report.plan.lower_bound, "ge_peak": report.plan.peak, "ge_strategy": report.plan.strategy,
        "ort_style_peak": arena, "no_reuse": report.plan.no_reuse,
    }


def measure(name: str, model: onnx.ModelProto) -> dict:
    with blob_scope():
        fused = run_passes(ge.load_onnx(model), PIPELINE)
        [multi] = build_model(fused.clone())
        [single] = build_model(fused, BuildOptions(single_stream=True))
    return {"model": name, "multi_stream": row(multi), "single_stream": row(single)}


def models():
    for name in LIGHT_MODELS:
        yield name, with_random_weights(light_model_path(name), seed=0)
    yield "encoder_layer", encoder_layer_model()


def table(rows: list[dict]) -> str:
    """The README table: several streams in full, then single-stream=true's three figures."""
    header = ["model", "tensors", "lower bound MiB", "ge peak MiB", "ort-style best fit MiB", "no reuse MiB",
              "ort-style / ge", "single stream: bound / ge / ort-style MiB"]
    body = []
    for r in rows:
        p, q = r["multi_stream"], r["single_stream"]
        body.append([r["model"], p["tensors"], mib(p["lower_bound"]), mib(p["ge_peak"]), mib(p["ort_style_peak"]),
                     mib(p["no_reuse"]), f"{p['ort_style_peak'] / (p['ge_peak'] or 1):.2f}",
                     f"{mib(q['lower_bound'])} / {mib(q['ge_peak'])} / {mib(q['ort_style_peak'])}"])
    return markdown(header, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=RESULTS / "memory.json")
    args = parser.parse_args()
    rows = []
    for name, model in models():
        rows.append(measure(name, model))
        print(f"{name}: done", flush=True)
    print("\nworkspace memory (activations), several streams unless said:\n")
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
