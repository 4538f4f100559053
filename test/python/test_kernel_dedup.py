"""Compiling each distinct kernel once (lowering/kernel_dedup.py) changes no compiled result:
with `kernels_once` on and off, a model with repeated blocks gives the same model file
(every partition but the compile report's timings), the same IR text and the same
simulated outputs and cycles; structural keys tell kernels apart by what they compute,
not by their names."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IntegerAttr, i64

import ge
from ge.dialects.blobs import blob_scope
from ge.lowering.kernel_dedup import DistinctKernels, name_map, structure_key

RNG = np.random.default_rng(3)


def repeated_blocks(n: int = 3, channels: int = 16, seed: int = 3):
    """n identical conv + relu + add blocks (own weights each) and one different conv."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(n):
        w = rng.standard_normal((channels, channels, 3, 3)) * 0.1
        inits += [numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}"),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Add", [f"r{i}", x], [f"y{i}"], name=f"add{i}")]
        x = f"y{i}"
    w = rng.standard_normal((8, channels, 1, 1)) * 0.1
    inits.append(numpy_helper.from_array(w.astype(np.float32), "wl"))
    nodes.append(helper.make_node("Conv", [x, "wl"], ["y"], name="last"))
    graph = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _parts(compiled: ge.CompiledModel) -> dict:
    m = compiled.model
    meta = {k: v for k, v in m.metadata.items() if k != "compile_report"}
    return {"definition": json.dumps(m.definition, sort_keys=True, default=str),
            "tasks": json.dumps(m.tasks, sort_keys=True, default=str), "weights": bytes(m.weights),
            "kernels": json.dumps(m.kernels, sort_keys=True, default=str),
            "metadata": json.dumps(meta, sort_keys=True, default=str), "ir_text": m.ir_text}


def test_dedup_changes_no_compiled_result():
    model = repeated_blocks().SerializeToString()
    with blob_scope():  # weight blob names are unique per scope: the same in both compiles
        once = ge.compile(model, ge.CompileOptions(kernels_once=True, keep_ir_text=True))
    with blob_scope():
        each = ge.compile(model, ge.CompileOptions(kernels_once=False, keep_ir_text=True))
    assert once.report["kernels"] == each.report["kernels"] >= 4
    assert "kernel-copies" in once.report["compile_seconds"] and "kernel-copies" not in each.report["compile_seconds"]
    a, b = _parts(once), _parts(each)
    for part in a:
        assert a[part] == b[part], part
    x = {"x": RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)}
    ya, yb = once.run(x), each.run(x)
    np.testing.assert_array_equal(ya["y"], yb["y"])
    assert once.last_run.total_cycles == each.last_run.total_cycles > 0
    assert [k.cycles for k in once.last_run.kernels] == [k.cycles for k in each.last_run.kernels]


TILE_PIPELINE = "assign-layouts,eliminate-trans-data,fuse,bufferize,tile"


def _tile_module():
    from ge.frontend.onnx import import_model
    from ge.ir import run_passes

    module = import_model(repeated_blocks().SerializeToString())
    run_passes(module, "graph-optimize," + TILE_PIPELINE)
    return module


def test_structure_keys_ignore_names_only():
    from ge.dialects import tile as t

    module = _tile_module()
    kernels = [op for op in module.body.block.ops if isinstance(op, t.KernelOp)]
    keys = [structure_key(k) for k in kernels]
    names = [k.sym_name.data for k in kernels]
    # The three blocks' conv kernels are twins; the last 1x1 conv is not.
    assert len(set(keys)) < len(keys)
    assert keys[-1] not in keys[:-1]
    twins = [i for i, k in enumerate(keys) if keys.count(k) > 1]
    first, second = kernels[twins[0]], kernels[next(i for i in twins[1:] if keys[i] == keys[twins[0]])]
    assert first.sym_name.data != second.sym_name.data and len(set(names)) == len(names)
    mapping = name_map(first, second)
    assert mapping is not None and any(a != b for a, b in mapping.items())  # their weights are named apart
    # A structurally different body (one attribute changed) gets another key.
    clone = first.clone()
    alloc = next(op for op in clone.walk() if op.name == "tile.alloc")
    alloc.properties["count"] = IntegerAttr(alloc.properties["count"].value.data + 1, i64)
    assert structure_key(clone) != structure_key(first)


