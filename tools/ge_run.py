"""`ge-run`: runs a model file on the simulator (the executor), like ATC's msame.

A thin command-line wrapper over `ge.load_model` (ge/compiler.py) and the executor
(runtime/executor.py):

    ge-run model.om                                   # seeded random inputs, per-kernel table
    ge-run model.om --inputs in.npz --output out.npz  # inputs by name (.npz) or in order (.npy files)
    ge-run model.om --compare model.onnx              # onnxruntime on the same inputs: errors, argmax
    ge-run model.om --profile timeline.json           # Chrome / Perfetto timeline (streams, cores, pipes)
    ge-run model.om --timing-only                     # cycles and checks only, no numerics (performance studies)
    ge-run model.om --by-node                         # cycles per ONNX node (ge.node_profile)
    ge-run model.om --dump DIR [--dump-nodes a,b]     # every kernel output as DIR/<tensor>.npy (ge.dump)

A problem the simulator reports in the kernels (a hazard between pipes, a race between the
cores of a launch, a read of never-written memory, ...) is an error: one `ge-run: error:`
line naming the first, exit status 1; `--allow-hazards` runs on and lists them.

A corrupted or truncated model file, or inputs that do not fit the model, print one
`ge-run: error: ...` line and exit with 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ge.errors import InputError
from ge.tools import ArgumentParser
from ge.tools.ge_opt import LOG_LEVELS, run_reporting_errors, setup_logging

log = logging.getLogger("ge.run")


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="ge-run", description="Run a ge model file (.om) on the simulator.")
    p.add_argument("model", help="the model file (.om) written by ge-compile")
    p.add_argument("--inputs", nargs="+", metavar="FILE", help="one .npz with the inputs by name, or one .npy per input")
    p.add_argument("--output", metavar="OUT.npz", help="write the outputs (by name) to this .npz")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (when --inputs is not given)")
    p.add_argument("--batch", type=int, help="batch size of the random inputs of a dynamic-batch model")
    p.add_argument("--shape", help='the shapes of the random inputs of a dynamic-shape model '
                   '(--input-shape-range), e.g. "input_ids:1,33;attention_mask:1,33"')
    p.add_argument("--gear", help="the gear of the random inputs of a gear model, by label "
                   "(e.g. 320x320, dims=32,32,32; ge-compile's summary lists them); default: the first")
    p.add_argument("--compare", metavar="MODEL.onnx", help="run onnxruntime on the same inputs and compare")
    p.add_argument("--profile", metavar="timeline.json", help="write a Chrome / Perfetto timeline")
    p.add_argument("--top", type=int, default=20, help="kernels shown in the table (the slowest first)")
    p.add_argument("--timing-only", action="store_true",
                   help="simulate the cycles and check the kernels without computing the outputs")
    p.add_argument("--allow-hazards", action="store_true",
                   help="report the simulator's problems (hazards, races) as warnings instead of failing")
    p.add_argument("--by-node", action="store_true",
                   help="a table per ONNX node (a fused kernel's cycles split equally among its nodes)")
    p.add_argument("--dump", metavar="DIR", help="save every kernel output tensor as DIR/<tensor name>.npy")
    p.add_argument("--dump-nodes", metavar="NAMES",
                   help="with --dump: only the outputs of kernels fusing these ONNX nodes / these tensors (comma-separated)")
    p.add_argument("--log", choices=LOG_LEVELS, default="warning", help="what to log on stderr")
    return p


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def random_inputs(inputs: list[dict], seed: int, batch: int | None) -> dict[str, np.ndarray]:
    """Seeded inputs for the model's signature (-1 dims take `batch`)."""
    rng = np.random.default_rng(seed)
    out = {}
    for io in inputs:
        shape = [batch if d == -1 else d for d in io["shape"]]
        if None in shape:
            raise InputError(f"input '{io['name']}' has a dynamic batch: give --batch")
        dtype = np.dtype(io["dtype"])
        if dtype.kind == "f":
            out[io["name"]] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            out[io["name"]] = rng.integers(0, 2, shape).astype(dtype)
        else:
            out[io["name"]] = rng.integers(0, 4, shape).astype(dtype)
    return out


