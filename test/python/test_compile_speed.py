"""What makes a compile faster changes no compiled result (issue 17): verifying the module
only at the graph and kernel levels' ends and after the last stage gives the same model as verifying after every stage, and
insert-sync's shortcuts (dependencies only between instructions that share a memory with
a write; a dependency a kept pair covers directly needs no chain search when pruning) give
the same sync ops as the plain search. The compile path does not import the packages only
other commands need, and the shortcuts taken on the way give the answers of the long way
(`is_splat`, the weights region written in place)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge import compiler
from ge.dialects.blobs import blob_scope
from ge.ir import parse_module, print_module, run_passes
from ge.transforms import insert_sync as sync
from ge.transforms.graph_utils import is_splat

HERE = Path(__file__).parent


def _repeated_blocks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dedup_models", HERE / "test_kernel_dedup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.repeated_blocks(), mod._parts


def _verified(options: ge.CompileOptions) -> list[str]:
    target = compiler.resolve_target(options.soc_version)
    stages = compiler.pass_stages(options, target)
    pipeline = compiler._Pipeline(None, "m", options, target, None)
    return [name for i, (name, _) in enumerate(stages) if pipeline.verifies(stages, i)]


def test_verified_at_the_graph_and_kernel_levels_end_and_once_at_the_end():
    assert _verified(ge.CompileOptions()) == ["eliminate-trans-data", "bufferize", "insert-sync"]
    assert _verified(ge.CompileOptions(kernel_level="tile")) == ["eliminate-trans-data", "bufferize", "tile"]
    every = _verified(ge.CompileOptions(verify_each=True))
    assert every == ["graph-optimize", "decompose", "assign-layouts", "eliminate-trans-data", "fuse", "bufferize",
                     "tile", "to-isa", "plan-local-memory", "insert-sync"]


def test_custom_pass_is_verified_before_and_after():
    from dataclasses import dataclass

    from ge import plugins

    @dataclass(frozen=True)
    class Nothing(ge.GraphPass):
        name = "test-speed-nothing"
        stage = "after-to-isa"

        def run(self, module):
            pass

    ge.register_pass(Nothing, plugin="test")
    try:
        got = _verified(ge.CompileOptions(passes=["test-speed-nothing"]))
    finally:
        plugins.unregister_pass("test-speed-nothing")
    assert got == ["eliminate-trans-data", "bufferize", "to-isa", "test-speed-nothing", "insert-sync"]


def test_verify_each_changes_no_compiled_result():
    model, parts = _repeated_blocks()
    data = model.SerializeToString()
    with blob_scope():
        fast = ge.compile(data, ge.CompileOptions(keep_ir_text=True))
    with blob_scope():
        each = ge.compile(data, ge.CompileOptions(keep_ir_text=True, verify_each=True))
    a, b = parts(fast), parts(each)
    assert a["ir_text"] and "isa.kernel" in a["ir_text"]
    for part in a:
        assert a[part] == b[part], part
    x = {"x": np.random.default_rng(5).standard_normal((1, 16, 12, 12)).astype(np.float32)}
    np.testing.assert_array_equal(fast.run(x)["y"], each.run(x)["y"])
    assert fast.last_run.total_cycles == each.last_run.total_cycles > 0


def test_no_ir_text_by_default():
    model, _ = _repeated_blocks()
    with blob_scope():
        compiled = ge.compile(model.SerializeToString())
    assert compiled.model.ir_text is None and compiled.report["kernels"] >= 4


def _plain_prune(candidates, nested, inner, always):
    """insert-sync's pruning without the direct-cover shortcut: every dependency is searched."""
    kept = list(candidates)
    deps = list(dict.fromkeys(d for covered in candidates.values() for d in covered))

    def level(pairs):
        return sync.Level([p for p in pairs if not p.carried], [p for p in pairs if p.carried], nested, inner, always)

    for p in sorted(kept, key=lambda p: (p.carried, p.w - p.s, p.s, p.src, p.dst)):
        others = level([q for q in kept if q is not p])
        if all(sync.implied(d, others) for d in deps):
            kept.remove(p)
    return kept