def test_distinct_kernels_lowers_each_key_once():
    from ge.dialects import isa
    from ge.ir import print_module, run_passes

    with blob_scope():
        module = _tile_module()
        once = DistinctKernels(module)
        kernels = len(once.kernels)
        assert once.distinct < kernels
        assert sum(1 for op in once.work.body.block.ops) == once.distinct
        run_passes(once.work, "to-isa,plan-local-memory,insert-sync")
        once.finish()
        assert sum(1 for op in module.body.block.ops if isinstance(op, isa.KernelOp)) == kernels
        text = print_module(module)
    with blob_scope():
        reference = _tile_module()
        run_passes(reference, "to-isa,plan-local-memory,insert-sync")
        assert text == print_module(reference)


@pytest.mark.parametrize("flip", [False, True])
def test_insert_sync_twins_get_the_same_sync(flip):
    """insert-sync analyses one kernel per structure key and replays its sync ops on the
    twins: the result equals analysing every kernel on its own (in either order)."""
    from ge.dialects import isa
    from ge.ir import print_module, run_passes
    from ge.transforms.insert_sync import insert_sync
    from ge.transforms.plan_local_memory import module_target

    with blob_scope():
        module = _tile_module()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
        text = print_module(module)
    with blob_scope():
        each = _tile_module()
        run_passes(each, "to-isa,plan-local-memory")
        target = module_target(each)
        kernels = [op for op in each.body.block.ops if isinstance(op, isa.KernelOp)]
        for k in (reversed(kernels) if flip else kernels):
            insert_sync(k, target)
        assert text == print_module(each)


def test_kernel_code_partition_encodes_twins_by_their_names_only():
    """The model file's KERNELS partition encodes one kernel per structure and gives its
    twins their own names: the same partition as encoding every kernel."""
    from ge.dialects import isa
    from ge.ir import run_passes
    from ge.runtime import kernel_code as kc
    from ge.transforms.plan_local_memory import module_target

    with blob_scope():
        module = _tile_module()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
    target = module_target(module)
    kernels = [op for op in module.body.block.ops if isinstance(op, isa.KernelOp)]
    got = kc.partition(kernels, target)
    bodies, index, refs = [], {}, {}
    for k in kernels:
        code, names = kc.strip(kc.encode(k, target))
        key = kc.body_key(code)
        index.setdefault(key, len(index))
        if index[key] == len(bodies):
            bodies.append(code)
        refs[k.sym_name.data] = {"body": index[key], "names": names}
    assert len(bodies) < len(kernels)
    assert got["bodies"] == bodies and got["kernels"] == refs
    twins = [r["names"]["args"] for r in refs.values()]
    assert len({tuple(a) for a in twins}) == len(kernels)  # every kernel keeps its own argument names


def test_kernel_code_partition_takes_twins_from_the_dedup():
    """Given which kernels are renamed copies of which (`DistinctKernels.twins`), the
    partition skips the structural keys and is the same as computing them."""
    from ge.dialects import isa
    from ge.ir import run_passes
    from ge.runtime import kernel_code as kc
    from ge.transforms.plan_local_memory import module_target

    with blob_scope():
        module = _tile_module()
        once = DistinctKernels(module)
        run_passes(once.work, "to-isa,plan-local-memory,insert-sync")
        once.finish()
    twins = once.twins()
    kernels = [op for op in module.body.block.ops if isinstance(op, isa.KernelOp)]
    assert 1 <= len(twins) < len(kernels) and set(twins.values()).isdisjoint(twins)
    target = module_target(module)
    keys = kc.partition(kernels, target)
    assert kc.partition(kernels, target, twins) == keys
    assert len(keys["bodies"]) == len(kernels) - len(twins)
    assert {keys["kernels"][t]["body"] for t in twins} <= {keys["kernels"][r]["body"] for r in twins.values()}


