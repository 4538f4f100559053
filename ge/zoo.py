"""Small transformer models as the exporters write them, with seeded weights.

The light model zoo in the onnx wheel is all CNNs; these are the transformer shapes users
bring: a BERT encoder (word / position / token-type embeddings, an attention mask computed at
run time, erf GELU, pooler), a GPT-style decoder (causal mask built with Trilu and Where, a
padding mask, fused QKV projection split three ways, tanh GELU with Pow, LayerNorm written
out as ReduceMean / Sub / Pow / Sqrt / Div as older exporters do, tied LM head) and a ViT
(convolutional patch embedding, an expanded class token, erf GELU, the class token taken
with Gather). The node patterns follow what `torch.onnx.export` produces for the Hugging
Face implementations (Shape -> Gather -> Unsqueeze -> Concat reshape targets included), built
with `onnx.helper` so that the tests need no torch.

Weights are standard normal scaled by 1/sqrt(fan_in) (embeddings by 1), so every layer keeps
unit scale and the outputs depend on the inputs; the LayerNorms keep deep stacks from
drifting.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    """Nodes, initializers and seeded weights of one graph; node names = output names."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, name: str, values) -> str:
        return self.const(name, np.asarray(values, np.int64))

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.array(value, np.float32))

    def weight(self, name: str, shape, scale: float | None = None) -> str:
        s = 1.0 / np.sqrt(shape[0]) if scale is None else scale
        return self.const(name, (self.rng.standard_normal(shape) * s).astype(np.float32))

    def bias(self, name: str, n: int) -> str:
        return self.const(name, (self.rng.standard_normal(n) * 0.02).astype(np.float32))

    def node(self, op: str, inputs: list[str], name: str, outputs: int = 1, **attrs) -> str | list[str]:
        outs = [name] if outputs == 1 else [f"{name}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def linear(self, x: str, name: str, n_in: int, n_out: int) -> str:
        mm = self.node("MatMul", [x, self.weight(f"{name}.weight", (n_in, n_out))], f"{name}/MatMul")
        return self.node("Add", [mm, self.bias(f"{name}.bias", n_out)], f"{name}/Add")

    def layer_norm(self, x: str, name: str, n: int) -> str:
        gamma = self.const(f"{name}.weight", (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32))
        beta = self.bias(f"{name}.bias", n)
        return self.node("LayerNormalization", [x, gamma, beta], f"{name}/LayerNorm", axis=-1, epsilon=1e-12)

    def layer_norm_decomposed(self, x: str, name: str, n: int) -> str:
        """LayerNorm as opset < 17 exports write it: mean, centred, Pow 2, mean, sqrt, div."""
        gamma = self.const(f"{name}.weight", (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32))
        beta = self.bias(f"{name}.bias", n)
        mean = self.node("ReduceMean", [x], f"{name}/ReduceMean", axes=[-1], keepdims=1)
        centred = self.node("Sub", [x, mean], f"{name}/Sub")
        sq = self.node("Pow", [centred, self.scalar(f"{name}.two", 2.0)], f"{name}/Pow")
        var = self.node("ReduceMean", [sq], f"{name}/ReduceMean_1", axes=[-1], keepdims=1)
        std = self.node("Sqrt", [self.node("Add", [var, self.scalar(f"{name}.eps", 1e-5)], f"{name}/Add")],
                        f"{name}/Sqrt")
        normed = self.node("Div", [centred, std], f"{name}/Div")
        return self.node("Add", [self.node("Mul", [normed, gamma], f"{name}/Mul"), beta], f"{name}/Add_1")

    def gelu_erf(self, x: str, name: str) -> str:
        e = self.node("Erf", [self.node("Div", [x, self.scalar(f"{name}.sqrt2", np.sqrt(2.0))], f"{name}/Div")],
                      f"{name}/Erf")
        e = self.node("Add", [e, self.scalar(f"{name}.one", 1.0)], f"{name}/Add")
        return self.node("Mul", [self.node("Mul", [x, e], f"{name}/Mul"), self.scalar(f"{name}.half", 0.5)],
                         f"{name}/Mul_1")

    def gelu_tanh(self, x: str, name: str) -> str:
        """GPT-2's `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`."""
        cube = self.node("Pow", [x, self.scalar(f"{name}.three", 3.0)], f"{name}/Pow")
        inner = self.node("Add", [x, self.node("Mul", [cube, self.scalar(f"{name}.c", 0.044715)], f"{name}/Mul")],
                          f"{name}/Add")
        t = self.node("Tanh", [self.node("Mul", [inner, self.scalar(f"{name}.k", np.sqrt(2 / np.pi))],
                                         f"{name}/Mul_1")], f"{name}/Tanh")
        t = self.node("Add", [t, self.scalar(f"{name}.one", 1.0)], f"{name}/Add_1")
        half = self.node("Mul", [x, self.scalar(f"{name}.half", 0.5)], f"{name}/Mul_2")
        return self.node("Mul", [half, t], f"{name}/Mul_3")

    def dynamic_shape(self, x: str, name: str, dims: list[int | str]) -> str:
        """A Reshape target as torch writes it: the leading dims read with Shape -> Gather,
        each Unsqueezed, then Concat with the constant dims (ints) ge folds at import."""
        shape = self.node("Shape", [x], f"{name}/Shape")
        parts = []
        for i, d in enumerate(dims):
            if isinstance(d, str):  # "dim<k>": dim k of x, read at run time
                k = int(d[3:])
                g = self.node("Gather", [shape, self.ints(f"{name}.idx{i}", k)], f"{name}/Gather_{i}", axis=0)
                parts.append(self.node("Unsqueeze", [g, self.ints(f"{name}.ax{i}", [0])], f"{name}/Unsqueeze_{i}"))
            else:
                parts.append(self.ints(f"{name}.dim{i}", [d]))
        return self.node("Concat", parts, f"{name}/Concat", axis=0)

    def attention(self, q: str, k: str, v: str, mask: str | None, name: str, hidden: int, heads: int,
                  causal: str | None = None) -> str:
        d = hidden // heads

        def heads_of(t: str, tag: str, perm: list[int]) -> str:
            target = self.dynamic_shape(t, f"{name}/{tag}", ["dim0", "dim1", heads, d])
            r = self.node("Reshape", [t, target], f"{name}/{tag}/Reshape")
            return self.node("Transpose", [r], f"{name}/{tag}/Transpose", perm=perm)

        qh, kh, vh = heads_of(q, "q", [0, 2, 1, 3]), heads_of(k, "k", [0, 2, 3, 1]), heads_of(v, "v", [0, 2, 1, 3])
        scores = self.node("MatMul", [qh, kh], f"{name}/MatMul")
        scores = self.node("Div", [scores, self.scalar(f"{name}.scale", np.sqrt(d))], f"{name}/Div")
        if causal is not None:  # keep where the causal pattern is 1, else the most negative value
            keep = self.node("Equal", [causal, self.scalar(f"{name}.c1", 1.0)], f"{name}/Equal")
            scores = self.node("Where", [keep, scores, self.scalar(f"{name}.ninf", -1e4)], f"{name}/Where")
        if mask is not None:
            scores = self.node("Add", [scores, mask], f"{name}/Add")
        probs = self.node("Softmax", [scores], f"{name}/Softmax", axis=-1)
        ctx = self.node("MatMul", [probs, vh], f"{name}/MatMul_1")
        ctx = self.node("Transpose", [ctx], f"{name}/Transpose", perm=[0, 2, 1, 3])
        target = self.dynamic_shape(ctx, f"{name}/merge", ["dim0", "dim1", hidden])
        return self.node("Reshape", [ctx, target], f"{name}/Reshape")

    def padding_mask(self, mask: str, name: str) -> str:
        """HF's extended mask: (1 - mask[:, None, None, :]) * -10000 as f32."""
        m = self.node("Unsqueeze", [mask, self.ints(f"{name}.axes", [1, 2])], f"{name}/Unsqueeze")
        m = self.node("Cast", [m], f"{name}/Cast", to=TensorProto.FLOAT)
        m = self.node("Sub", [self.scalar(f"{name}.one", 1.0), m], f"{name}/Sub")
        return self.node("Mul", [m, self.scalar(f"{name}.min", -10000.0)], f"{name}/Mul")

    def model(self, name: str, inputs, outputs, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ge.zoo")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def bert_encoder(batch: int = 2, seq: int = 16, hidden: int = 64, heads: int = 4, layers: int = 2,
                 vocab: int = 1000, max_pos: int = 64, seed: int = 0) -> onnx.ModelProto:
    """BertModel: inputs `input_ids`, `token_type_ids`, `attention_mask` (int64 [batch, seq]);
    outputs `last_hidden_state` [batch, seq, hidden] and `pooler_output` [batch, hidden]."""
    b = _Builder(seed)
    words = b.node("Gather", [b.weight("embeddings.word", (vocab, hidden), 1.0), "input_ids"], "embeddings/word")
    # the position_ids buffer [1, max_pos], sliced to the sequence length
    pos_ids = b.node("Slice", [b.ints("embeddings.position_ids", np.arange(max_pos)[None]), b.ints("p.start", [0]),
                               b.ints("p.end", [seq]), b.ints("p.axes", [1])], "embeddings/Slice")
    pos = b.node("Gather", [b.weight("embeddings.position", (max_pos, hidden), 1.0), pos_ids], "embeddings/position")
    types = b.node("Gather", [b.weight("embeddings.token_type", (2, hidden), 1.0), "token_type_ids"],
                   "embeddings/token_type")
    x = b.node("Add", [b.node("Add", [words, types], "embeddings/Add"), pos], "embeddings/Add_1")
    x = b.layer_norm(x, "embeddings.LayerNorm", hidden)
    mask = b.padding_mask("attention_mask", "extended_mask")
    for i in range(layers):
        p = f"encoder.layer.{i}"
        q, k, v = (b.linear(x, f"{p}.attention.{n}", hidden, hidden) for n in ("query", "key", "value"))
        ctx = b.attention(q, k, v, mask, f"{p}.attention", hidden, heads)
        x = b.layer_norm(b.node("Add", [b.linear(ctx, f"{p}.attention.output", hidden, hidden), x], f"{p}/Add"),
                         f"{p}.attention.LayerNorm", hidden)
        h = b.gelu_erf(b.linear(x, f"{p}.intermediate", hidden, 4 * hidden), f"{p}.gelu")
        x = b.layer_norm(b.node("Add", [b.linear(h, f"{p}.output", 4 * hidden, hidden), x], f"{p}/Add_1"),
                         f"{p}.output.LayerNorm", hidden)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    first = b.node("Gather", [x, b.ints("pooler.index", 0)], "pooler/Gather", axis=1)
    pooled = b.node("Gemm", [first, b.weight("pooler.dense.weight", (hidden, hidden)), b.bias("pooler.dense.bias", hidden)],
                    "pooler/Gemm")
    b.nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"], name="pooler/Tanh"))
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
           for n in ("input_ids", "token_type_ids", "attention_mask")]
    outs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, seq, hidden]),
            helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [batch, hidden])]
    return b.model("bert_encoder", ids, outs, opset=17)


