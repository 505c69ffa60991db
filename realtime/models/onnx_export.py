"""A Sapiens2 task model as an ONNX graph with a dynamic person batch, for ONNX Runtime,
TensorRT and other runtimes (`onnx_graph`); `realtime.export_model` writes it to a file under
the output rule of every command (`sapiens-rt export-model --to onnx`).

How the graph is made, and why:
- The TorchScript exporter (`dynamo=False`): much faster than the torch.export-based one
  (docs/deploy.md), and it needs no onnxscript. It lacks `aten::rms_norm` and SDPA's `enable_gqa`, so both get a small
  symbolic here (RMSNorm decomposed; GQA as kv heads repeated in `repeat_interleave`
  order), registered only while exporting.
- The patch grid is fixed by `input_hw`, so the RoPE (sin, cos) tables are constants of the
  graph, computed once in bf16 exactly as the PyTorch model does.
- The backbone rotates q/k in bf16 (the official numerics). ONNX Runtime's CPU kernels
  have no bf16 arithmetic, so every bf16 operation is rewritten to run in fp32 and round
  its result to bf16 and back (`Cast` pairs). A bf16 x bf16 product is exact in fp32 and
  torch computes bf16 ops in fp32 and rounds, so this reproduces the rounding exactly
  (without it the pose heatmaps drift past the fixture tolerance, docs/deploy.md).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn

from realtime.errors import UserError
from realtime.models import registry
from realtime.models.loading import load_model

OPSET = 17  # LayerNormalization-era opset that TensorRT 8.6+ and ONNX Runtime 1.14+ read
EXTRA_HINT = "install the ONNX extra with: pip install 'sapiens-realtime[onnx]'"
OUTPUT_NAMES = {"pose": ["heatmaps"], "seg": ["logits"], "normal": ["normal"], "pointmap": ["pointmap", "scale"],
                "albedo": ["albedo"]}


def require_onnx():
    """The `onnx` module, or a user error saying how to install the extra."""
    try:
        import onnx
    except ImportError:
        raise UserError(f"Exporting to ONNX needs the onnx package; {EXTRA_HINT}.") from None
    return onnx


def onnx_graph(
    task: str,
    checkpoint: Optional[str | os.PathLike],
    scratch: str | os.PathLike,
    *,
    arch: Optional[str] = None,
    input_hw: Optional[tuple[int, int]] = None,
):
    """The `task` model from `checkpoint` (None: the released `arch` file) as an `onnx.ModelProto`,
    traced in the folder `scratch` (a model over 2 GB gets its weights beside the traced file there).

    Input `image` (persons, 3, H, W) float32, normalised as for the PyTorch model, with
    (H, W) = `input_hw` (default: the task's trained size); outputs as
    `Sapiens2TaskModel` returns them (see OUTPUT_NAMES), all with the dynamic batch axis.
    The graph's doc string and metadata name the task, the architecture and the input size."""
    onnx = require_onnx()
    h, w = input_hw or registry.spec(task).input_hw
    model = load_model(task, checkpoint, arch=arch)
    sample = torch.zeros(2, 3, h, w)  # batch 2: nothing gets specialised to one person
    rope = model.backbone.rope_embed
    tables = []  # the (sin, cos) this input size uses (after the 4K tokenizer's pooling, if any)
    hook = rope.register_forward_hook(lambda _module, _args, result: tables.append(result))
    with torch.no_grad():
        outputs = model(sample)
    hook.remove()
    n_out = len(outputs) if isinstance(outputs, tuple) else 1
    names = OUTPUT_NAMES.get(task, [f"output{i}" for i in range(n_out)])
    model.backbone.rope_embed = _FixedRope(*tables[0])  # a private model: the tables become constants of the graph
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".export-") as tmp:
        traced = Path(tmp) / "traced.onnx"  # a file, so that models over 2 GB get their weights beside it
        with _symbolics(), warnings.catch_warnings():
            # the exporter's deprecation notice and shape-branch tracer warnings (input_hw is fixed)
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, (sample,), str(traced), input_names=["image"], output_names=names, opset_version=OPSET, dynamo=False,
                dynamic_axes={name: {0: "persons"} for name in ["image", *names]},
            )
        graph = emulate_bf16(onnx.load(str(traced)))
    graph.doc_string = f"Sapiens2 {model.arch} {task}, input (persons, 3, {h}, {w}) normalised RGB; outputs {', '.join(names)}"
    onnx.helper.set_model_props(graph, {"task": task, "arch": model.arch, "input_hw": f"{h}x{w}"})
    return graph


