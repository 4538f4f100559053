"""`ge.zoo` models with a symbolic sequence length, for the dynamic-shape modes (`ge.gears`'
dims gears, `ge.dynamic`), their tests and bench/dynamic.py.

`zoo.bert_encoder` fixes the sequence length in its position-ids slice; an exporter with a
dynamic axis writes that slice's end as Shape(input_ids)[1] and the axis as a named dim.
"""

from __future__ import annotations

import onnx
from onnx import helper

from ge import zoo

BERT_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def dynamic_bert(max_seq: int = 128, hidden: int = 32, heads: int = 2, layers: int = 1) -> onnx.ModelProto:
    """A small `zoo.bert_encoder` (batch 1) whose sequence length is the symbolic dim `seq`,
    any length up to `max_seq`."""
    model = zoo.bert_encoder(batch=1, seq=max_seq, hidden=hidden, heads=heads, layers=layers, max_pos=max_seq)
    g = model.graph
    sliced = next(n for n in g.node if n.name == "embeddings/Slice")
    g.node.insert(0, helper.make_node("Shape", ["input_ids"], ["seq_len"], name="embeddings/seq_len", start=1, end=2))
    sliced.input[2] = "seq_len"
    g.initializer.remove(next(t for t in g.initializer if t.name == "p.end"))
    for vi in [*g.input, *g.output]:
        if vi.name != "pooler_output":
            dim = vi.type.tensor_type.shape.dim[1]
            dim.ClearField("dim_value")
            dim.dim_param = "seq"
    onnx.checker.check_model(model)
    return model