def bert_inputs(batch: int = 2, seq: int = 16, vocab: int = 1000, seed: int = 1) -> dict[str, np.ndarray]:
    """Token ids, two segments, and a padding mask that drops the tail of every row but one."""
    rng = np.random.default_rng(seed)
    types = np.zeros((batch, seq), np.int64)
    types[:, seq // 2:] = 1
    mask = np.ones((batch, seq), np.int64)
    for r in range(1, batch):
        mask[r, seq - 1 - (r % max(1, seq // 4)) * 2:] = 0
    return {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64), "token_type_ids": types,
            "attention_mask": mask}


def gpt_decoder(batch: int = 2, seq: int = 16, hidden: int = 64, heads: int = 4, layers: int = 2,
                vocab: int = 500, max_pos: int = 64, seed: int = 0) -> onnx.ModelProto:
    """GPT-2: inputs `input_ids`, `attention_mask` (int64 [batch, seq]); output `logits`
    [batch, seq, vocab] from the LM head tied to the word embeddings."""
    b = _Builder(seed)
    wte = b.weight("wte", (vocab, hidden), 1.0)
    words = b.node("Gather", [wte, "input_ids"], "wte/Gather")
    pos_ids = b.node("Range", [b.ints("r.start", 0), b.ints("r.limit", seq), b.ints("r.delta", 1)], "position/Range")
    pos_ids = b.node("Unsqueeze", [pos_ids, b.ints("r.axes", [0])], "position/Unsqueeze")
    x = b.node("Add", [words, b.node("Gather", [b.weight("wpe", (max_pos, hidden), 1.0), pos_ids], "wpe/Gather")],
               "embed/Add")
    ones = b.node("ConstantOfShape", [b.ints("causal.shape", [seq, seq])], "causal/ConstantOfShape",
                  value=numpy_helper.from_array(np.array([1.0], np.float32)))
    causal = b.node("Trilu", [ones], "causal/Trilu", upper=0)
    mask = b.padding_mask("attention_mask", "padding_mask")
    for i in range(layers):
        p = f"h.{i}"
        qkv = b.linear(b.layer_norm_decomposed(x, f"{p}.ln_1", hidden), f"{p}.attn.c_attn", hidden, 3 * hidden)
        q, k, v = b.node("Split", [qkv, b.ints(f"{p}.split", [hidden] * 3)], f"{p}.attn/Split", outputs=3, axis=2)
        ctx = b.attention(q, k, v, mask, f"{p}.attn", hidden, heads, causal=causal)
        x = b.node("Add", [b.linear(ctx, f"{p}.attn.c_proj", hidden, hidden), x], f"{p}/Add")
        h = b.gelu_tanh(b.linear(b.layer_norm_decomposed(x, f"{p}.ln_2", hidden), f"{p}.mlp.c_fc", hidden, 4 * hidden),
                        f"{p}.mlp.gelu")
        x = b.node("Add", [b.linear(h, f"{p}.mlp.c_proj", 4 * hidden, hidden), x], f"{p}/Add_1")
    x = b.layer_norm_decomposed(x, "ln_f", hidden)
    head = b.node("Transpose", [wte], "lm_head/Transpose", perm=[1, 0])
    b.nodes.append(helper.make_node("MatMul", [x, head], ["logits"], name="lm_head/MatMul"))
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq]) for n in ("input_ids", "attention_mask")]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, seq, vocab])]
    return b.model("gpt_decoder", ins, outs, opset=14)


