"""ge-compile reads an ONNX model without the TensorFlow front end: `_may_hold_nodes` (the
top-level protobuf walk that lets `_is_graphdef_file` skip parsing) is False only for data
that `tf.parse_graphdef` finds no GraphDef in -- checked on GraphDefs, ONNX models, and
their truncations and random byte strings -- and an ONNX compile's front door
(`framework_source`, `ge.compile`'s import) does not import `ge.frontend.tf`."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ge.frontend import tf
from ge.tools.ge_compile import _may_hold_nodes


def _onnx_bytes() -> bytes:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _graphdef_bytes() -> bytes:
    g = tf._pb().GraphDef()
    for name, op in (("x", "Placeholder"), ("r", "Relu")):
        g.node.add(name=name, op=op)
    g.versions.producer = 1
    return g.SerializeToString()


def _samples():
    rng = random.Random(17)
    whole = [_onnx_bytes(), _graphdef_bytes()]
    out = list(whole)
    for data in whole:
        out += [data[:n] for n in sorted(rng.sample(range(1, len(data)), min(40, len(data) - 1)))]  # truncations
        for _ in range(40):  # a few bytes changed
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            out.append(bytes(b))
    out += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) for _ in range(300)]
    out += [b"\x0a\x03\x0a\x01x", b"\x08\x07", b"\x0b", b"\x0a", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"]
    return out


def test_no_node_field_means_no_graphdef():
    samples = _samples()
    skipped = 0
    for data in samples:
        if not _may_hold_nodes(memoryview(data)):
            skipped += 1
            assert tf.parse_graphdef(data) is None, data[:32]
    assert not _may_hold_nodes(memoryview(_onnx_bytes()))  # the case it is for
    assert _may_hold_nodes(memoryview(_graphdef_bytes()))
    assert skipped >= 30  # (the implication was tested on that many)


def test_an_onnx_compile_does_not_import_the_tf_front_end(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(_onnx_bytes())
    code = (
        "import sys\n"
        "from ge.tools.ge_compile import framework_source\n"
        "from ge.compiler import _import\n"
        f"assert framework_source({str(path)!r}, None) == {str(path)!r}\n"
        f"_import({str(path)!r}, {{}}, 'm')\n"
        "print(sorted(m for m in sys.modules if m == 'ge.frontend.tf' or m.startswith('tensorboard')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