def _gear_inputs(model, label: str | None, shape: str | None = None) -> list[dict]:
    """The input signature of the random inputs: the model's (batch gears: -1 takes --batch),
    else the named or first image-size / dims gear's, or a dynamic-shape model's `--shape`."""
    if "dynamic" in model.model.metadata:
        from ge.frontend.onnx import parse_input_shape

        if shape is None:
            raise InputError("a dynamic-shape model: give the random inputs' shapes with --shape (or --inputs)")
        shapes = parse_input_shape(shape)
        return [io | {"shape": list(shapes.get(io["name"], io["shape"]))} for io in model.inputs]
    gears = [g for g in model.model.metadata.get("gears", []) if "tasks" in g and g.get("batch") is None]
    if not gears:
        if label is not None:
            raise InputError(f"--gear {label}: the model has no image-size / dims gears")
        return model.inputs
    if label is None:
        return gears[0]["inputs"]
    for g in gears:
        if g["gear"] == label:
            return g["inputs"]
    raise InputError(f"--gear {label}: no such gear; the model's gears: {', '.join(g['gear'] for g in gears)}")


_MAGIC = {"npz": b"PK\x03\x04", "npy": b"\x93NUMPY"}


def _load_array_file(path: str, kind: str):
    """np.load of an .npz / .npy; a file of another kind is refused by name, not with a
    zipfile or pickle traceback."""
    if not Path(path).is_file():
        raise FileNotFoundError(2, "no such file", path)
    with open(path, "rb") as f:
        head = f.read(6)
    if not head.startswith(_MAGIC[kind]):
        other = next((k for k, m in _MAGIC.items() if head.startswith(m)), None)
        what = f"it is an .{other} file" if other else f"it does not start with the .{kind} signature {_MAGIC[kind]!r}"
        raise InputError(f"--inputs {path}: not a numpy .{kind} file ({what}); give one .npz with the inputs by "
                         "name, or one .npy per input")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise InputError(f"--inputs {path}: a damaged .{kind} file ({e})") from None


def read_inputs(files: list[str], names: list[str]) -> dict[str, np.ndarray]:
    """Inputs from one .npz (by name; arr_0, arr_1, ... in order) or one .npy per input."""
    if len(files) == 1 and files[0].endswith(".npz"):
        with _load_array_file(files[0], "npz") as data:
            try:
                arrays = {k: data[k] for k in data.files}
            except (ValueError, OSError, zipfile.BadZipFile) as e:
                raise InputError(f"--inputs {files[0]}: an array of the archive cannot be read ({e})") from None
        if set(arrays) == {f"arr_{i}" for i in range(len(arrays))}:
            return dict(zip(names, (arrays[f"arr_{i}"] for i in range(len(arrays)))))
        return arrays
    if len(files) != len(names):
        raise InputError(f"the model takes {len(names)} input(s) ({', '.join(names)}); {len(files)} .npy file(s) given")
    return {n: _load_array_file(f, "npy") for n, f in zip(names, files)}


# --------------------------------------------------------------------------------------
# Comparison with onnxruntime
# --------------------------------------------------------------------------------------


_ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
              "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
              "tensor(uint8)": "uint8", "tensor(bool)": "bool"}


def reference_session(onnx_path: str, model_inputs: list[dict], model_path: str):
    """An onnxruntime session on `onnx_path`, after checking that it takes the model file's
    inputs (names, dtypes, static dims) -- before anything runs."""
    import onnxruntime as ort

    if not Path(onnx_path).is_file():
        raise FileNotFoundError(2, "no such file", onnx_path)
    try:
        session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types for unreadable models
        raise InputError(f"--compare {onnx_path}: onnxruntime cannot load it: {str(e).splitlines()[0]}") from None

    def shown(name, shape, dtype):
        return f"'{name}' [{', '.join('?' if not isinstance(d, int) or d < 0 else str(d) for d in shape)}] {dtype}"

    theirs = {i.name: (list(i.shape), _ORT_TYPES.get(i.type, i.type)) for i in session.get_inputs()}
    ours = {io["name"]: (io["shape"], io["dtype"]) for io in model_inputs}
    agree = set(theirs) == set(ours) and all(
        theirs[n][1] == ours[n][1] and len(theirs[n][0]) == len(ours[n][0])
        and all(not isinstance(a, int) or a < 0 or b < 0 or a == b for a, b in zip(theirs[n][0], ours[n][0]))
        for n in ours
    )
    if not agree:
        raise InputError(
            f"--compare {onnx_path} does not take the inputs of {model_path}: it takes "
            f"{', '.join(shown(n, *v) for n, v in theirs.items()) or 'none'}; {model_path} takes "
            f"{', '.join(shown(n, *v) for n, v in ours.items()) or 'none'}"
        )
    return session