def _same_compile(model, inputs: dict, on: ge.CompileOptions, off: ge.CompileOptions) -> ge.CompiledModel:
    with blob_scope():
        a = ge.compile(model, on)
    with blob_scope():
        b = ge.compile(model, off)
    pa, pb = _parts(a), _parts(b)
    for part in pa:
        assert pa[part] == pb[part], part
    ya, yb = a.run(inputs), b.run(inputs)
    for name in ya:
        np.testing.assert_array_equal(ya[name], yb[name])
    assert a.last_run.total_cycles == b.last_run.total_cycles > 0
    assert [k.cycles for k in a.last_run.kernels] == [k.cycles for k in b.last_run.kernels]
    return a


def test_probe_kernels_reused_change_no_compiled_result():
    """The isa stages take the kernels fuse's legality probes built (reuse_probes) and
    the model file is the same as lowering them again: the conv + relu + add blocks are
    probed, so `to-isa` lowers fewer kernels with reuse than without."""
    from ge.lowering import kernel_dedup

    lowered = []
    real = kernel_dedup.DistinctKernels.__init__

    def spy(self, module, probes=None):
        real(self, module, probes)
        lowered.append((len(self.reps), len(self.probed)))

    x = {"x": RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)}
    model = repeated_blocks().SerializeToString()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel_dedup.DistinctKernels, "__init__", spy)
        _same_compile(model, x, ge.CompileOptions(keep_ir_text=True),
                      ge.CompileOptions(reuse_probes=False, keep_ir_text=True))
    (reps, probed), (reps_off, probed_off) = lowered
    assert reps == reps_off >= 2 and probed >= 1 and probed_off == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_probe_kernels_reused_on_light_models(name):
    """Same model file (IR text included), outputs and simulated cycles with the probes'
    kernels reused or lowered again, on the light models the README times."""
    import ge.testing

    path = ge.testing.light_model_path(name)
    with blob_scope():
        shapes = ge.compile(path, ge.CompileOptions(kernel_level="tile")).inputs
    rng = np.random.default_rng(5)
    inputs = {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32) for i in shapes}
    _same_compile(path, inputs, ge.CompileOptions(keep_ir_text=True),
                  ge.CompileOptions(reuse_probes=False, keep_ir_text=True))


def _uses(root) -> list[list[tuple[int, int]]]:
    """Each value defined inside `root`, its uses as (op number in walk order, operand index), in use-list order."""
    number = {id(op): i for i, op in enumerate(root.walk())}
    values = [v for op in root.walk() for r in op.regions for b in r.blocks for v in b.args]
    values += [v for op in root.walk() for v in op.results]
    return [[(number[id(u.operation)], u.index) for u in v.uses] for v in values]


def test_clone_kernel_is_xdsls_clone():
    """`clone_kernel` (one pass) gives what `Operation.clone` gives: the same text, names,
    locations and use lists in the same order, for every isa kernel of a compiled model."""
    from ge.dialects import isa
    from ge.ir import print_module as show
    from ge.ir import run_passes
    from ge.lowering.kernel_dedup import clone_kernel

    with blob_scope():
        module = _tile_module()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
        kernels = [op for op in module.body.block.ops if isinstance(op, isa.KernelOp)]
        assert len(kernels) >= 4
        for k in kernels:
            mine, theirs = clone_kernel(k), k.clone()
            assert show(mine) == show(theirs)
            assert [str(op.location) for op in mine.walk()] == [str(op.location) for op in theirs.walk()]
            assert _uses(mine) == _uses(theirs) and sum(map(len, _uses(mine))) > 20
            assert [_fields(op) for op in mine.walk()] == [_fields(op) for op in theirs.walk()]
            assert mine.parent is None and all(op.parent.parent_op() is p for p in mine.walk()
                                               for r in p.regions for b in r.blocks for op in b.ops)
            assert all(v.owner is op for op in mine.walk() for v in op.results)
            for b in (b for op in mine.walk() for r in op.regions for b in r.blocks):  # the op lists, both ways
                forward = list(b.ops)
                backward = [b.last_op]
                while backward[-1] is not None and backward[-1].prev_op is not None:
                    backward.append(backward[-1].prev_op)
                assert forward == backward[::-1] and b.first_op is forward[0] and forward[-1].next_op is None


