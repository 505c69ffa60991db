"""Compile-readiness of the backbone: RoPE tables made once, eagerly, in the official bf16
rounding and kept as buffers; GQA without materialised K/V; torch.compile changes nothing."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from realtime.models import load_backbone, sapiens2
from realtime.models.sapiens2 import GroupedQueryAttention

CASE = "r64x48_b2"


@pytest.fixture(scope="module")
def backbone(fixtures_dir):
    return load_backbone(fixtures_dir / "backbone_weights.safetensors")


@pytest.fixture(scope="module")
def backbone_io(fixtures_dir):
    return load_file(str(fixtures_dir / "backbone_io.safetensors"))


def test_rope_tables_are_made_once_and_kept_as_buffers(backbone, backbone_io, monkeypatch):
    made = []
    real = sapiens2.rope_tables
    monkeypatch.setattr(sapiens2, "rope_tables", lambda *a: made.append(a[1:]) or real(*a))
    x = backbone_io[f"{CASE}.input"]
    h, w = x.shape[-2] // 16, x.shape[-1] // 16
    backbone.rope_embed._grids.discard((h, w))  # as if never seen
    with torch.no_grad():
        for _ in range(3):
            out = backbone(x)
    assert made == [(h, w)]
    buffers = dict(backbone.named_buffers())
    assert torch.equal(buffers[f"rope_embed.sin_{h}x{w}"].float(), backbone_io[f"{CASE}.rope_sincos.sin"])
    assert torch.equal(buffers[f"rope_embed.cos_{h}x{w}"].float(), backbone_io[f"{CASE}.rope_sincos.cos"])
    assert f"rope_embed.sin_{h}x{w}" not in backbone.state_dict()  # checkpoints stay official
    d = (out - backbone_io[f"{CASE}.featmap"]).abs()
    assert d.max() <= 4e-3 and d.mean() <= 3e-4


def test_rope_tables_stay_bit_exact_bf16_when_the_model_is_cast(fixtures_dir, backbone_io):
    model = load_backbone(fixtures_dir / "backbone_weights.safetensors")
    x = backbone_io[f"{CASE}.input"]
    h, w = x.shape[-2] // 16, x.shape[-1] // 16
    with torch.no_grad():
        model(x)
        model.to(torch.float16)  # fp16 would flush the smallest sines to zero: they are recomputed
        sin, cos = model.rope_embed(h, w)
    assert sin.dtype == torch.bfloat16 and torch.equal(sin.float(), backbone_io[f"{CASE}.rope_sincos.sin"])
    assert torch.equal(cos.float(), backbone_io[f"{CASE}.rope_sincos.cos"])


def test_rope_tables_met_while_tracing_are_made_eagerly(fixtures_dir, backbone_io):
    """A grid first seen inside torch.compile's tracing gets its tables outside the graph, in the
    official eager bf16 rounding (sapiens2 applies torch.compiler.disable only then, so a process
    that never compiles does not import torch._dynamo for it)."""
    model = load_backbone(fixtures_dir / "backbone_weights.safetensors")
    x = backbone_io[f"{CASE}.input"]
    h, w = x.shape[-2] // 16, x.shape[-1] // 16
    traced = []
    real = sapiens2.rope_tables
    compiled = torch.compile(model, backend=lambda gm, example_inputs: gm.forward)
    try:
        sapiens2.rope_tables = lambda *a: traced.append(torch.compiler.is_compiling()) or real(*a)
        with torch.no_grad():
            compiled(x)
    finally:
        sapiens2.rope_tables = real
        torch._dynamo.reset()
    assert traced == [False]  # made once, and not while dynamo was tracing
    buffers = dict(model.named_buffers())
    assert torch.equal(buffers[f"rope_embed.sin_{h}x{w}"].float(), backbone_io[f"{CASE}.rope_sincos.sin"])
    assert torch.equal(buffers[f"rope_embed.cos_{h}x{w}"].float(), backbone_io[f"{CASE}.rope_sincos.cos"])


def test_importing_the_run_does_not_import_dynamo():
    """What the method above saves: `sapiens-rt` imports realtime.run in every command (and every
    batch worker), and torch._dynamo costs about 1.5 s of CPU there (PYTHONPATH: this checkout)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = "import sys, realtime.run, realtime.cli; print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout[-2000:], done.stderr[-2000:])


def test_gqa_equals_repeated_kv_heads():
    torch.manual_seed(0)
    attn = GroupedQueryAttention(64, num_heads=4, kv_heads=2).eval()
    x = torch.randn(2, 9 + 12, 64)
    sin, cos = sapiens2.rope_tables(sapiens2.rope_periods(16), 3, 4)
    with torch.no_grad():
        got = attn(x, sin, cos)
        # the reference: K/V heads materialised with repeat_interleave (docs/numerics.md, "Backbone")
        B, T, _ = x.shape
        q = attn.q_norm(attn.wq(x).view(B, T, 4, 16).transpose(1, 2))
        k = attn.k_norm(attn.wk(x).view(B, T, 2, 16).transpose(1, 2))
        v = attn.wv(x).view(B, T, 2, 16).transpose(1, 2)
        q, k = sapiens2.apply_rope(q, sin, cos), sapiens2.apply_rope(k, sin, cos)
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1))
        want = attn.gamma(attn.proj(o.transpose(1, 2).reshape(B, T, -1)))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


# -- the Predictor under torch.compile


@pytest.fixture(scope="module")
def pose_model(fixtures_dir):
    from realtime.models import load_model

    return load_model("pose", fixtures_dir / "pose_weights.safetensors")


