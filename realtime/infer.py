"""The inference engine: one frame and its person boxes in, keypoints and
dense maps out, with everything in between on the device.

The frame is uploaded once (pinned memory, non-blocking copy); crops, resizes,
normalization and heatmap decoding run on the device; only keypoints and
small maps come back. On CUDA, pose, segmentation and the dense tasks run on
separate streams so they overlap. Numpy at the edges, tensors inside.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from torch import nn

from realtime import codec, transforms
from realtime import tasks as task_table
from realtime.errors import UserError
from realtime.models.archs import INPUT_HW

log = logging.getLogger(__name__)

NUM_KEYPOINTS = 308


@dataclass
class Prediction:
    """What one frame gives, as numpy arrays.

    keypoints:       (N, K, 2) float32 image pixels (the per-person task, pose).
    keypoint_scores: (N, K) float32.
    maps:            whole-image outputs by task name, e.g. "seg" (h, w) uint8 labels,
                     "normal" (h, w, 3) float32 unit normals, "pointmap" (h, w, 3) metres;
                     only the tasks that ran.
    """

    keypoints: np.ndarray
    keypoint_scores: np.ndarray
    maps: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def seg(self) -> Optional[np.ndarray]:
        return self.maps.get("seg")

    @property
    def normal(self) -> Optional[np.ndarray]:
        return self.maps.get("normal")

    @property
    def pointmap(self) -> Optional[np.ndarray]:
        return self.maps.get("pointmap")


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> torch.dtype:
    """Half precision on CUDA (bf16 where the GPU supports it), fp32 on CPU."""
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


class Predictor:
    """Runs the task models on one frame at a time (each task as its `realtime.tasks` row says).

    models:      task name ("pose", "seg", "normal", "pointmap", "albedo", or a registered
                 one) -> model already on `device` in `dtype` (see `realtime.models.load_model`).
    input_hw:    network input size of the tasks that follow `--input-size` (pose crops, seg).
    sizes:       network input size per task, overriding the above and the trained size
                 (the pointmap's scale branch fixes it: 1024x768 for the released models).
    map_max_side: dense maps come back at most this many pixels on their long side.
    flip_test:   average pose heatmaps with the mirrored crop's (the official demo does; 2x cost).
    max_batch:   most person crops per forward; lowered automatically on GPU out-of-memory.
    """

    def __init__(self, models: dict[str, nn.Module], *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 input_hw: tuple[int, int] = INPUT_HW, sizes: Optional[dict[str, tuple[int, int]]] = None,
                 map_max_side: int = 512, flip_test: bool = False, max_batch: int = 16):
        self.tasks = {name: task_table.row(name) for name in models}  # a user error for unknown names
        self.models = models
        self.device = torch.device(device)
        self.dtype = dtype
        self.input_hw = tuple(input_hw)
        self.sizes = {name: tuple((sizes or {}).get(name) or (self.input_hw if t.follows_input_size else t.input_hw))
                      for name, t in self.tasks.items()}
        self.map_max_side = map_max_side
        self.flip_test = flip_test
        self.max_batch = max_batch
        self.cuda = self.device.type == "cuda"
        self._streams = {task: torch.cuda.Stream(self.device) for task in models} if self.cuda else {}
        self._flip = {name: torch.as_tensor(t.flip_indices(), device=self.device)
                      for name, t in self.tasks.items() if t.per_person and t.flip_indices is not None}

    def warm_up(self, image_hw: tuple[int, int]) -> None:
        """One prediction on a black frame, so the first real frame does not pay for
        kernel selection, allocator growth or compilation."""
        h, w = image_hw
        self.predict(np.zeros((h, w, 3), np.uint8), np.array([[0, 0, w - 1, h - 1]], np.float32))
        if self.cuda:
            torch.cuda.synchronize(self.device)

    @torch.inference_mode()
    def predict(self, image: np.ndarray, boxes: np.ndarray, tasks: Optional[set[str]] = None) -> Prediction:
        """image: (H, W, 3) uint8 RGB; boxes: (N, 4) xyxy pixels; tasks: which of the
        loaded models to run this time (default all)."""
        wanted = set(self.models) if tasks is None else tasks & set(self.models)
        frame = self._upload(image)  # (3, H, W) uint8 on the device
        h, w = image.shape[:2]
        map_hw = _fit(h, w, self.map_max_side)
        upload_done = torch.cuda.current_stream(self.device) if self.cuda else None

        outputs: dict[str, torch.Tensor] = {}
        for task in task_table.ordered(wanted):  # launch all, then collect
            if task.per_person and len(boxes) == 0:
                continue
            with self._on_stream(task.name, upload_done):
                if task.per_person:
                    outputs[task.name] = self._persons(task, frame, boxes)
                else:
                    outputs[task.name] = self._whole_image(task, frame, map_hw)
        if self.cuda:
            for name in outputs:
                torch.cuda.current_stream(self.device).wait_stream(self._streams[name])
        return self._to_numpy(outputs)

    # -- per task, all on the device

    def _persons(self, task, frame: torch.Tensor, boxes: np.ndarray) -> torch.Tensor:
        """(N, K, 3) float32: x, y in image pixels and the score."""
        input_hw = self.sizes[task.name]
        boxes = np.asarray(boxes, np.float32).copy()
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1.0)  # a degenerate box (1x1 image) still crops
        box_t = torch.as_tensor(boxes, device=self.device)
        center, scale = transforms.box_to_center_scale(box_t, input_hw)
        model = self.models[task.name]
        results = []
        start = 0
        while start < len(boxes):
            stop = min(start + self.max_batch, len(boxes))
            try:
                x = task.preprocess(frame, center[start:stop], scale[start:stop], input_hw).to(self.dtype)
                if self.flip_test and task.name in self._flip:
                    heatmaps = codec.flip_test(model, x, self._flip[task.name])
                else:
                    heatmaps = model(x)
                # decode in float32: half-precision argmax ties and log() of small values are coarse
                results.append(task.postprocess(heatmaps.float(), (center[start:stop], scale[start:stop]), input_hw))
            except torch.cuda.OutOfMemoryError:
                self._shrink_batch(stop - start)
                continue
            start = stop
        return torch.cat(results)

    def _shrink_batch(self, tried: int) -> None:
        torch.cuda.empty_cache()
        if tried <= 1:
            raise UserError("The GPU ran out of memory on a single person crop; lower --input-size, "
                            "turn off tasks with --tasks, or use --dtype fp16/bf16.")
        self.max_batch = max(1, tried // 2)
        log.warning("GPU out of memory: pose batch lowered to %d crops", self.max_batch)

    def _whole_image(self, task, frame: torch.Tensor, map_hw: tuple[int, int]) -> torch.Tensor:
        x, meta = task.preprocess(frame, self.sizes[task.name])
        raw = self.models[task.name](x.to(self.dtype))
        raw = tuple(r.float() for r in raw) if isinstance(raw, tuple) else raw.float()
        return task.postprocess(raw, meta, map_hw)

    # -- transfers

    def _upload(self, image: np.ndarray) -> torch.Tensor:
        host = torch.from_numpy(np.ascontiguousarray(image))
        if self.cuda:
            host = host.pin_memory()
        return host.to(self.device, non_blocking=True).permute(2, 0, 1)

    def _on_stream(self, task: str, upload_done):
        if not self.cuda:
            return nullcontext()
        stream = self._streams[task]
        stream.wait_stream(upload_done)
        return torch.cuda.stream(stream)

    def _to_numpy(self, outputs: dict[str, torch.Tensor]) -> Prediction:
        person = next((outputs[t.name] for t in self.tasks.values() if t.per_person and t.name in outputs), None)
        if person is None:  # nobody in the frame, or pose not asked for
            kpts, scores = np.zeros((0, NUM_KEYPOINTS, 2), np.float32), np.zeros((0, NUM_KEYPOINTS), np.float32)
        else:
            person = person.cpu().numpy()
            kpts, scores = person[..., :2].astype(np.float32), person[..., 2].astype(np.float32)
        maps = {name: out.cpu().numpy() for name, out in outputs.items() if not self.tasks[name].per_person}
        return Prediction(kpts, scores, maps)


def _fit(h: int, w: int, max_side: int) -> tuple[int, int]:
    """(h, w) scaled down so the long side is at most `max_side` (never up)."""
    s = min(1.0, max_side / max(h, w))
    return max(1, round(h * s)), max(1, round(w * s))
