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
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import nn

from realtime import codec
from realtime.errors import UserError
from realtime.models import dense

log = logging.getLogger(__name__)

NUM_KEYPOINTS = 308
POINTMAP_INPUT_HW = (1024, 768)  # the released pointmap's scale branch is tied to the 64x48 token grid


@dataclass
class Prediction:
    """What one frame gives, as numpy arrays (None for tasks not run)."""

    keypoints: np.ndarray  # (N, K, 2) float32 image pixels
    keypoint_scores: np.ndarray  # (N, K) float32
    seg: Optional[np.ndarray] = None  # (h, w) uint8 labels
    normal: Optional[np.ndarray] = None  # (h, w, 3) float32 unit normals
    pointmap: Optional[np.ndarray] = None  # (h, w, 3) float32 metres


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> torch.dtype:
    """Half precision on CUDA (bf16 where the GPU supports it), fp32 on CPU."""
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


class Predictor:
    """Runs the task models on one frame at a time.

    models:      task name ("pose", "seg", "normal", "pointmap") -> model already on
                 `device` in `dtype` (see `realtime.models.load_model`).
    input_hw:    network input size for pose (person crops) and seg (whole frame).
    dense_hw:    network input size for normal.
    pointmap_hw: network input size for pointmap (its scale branch fixes it: 1024x768 for
                 the released models).
    map_max_side: dense maps come back at most this many pixels on their long side.
    flip_test:   average pose heatmaps with the mirrored crop's (the official demo does; 2x cost).
    max_batch:   most person crops per forward; lowered automatically on GPU out-of-memory.
    """

    def __init__(self, models: dict[str, nn.Module], *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 input_hw: tuple[int, int] = (1024, 768), dense_hw: tuple[int, int] = (1024, 768),
                 pointmap_hw: tuple[int, int] = POINTMAP_INPUT_HW,
                 map_max_side: int = 512, flip_test: bool = False, max_batch: int = 16):
        unknown = set(models) - {"pose", "seg", "normal", "pointmap"}
        if unknown:
            raise ValueError(f"unknown tasks {sorted(unknown)}")
        self.models = models
        self.device = torch.device(device)
        self.dtype = dtype
        self.input_hw = tuple(input_hw)
        self.dense_hw = tuple(dense_hw)
        self.pointmap_hw = tuple(pointmap_hw)
        self.map_max_side = map_max_side
        self.flip_test = flip_test
        self.max_batch = max_batch
        self.cuda = self.device.type == "cuda"
        self._streams = {task: torch.cuda.Stream(self.device) for task in models} if self.cuda else {}
        if "pose" in models:
            from realtime.data import flip_indices

            self._flip = torch.as_tensor(flip_indices(), device=self.device)

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
        tasks = set(self.models) if tasks is None else tasks & set(self.models)
        frame = self._upload(image)  # (3, H, W) uint8 on the device
        h, w = image.shape[:2]
        map_hw = _fit(h, w, self.map_max_side)
        upload_done = torch.cuda.current_stream(self.device) if self.cuda else None

        outputs: dict[str, torch.Tensor] = {}
        for task in ("pose", "seg", "normal", "pointmap"):  # launch all, then collect
            if task not in tasks or (task == "pose" and len(boxes) == 0):
                continue
            with self._on_stream(task, upload_done):
                if task == "pose":
                    outputs["pose"] = self._pose(frame, boxes)
                elif task == "seg":
                    outputs["seg"] = self._seg(frame, map_hw)
                elif task == "normal":
                    outputs["normal"] = self._normal(frame, map_hw)
                else:
                    outputs["pointmap"] = self._pointmap(frame, map_hw)
        if self.cuda:
            for task in outputs:
                torch.cuda.current_stream(self.device).wait_stream(self._streams[task])
        return self._to_numpy(outputs)

    # -- per task, all on the device

    def _pose(self, frame: torch.Tensor, boxes: np.ndarray) -> torch.Tensor:
        """(N, K, 3) float32: x, y in image pixels and the score."""
        in_h, in_w = self.input_hw
        boxes = np.asarray(boxes, np.float32).copy()
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1.0)  # a degenerate box (1x1 image) still crops
        box_t = torch.as_tensor(boxes, device=self.device)
        center, scale = codec.box_to_center_scale(box_t, (in_w, in_h))
        results = []
        start = 0
        while start < len(boxes):
            stop = min(start + self.max_batch, len(boxes))
            try:
                crops = codec.crop_persons(frame, center[start:stop], scale[start:stop], (in_w, in_h))
                x = codec.normalize(crops).to(self.dtype)
                if self.flip_test:
                    heatmaps = codec.flip_test(self.models["pose"], x, self._flip)
                else:
                    heatmaps = self.models["pose"](x)
                # decode in float32: half-precision argmax ties and log() of small values are coarse
                kpts_in, scores = codec.decode_heatmaps(heatmaps.float())
            except torch.cuda.OutOfMemoryError:
                self._shrink_batch(stop - start)
                continue
            kpts = codec.keypoints_to_image(kpts_in, center[start:stop], scale[start:stop], (in_w, in_h))
            results.append(torch.cat([kpts, scores[..., None]], dim=-1))
            start = stop
        return torch.cat(results)

    def _shrink_batch(self, tried: int) -> None:
        torch.cuda.empty_cache()
        if tried <= 1:
            raise UserError("The GPU ran out of memory on a single person crop; lower --input-size, "
                            "turn off tasks with --tasks, or use --dtype fp16/bf16.")
        self.max_batch = max(1, tried // 2)
        log.warning("GPU out of memory: pose batch lowered to %d crops", self.max_batch)

    def _seg(self, frame: torch.Tensor, map_hw: tuple[int, int]) -> torch.Tensor:
        x = dense.seg_preprocess(frame, self.input_hw).to(self.dtype)
        logits = self.models["seg"](x)
        return dense.seg_postprocess(logits.float(), map_hw)[0].to(torch.uint8)

    def _normal(self, frame: torch.Tensor, map_hw: tuple[int, int]) -> torch.Tensor:
        x, pad = dense.resize_pad(frame, self.dense_hw)
        raw = self.models["normal"](x.to(self.dtype))
        return dense.normal_postprocess(raw.float(), pad, map_hw)[0].permute(1, 2, 0)

    def _pointmap(self, frame: torch.Tensor, map_hw: tuple[int, int]) -> torch.Tensor:
        x, pad = dense.resize_pad(frame, self.pointmap_hw)
        points, scale = self.models["pointmap"](x.to(self.dtype))
        return dense.pointmap_postprocess(points.float(), scale.float(), pad, map_hw)[0].permute(1, 2, 0)

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
        pose = outputs.get("pose")
        if pose is None:  # nobody in the frame, or pose not asked for
            kpts, scores = np.zeros((0, NUM_KEYPOINTS, 2), np.float32), np.zeros((0, NUM_KEYPOINTS), np.float32)
        else:
            pose = pose.cpu().numpy()
            kpts, scores = pose[..., :2].astype(np.float32), pose[..., 2].astype(np.float32)
        seg = outputs["seg"].cpu().numpy() if "seg" in outputs else None
        normal = outputs["normal"].float().cpu().numpy() if "normal" in outputs else None
        pointmap = outputs["pointmap"].float().cpu().numpy() if "pointmap" in outputs else None
        return Prediction(kpts, scores, seg=seg, normal=normal, pointmap=pointmap)


def _fit(h: int, w: int, max_side: int) -> tuple[int, int]:
    """(h, w) scaled down so the long side is at most `max_side` (never up)."""
    s = min(1.0, max_side / max(h, w))
    return max(1, round(h * s)), max(1, round(w * s))
