"""GM memory and streams per model, as `build-model` plans them.

    python bench/build_model.py [--json bench/results/build_model.json]

For each light model (seeded random weights; `graph-optimize{precision=must_keep_origin_dtype}`,
`assign-layouts`, `eliminate-trans-data`, `fuse`, then `build-model`): kernel launches and
copies, streams and events, and the workspace (activation) memory three ways: the plan's
peak, the lower bound (the most bytes live at one step of the same lifetimes) and the sum
without reuse; with several streams (the default) and with `single-stream=true`. Sizes, not
times: one run is enough. Prints the README table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import markdown, mib

import ge
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes
from ge.lowering.build_model import BuildOptions, build_model
from ge.testing import LIGHT_MODELS, light_model_path, with_random_weights

PIPELINE = "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data,fuse"


def measure(name: str) -> dict:
    with blob_scope():
        fused = run_passes(ge.load_onnx(with_random_weights(light_model_path(name), seed=0)), PIPELINE)
        [multi] = build_model(fused.clone())
        [single] = build_model(fused, BuildOptions(single_stream=True))
    return {
        "model": name, "launches": multi.launches, "copies": multi.copies,
        "streams": multi.schedule.num_streams, "events": len(multi.schedule.events),
        "event_ids": multi.schedule.num_events,
        "peak": multi.plan.peak, "lower_bound": multi.plan.lower_bound, "no_reuse": multi.plan.no_reuse,
        "single_peak": single.plan.peak, "single_lower_bound": single.plan.lower_bound,
        "weights": multi.regions["weights"][1],
    }


def table(rows: list[dict]) -> str:
    header = ["model", "launches + copies", "streams (events)", "peak MiB", "lower bound MiB", "no reuse MiB",
              "single stream: peak / lower bound MiB"]
    return markdown(header, ([r["model"], f"{r['launches']} + {r['copies']}", f"{r['streams']} ({r['events']})",
                              mib(r["peak"]), mib(r["lower_bound"]), mib(r["no_reuse"]),
                              f"{mib(r['single_peak'])} / {mib(r['single_lower_bound'])}"] for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = []
    for name in LIGHT_MODELS:
        rows.append(measure(name))
        print(f"{name}: done", flush=True)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