def compare(session, onnx_path: str, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> list[str]:
    """One line per output: max abs error, error / output scale, argmax agreement."""
    names = [o.name for o in session.get_outputs()]
    feeds = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
    expected = dict(zip(names, session.run(None, feeds)))
    lines = []
    for name, got in outputs.items():
        if name not in expected:
            lines.append(f"{name}: not an output of {onnx_path}")
            continue
        ref = np.asarray(expected[name])
        if got.shape != ref.shape:
            lines.append(f"{name}: shape {list(got.shape)} but onnxruntime gives {list(ref.shape)}")
            continue
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        err = float(np.abs(g64 - r64).max()) if got.size else 0.0
        scale = float(np.abs(r64).max()) if got.size else 0.0
        line = f"{name}: max abs error {err:.3g}, error / output scale {err / scale if scale else 0.0:.3g}"
        if got.ndim >= 2 and got.shape[1] > 1:
            agree = np.mean(g64.argmax(axis=1) == r64.argmax(axis=1))
            line += f", argmax agrees {agree:.0%}"
        lines.append(line)
    return lines


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    import ge

    setup_logging("ge-run", args.log)
    start = time.perf_counter()
    model = ge.load_model(args.model)
    names = [io["name"] for io in model.inputs]
    # every argument is checked before the (slow) kernel decoding and the run
    session = reference_session(args.compare, model.inputs, args.model) if args.compare else None
    if args.inputs:
        inputs = read_inputs(args.inputs, names)
    else:
        inputs = random_inputs(_gear_inputs(model, args.gear, args.shape), args.seed, args.batch or (model.batch_sizes or [None])[0])
    log.info("%s: %s inputs %s", args.model, "read" if args.inputs else f"seeded (seed {args.seed}) random",
             ", ".join(f"'{k}' {list(v.shape)} {v.dtype}" for k, v in inputs.items()))
    dynamic = "dynamic" in model.model.metadata  # kernels per input shape, compiled or cached at run time
    # a dynamic-shape model's executor (and kernels) depend on the input shapes: found now
    executor = model.prepare(inputs) if dynamic else model.executor
    loaded = time.perf_counter()
    log.info("%s: %d kernels at the %s level loaded in %.3f s", args.model, len(model.model.definition["kernels"]),
             model.model.metadata.get("kernel_level"), loaded - start)
    dumper = None
    if args.dump:
        from ge.dump import Dumper

        origin = _origin_shapes(args.compare) if args.compare else {}
        dumper = Dumper(executor.model, args.dump, args.dump_nodes.split(",") if args.dump_nodes else None, origin)
        dumper.attach(executor)
    outputs = model.run(inputs, trace=args.profile is not None, timing_only=args.timing_only,
                        allow_hazards=args.allow_hazards)
    done = time.perf_counter()
    executor = model.executor
    report = executor.last_report
    print(report.table(args.top))
    if args.by_node:
        from ge import node_profile

        types = _op_types(args.compare) if args.compare else None
        print(node_profile.table(node_profile.by_node(report, executor.model.definition, types), args.top))
        node_profile.name_spans_by_node(report, executor.model.definition)
    if dumper is not None:
        print(dumper.finish())
    gear = f", gear batch={report.batch}" if report.batch is not None else \
        (f", gear {report.gear}" if report.gear is not None else "")
    if report.cache is not None:  # a dynamic-shape model (ge.dynamic)
        stats = model.cache_stats
        gear += (f", kernel cache: {report.cache} (hits {stats.hits}: memory {stats.memory_hits}, disk "
                 f"{stats.disk_hits}; compiles {stats.compiles})")
    print(f"loaded in {loaded - start:.2f} s, ran in {done - loaded:.2f} s{gear}")
    if report.problems:
        print(f"warning: the simulator reported {len(report.problems)} problem(s):")
        for problem in report.problems[:args.top]:
            print(f"  {problem}")
    if args.output:
        np.savez(args.output, **outputs)
        print(f"wrote {args.output}: {', '.join(f'{k} {list(v.shape)}' for k, v in outputs.items())}")
    if args.profile:
        report.write_timeline(args.profile)
        print(f"wrote {args.profile}")
    if session is not None:
        for line in compare(session, args.compare, inputs, outputs):
            print(line)
    return 0


def _op_types(onnx_path: str) -> dict[str, str]:
    import onnx

    return {n.name: n.op_type for n in onnx.load(onnx_path, load_external_data=False).graph.node}


def _origin_shapes(onnx_path: str) -> dict[str, list[int]]:
    from ge.dump import onnx_shapes

    return onnx_shapes(onnx_path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.timing_only and (args.output or args.compare):
        p.error("--timing-only computes no outputs: it cannot be combined with --output or --compare")
    if args.timing_only and args.dump:
        p.error("--timing-only computes no outputs: it cannot be combined with --dump")
    if args.dump_nodes and not args.dump:
        p.error("--dump-nodes filters --dump: give --dump DIR")
    return run_reporting_errors("ge-run", lambda: run(args), args.model, None)


if __name__ == "__main__":
    sys.exit(main())
