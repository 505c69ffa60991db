"""The task table: one row per Sapiens2 task, and everything that differs per task.

    pose      person crops -> 308 keypoints, every frame
    seg       29 body-part classes, every frame
    pointmap  metric XYZ (depth = Z), on the dense schedule; CLI name also `depth`
    normal    surface normals, on the dense schedule
    albedo    base colour, on the dense schedule; no public weights (own checkpoint only)

`Predictor`, `InferStage`, `compose`, the viewer, `download`, loading, `run` and
the CLI read this table instead of naming tasks. A task of your own is one
`Task(...)` passed to `register` before `run` (see `tests/test_extending.py`):

    from realtime import tasks
    tasks.register(tasks.Task(name="mask", head=MyHead, output_layer="conv_mask", ...))

Sizes are (H, W) everywhere. Functions run on the device (tensors); maps come back
to numpy in `infer.Predictor`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

import numpy as np
import torch

from realtime import codec, transforms
from realtime.errors import UserError
from realtime.models.archs import HEADS, INPUT_HW
from realtime.models.heads import AlbedoHead, NormalHead, PointmapHead, PoseHeatmapHead, SegHead

HUB_REPO = "facebook/sapiens2-{task}-{size}"  # the released checkpoints


@dataclass(frozen=True)
class Task:
    """One task. Whole-image tasks (`per_person=False`) run as

        x, meta = preprocess(image (3, H, W) uint8, input_hw)
        map     = postprocess(model(x), meta, map_hw)       # (h, w) or (h, w, C) tensor

    and land in `Frame.dense` under `field` (plus `derived` fields computed from it).
    A per-person task (pose) runs on crops of the person boxes instead:

        x       = preprocess(image, center, scale, input_hw)   # (n, 3, h, w)
        points  = postprocess(model(x), (center, scale), input_hw)  # (n, K, 3): x, y, score

    name:        canonical name (the checkpoint's task, the `--checkpoint NAME=PATH` key).
    aliases:     other names accepted by `--tasks` (CLI names, transformers' task names).
    head:        the decode head class; `output_layer` is its final layer, which tells a
                 checkpoint's task apart; `head_kwargs` its shapes per arch.
    hub_repo:    hub repo pattern with {size}, or None when no weights are public.
    input_hw:    the trained input size; `follows_input_size` tasks use `--input-size`.
    dense:       True: runs on the dense schedule (every N frames, maps reused between);
                 False: every frame.
    pane, title, hot_keys, render: the preview pane this task adds to the picture, its
                 title, the viewer keys that toggle it, and `render(dense_maps, foreground,
                 size_hw) -> (h, w, 3) uint8 or None` (None: no data yet).
    flip_indices: mirror table for `--flip-test` (per-person tasks only).
    """

    name: str
    head: Optional[type]
    output_layer: str
    head_kwargs: Mapping[str, dict]
    preprocess: Callable
    postprocess: Callable
    field: str
    aliases: tuple[str, ...] = ()
    hub_repo: Optional[str] = HUB_REPO
    input_hw: tuple[int, int] = INPUT_HW
    follows_input_size: bool = False
    per_person: bool = False
    dense: bool = False
    derived: Mapping[str, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)
    pane: Optional[str] = None
    title: str = ""
    hot_keys: tuple[str, ...] = ()
    render: Optional[Callable] = None
    flip_indices: Optional[Callable[[], np.ndarray]] = None

    @property
    def fields(self) -> tuple[str, ...]:
        """Every `DenseMaps` field this task fills."""
        return (self.field, *self.derived)

    def repo(self, size: str) -> Optional[str]:
        return self.hub_repo.format(task=self.name, size=size) if self.hub_repo else None


# ----------------------------------------------------------------------------- pre/post-processing


def _pose_preprocess(image: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_hw) -> torch.Tensor:
    return transforms.normalize(transforms.crop_persons(image, center, scale, input_hw))


def _pose_postprocess(heatmaps: torch.Tensor, box: tuple, input_hw) -> torch.Tensor:
    center, scale = box
    kpts_in, scores = codec.decode_heatmaps(heatmaps)
    kpts = transforms.keypoints_to_image(kpts_in, center, scale, input_hw)
    kpts = torch.where(scores[..., None] > 0, kpts, torch.nan)  # no peak at all: unknown, not a corner of the crop
    return torch.cat([kpts, scores[..., None]], dim=-1)


def _seg_preprocess(image: torch.Tensor, input_hw):
    return transforms.seg_preprocess(image, input_hw), None


def _seg_postprocess(logits: torch.Tensor, _meta, map_hw) -> torch.Tensor:
    return transforms.seg_postprocess(logits, map_hw)[0].to(torch.uint8)


def _normal_postprocess(raw: torch.Tensor, pad, map_hw) -> torch.Tensor:
    return transforms.normal_postprocess(raw, pad, map_hw)[0].permute(1, 2, 0)


def _pointmap_postprocess(raw: tuple[torch.Tensor, torch.Tensor], pad, map_hw) -> torch.Tensor:
    points, scale = raw
    return transforms.pointmap_postprocess(points, scale, pad, map_hw)[0].permute(1, 2, 0)


def _albedo_postprocess(raw: torch.Tensor, pad, map_hw) -> torch.Tensor:
    return transforms.albedo_postprocess(raw, pad, map_hw)[0].permute(1, 2, 0)


# ----------------------------------------------------------------------------- preview panes


def _render_depth(maps, foreground, size_hw):
    from viz.maps import depth_to_rgb

    return None if maps.depth is None else depth_to_rgb(maps.depth, foreground, size_hw)


def _render_normal(maps, foreground, size_hw):
    from viz.maps import normal_to_rgb

    return None if maps.normal is None else normal_to_rgb(maps.normal, foreground, size_hw)


def _render_albedo(maps, foreground, size_hw):
    from viz.maps import albedo_to_rgb

    return None if maps.albedo is None else albedo_to_rgb(maps.albedo, foreground, size_hw)


def _flip_indices() -> np.ndarray:
    from realtime.data import flip_indices

    return flip_indices()


# ----------------------------------------------------------------------------- the table

# Row order is the order of the preview panes (depth before normals) and of messages.
_BUILTIN = (
    Task("pose", PoseHeatmapHead, "conv_pose", HEADS["pose"], _pose_preprocess, _pose_postprocess, "keypoints",
         aliases=("keypoints", "pose-estimation", "keypoint-detection"), follows_input_size=True, per_person=True,
         flip_indices=_flip_indices),
    Task("seg", SegHead, "conv_seg", HEADS["seg"], _seg_preprocess, _seg_postprocess, "seg",
         aliases=("segmentation", "image-segmentation", "semantic-segmentation"), follows_input_size=True),
    Task("pointmap", PointmapHead, "conv_pointmap", HEADS["pointmap"], transforms.resize_pad, _pointmap_postprocess,
         "pointmap", aliases=("depth", "depth-estimation"), dense=True, derived={"depth": lambda xyz: xyz[..., 2]},
         pane="depth", title="depth", hot_keys=("3", "D"), render=_render_depth),
    Task("normal", NormalHead, "conv_normal", HEADS["normal"], transforms.resize_pad, _normal_postprocess, "normal",
         aliases=("normals", "normal-estimation"), dense=True,
         pane="normal", title="normals", hot_keys=("4", "N"), render=_render_normal),
    Task("albedo", AlbedoHead, "conv_albedo", HEADS["albedo"], transforms.resize_pad, _albedo_postprocess, "albedo",
         aliases=("albedo-estimation",), hub_repo=None, dense=True,
         pane="albedo", title="albedo", hot_keys=("5", "A"), render=_render_albedo),
)

_TABLE: dict[str, Task] = {t.name: t for t in _BUILTIN}


def all_tasks() -> tuple[Task, ...]:
    """Every row, built-in first, in pane order."""
    return tuple(_TABLE.values())


def register(task: Task) -> Task:
    """Add a task row (or replace one of the same name); from then on `--tasks`, `run`,
    loading and the viewer know it. Returns the row."""
    clash = [t.name for t in _TABLE.values() if t.name != task.name and ({task.name, *task.aliases} & {t.name, *t.aliases})]
    if clash:
        raise ValueError(f"task {task.name!r} or one of its aliases is already used by {clash[0]!r}")
    _TABLE[task.name] = task
    return task


def unregister(name: str) -> None:
    """Remove a row added by `register` (the built-in rows are restored, not removed)."""
    builtin = {t.name: t for t in _BUILTIN}
    if name in builtin:
        _TABLE[name] = builtin[name]
    else:
        _TABLE.pop(name, None)


def row(name: str) -> Task:
    """The row of a canonical task name (as checkpoints and `load_model` use them)."""
    if name not in _TABLE:
        raise UserError(f"Unknown task {name!r}; choose one of {', '.join(_TABLE)}.")
    return _TABLE[name]


def get(name: str) -> Task:
    """The row for a canonical name or an alias (case-insensitive); a user error otherwise."""
    key = name.strip().lower()
    for task in _TABLE.values():
        if key == task.name or key in task.aliases:
            return task
    raise UserError(f"Unknown task {name.strip()}; choose from {choices()}.")


def choices() -> str:
    """'pose, seg, depth (= pointmap), normal, albedo' for messages."""
    return ", ".join(f"{t.name} (or {t.aliases[0]})" if t.name == "pointmap" else t.name for t in _TABLE.values())


def parse(text: str) -> tuple[str, ...]:
    """'pose,seg,depth' -> ('pose', 'seg', 'pointmap') (canonical names, duplicates dropped)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UserError(f"No task given in --tasks; choose from {choices()}.")
    return tuple(dict.fromkeys(get(n).name for n in names))


def ordered(names) -> list[Task]:
    """The rows of `names`, in table order."""
    wanted = set(names)
    return [t for t in _TABLE.values() if t.name in wanted]
