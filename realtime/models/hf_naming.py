"""State dicts saved from transformers' Sapiens2 classes, renamed to the official layout.

transformers (`models/sapiens2/modeling_sapiens2.py`) keeps the official tensors but
renames them: the backbone sits under `sapiens2.` (or bare) as `embeddings.*`,
`[model.]layer.N.{norm1,attention.{q,k,v,o}_proj,layer_scale1.lambda1,norm2,
mlp.{gate,up,down}_proj}`, `norm`; the heads use one `predictor` and wrapped
conv layers, and the pointmap scale branch is a separate `scale_head`.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping

import torch

from realtime.models.registry import spec

_LAYER = r"^(?:model\.)?layer\.(\d+)\."
_CONV = r"(?:conv|convolution)"

# backbone: transformers name -> official name (both without prefix)
_BACKBONE = (
    (r"^embeddings\.cls_token$", "cls_token"),
    (r"^embeddings\.register_tokens$", "storage_tokens"),
    (r"^embeddings\.patch_embeddings\.", "patch_embed.projection."),
    (r"^rope_embeddings\.periods$", "rope_embed.periods"),
    (_LAYER + r"norm1\.", r"blocks.\1.ln1."),
    (_LAYER + r"norm2\.", r"blocks.\1.ln2."),
    (_LAYER + r"attention\.q_proj\.", r"blocks.\1.attn.wq."),
    (_LAYER + r"attention\.k_proj\.", r"blocks.\1.attn.wk."),
    (_LAYER + r"attention\.v_proj\.", r"blocks.\1.attn.wv."),
    (_LAYER + r"attention\.o_proj\.", r"blocks.\1.attn.proj."),
    (_LAYER + r"attention\.(q_norm|k_norm)\.", r"blocks.\1.attn.\2."),
    (_LAYER + r"layer_scale1\.lambda1$", r"blocks.\1.attn.gamma.weight"),
    (_LAYER + r"mlp\.down_proj\.", r"blocks.\1.ffn.w3."),
    (r"^norm\.weight$", "ln1.weight"),
)
_GATE = re.compile(_LAYER + r"mlp\.(gate_proj|up_proj)\.(weight|bias)$")


def _every_third(prefix: str, suffix: str = "") -> Callable[[re.Match], str]:
    """Wrapped layer i -> official nn.Sequential index 3i ([conv, norm, act] per layer)."""
    return lambda m: f"{prefix}.{3 * int(m[1])}{suffix}.{m[2]}"


# heads: transformers name -> official name (`{out}` is the task's output conv)
_HEAD = (
    (r"^decode_head\.deconv_layers\.(\d+)\.conv\.(weight)$", _every_third("decode_head.deconv_layers")),
    (rf"^decode_head\.conv_layers\.(\d+)\.{_CONV}\.(weight|bias)$", _every_third("decode_head.conv_layers")),
    (rf"^decode_head\.input_conv\.{_CONV}\.(weight|bias)$", lambda m: f"decode_head.input_conv.0.{m[1]}"),
    (r"^decode_head\.upsample_layers\.(\d+)\.conv\.(weight|bias)$", lambda m: f"decode_head.upsample_blocks.{m[1]}.0.{m[2]}"),
    (rf"^scale_head\.conv_layers\.(\d+)\.{_CONV}\.(weight|bias)$", _every_third("decode_head.scale_conv_layers")),
    (r"^scale_head\.predictor\.mlp\.(\d+)\.(weight|bias)$", lambda m: f"decode_head.scale_final_layer.{m[1]}.{m[2]}"),
)


def is_transformers_naming(state_dict: Mapping[str, torch.Tensor]) -> bool:
    return any(k.endswith("embeddings.register_tokens") for k in state_dict)


def _task_of(state_dict: Mapping[str, torch.Tensor]) -> str:
    """Which official output conv `decode_head.predictor` is (transformers names them all alike)."""
    if any(k.startswith("scale_head.") for k in state_dict):
        return "pointmap"
    if any(k.startswith("decode_head.upsample_layers.") for k in state_dict):
        return "normal"
    predictor = state_dict.get("decode_head.predictor.weight")
    return "pose" if predictor is not None and predictor.shape[0] == 308 else "seg"


def from_transformers_naming(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same tensors under official names: `backbone.*` + `decode_head.*` for a task model,
    bare backbone keys for a backbone alone. `mlp.gate_proj` + `mlp.up_proj` become one
    `ffn.w12` (gate rows first). Keys it does not know pass through unchanged, so the strict
    load names them."""
    anchor = next(k for k in state_dict if k.endswith("embeddings.register_tokens"))
    prefix = anchor[: -len("embeddings.register_tokens")]
    backbone = {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
    heads = {k: v for k, v in state_dict.items() if not k.startswith(prefix)}
    out_prefix = "backbone." if heads else ""
    out: dict[str, torch.Tensor] = {}
    gates: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    for key, value in backbone.items():
        if m := _GATE.match(key):
            gates.setdefault((m[1], m[3]), {})[m[2]] = value
            continue
        out[out_prefix + _rename(key, _BACKBONE)] = value
    for (layer, kind), parts in gates.items():
        if set(parts) == {"gate_proj", "up_proj"}:
            out[f"{out_prefix}blocks.{layer}.ffn.w12.{kind}"] = torch.cat((parts["gate_proj"], parts["up_proj"]))
        else:  # half a pair: leave it for the report
            out.update({f"{out_prefix}layer.{layer}.mlp.{name}.{kind}": v for name, v in parts.items()})
    predictor = spec(_task_of(heads)).output_layer
    for key, value in heads.items():
        if m := re.match(r"^decode_head\.predictor\.(weight|bias)$", key):
            out[f"decode_head.{predictor}.{m[1]}"] = value
        else:
            out[_rename(key, _HEAD)] = value
    return out


def _rename(key: str, rules) -> str:
    for pattern, repl in rules:
        m = re.match(pattern, key)
        if m:
            return repl(m) if callable(repl) else re.sub(pattern, repl, key)
    return key
