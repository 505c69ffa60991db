"""Every Sapiens2 backbone size as one table entry.

Backbone numbers are those of docs/numerics.md, "Backbone". The `fixture_*` rows are the tiny archs of
`tests/reference/fixtures`, so tests build the exact official structure at toy
scale. The head shapes of each task live with its `ModelSpec` (`registry.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Sizes with released task weights (docs/models.md). The 0.1b backbone is in `ARCHS`, but no 0.1b
# task model is released, so it is no size choice (and no head shapes are made up for it).
SIZES = ("0.4b", "0.8b", "1b", "5b")
DEFAULT_SIZE = "0.4b"

# Preprocessing that travels with the weights (docs/numerics.md, "Input normalisation"): RGB order, 0-255 scale.
PIXEL_MEAN = (123.675, 116.28, 103.53)
PIXEL_STD = (58.395, 57.12, 57.375)
INPUT_HW = (1024, 768)  # trained input size (H, W)
PATCH_SIZE = 16


@dataclass(frozen=True)
class BackboneArch:
    """Shape of a Sapiens2 backbone. GQA layers are all but the first and last 8,
    with `num_heads // 2` kv heads (docs/numerics.md, "Backbone"); the FFN hidden size is 4E."""

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


def arch_name(arch: str) -> str:
    """'0.4b' and 'sapiens2_0.4b' both name the 0.4b arch."""
    return arch if arch in ARCHS else f"sapiens2_{arch}"


def size_of(arch: str) -> str:
    """'sapiens2_0.4b' -> '0.4b' (the size in official file and repo names)."""
    return arch_name(arch).removeprefix("sapiens2_")
