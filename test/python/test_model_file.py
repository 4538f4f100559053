"""The model file: round trip, and every way a file can be refused (truncated, flipped
byte, foreign magic, other version, partitions out of bounds or contradicting each other)."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

import ge
from ge.dialects import task
from ge.dialects.blobs import attr_array, blob_scope
from ge.errors import ModelFormatError
from ge.ir import parse_module, run_passes
from ge.runtime import model_file as mf
from ge.testing import light_model_path, with_random_weights

SOURCE = """
builtin.module attributes {ge.target = "ascend910b", ge.precision_mode = "force_fp16"} {
  func.func @main(%x: tensor<1x128xf32> {ge.name = "input:0"}) -> (tensor<1x256xf32> {ge.name = "y"}, tensor<128xf32> {ge.name = "flat"}) {
    %w = graph.constant dense<[[0.5, -1.0, 2.0, 0.25]]> : tensor<1x4xf32>
    %s = graph.constant dense<[128]> : tensor<1xi64>
    %a = fusion.group "elementwise" [] ins(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32> {
    ^bb0(%0: tensor<1x128xf32>):
      %1 = graph.relu %0 : tensor<1x128xf32>
      fusion.yield %1 : tensor<1x128xf32>
    }
    %b = fusion.group "elementwise" [] ins(%a, %w) : (tensor<1x128xf32>, tensor<1x4xf32>) -> tensor<1x128xf32> {
    ^bb0(%0: tensor<1x128xf32>, %1: tensor<1x4xf32>):
      %2 = graph.reduce_sum %1 {axes = array<i64: 1>, keepdims} : (tensor<1x4xf32>) -> tensor<1x1xf32>
      %3 = graph.mul %0, %2 : (tensor<1x128xf32>, tensor<1x1xf32>) -> tensor<1x128xf32>
      fusion.yield %3 : tensor<1x128xf32>
    }
    %c = fusion.group "opaque" [] ins(%a, %b) : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x256xf32> {
    ^bb0(%0: tensor<1x128xf32>, %1: tensor<1x128xf32>):
      %2 = graph.concat %0, %1 {axis = 1 : i64} : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x256xf32>
      fusion.yield %2 : tensor<1x256xf32>
    }
    %f = graph.reshape %x, %s : (tensor<1x128xf32>, tensor<1xi64>) -> tensor<128xf32>
    func.return %c, %f : tensor<1x256xf32>, tensor<128xf32>
  }
}
"""


@pytest.fixture
def model() -> mf.Model:
    module = run_passes(parse_module(SOURCE), "build-model")
    return mf.model_from_module(module, gears=[{"batch": 1}])


@pytest.fixture
def saved(tmp_path, model) -> bytes:
    path = tmp_path / "m.om"
    assert mf.save_model(path, model) == path.stat().st_size
    return path.read_bytes()


def test_round_trip(tmp_path, model):
    path = tmp_path / "m.om"
    mf.save_model(path, model)
    back = mf.load_model(path)
    assert back == model and back.path == str(path)
    assert back.ir_text is not None and "task.model @main" in back.ir_text
    meta = back.metadata
    assert meta["target"] == "ascend910b" and meta["soc_version"] == "Ascend910B1"
    assert meta["precision_mode"] == "force_fp16" and meta["gears"] == [{"batch": 1}]
    assert [(i["name"], i["shape"], i["dtype"]) for i in meta["inputs"]] == [("input:0", [1, 128], "float32")]
    assert [(o["name"], o["shape"]) for o in meta["outputs"]] == [("y", [1, 256]), ("flat", [128])]
    assert [t["op"] for t in back.tasks].count("launch") == 2 and [t["op"] for t in back.tasks].count("copy") == 3
    assert [k["name"] for k in back.definition["kernels"]] == ["k0_a", "k1_b"]
    assert "func.func private @k1_b" in back.kernels["text"]


def test_weights_sit_at_their_offsets(model):
    module = run_passes(parse_module(SOURCE), "build-model")
    weights = [op for op in module.walk() if isinstance(op, task.WeightOp)]
    assert len(weights) == 1  # the reshape's shape is not a weight
    w = weights[0]
    start = w.offset.value.data - model.definition["regions"]["weights"][0]
    got = np.frombuffer(model.weights, np.float32, 4, start)
    np.testing.assert_array_equal(got, attr_array(w.value).ravel())


def test_tasks_refer_to_tensors_by_offset(model):
    d = model.definition
    outs = {o["name"]: d["tensors"][o["tensor"]] for o in model.metadata["outputs"]}
    lo, hi = d["regions"]["outputs"][0], sum(d["regions"]["outputs"])
    assert all(lo <= t["offset"] < hi for t in outs.values())
    copies = [t for t in model.tasks if t["op"] == "copy"]
    dests = sorted(d["tensors"][c["dst"]]["offset"] for c in copies)
    y = outs["y"]["offset"]
    assert dests == [y, y + 512, outs["flat"]["offset"]]  # the concat's two halves, the reshaped input


def test_without_ir_text(tmp_path):
    module = run_passes(parse_module(SOURCE), "build-model")
    m = mf.model_from_module(module, with_ir=False)
    mf.save_model(tmp_path / "m.om", m)
    assert mf.load_model(tmp_path / "m.om").ir_text is None


def _write(tmp_path, data: bytes) -> str:
    path = tmp_path / "bad.om"
    path.write_bytes(data)
    return str(path)


def _resign(data: bytearray) -> bytearray:
    """Recompute the checksum (SHA-256 of the file with the checksum field zeroed)."""
    digest = hashlib.sha256(bytes(data[:32]) + bytes(32) + bytes(data[64:])).digest()
    data[32:64] = digest
    return data


@pytest.mark.parametrize("cut", ["empty", 4, 100, 255, 256, 300, "half", "last"])
def test_truncated(tmp_path, saved, cut):
    n = {"empty": 0, "half": len(saved) // 2, "last": len(saved) - 1}.get(cut, cut)
    path = _write(tmp_path, saved[:n])
    with pytest.raises(mf.TruncatedModelError, match=rf"bad\.om: truncated: .*{n}"):
        mf.load_model(path)


@pytest.mark.parametrize("where", ["checksum", "name", "reserved", "table", "definition", "weights", "last"])
def test_flipped_byte(tmp_path, saved, where):
    pos = {"checksum": 40, "name": 70, "reserved": 200, "table": 260, "last": len(saved) - 1}.get(where)
    if pos is None:
        kind = {"definition": mf.PartitionKind.MODEL_DEF, "weights": mf.PartitionKind.WEIGHTS}[where]
        for i in range(struct.unpack_from("<I", saved, 24)[0]):
            k, _, offset, size = struct.unpack_from("<IIQQ", saved, 256 + 24 * i)
            if k == kind:
                pos = offset + size // 2
    data = bytearray(saved)
    data[pos] ^= 0x10
    with pytest.raises(mf.CorruptModelError, match=r"bad\.om: corrupted: the checksum does not match"):
        mf.load_model(_write(tmp_path, bytes(data)))


def test_bad_magic(tmp_path, saved):
    with pytest.raises(mf.NotAModelError, match=r"bad\.om: not a ge model file \(it starts with b'PK"):
        mf.load_model(_write(tmp_path, b"PK\x03\x04" + saved[4:]))
    with pytest.raises(mf.NotAModelError, match="not a ge model file"):
        mf.load_model(_write(tmp_path, b"hello, world"))


def test_bad_version(tmp_path, saved):
    for version in (1, 7):  # 1: kernels as MLIR text (before kernel code); 7: a newer ge
        data = bytearray(saved)
        struct.pack_into("<I", data, 8, version)
        with pytest.raises(mf.UnsupportedVersionError, match=rf"bad\.om: model file format version {version} is not "
                           r"supported \(this ge reads version 2\)"):
            mf.load_model(_write(tmp_path, bytes(data)))


def _entry(data, i):
    return struct.unpack_from("<IIQQ", data, 256 + 24 * i)


def _set_entry(data, i, kind, offset, size):
    struct.pack_into("<IIQQ", data, 256 + 24 * i, kind, 0, offset, size)


def test_partition_out_of_bounds(tmp_path, saved):
    data = bytearray(saved)
    kind, _, offset, _ = _entry(data, 1)
    _set_entry(data, 1, kind, offset, len(data))
    with pytest.raises(mf.InconsistentModelError, match=r"bad\.om: partition #1 \(WEIGHTS\) at bytes \[\d+, \d+\) lies outside the data area"):
        mf.load_model(_write(tmp_path, bytes(_resign(data))))
    data = bytearray(saved)
    _set_entry(data, 0, 0, 8, 10)  # inside the header
    with pytest.raises(mf.InconsistentModelError, match=r"partition #0 \(MODEL_DEF\) at bytes \[8, 18\) lies outside"):
        mf.load_model(_write(tmp_path, bytes(_resign(data))))
    data = bytearray(saved)
    struct.pack_into("<I", data, 24, 10**6)  # a partition table larger than the file
    with pytest.raises(mf.InconsistentModelError, match="a table of 1000000 partitions does not fit"):
        mf.load_model(_write(tmp_path, bytes(_resign(data))))


def test_partitions_that_contradict_each_other(tmp_path, saved):
    def refused(data, pattern, error=mf.InconsistentModelError):
        with pytest.raises(error, match=pattern):
            mf.load_model(_write(tmp_path, bytes(_resign(data))))

    data = bytearray(saved)
    _, _, o0, s0 = _entry(data, 0)
    _set_entry(data, 2, 2, o0, s0)
    refused(data, "partitions MODEL_DEF and TASK_INFO overlap")
    data = bytearray(saved)
    _set_entry(data, 2, 0, *_entry(data, 2)[2:])
    refused(data, "partition MODEL_DEF appears twice")
    data = bytearray(saved)
    _set_entry(data, 2, 99, *_entry(data, 2)[2:])
    refused(data, "partition #2 has unknown kind 99")
    data = bytearray(saved)
    count = struct.unpack_from("<I", data, 24)[0]
    struct.pack_into("<I", data, 24, count - 2)  # drop METADATA and IR_TEXT from the table
    refused(data, r"missing partition\(s\) METADATA")
    data = bytearray(saved) + b"extra"
    struct.pack_into("<Q", data, 16, len(saved))
    refused(data, "5 unexpected bytes after")


def _rewrite(saved: bytes, kind: mf.PartitionKind, edit) -> mf.Model:
    """A valid file whose partition `kind` (JSON) went through `edit`."""
    m = mf.read_model(saved)
    fields = {mf.PartitionKind.MODEL_DEF: "definition", mf.PartitionKind.TASK_INFO: "tasks",
              mf.PartitionKind.METADATA: "metadata"}
    value = json.loads(json.dumps(getattr(m, fields[kind])))
    edit(value)
    setattr(m, fields[kind], value)
    m.weights = bytes(m.weights)
    return m


@pytest.mark.parametrize(
    ("kind", "edit", "message"),
    [
        (mf.PartitionKind.TASK_INFO, lambda t: t[0].update(ins=[999]), r"task #0 \(launch\) names tensor #999"),
        (mf.PartitionKind.TASK_INFO, lambda t: t[0].update(kernel=5), r"task #0 \(launch\) names kernel #5; the model has 2"),
        (mf.PartitionKind.TASK_INFO, lambda t: t[0].update(stream=9), r"runs on stream 9; the model has"),
        (mf.PartitionKind.TASK_INFO, lambda t: t[0].update(op="jump"), "unknown task kind 'jump'"),
        (mf.PartitionKind.MODEL_DEF, lambda d: d["tensors"][0].update(offset=10**9), "lies outside the .*-byte arena"),
        (mf.PartitionKind.MODEL_DEF, lambda d: d["regions"]["weights"].__setitem__(1, 0), "the WEIGHTS partition holds 512 bytes, the weights region 0"),
        (mf.PartitionKind.MODEL_DEF, lambda d: d.pop("tensors"), "the model definition is malformed .KeyError: 'tensors'."),
        (mf.PartitionKind.METADATA, lambda d: d["outputs"][0].update(tensor=-1), "graph input/output 'y' names tensor #-1"),
    ],
)
def test_inconsistent_contents(tmp_path, saved, kind, edit, message):
    m = _rewrite(saved, kind, edit)
    path = tmp_path / "bad.om"
    mf.save_model(path, m)
    with pytest.raises(mf.InconsistentModelError, match=message):
        mf.load_model(path)


def test_partition_that_is_not_json(tmp_path, saved):
    data = bytearray(saved)
    _, _, offset, _ = _entry(data, 2)  # TASK_INFO
    data[offset] = ord("#")
    with pytest.raises(mf.CorruptModelError, match=r"bad\.om: the TASK_INFO partition is not valid JSON"):
        mf.load_model(_write(tmp_path, bytes(_resign(data))))


def test_unreadable_path(tmp_path):
    with pytest.raises(ModelFormatError, match=r"none\.om: cannot read the model file"):
        mf.load_model(tmp_path / "none.om")


def test_every_refusal_is_a_model_format_error():
    for cls in (mf.TruncatedModelError, mf.NotAModelError, mf.UnsupportedVersionError, mf.CorruptModelError,
                mf.InconsistentModelError):
        assert issubclass(cls, ModelFormatError) and issubclass(cls, ge.GeError)


@pytest.mark.slow
def test_light_model_round_trip(tmp_path):
    with blob_scope():
        module = ge.load_onnx(with_random_weights(light_model_path("squeezenet"), seed=0))
        run_passes(module, "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data,fuse,build-model")
        m = mf.model_from_module(module)
        model_op = next(op for op in module.ops if isinstance(op, task.ModelOp))
        w_offset = model_op.region_span("weights")[0]
        mf.save_model(tmp_path / "squeezenet.om", m)
        back = mf.load_model(tmp_path / "squeezenet.om")
        assert back == m
        for op in model_op.body.block.ops:  # every weight's bytes at its offset
            if isinstance(op, task.WeightOp):
                arr = attr_array(op.value)
                start = op.offset.value.data - w_offset
                assert bytes(back.weights[start:start + arr.nbytes]) == arr.tobytes()
        assert back.metadata["streams"] == model_op.streams.value.data == 2