def _sync_text(module, monkeypatch=None, plain=False) -> str:
    module = module.clone()
    if plain:
        monkeypatch.setattr(sync, "_prune", _plain_prune)
    try:
        run_passes(module, "insert-sync")
    finally:
        if plain:
            monkeypatch.undo()
    return print_module(module)


def _planned_kernels():
    model, _ = _repeated_blocks()
    from ge.frontend.onnx import import_model

    module = import_model(model.SerializeToString())
    run_passes(module, "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa,"
                       "plan-local-memory")
    return module


def test_prune_shortcut_gives_the_plain_search_result(monkeypatch):
    with blob_scope():
        module = _planned_kernels()
        fast = _sync_text(module)
        plain = _sync_text(module, monkeypatch, plain=True)
    assert fast.count("isa.set_flag") > 0 and fast.count("isa.pipe_barrier") > 0
    assert fast == plain


LIT_CASES = [c for c in (HERE.parent / "transforms" / "insert-sync.mlir").read_text().split("// -----")
             if "isa.kernel" in c and "expected-error" not in c and "without an offset" not in c]


def test_lit_cases_found():
    assert len(LIT_CASES) >= 6
    synced = [_sync_text(parse_module(c)) for c in LIT_CASES]
    assert sum("isa.set_flag" in t for t in synced) >= 4


@pytest.mark.parametrize("text", LIT_CASES, ids=[f"case{i}" for i in range(len(LIT_CASES))])
def test_prune_shortcut_on_the_lit_kernels(text, monkeypatch):
    """The insert-sync lit test's kernels (loops, double buffers, nested loops, merged events)."""
    module = parse_module(text)
    assert _sync_text(module) == _sync_text(module, monkeypatch, plain=True)


def test_ge_compile_flags():
    from ge.tools.ge_compile import _options, parser

    default = _options(parser().parse_args(["m.onnx"]))
    assert default.verify_each is False and default.keep_ir_text is False
    flagged = _options(parser().parse_args(["m.onnx", "--verify-each", "--ir-text"]))
    assert flagged.verify_each is True and flagged.keep_ir_text is True


