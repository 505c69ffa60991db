"""Two Sapiens2 backbones of one size run as one (`Predictor(dual=True)`): pose's and seg's when both run on a frame.

    dual = DualTaskModel(pose_model, seg_model)          # both on their device and dtype already
    heatmaps, logits = dual(pose_crops, seg_image, map_hw)  # equal batches: one crop and one image

Each layer of the two models runs as one: their linear layers as one batched GEMM (`baddbmm` over the stacked
weights, (2, out, in)), and one attention call over both models' tokens (batch 2: 2 x 16 heads x 25 query
tiles of 128 = 800 tiles, 6.06 waves on an H100's 132 SMs, where one image alone makes 3.03 and leaves the last
wave mostly empty). Each model keeps its own norms, LayerScale, patch embedding, tokens and head; RoPE tables are
the same for both (same grid, same periods: checked). Outputs equal the two models run one after the other up to
the order of the sums (tests/test_dual.py: within the golden fixtures' tolerance).

The stacked weights are copies (non-persistent buffers, made once here): the single models stay as they are for
frames that run one task (pose alone while seg is reused), so the backbone weights are held twice (0.4B in bf16:
about 0.8 GB more). Only equal batches stack (one pose crop beside the one seg image); the Predictor runs anything
else through the single models. FP8 layers do not stack (`torch._scaled_mm` has no batched form): refused.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from realtime.models.sapiens2 import NUM_PREFIX_TOKENS, Sapiens2, attention, finite_fp16, rope_

EPS = 1e-6


def _stack(tensors) -> torch.Tensor:
    with torch.no_grad():
        return torch.stack([t.detach() for t in tensors]).contiguous()


def _scaled_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMSNorm over the last dim of x (2, ..., D), model i's rows scaled by weight[i] (the weights stacked and
    shaped (2, 1, ..., D) to broadcast over x)."""
    return F.rms_norm(x, (x.shape[-1],), eps=EPS) * weight


def dual_refusal(first: nn.Module, second: nn.Module) -> Optional[str]:
    """Why two backbones cannot run as one (None when they can)."""
    if not (isinstance(first, Sapiens2) and isinstance(second, Sapiens2)):
        return "both models need a Sapiens2 backbone"
    a, b = first.arch, second.arch
    if (a.embed_dim, a.num_layers, a.num_heads) != (b.embed_dim, b.num_layers, b.num_heads):
        return f"the backbones differ in size ({a.name} and {b.name})"
    if a.num_tokenizer_layers or b.num_tokenizer_layers:
        return "the 4K backbones' window tokenizer is not stacked"
    for model in (first, second):
        for block in model.blocks:
            if not (block.attn._fusable() and type(block.ffn.w12) is nn.Linear and type(block.ffn.w3) is nn.Linear):
                return "FP8 (or other swapped) linear layers do not stack into one batched GEMM"
            if not hasattr(block.attn, "q_norm"):
                return "a block without QK-norm"
    periods = first.rope_embed.periods, second.rope_embed.periods
    if periods[0].device.type != "meta" and not torch.equal(*periods):  # (meta tensors, for counting, hold no values)
        return "the two backbones' RoPE periods differ"
    if len({(p.dtype, p.device) for m in (first, second) for p in m.parameters()}) != 1:
        return "the two models are not on one device in one dtype"
    return None