def _fields(op) -> dict:
    """What `Operation.create` sets on an op, besides its operands, results and regions
    (checked through the text and uses), as comparable values."""
    return {"type": type(op), "properties": dict(op.properties), "attributes": dict(op.attributes),
            "location": op.location, "successors": tuple(op.successors), "successor_uses": op.successor_uses,
            "regions": len(op.regions), "results": [(r.index, r.type) for r in op.results],
            "dict": sorted(k for k in vars(op) if k not in ("parent", "_next_op", "_prev_op"))}


def test_clone_kernel_renames_on_the_way():
    """`clone_kernel(k, names)` is xDSL's clone with each mapped name hint renamed (block
    arguments and results alike), and the original keeps its names."""
    from ge.dialects import isa
    from ge.ir import print_module as show
    from ge.ir import run_passes
    from ge.lowering.kernel_dedup import clone_kernel, defined_values

    with blob_scope():
        module = _tile_module()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
    kernel = next(op for op in module.body.block.ops if isinstance(op, isa.KernelOp))
    hints = sorted({v.name_hint for v in defined_values(kernel) if v.name_hint})
    assert len(hints) >= 2
    names = {h: f"{h}_twin" for h in hints[::2]}
    before = show(kernel)
    mine, theirs = clone_kernel(kernel, names), kernel.clone()
    for v in defined_values(theirs):
        if v.name_hint in names:
            v.name_hint = names[v.name_hint]
    assert show(mine) == show(theirs) != before and show(kernel) == before
    assert sum(v.name_hint in names.values() for v in defined_values(mine)) >= len(names)


def test_kernel_code_flat_order_is_defined_values_and_walk():
    """The model file's twin names (`kernel_code.names_like`) index values and ops in one
    pass: the same order as `defined_values` and `walk`."""
    from ge.dialects import isa
    from ge.ir import run_passes
    from ge.lowering.kernel_dedup import defined_values
    from ge.runtime.kernel_code import _flat

    with blob_scope():
        module = _tile_module()
        run_passes(module, "to-isa,plan-local-memory,insert-sync")
    for k in (op for op in module.body.block.ops if isinstance(op, isa.KernelOp)):
        values, ops = _flat(k)
        assert values == list(defined_values(k)) and ops == list(k.walk()) and len(ops) > 10


def test_clone_kernel_falls_back_on_a_use_before_its_definition():
    from xdsl.dialects import test
    from xdsl.dialects.builtin import i32
    from xdsl.ir import Block, Region

    from ge.lowering.kernel_dedup import clone_kernel

    later = test.TestOp(result_types=[i32])
    early = test.TestOp(operands=[later.results[0]], result_types=[i32])
    outer = test.TestOp(regions=[Region(Block([later]))])
    outer.regions[0].block.insert_op_before(early, later)
    clone = clone_kernel(outer)
    assert str(clone) == str(outer.clone()) and "test.op" in str(clone)
    inner = list(clone.regions[0].block.ops)
    assert inner[0].operands[0] is inner[1].results[0]  # the copy's own value, not the original's
    assert len(list(later.results[0].uses)) == 1  # the original's uses are left as they were


def test_blind_key_is_the_blind_structure_key():
    """`DistinctKernels` derives the key a fusion probe's kernel is kept under from the
    kernel's own key (`blind_key`) instead of walking the kernel again: the same key."""
    from ge.dialects import tile as t
    from ge.lowering.kernel_dedup import PROBE_BLIND, blind_key

    module = _tile_module()
    kernels = [op for op in module.body.block.ops if isinstance(op, t.KernelOp)]
    blinded = 0
    for k in kernels:
        key = structure_key(k)
        assert blind_key(key, PROBE_BLIND) == structure_key(k, PROBE_BLIND)
        blinded += blind_key(key, PROBE_BLIND) != key  # the kind and rules left out
    assert blinded == len(kernels) > 3
