"""Every Sapiens2 size as one table entry, plus the head shapes of each task.

Backbone numbers are SPEC §1.1; head channels are SPEC §2.3 (the official
configs). The `fixture_*` rows are the tiny archs of
`shared/reference/fixtures`, with their task heads, so tests build the exact
official structure at toy scale.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZES = ("0.1b", "0.4b", "0.8b", "1b", "5b")
DEFAULT_SIZE = "0.4b"

# Preprocessing that travels with the weights (SPEC §4.1): RGB order, 0-255 scale.
PIXEL_MEAN = (123.675, 116.28, 103.53)
PIXEL_STD = (58.395, 57.12, 57.375)
INPUT_HW = (1024, 768)  # trained input size (H, W)
PATCH_SIZE = 16


@dataclass(frozen=True)
class BackboneArch:
    """Shape of a Sapiens2 backbone. GQA layers are all but the first and last 8,
    with `num_heads // 2` kv heads (SPEC §1.1); the FFN hidden size is 4E."""

    name: str
    embed_dim: int
    num_layers: int
    num_heads: int
    num_tokenizer_layers: int = 0  # > 0 only for the 4K variant (use_tokenizer=True)

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads

    def kv_heads(self, layer: int) -> int:
        full = layer < 8 or layer >= self.num_layers - 8
        return self.num_heads if full else self.num_heads // 2


ARCHS: dict[str, BackboneArch] = {
    a.name: a
    for a in (
        BackboneArch("sapiens2_0.1b", 768, 12, 12),
        BackboneArch("sapiens2_0.4b", 1024, 24, 16),
        BackboneArch("sapiens2_0.8b", 1280, 32, 16),
        BackboneArch("sapiens2_1b", 1536, 40, 24),
        BackboneArch("sapiens2_5b", 2432, 56, 32),
        BackboneArch("sapiens2_1b_4k", 1536, 40, 24, num_tokenizer_layers=4),
        BackboneArch("fixture_e64_h4_l18", 64, 18, 4),
        BackboneArch("fixture_e32_h4_l18", 32, 18, 4),
    )
}

# Head kwargs per task and arch (in_channels is always the backbone's E); the task
# table (`realtime.tasks`) points each task at its entry.
# The official configs list 0.4b/0.8b/1b/5b; no 0.1b task model is released,
# so 0.1b uses the 0.4b heads (an assumption that only matters for random builds).
_POSE = dict(deconv_out_channels=(1024, 768), conv_out_channels=(512, 512, 256))
_SEG = dict(deconv_out_channels=(512, 256, 128, 64), conv_out_channels=(64, 64))
_NORMAL = dict(upsample_channels=(768, 512, 256, 128), conv_out_channels=(64, 32, 16))
_POINTMAP = dict(
    upsample_channels=(1536, 768, 512, 256),
    conv_out_channels=(64, 32, 16),
    scale_conv_out_channels=(1536, 512, 128),
    scale_final_layer=(6144, 512, 128, 1),
)

HEADS: dict[str, dict[str, dict]] = {
    "pose": {
        "sapiens2_0.1b": _POSE,
        "sapiens2_0.4b": _POSE,
        "sapiens2_0.8b": _POSE,
        "sapiens2_1b": dict(deconv_out_channels=(1536, 1024), conv_out_channels=(768, 512, 256)),
        "sapiens2_5b": _POSE,
        "fixture_e32_h4_l18": dict(deconv_out_channels=(32, 24), conv_out_channels=(16, 16, 8)),
    },
    "seg": {
        **{f"sapiens2_{s}": _SEG for s in SIZES},
        "fixture_e32_h4_l18": dict(deconv_out_channels=(32, 16, 8, 4), conv_out_channels=(4, 4)),
    },
    "normal": {
        **{f"sapiens2_{s}": _NORMAL for s in SIZES},
        "sapiens2_5b": dict(upsample_channels=(1536, 768, 512, 256), conv_out_channels=(128, 64, 32)),
        "fixture_e32_h4_l18": dict(upsample_channels=(32, 16, 16, 8), conv_out_channels=(8, 8, 4)),
    },
    "pointmap": {
        **{f"sapiens2_{s}": _POINTMAP for s in SIZES},
        "sapiens2_5b": dict(_POINTMAP, upsample_channels=(1536, 768, 768, 768), conv_out_channels=(128, 64, 32)),
        "fixture_e32_h4_l18": dict(
            upsample_channels=(48, 32, 16, 8),
            conv_out_channels=(8, 8, 4),
            scale_conv_out_channels=(48, 16, 8),
            scale_final_layer=(16, 32, 16, 1),
        ),
    },
    "albedo": {
        **{f"sapiens2_{s}": _NORMAL for s in SIZES},
        "sapiens2_5b": dict(upsample_channels=(1536, 768, 512, 256), conv_out_channels=(64, 32, 16)),
        "fixture_e32_h4_l18": dict(upsample_channels=(32, 16, 16, 8), conv_out_channels=(8, 8, 4)),
    },
}


def arch_name(arch: str) -> str:
    """'0.4b' and 'sapiens2_0.4b' both name the 0.4b arch."""
    return arch if arch in ARCHS else f"sapiens2_{arch}"


def size_of(arch: str) -> str:
    """'sapiens2_0.4b' -> '0.4b' (the size in official file and repo names)."""
    return arch_name(arch).removeprefix("sapiens2_")