class DualBackbone(nn.Module):
    """(B, 3, H, W) and (B, 3, H, W) normalised images, one for each backbone -> their featmaps (B, E, H/16, W/16)."""

    def __init__(self, first: Sapiens2, second: Sapiens2) -> None:
        super().__init__()
        why = dual_refusal(first, second)
        if why is not None:
            raise ValueError(f"these two backbones cannot run as one: {why}")
        self.first, self.second = first, second  # patch embedding, tokens, RoPE tables: each its own
        arch = first.arch
        self.num_heads, self.head_dim = arch.num_heads, arch.head_dim
        self.kv = [arch.kv_heads(i) for i in range(arch.num_layers)]
        self.sdpa = [block.attn.sdpa for block in first.blocks]
        pairs = list(zip(first.blocks, second.blocks))
        for i, (a, b) in enumerate(pairs):
            # (2, in, out): each model's weight transposed, the operand `baddbmm` multiplies by
            for name, get in (("qkv", lambda blk: blk.attn.qkv_weight), ("proj", lambda blk: blk.attn.proj.weight),
                              ("w12", lambda blk: blk.ffn.w12.weight), ("w3", lambda blk: blk.ffn.w3.weight)):
                self.register_buffer(f"w_{name}_{i}", _stack([get(a).t(), get(b).t()]), persistent=False)
            for name, get in (("qkv", lambda blk: blk.attn.qkv_bias), ("proj", lambda blk: blk.attn.proj.bias),
                              ("w12", lambda blk: blk.ffn.w12.bias), ("w3", lambda blk: blk.ffn.w3.bias)):
                self.register_buffer(f"b_{name}_{i}", _stack([get(a), get(b)]).unsqueeze(1), persistent=False)
            for name, get in (("ln1", lambda blk: blk.ln1.weight), ("ln2", lambda blk: blk.ln2.weight),
                              ("gamma", lambda blk: blk.attn.gamma.weight)):  # (2, 1, E): over (2, B*T, E)
                self.register_buffer(f"{name}_{i}", _stack([get(a), get(b)]).unsqueeze(1), persistent=False)
            for name, get in (("q_norm", lambda blk: blk.attn.q_norm.weight), ("k_norm", lambda blk: blk.attn.k_norm.weight)):
                shaped = _stack([get(a), get(b)])[:, None, None, None]  # (2, 1, 1, 1, hd): over (2, B, T, heads, hd)
                self.register_buffer(f"{name}_{i}", shaped.contiguous(), persistent=False)
        self.register_buffer("final_norm", _stack([first.ln1.weight, second.ln1.weight]).unsqueeze(1), persistent=False)

    def _tokens(self, model: Sapiens2, x: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int]]:
        tokens, (h, w) = model.patch_embed(x)
        prefix = torch.cat((model.cls_token, model.storage_tokens), dim=1).expand(tokens.shape[0], -1, -1)
        return torch.cat((prefix.to(tokens.dtype), tokens), dim=1), (h, w)

    def _attention(self, i: int, x: torch.Tensor, B: int, T: int, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        """`GroupedQueryAttention.forward` of layer i for both models: x (2, B*T, E) normed -> (2, B*T, E)."""
        H, KV, hd = self.num_heads, self.kv[i], self.head_dim
        qkv = torch.baddbmm(getattr(self, f"b_qkv_{i}"), x, getattr(self, f"w_qkv_{i}")).view(2 * B, T, -1)
        qk = qkv[..., : (H + KV) * hd].view(2, B, T, H + KV, hd)
        v = qkv[..., (H + KV) * hd:].view(2 * B, T, KV, hd).transpose(1, 2)
        rot = torch.empty(2, B, T, H + KV, hd, dtype=sin.dtype, device=x.device)
        rot[..., :H, :].copy_(_scaled_norm(qk[..., :H, :], getattr(self, f"q_norm_{i}")))
        rot[..., H:, :].copy_(_scaled_norm(qk[..., H:, :], getattr(self, f"k_norm_{i}")))
        qk = rope_(rot.view(2 * B, T, H + KV, hd), sin, cos).to(x.dtype)
        q, k = qk[:, :, :H].transpose(1, 2), qk[:, :, H:].transpose(1, 2)
        o = attention(q, k, v, self.sdpa[i], heads=(H, KV))  # one call, batch 2B
        o = o.transpose(1, 2).reshape(2, B * T, H * hd)
        return torch.baddbmm(getattr(self, f"b_proj_{i}"), o, getattr(self, f"w_proj_{i}")) * getattr(self, f"gamma_{i}")

    def _ffn(self, i: int, x: torch.Tensor) -> torch.Tensor:
        ab = torch.baddbmm(getattr(self, f"b_w12_{i}"), x, getattr(self, f"w_w12_{i}"))
        a, b = ab.chunk(2, dim=-1)
        return torch.baddbmm(getattr(self, f"b_w3_{i}"), finite_fp16(F.silu(a) * b), getattr(self, f"w_w3_{i}"))

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x1.shape != x2.shape:
            raise ValueError(f"the dual backbone takes inputs of one shape, got {tuple(x1.shape)} and {tuple(x2.shape)}")
        dtype = self.first.cls_token.dtype
        t1, (h, w) = self._tokens(self.first, x1.to(dtype))
        t2, _ = self._tokens(self.second, x2.to(dtype))
        B, T, E = t1.shape
        x = torch.stack((t1, t2)).view(2, B * T, E)
        sin, cos = self.first.rope_embed(h, w)
        for i in range(len(self.kv)):
            x = finite_fp16(x + self._attention(i, _scaled_norm(x, getattr(self, f"ln1_{i}")), B, T, sin, cos))
            x = finite_fp16(x + self._ffn(i, _scaled_norm(x, getattr(self, f"ln2_{i}"))))
        x = _scaled_norm(x, self.final_norm).view(2, B, T, E)
        maps = x[:, :, NUM_PREFIX_TOKENS:].reshape(2, B, h, w, E).permute(0, 1, 4, 2, 3).contiguous()
        return maps[0], maps[1]


class DualTaskModel(nn.Module):
    """Pose crops (B, 3, H, W) and the seg image (B, 3, H, W) -> (pose heatmaps, seg logits at `out_hw`), through
    one `DualBackbone` and each model's own head (the heads are the given models' modules, not copies)."""

    def __init__(self, pose: nn.Module, seg: nn.Module) -> None:
        super().__init__()
        self.backbone = DualBackbone(pose.backbone, seg.backbone)
        self.pose_head, self.seg_head = pose.decode_head, seg.decode_head

    def forward(self, x_pose: torch.Tensor, x_seg: torch.Tensor, out_hw: Optional[tuple[int, int]] = None):
        pose_maps, seg_maps = self.backbone(x_pose, x_seg)
        return self.pose_head(pose_maps), (self.seg_head(seg_maps) if out_hw is None else self.seg_head(seg_maps, out_hw))
