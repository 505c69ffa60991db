"""The task table: one row per Sapiens2 task, and everything that differs per task.

    pose      person crops -> 308 keypoints, every frame
    seg       29 body-part classes, every frame
    pointmap  metric XYZ (depth = Z), on the dense schedule; CLI name also `depth`
    normal    surface normals, on the dense schedule
    albedo    base colour, on the dense schedule; no public weights (own checkpoint only)

A row composes three owners: the model (`realtime.models.registry.ModelSpec`: head,
output layer, head shapes, hub repo, trained size), the runtime glue here (pre/post-
processing, schedule, the `Frame.dense` field) and an optional preview pane
(`viz.panes.Pane`). This module is the one place a task is declared, and it is read
only from above: models and viz know nothing of it (`tests/test_import_graph.py`).
`Predictor`, `InferStage`, `run` and the CLI read this table instead of naming tasks;
`run` hands the rows' panes to `viz.compose.Layers`. A task of your own is one `Task`
passed to `register` before `run` (see `tests/test_extending.py`):

    from realtime import tasks
    from realtime.models.registry import ModelSpec
    tasks.register(tasks.Task(ModelSpec("mask", MyHead, "conv_mask", {...}), preprocess, postprocess, "mask"))

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
from realtime.models import registry
from realtime.models.registry import ModelSpec
from viz.panes import ALBEDO, DEPTH, NORMAL, Pane


@dataclass(frozen=True)
class Task:
    """One task. Whole-image tasks (`per_person=False`) run as

        x, meta = preprocess(image (3, H, W) uint8, input_hw)
        map     = postprocess(model(x), meta, map_hw)       # (h, w) or (h, w, C) tensor
                  # model(x, map_hw) when `resized_in_model`

    and land in `Frame.dense` under `field` (plus `derived` fields computed from it).
    A per-person task (pose) runs on crops of the person boxes instead:

        x       = preprocess(image, center, scale, input_hw)   # (n, 3, h, w)
        points  = postprocess(model(x), (center, scale), input_hw)  # (n, K, 3): x, y, score

    model:       what the model is (`ModelSpec`); its `name` is the task's canonical name
                 (the checkpoint's task, the `--checkpoint NAME=PATH` key).
    aliases:     other names accepted by `--tasks` (CLI names, transformers' task names).
    follows_input_size: use `--input-size` instead of the model's trained `input_hw`.
    dense:       True: runs on the dense schedule (every N frames, maps reused between);
                 False: every frame.
    pane:        the preview pane this task adds to the picture (`viz.panes.Pane`), or None.
    flip_indices: mirror table for `--flip-test` (per-person tasks only).
    host_sampling: the per-person preprocess takes `sampling=`, the crops' interpolation that
                 `Predictor` picks on the host (`transforms.crop_sampling`).
    metric_3d:   its map holds metric camera-space points: with it a run has 3D keypoints, the
                 floor, contacts and bones (the ground and motion stages), and `--vmc` works.
    body_parts:  its map labels the person's pixels: boxes can come from it (`--boxes-from seg`)
                 and the overlay colours it.
    resized_in_model: the model takes the map's size as a second argument and shrinks its own
                 output to it (seg: `SegHead` resizes its features before the 1x1 classifier, so
                 the full-size logits are never written); postprocess resizes what is not yet.
    """

    model: ModelSpec
    preprocess: Callable
    postprocess: Callable
    field: str
    aliases: tuple[str, ...] = ()
    follows_input_size: bool = False
    per_person: bool = False
    dense: bool = False
    derived: Mapping[str, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)
    pane: Optional[Pane] = None
    flip_indices: Optional[Callable[[], np.ndarray]] = None
    host_sampling: bool = False
    metric_3d: bool = False
    body_parts: bool = False
    resized_in_model: bool = False

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def input_hw(self) -> tuple[int, int]:
        """The (H, W) the weights were trained at."""
        return self.model.input_hw

    @property
    def fields(self) -> tuple[str, ...]:
        """Every `DenseMaps` field this task fills."""
        return (self.field, *self.derived)


# ----------------------------------------------------------------------------- pre/post-processing


def _pose_preprocess(image: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_hw, sampling=None) -> torch.Tensor:
    return transforms.normalize(transforms.crop_persons(image, center, scale, input_hw, sampling))


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


def _flip_indices() -> np.ndarray:
    from realtime.data import flip_indices

    return flip_indices()


# ----------------------------------------------------------------------------- the table

# Row order is the order of the preview panes (depth before normals) and of messages.
_BUILTIN = (
    Task(registry.spec("pose"), _pose_preprocess, _pose_postprocess, "keypoints",
         aliases=("keypoints", "pose-estimation", "keypoint-detection"), follows_input_size=True, per_person=True,
         flip_indices=_flip_indices, host_sampling=True),
    Task(registry.spec("seg"), _seg_preprocess, _seg_postprocess, "seg",
         aliases=("segmentation", "image-segmentation", "semantic-segmentation"), follows_input_size=True, body_parts=True,
         resized_in_model=True),
    Task(registry.spec("pointmap"), transforms.resize_pad, _pointmap_postprocess, "pointmap",
         aliases=("depth", "depth-estimation"), dense=True, derived={"depth": lambda xyz: xyz[..., 2]}, pane=DEPTH,
         metric_3d=True),
    Task(registry.spec("normal"), transforms.resize_pad, _normal_postprocess, "normal",
         aliases=("normals", "normal-estimation"), dense=True, pane=NORMAL),
    Task(registry.spec("albedo"), transforms.resize_pad, _albedo_postprocess, "albedo",
         aliases=("albedo-estimation",), dense=True, pane=ALBEDO),
)

_TABLE: dict[str, Task] = {t.name: t for t in _BUILTIN}


def all_tasks() -> tuple[Task, ...]:
    """Every row, built-in first, in pane order."""
    return tuple(_TABLE.values())


def register(task: Task) -> Task:
    """Add a task row (or replace one of the same name), and its `ModelSpec` to the model
    registry; from then on `--tasks`, `run`, loading and the viewer know it. Returns the row."""
    clash = [t.name for t in _TABLE.values() if t.name != task.name and ({task.name, *task.aliases} & {t.name, *t.aliases})]
    if clash:
        raise ValueError(f"task {task.name!r} or one of its aliases is already used by {clash[0]!r}")
    registry.register(task.model)
    _TABLE[task.name] = task
    return task


def unregister(name: str) -> None:
    """Remove a row added by `register`, and its model spec (the built-in rows are restored,
    not removed)."""
    builtin = {t.name: t for t in _BUILTIN}
    registry.unregister(name)
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


def canonical(name: str) -> str:
    """The canonical name of a task name or alias; any other name comes back as given
    (for callers that also accept "detector" and report unknown names themselves)."""
    try:
        return get(name).name
    except UserError:
        return name.strip()


def choices() -> str:
    """'pose, seg, depth (= pointmap), normal, albedo' for messages."""
    return ", ".join(f"{t.name} (or {t.aliases[0]})" if t.name == "pointmap" else t.name for t in _TABLE.values())


def parse(text: str) -> tuple[str, ...]:
    """'pose,seg,depth' -> ('pose', 'seg', 'pointmap') (canonical names, duplicates dropped)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UserError(f"No task given in --tasks; choose from {choices()}.")
    return tuple(dict.fromkeys(get(n).name for n in names))


def gives_keypoints(names) -> bool:
    """Whether these tasks find people's keypoints (a per-person task: pose)."""
    return any(t.per_person for t in ordered(names))


def gives_3d(names) -> bool:
    """Whether these tasks give metric 3D (`Task.metric_3d`: the pointmap)."""
    return any(t.metric_3d for t in ordered(names))


def gives_body_parts(names) -> bool:
    """Whether these tasks label the person's pixels (`Task.body_parts`: seg)."""
    return any(t.body_parts for t in ordered(names))


def ordered(names) -> list[Task]:
    """The rows of `names`, in table order."""
    wanted = set(names)
    return [t for t in _TABLE.values() if t.name in wanted]