def test_compiled_predictor_never_recompiles_across_person_counts(pose_model):
    from realtime.infer import Predictor

    graphs = []

    def counting_backend(gm, example_inputs):  # one call per graph dynamo compiles
        graphs.append(tuple(t.shape for t in example_inputs if isinstance(t, torch.Tensor))[:1])
        return gm.forward

    torch._dynamo.reset()
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)
    x0, y0 = rng.uniform(0, 100, (9, 1)), rng.uniform(0, 60, (9, 1))
    boxes = np.hstack((x0, y0, x0 + 40, y0 + 50)).astype(np.float32)
    # max_batch 4 keeps the compile count low; 5..9 people run in chunks of it (4 + 1 .. 4 + 4 + 1)
    eager = Predictor({"pose": pose_model}, input_hw=(64, 48), pad_batches=True, max_batch=4)  # the same batches
    compiled = Predictor({"pose": pose_model}, input_hw=(64, 48), compile=counting_backend, max_batch=4)
    assert compiled.buckets() == (1, 2, 3, 4)
    compiled.warm_up(image.shape[:2])
    warmed = len(graphs)
    # two graphs for the four buckets: bucket 1 static, then one with a dynamic batch for 2, 3 and 4 (dynamo's
    # automatic dynamic shapes; one graph per bucket would make a run's warm-up compile nine); none more: the RoPE
    # tables were made before compiling (set_input_size), so no first call breaks the graph at their build
    assert warmed == 2, graphs
    for n in range(1, 10):
        got = compiled.predict(image, boxes[:n])
        want = eager.predict(image, boxes[:n])
        np.testing.assert_array_equal(got.keypoints, want.keypoints)
        np.testing.assert_array_equal(got.keypoint_scores, want.keypoint_scores)
    assert len(graphs) == warmed, f"recompiled mid-run for {graphs[warmed:]}"
    torch._dynamo.reset()


def test_one_graph_per_task_and_bucket_with_pose_and_seg(fixtures_dir, pose_model):
    from realtime.infer import Predictor
    from realtime.models import load_model

    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    seg = load_model("seg", fixtures_dir / "seg_weights.safetensors")
    compiled = Predictor({"pose": pose_model, "seg": seg}, input_hw=(64, 48), compile=counting_backend, max_batch=2)
    compiled.warm_up((120, 160))
    assert len(graphs) == 3  # pose: bucket 1, then a dynamic batch (bucket 2); seg: one frame size
    compiled.predict(np.zeros((120, 160, 3), np.uint8), np.array([[0, 0, 50, 60]], np.float32))
    assert len(graphs) == 3
    torch._dynamo.reset()


@pytest.mark.slow
def test_inductor_keeps_the_bf16_rope_numerics(pose_model, fixtures_dir):
    """Predictor(compile=True)'s model (inductor) meets the golden fixture's tolerance, as eager
    does: RoPE tables are eager buffers and bf16 intermediates are rounded as in eager, set per
    compiled model, leaving inductor's global config (shared by the whole process) alone."""
    import torch._inductor.config

    from realtime.infer import Predictor

    io = load_file(str(fixtures_dir / "pose_io.safetensors"))
    torch._dynamo.reset()
    global_before = torch._inductor.config.emulate_precision_casts
    try:
        compiled = Predictor({"pose": pose_model}, compile=True).models["pose"]
        with torch.inference_mode():
            out = compiled(io["input"])
    finally:
        torch._dynamo.reset()
    assert torch._inductor.config.emulate_precision_casts == global_before
    d = (out - io["heatmaps"]).abs()
    assert d.max() <= 1e-2 and d.mean() <= 5e-4, (d.max().item(), d.mean().item())


# -- the attention kernel, chosen explicitly (--sdpa)


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_explicit_sdpa_backends_equal_the_default(kv_heads):
    """`attention(q, k, v, backend)`: the CPU's kernels give the default's numbers, and the
    expanded KV heads (cuDNN / efficient take equal head counts) equal `enable_gqa`'s sharing."""
    torch.manual_seed(0)
    q = torch.randn(2, 4, 21, 16)
    k, v = torch.randn(2, kv_heads, 21, 16), torch.randn(2, kv_heads, 21, 16)
    want = sapiens2.attention(q, k, v)
    for backend in ("math", "flash"):  # what a CPU build runs
        torch.testing.assert_close(sapiens2.attention(q, k, v, backend), want, rtol=1e-5, atol=1e-6)
    expanded = F.scaled_dot_product_attention(q, k.repeat_interleave(4 // kv_heads, 1), v.repeat_interleave(4 // kv_heads, 1))
    torch.testing.assert_close(expanded, want, rtol=1e-5, atol=1e-6)


def test_set_sdpa_backend_reaches_every_attention_layer(backbone, backbone_io):
    x = backbone_io[f"{CASE}.input"]
    with torch.no_grad():
        want = backbone(x)
    try:
        assert sapiens2.set_sdpa_backend(backbone, "math") == 18
        assert {m.sdpa for m in backbone.modules() if isinstance(m, GroupedQueryAttention)} == {"math"}
        with torch.no_grad():
            got = backbone(x)
        # another kernel's rounding, through 18 layers and the bf16 RoPE: within the golden
        # fixture's tolerance, as the default kernel is
        for out in (got, want):
            d = (out - backbone_io[f"{CASE}.featmap"]).abs()
            assert d.max() <= 4e-3 and d.mean() <= 3e-4
        with pytest.raises(ValueError, match="SDPA backend must be one of"):
            sapiens2.set_sdpa_backend(backbone, "fastest")
    finally:
        sapiens2.set_sdpa_backend(backbone, "default")