def _matmul_residual(m: int, k: int, n: int):
    """MatMul + bias + residual Add (an FFN output projection)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((k, n)) * 0.05).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Add", ["a", "r"], ["y"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k]),
           helper.make_tensor_value_info("r", TensorProto.FLOAT, [m, n])]
    graph = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_prune_searches_again_only_the_deps_whose_chain_lost_a_pair(monkeypatch):
    """`_prune` keeps each dependency's chain (`implied`'s witness) and searches a dependency
    again only when the pair it tries to drop is on that chain: the same sync ops as
    searching every dependency each time, with fewer searches (an FFN output projection
    whose epilogue runs in row slices: 634 -> 368; bert_base's, 49k searches and 89 s before)."""
    from xdsl.dialects.builtin import StringAttr

    from ge.frontend.onnx import import_model

    with blob_scope():
        module = import_model(_matmul_residual(1024, 1536, 768).SerializeToString())
        module.attributes["ge.target"] = StringAttr("ascend910")
        run_passes(module, "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa,"
                           "plan-local-memory")
        real = sync.implied
        texts, calls = {}, {}
        for every in (False, True):
            count = []

            def counting(dep, level, witness=None, every=every, count=count):
                count.append(dep)
                ok = real(dep, level, witness)
                if ok and every and witness is not None:  # every kept pair "on the chain": search again
                    witness.extend([*level.forward, *level.carried])
                return ok

            monkeypatch.setattr(sync, "implied", counting)
            texts[every] = _sync_text(module)
            monkeypatch.undo()
            calls[every] = len(count)
    assert "epi_split" in texts[False] and texts[False].count("isa.set_flag") > 20
    assert texts[False] == texts[True]
    assert calls[False] < calls[True] * 0.7


def _counting(monkeypatch, module, name: str, counts: dict, label: str) -> None:
    """Count the calls of `module.name` under `counts[label]`."""
    real = getattr(module, name)

    def counted(*args, **kwargs):
        counts[label] = counts.get(label, 0) + 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def _conv_softmax_blocks(n: int = 3, channels: int = 16):
    """n identical conv + softmax blocks: the softmaxes are Vector kernels of one structure
    whose tiled bodies hold ops located at their ONNX node."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    nodes, inits, x = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array((rng.standard_normal((channels, channels, 1, 1)) * 0.1).astype(np.float32),
                                             f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}"),
                  helper.make_node("Softmax", [f"c{i}"], [f"s{i}"], axis=1, name=f"softmax{i}")]
        x = f"s{i}"
    shape = [1, channels, 8, 8]
    graph = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tiled(model, copy_twins: bool, counts: dict) -> tuple[str, list, list]:
    """`model` tiled (in its own blob scope): the module text, every op's location and
    result names, and what `tile` reports per kernel."""
    from ge import targets
    from ge.frontend.onnx import import_model
    from ge.lowering import tile

    with blob_scope():
        module = import_model(model.SerializeToString())
        run_passes(module, "graph-optimize,assign-layouts,eliminate-trans-data,fuse,bufferize")
        counts.clear()
        reports = tile.tile_module(module, targets.set_target(module, "ascend910"), copy_twins=copy_twins)
        module.verify()
        where = [(op.name, str(op.location), [r.name_hint for r in op.results]) for op in module.walk()]
        said = [(r.name, r.what, r.plan, r.blocks, r.cycles, r.nodes, r.candidates) for r in reports]
        return print_module(module), where, said


@pytest.mark.parametrize("blocks, kernels, distinct", [("conv_relu_add", 6, 4), ("conv_softmax", 7, 4)])
def test_tile_copies_a_twin_kernel_tiling(monkeypatch, blocks, kernels, distinct):
    """`tile` builds each repeated kernel structure once and gives the other kernels of it a
    copy named for them: the same module text, op locations (the softmax ops inside the
    Vector kernels keep their own node), SSA names and reports as tiling every kernel, with
    one kernel body emitted per structure (three conv + relu + add blocks and the layout
    conversions: 6 kernels, 4 structures; three conv + softmax blocks: 7 and 4)."""
    from ge.lowering import tile_cube, tile_vector

    model = _repeated_blocks()[0] if blocks == "conv_relu_add" else _conv_softmax_blocks()
    counts: dict[str, int] = {}
    _counting(monkeypatch, tile_cube, "emit_cube", counts, "cube")
    _counting(monkeypatch, tile_vector, "emit_vector", counts, "vector")
    each = _tiled(model, False, counts)
    emitted_each = dict(counts)
    once = _tiled(model, True, counts)
    assert once[0] == each[0] and "tile.kernel" in once[0]
    assert once[1] == each[1]
    assert once[2] == each[2] and len(once[2]) == kernels
    assert sum(emitted_each.values()) == kernels and sum(counts.values()) == distinct, (emitted_each, counts)
    if blocks == "conv_softmax":
        inner = [loc for name, loc, _ in once[1] if name == "graph.softmax"]
        assert inner == [f'loc("softmax{i}")' for i in range(3)]


def test_tile_twin_copies_change_no_compiled_result(monkeypatch):
    """The whole compile (probes included) with twins copied or tiled each: the same model
    file (IR text too), outputs and simulated cycles."""
    import functools

    from ge.lowering import tile

    model, parts = _repeated_blocks()
    data = model.SerializeToString()
    with blob_scope():
        copied = ge.compile(data, ge.CompileOptions(keep_ir_text=True))
    monkeypatch.setattr(tile, "tile_module", functools.partial(tile.tile_module, copy_twins=False))
    with blob_scope():
        each = ge.compile(data, ge.CompileOptions(keep_ir_text=True))
    a, b = parts(copied), parts(each)
    for part in a:
        assert a[part] == b[part], part
    x = {"x": np.random.default_rng(7).standard_normal((1, 16, 12, 12)).astype(np.float32)}
    np.testing.assert_array_equal(copied.run(x)["y"], each.run(x)["y"])
    assert copied.last_run.total_cycles == each.last_run.total_cycles > 0


def test_fuse_probes_are_each_fused_kernels_first_lowering(monkeypatch):
    """`fuse`'s legality probes tile, lower and plan each distinct multi-op group once, and
    the compile keeps all of that work: every probe's kernel is the isa kernel of a distinct
    kernel (kernel-copies takes it), `to-isa` lowers only the distinct kernels no probe built,
    and the tile stage copies the probes' tilings (lowering/tile.py `SHARED_TILINGS`), so
    each distinct kernel is tiled and lowered once in all. Repeated blocks share one probe (5
    legality questions, 3 probes); 6 kernels, 4 distinct, 3 of them probed: the tile stage
    builds 1 kernel body (6 before tilings were copied)."""
    from ge.lowering import fuse, fusion_legality, kernel_dedup, tile_cube, tile_vector, to_isa

    counts: dict[str, int] = {}
    inside: list[bool] = [False]
    real_probe, real_lower = fusion_legality._probe, to_isa.lower_kernel

    def probe(ops, target):
        counts["probes"] = counts.get("probes", 0) + 1
        inside[0] = True
        try:
            return real_probe(ops, target)
        finally:
            inside[0] = False

    def lower(*args, **kwargs):
        where = "lowered in probes" if inside[0] else "lowered by to-isa"
        counts[where] = counts.get(where, 0) + 1
        return real_lower(*args, **kwargs)

    def emitting(real):
        def emit(*args, **kwargs):
            where = "tiled in probes" if inside[0] else "tiled by tile"
            counts[where] = counts.get(where, 0) + 1
            return real(*args, **kwargs)
        return emit

    real_init = kernel_dedup.DistinctKernels.__init__

    def distinct(self, module, probes=None):
        real_init(self, module, probes)
        counts.update(kernels=len(self.kernels), distinct=len(self.reps), probed=len(self.probed))

    monkeypatch.setattr(fusion_legality, "_probe", probe)
    monkeypatch.setattr(to_isa, "lower_kernel", lower)
    monkeypatch.setattr(kernel_dedup.DistinctKernels, "__init__", distinct)
    monkeypatch.setattr(tile_cube, "emit_cube", emitting(tile_cube.emit_cube))
    monkeypatch.setattr(tile_vector, "emit_vector", emitting(tile_vector.emit_vector))
    _counting(monkeypatch, fuse, "group_tiles", counts, "questions")
    model, _ = _repeated_blocks()
    with blob_scope():
        ge.compile(model.SerializeToString())
    assert counts == {"questions": 5, "probes": 3, "tiled in probes": 3, "lowered in probes": 3, "kernels": 6,
                      "distinct": 4, "probed": 3, "tiled by tile": 1, "lowered by to-isa": 1}, counts


# Loaded by ge-run / ge-compare / ge.quantize / ge.from_torch, never by compiling an ONNX model.
NOT_ON_THE_COMPILE_PATH = ("onnx.reference", "onnxruntime", "torch", "tensorflow", "sklearn", "scipy")


def _relu_conv(path) -> None:
    w = numpy_helper.from_array(np.linspace(-1, 1, 8 * 4 * 3 * 3, dtype=np.float32).reshape(8, 4, 3, 3), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def test_ge_compile_does_not_import_what_it_does_not_run(tmp_path):
    """A whole `ge-compile` run, in a fresh interpreter: the model file is written and none
    of the packages of the other commands (reference interpreter, onnxruntime, torch) got
    imported on the way."""
    _relu_conv(tmp_path / "m.onnx")
    script = (
        "import json, sys\n"
        "from ge.tools.ge_compile import main\n"
        f"status = main([{str(tmp_path / 'm.onnx')!r}, '-o', {str(tmp_path / 'm.om')!r}])\n"
        "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 0 and (tmp_path / "m.om").stat().st_size > 1000
    loaded = [m for m in result["modules"] if m.split(".")[0] in NOT_ON_THE_COMPILE_PATH or m.startswith("onnx.reference")]
    assert loaded == []
    assert "ge.lowering.to_isa" in result["modules"]  # it did compile down to isa in that process


def test_ge_compile_command_runs_without_collections(tmp_path):
    """`ge-compile` as the process itself (main() reading sys.argv): the garbage collector
    is off before the dialects and onnx are imported, no collection runs during the
    command, the heap is frozen at its end and the process ends by `hard_exit` with the
    command's status (tools/ge_compile.py `main`): here `hard_exit` reports the state
    before it exits the process itself."""
    _relu_conv(tmp_path / "m.onnx")
    script = (
        "import gc, json, os, sys\n"
        "import ge.tools.ge_compile as cli\n"
        "early = sorted(m for m in ('ge.dialects.isa', 'ge.tools.ge_opt', 'onnx') if m in sys.modules)\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
        "real_exit = cli.hard_exit\n"
        "def report(code):\n"
        "    print(json.dumps({'status': code, 'early': early, 'runs': runs, 'enabled': gc.isenabled(),\n"
        "                      'frozen': gc.get_freeze_count() > 0, 'isa': 'ge.dialects.isa' in sys.modules}))\n"
        "    real_exit(code)\n"
        "cli.hard_exit = report\n"
        f"sys.argv = ['ge-compile', {str(tmp_path / 'm.onnx')!r}, '-o', {str(tmp_path / 'm.om')!r}]\n"
        "cli.main()\n"
        "print('main returned')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert "main returned" not in lines  # the process ended in hard_exit
    result = json.loads(lines[-1])
    assert result == {"status": 0, "early": [], "runs": [], "enabled": False, "frozen": True, "isa": True}
    assert (tmp_path / "m.om").stat().st_size > 0  # written and closed before the exit


@pytest.mark.parametrize(("values", "splat"), [
    ([2.0] * 40, True),
    ([1.0, 2.0] + [1.0] * 38, False),  # differs at once
    ([1.0] * 39 + [2.0], False),  # the first two agree, the last does not
    ([np.nan] * 40, False),  # NaN never equals itself
    ([0.0, -0.0] * 20, True),  # equal as numbers
    ([3.0], True),
])
def test_is_splat(values, splat):
    arr = np.array(values, np.float32)
    assert is_splat(arr) is splat
    assert is_splat(arr.reshape(-1, 1)[::-1]) is splat  # a non-contiguous view answers the same


def test_weights_region_holds_each_weight_bytes(tmp_path):
    """The WEIGHTS partition (written into the region in place) holds each weight's bytes
    at its tensor's offset, before and after a save / load round trip."""
    import ge

    _relu_conv(tmp_path / "m.onnx")
    compiled = ge.compile(str(tmp_path / "m.onnx"))
    model = compiled.model
    w_start, _ = model.definition["regions"]["weights"]
    weights = [t for t in model.definition["tensors"] if t.get("kind") == "weight"]
    assert weights and len(model.weights) >= sum(t["bytes"] for t in weights)
    compiled.save(tmp_path / "m.om")
    loaded = ge.load_model(tmp_path / "m.om").model
    assert bytes(loaded.weights) == bytes(model.weights)
    # the conv weight, f16 (force_fp16) in FRACTAL_Z: its 288 values (no zero among them) plus zero padding
    expected = np.sort(np.linspace(-1, 1, 8 * 4 * 3 * 3, dtype=np.float32).astype(np.float16))
    got = [np.frombuffer(bytes(model.weights), np.float16, t["bytes"] // 2, t["offset"] - w_start) for t in weights
           if t["dtype"] == "float16"]
    assert [np.array_equal(np.sort(g[g != 0]), expected) for g in got] == [True]


def test_plan_local_memory_buffers_are_the_accesses_buffers():
    """plan-local-memory takes each instruction's buffers from its operands when its
    `accesses` is the generic one: the same buffers `accesses` names, for every instruction
    of a compiled kernel (vector, Cube, moves)."""
    from ge.dialects import isa
    from ge.transforms.isa_analysis import kernel_ops
    from ge.transforms.plan_local_memory import _buffers, module_target

    blocks, _ = _repeated_blocks()
    with blob_scope():
        from ge.frontend.onnx import import_model

        module = import_model(blocks.SerializeToString())
        run_passes(module, "graph-optimize,decompose,assign-layouts,eliminate-trans-data,fuse,bufferize,tile,to-isa")
    target = module_target(module)
    kinds = set()
    for kernel in (op for op in module.body.block.ops if isinstance(op, isa.KernelOp)):
        for op in kernel_ops(kernel.body.block):
            if isinstance(op, isa.InstructionOp):
                assert set(_buffers(op, target)) == {a.buffer for a in op.accesses(target)}
                kinds.add(type(op).__mro__[1].__name__)
    assert {"_MoveOp", "InstructionOp"} <= kinds and len(kinds) >= 3


def test_ge_compile_only_looks_at_an_onnx_file(tmp_path):
    """`ge-compile` tells a GraphDef from an ONNX file through a memory map (the ONNX file is
    read once, by the loader): a GraphDef is recognized whatever its name, an ONNX file or
    an empty one is not one, and a GraphDef given as ONNX is refused with the hint."""
    from ge.frontend import tf
    from ge.tools.ge_compile import UsageError, _is_graphdef_file, framework_source

    graphdef = tf._pb().GraphDef()
    node = graphdef.node.add()
    node.name, node.op = "x", "Placeholder"
    (tmp_path / "g.onnx").write_bytes(graphdef.SerializeToString())
    _relu_conv(tmp_path / "m.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    answers = {}
    for name in ("g.onnx", "m.onnx", "empty.onnx"):
        with open(tmp_path / name, "rb") as f:
            answers[name] = _is_graphdef_file(f)
    assert answers == {"g.onnx": True, "m.onnx": False, "empty.onnx": False}
    assert framework_source(str(tmp_path / "m.onnx"), None) == str(tmp_path / "m.onnx")
    with pytest.raises(UsageError, match="is a TensorFlow GraphDef, not an ONNX model; use --framework 3"):
        framework_source(str(tmp_path / "g.onnx"), 5)


def test_build_model_symbol_lookup_is_xdsls():
    """build-model reads the module's symbols once: each name finds what
    `SymbolTable.lookup_symbol` finds (a kernel, the graph function, nothing)."""
    from xdsl.dialects import func, test
    from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
    from xdsl.ir import Block, Region
    from xdsl.traits import SymbolTable

    from ge.lowering.build_model import _Reader

    kernels = [func.FuncOp(f"k{i}", ((), ()), Region(Block([func.ReturnOp()])), "private") for i in range(3)]
    user = test.TestOp()
    fn = func.FuncOp("main", ((), ()), Region(Block([user, func.ReturnOp()])))
    ModuleOp([*kernels, fn])
    reader = _Reader(fn, set())
    for name in ("k0", "k2", "main", "missing"):
        ref = SymbolRefAttr(name)
        assert reader.lookup(user, ref) is SymbolTable.lookup_symbol(user, ref)
    assert reader.lookup(user, SymbolRefAttr("k1")) is kernels[1] and reader.table is not None
    assert reader.lookup(user, SymbolRefAttr("missing")) is None


@pytest.mark.parametrize("breakage", ["another kernel's value", "mask 0"])
def test_a_kernel_broken_at_the_isa_level_is_still_refused(breakage):
    """fast_verify's shortcuts (IsolatedFromAbove in one pass, plain tests for arith's type
    variable, a vector op's mask read once) keep xDSL's verdict on a whole compile: a pass
    that breaks an isa kernel after insert-sync makes the compile fail, naming the check."""
    from dataclasses import dataclass

    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, i64

    from ge import plugins
    from ge.dialects import isa

    @dataclass(frozen=True)
    class Break(ge.GraphPass):
        name = "test-speed-break-kernel"
        stage = "after-insert-sync"

        def run(self, module):
            kernels = [op for op in module.ops if isinstance(op, isa.KernelOp)]
            if breakage == "mask 0":
                vop = next(op for k in kernels for op in k.walk() if isinstance(op, isa.VReluOp | isa.VAddOp))
                vop.properties["mask"] = IntegerAttr(0, i64)
                return
            user = next(op for op in kernels[0].walk() if isinstance(op, arith.AddiOp | arith.MuliOp))
            outside = next(op for op in kernels[1].walk() if isinstance(op, arith.ConstantOp)
                           and op.result.type == user.operands[0].type).result
            user.operands = (outside, *tuple(user.operands)[1:])

    ge.register_pass(Break, plugin="test")
    model, _ = _repeated_blocks()
    try:
        with blob_scope(), pytest.raises(ge.PluginError, match="does not verify") as info:
            ge.compile(model.SerializeToString(), ge.CompileOptions(passes=["test-speed-break-kernel"]))
    finally:
        plugins.unregister_pass("test-speed-break-kernel")
    want = "IsolatedFromAbove" if breakage == "another kernel's value" else "mask 0 is out of range"
    assert want in str(info.value), str(info.value)[:500]
