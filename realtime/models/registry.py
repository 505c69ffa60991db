"""What a Sapiens2 task model is, by task name: the model half of the task table.

    spec("pose").head          -> PoseHeatmapHead
    spec("pose").head_kwargs["sapiens2_1b"]  -> its channel lists (docs/numerics.md, "Task heads")

A `ModelSpec` says everything `build_model` and `load_model` need to know about a
task: its decode head class, the head's final layer (which tells a checkpoint's task
apart), the head shapes per arch, the hub repo of the released weights and the input
size the weights were trained at. `realtime.tasks` composes a spec with the runtime glue
(pre/post-processing, schedule) and an optional preview pane; registering a `Task`
there registers its spec here. Nothing in this package imports `realtime.tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from realtime.errors import UserError
from realtime.models.archs import INPUT_HW, SIZES
from realtime.models.heads import AlbedoHead, NormalHead, PointmapHead, PoseHeatmapHead, SegHead

HUB_REPO = "facebook/sapiens2-{task}-{size}"  # the released checkpoints


@dataclass(frozen=True)
class ModelSpec:
    """One task's model.

    name:         canonical task name (the checkpoint's task, `load_model`'s first argument).
    head:         the decode head class, built as `head(embed_dim, **head_kwargs[arch])`.
    output_layer: the head's final layer: `decode_head.<output_layer>.weight` marks a
                  checkpoint of this task.
    head_kwargs:  head shapes per arch name (in_channels is always the backbone's E).
    hub_repo:     hub repo pattern with {task} and {size}, or None when no weights are public.
    input_hw:     the (H, W) the weights were trained at.
    cli_name:     the name `--tasks` and `sapiens-rt download` show, when not `name` (pointmap: depth).
    """

    name: str
    head: type
    output_layer: str
    head_kwargs: Mapping[str, dict]
    hub_repo: Optional[str] = HUB_REPO
    input_hw: tuple[int, int] = INPUT_HW
    cli_name: Optional[str] = None

    def repo(self, size: str) -> Optional[str]:
        """The hub repo of the `size` weights, or None when none are released."""
        return self.hub_repo.format(task=self.name, size=size) if self.hub_repo else None


# ----------------------------------------------------------------------------- head shapes

# The official configs list 0.4b/0.8b/1b/5b (docs/numerics.md, "Task heads"). The `fixture_e32_h4_l18` entries are
# the tiny heads of `tests/reference/fixtures`, so tests build the official structure at toy scale.
_FIXTURE = "fixture_e32_h4_l18"
_POSE = dict(deconv_out_channels=(1024, 768), conv_out_channels=(512, 512, 256))
_SEG = dict(deconv_out_channels=(512, 256, 128, 64), conv_out_channels=(64, 64))
_NORMAL = dict(upsample_channels=(768, 512, 256, 128), conv_out_channels=(64, 32, 16))
_POINTMAP = dict(
    upsample_channels=(1536, 768, 512, 256),
    conv_out_channels=(64, 32, 16),
    scale_conv_out_channels=(1536, 512, 128),
    scale_final_layer=(6144, 512, 128, 1),
)
_DENSE_FIXTURE = dict(upsample_channels=(32, 16, 16, 8), conv_out_channels=(8, 8, 4))


def _every_size(shape: dict, exceptions: Optional[dict[str, dict]] = None) -> dict[str, dict]:
    """{"sapiens2_<size>": shape} for every released size, with per-size exceptions."""
    return {f"sapiens2_{s}": (exceptions or {}).get(s, shape) for s in SIZES}


_BUILTIN = (
    ModelSpec("pose", PoseHeatmapHead, "conv_pose", {
        **_every_size(_POSE, {"1b": dict(deconv_out_channels=(1536, 1024), conv_out_channels=(768, 512, 256))}),
        _FIXTURE: dict(deconv_out_channels=(32, 24), conv_out_channels=(16, 16, 8)),
    }),
    ModelSpec("seg", SegHead, "conv_seg", {
        **_every_size(_SEG),
        _FIXTURE: dict(deconv_out_channels=(32, 16, 8, 4), conv_out_channels=(4, 4)),
    }),
    ModelSpec("pointmap", PointmapHead, "conv_pointmap", {
        **_every_size(_POINTMAP, {"5b": dict(_POINTMAP, upsample_channels=(1536, 768, 768, 768),
                                             conv_out_channels=(128, 64, 32))}),
        _FIXTURE: dict(_DENSE_FIXTURE, upsample_channels=(48, 32, 16, 8), scale_conv_out_channels=(48, 16, 8),
                       scale_final_layer=(16, 32, 16, 1)),
    }, cli_name="depth"),
    ModelSpec("normal", NormalHead, "conv_normal", {
        **_every_size(_NORMAL, {"5b": dict(upsample_channels=(1536, 768, 512, 256), conv_out_channels=(128, 64, 32))}),
        _FIXTURE: _DENSE_FIXTURE,
    }),
    ModelSpec("albedo", AlbedoHead, "conv_albedo", {
        **_every_size(_NORMAL, {"5b": dict(upsample_channels=(1536, 768, 512, 256), conv_out_channels=(64, 32, 16))}),
        _FIXTURE: _DENSE_FIXTURE,
    }, hub_repo=None),
)

_SPECS: dict[str, ModelSpec] = {s.name: s for s in _BUILTIN}


# ----------------------------------------------------------------------------- the registry


def spec(name: str) -> ModelSpec:
    """The spec of a canonical task name; a user error naming the choices otherwise."""
    if name not in _SPECS:
        raise UserError(f"Unknown task {name!r}; choose one of {', '.join(_SPECS)}.")
    return _SPECS[name]


def all_specs() -> tuple[ModelSpec, ...]:
    """Every spec, built-in first."""
    return tuple(_SPECS.values())


def register(model: ModelSpec) -> ModelSpec:
    """Add a spec (or replace the one of the same name); `build_model`, `load_model` and
    checkpoint recognition know it from then on. Returns the spec."""
    _SPECS[model.name] = model
    return model


def unregister(name: str) -> None:
    """Remove a spec added by `register` (a built-in one is restored, not removed)."""
    builtin = {s.name: s for s in _BUILTIN}
    if name in builtin:
        _SPECS[name] = builtin[name]
    else:
        _SPECS.pop(name, None)