def gpt_inputs(batch: int = 2, seq: int = 16, vocab: int = 500, seed: int = 1) -> dict[str, np.ndarray]:
    """Token ids and a right-padding mask (the last positions of the later rows are padding).
    Not left padding: with a causal mask a left-padded query sees only padded keys, a row of
    -1e4 + score whose softmax is noise in any precision (f16 spaces values near 1e4 by 8)."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    for r in range(1, batch):
        mask[r, seq - r * 2:] = 0
    return {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64), "attention_mask": mask}


def vit(batch: int = 2, image: int = 32, patch: int = 8, hidden: int = 64, heads: int = 4, layers: int = 2,
        classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """ViT: input `pixel_values` [batch, 3, image, image], output `logits` [batch, classes];
    pre-norm blocks, class token expanded to the batch and concatenated before the patches."""
    b = _Builder(seed)
    n = (image // patch) ** 2
    emb = b.node("Conv", ["pixel_values", b.weight("patch.weight", (hidden, 3, patch, patch), 1 / np.sqrt(3 * patch * patch)),
                          b.bias("patch.bias", hidden)], "patch/Conv", kernel_shape=[patch, patch], strides=[patch, patch])
    # torch's `flatten(2)`: a Reshape to [batch, hidden, -1] with a computed target
    emb = b.node("Reshape", [emb, b.dynamic_shape(emb, "patch/flat", ["dim0", hidden, -1])], "patch/Reshape")
    emb = b.node("Transpose", [emb], "patch/Transpose", perm=[0, 2, 1])
    cls_shape = b.dynamic_shape(emb, "cls", ["dim0", 1, 1])  # expand(B, -1, -1) as exported
    cls = b.node("Expand", [b.weight("cls_token", (1, 1, hidden), 1.0), cls_shape], "cls/Expand")
    x = b.node("Concat", [cls, emb], "embed/Concat", axis=1)
    x = b.node("Add", [x, b.weight("position_embeddings", (1, n + 1, hidden), 1.0)], "embed/Add")
    for i in range(layers):
        p = f"layer.{i}"
        h = b.layer_norm(x, f"{p}.layernorm_before", hidden)
        q, k, v = (b.linear(h, f"{p}.attention.{m}", hidden, hidden) for m in ("query", "key", "value"))
        x = b.node("Add", [b.linear(b.attention(q, k, v, None, f"{p}.attention", hidden, heads), f"{p}.attention.output",
                                    hidden, hidden), x], f"{p}/Add")
        h = b.gelu_erf(b.linear(b.layer_norm(x, f"{p}.layernorm_after", hidden), f"{p}.intermediate", hidden, 4 * hidden),
                       f"{p}.gelu")
        x = b.node("Add", [b.linear(h, f"{p}.output", 4 * hidden, hidden), x], f"{p}/Add_1")
    x = b.layer_norm(x, "layernorm", hidden)
    first = b.node("Gather", [x, b.ints("cls.index", 0)], "cls/Gather", axis=1)
    b.nodes.append(helper.make_node("Gemm", [first, b.weight("classifier.weight", (hidden, classes)),
                                             b.bias("classifier.bias", classes)], ["logits"], name="classifier/Gemm"))
    ins = [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [batch, 3, image, image])]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])]
    return b.model("vit", ins, outs, opset=17)


def vit_inputs(batch: int = 2, image: int = 32, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"pixel_values": rng.standard_normal((batch, 3, image, image)).astype(np.float32)}