class _FixedRope(nn.Module):
    """Stands in for `RopePositionEmbedding` while tracing: the grid's tables as plain buffers."""

    def __init__(self, sin: torch.Tensor, cos: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("sin", sin)
        self.register_buffer("cos", cos)

    def forward(self, h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.sin, self.cos


class _symbolics:
    """Registers the rms_norm and GQA-aware SDPA symbolics for the duration of an export."""

    ops = ("aten::rms_norm", "aten::scaled_dot_product_attention")

    def __enter__(self):
        torch.onnx.register_custom_op_symbolic(self.ops[0], _rms_norm, OPSET)
        torch.onnx.register_custom_op_symbolic(self.ops[1], _sdpa, OPSET)

    def __exit__(self, *exc):
        for op in self.ops:
            torch.onnx.unregister_custom_op_symbolic(op, OPSET)


def _const(g, value) -> torch._C.Value:
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


def _rms_norm(g, x, normalized_shape, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims."""
    from torch.onnx import symbolic_helper as sh

    dims = sh._get_const(normalized_shape, "is", "normalized_shape")
    eps = sh._get_const(eps, "f", "eps")
    mean_square = g.op("ReduceMean", g.op("Mul", x, x), axes_i=list(range(-len(dims), 0)), keepdims_i=1)
    y = g.op("Div", x, g.op("Sqrt", g.op("Add", mean_square, g.op("Constant", value_t=torch.tensor(eps)))))
    if not sh._is_none(weight):
        y = g.op("Mul", y, weight)
    y.setType(x.type())
    return y


def _sdpa(g, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch's own SDPA symbolic; with GQA, kv head j first serves query heads j*r .. j*r+r-1."""
    from torch.onnx import symbolic_helper as sh
    from torch.onnx._internal.torchscript_exporter import symbolic_opset14

    if sh._maybe_get_const(enable_gqa, "b"):
        heads_q = g.op("Gather", g.op("Shape", q), _const(g, [1]), axis_i=0)
        heads_kv = g.op("Gather", g.op("Shape", k), _const(g, [1]), axis_i=0)
        head_dim = g.op("Gather", g.op("Shape", k), _const(g, [3]), axis_i=0)
        expand = g.op("Concat", _const(g, [1, 1]), g.op("Div", heads_q, heads_kv), _const(g, [1, 1]), axis_i=0)
        shape = g.op("Concat", _const(g, [0]), heads_q, _const(g, [-1]), head_dim, axis_i=0)

        def repeat_interleave(t):  # (B, kv, T, d) -> (B, kv, 1, T, d) -> (B, kv, r, T, d) -> (B, kv*r, T, d)
            return g.op("Reshape", g.op("Expand", g.op("Unsqueeze", t, _const(g, [2])), expand), shape)

        k, v = repeat_interleave(k), repeat_interleave(v)
    o = symbolic_opset14.scaled_dot_product_attention(g, q, k, v, attn_mask, dropout_p, is_causal, scale, False)
    o.setType(q.type())
    return o


def emulate_bf16(model):
    """The same graph with every bf16 value carried in fp32 and rounded to bf16 where torch
    rounds it: after each op that yields bf16, `Cast(to=BF16) -> Cast(to=FLOAT)`.
    bf16 constants become fp32 (exact); graph inputs and outputs are fp32 already."""
    import onnx  # noqa: F401 (only checks that onnx is installed before the work starts)
    from onnx import TensorProto, helper, numpy_helper

    bf16, fp32 = TensorProto.BFLOAT16, TensorProto.FLOAT

    def widened(t):  # read from the bits: older onnx (1.17) misreads raw bf16 in numpy_helper.to_array
        bits = np.frombuffer(t.raw_data, "<u2") if t.raw_data else np.asarray(t.int32_data, dtype=np.uint16)
        values = (bits.astype(np.uint32) << 16).view(np.float32).reshape(tuple(t.dims))
        return numpy_helper.from_array(values, t.name)

    graph = model.graph
    types = _value_types(model)
    for t in graph.initializer:
        if t.data_type == bf16:
            t.CopyFrom(widened(t))
    nodes = []
    for node in graph.node:
        nodes.append(node)
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value" and a.t.data_type == bf16:
                    a.t.CopyFrom(widened(a.t))
            continue
        casts_to_bf16 = node.op_type == "Cast" and any(a.name == "to" and a.i == bf16 for a in node.attribute)
        for i, name in enumerate(node.output):
            if types.get(name) != bf16:
                continue
            if casts_to_bf16:  # the rounding is this Cast; widen its result back
                node.output[i] = f"{name}__bf16"
            else:  # computed in fp32 now: round it
                node.output[i] = f"{name}__fp32"
                nodes.append(helper.make_node("Cast", [f"{name}__fp32"], [f"{name}__bf16"], to=bf16))
            nodes.append(helper.make_node("Cast", [f"{name}__bf16"], [name], to=fp32))
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # stale types (bf16); readers infer them again
    return model


def _value_types(model) -> dict[str, int]:
    """Element type of every value, by ONNX type inference on the graph without its weights
    (inference needs their types only, and a graph with weights over 2 GB cannot be inferred)."""
    import onnx

    weights = [(t, t.raw_data) for t in model.graph.initializer]
    for t, _ in weights:
        t.ClearField("raw_data")
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    finally:
        for t, raw in weights:
            t.raw_data = raw
    return {v.name: v.type.tensor_type.elem_type for v in [*inferred.value_info, *inferred.input, *inferred.output]}
