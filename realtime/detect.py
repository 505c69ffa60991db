"""The detect stage's box policy: where each frame's person boxes come from.

Modes (`--boxes-from`):
  * "detector": the RTMDet person detector runs every `detect_every` frames and
    whenever tracking confidence drops; in between, each person's box is the
    padded extent of its confident keypoints in the previous frame, as real-time
    pose trackers (MediaPipe, rtmlib's PoseTracker) do;
  * "seg": connected components of the previous segmentation's foreground;
  * "frame": one box covering the whole frame (one person filling the view).

Each call says where its boxes came from: "detector", "pose", "seg" or "frame"
(the last also when the detector or the segmentation found nobody).
"""

from __future__ import annotations

import collections
import logging
from typing import Callable, Optional, Sequence

import cv2
import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.errors import UserError
from realtime.frames import Person

log = logging.getLogger(__name__)

BOX_SOURCES = ("detector", "seg", "frame")
# Live sources run the detector every 3rd frame by default: in between, boxes follow the
# poses (the tracker and the lost/duplicate checks call it early when that fails).
LIVE_DETECT_EVERY = 3


def default_detect_every(live: bool) -> int:
    """`--detect-every` when not given: 3 on cameras and streams, 1 (every frame) on files."""
    return LIVE_DETECT_EVERY if live else 1
# A detector: (H, W, 3) uint8 image, rgb=True -> boxes (N, 4) float32 xyxy px, scores (N,) float32 (N = 0: nobody).
DetectorFn = Callable[..., tuple[np.ndarray, np.ndarray]]


class BoxFinder:
    """Person boxes for each frame, by the policy of `mode` (see the module doc).

    detector:             callable as `DetectorFn` (e.g. `load_detector()`), for mode "detector".
    detect_every:         run the detector at least every N frames (1 or None = every frame).
    max_people:           keep only the N most confident boxes (largest first for seg/frame).
    min_keypoint_score:   keypoints scoring above this count as confident.
    min_tracked_fraction: a person whose confident keypoints are fewer than this
                          fraction is no longer followed: the detector runs again.
    pose_box_scale:       the keypoint extent is enlarged by this factor around its centre.
    duplicate_iou:        two pose boxes overlapping more than this (one person
                          followed twice) make the detector run again.
    min_blob_fraction:    seg components smaller than this fraction of the map are ignored.
    """

    def __init__(
        self,
        mode: str = "detector",
        detector: Optional[DetectorFn] = None,
        *,
        detect_every: Optional[int] = 1,
        max_people: Optional[int] = None,
        min_keypoint_score: float = KEYPOINT_SCORE_THRESHOLD,
        min_tracked_fraction: float = 0.25,
        pose_box_scale: float = 1.25,
        duplicate_iou: float = 0.7,
        min_blob_fraction: float = 0.002,
    ) -> None:
        if mode not in BOX_SOURCES:
            raise ValueError(f"mode must be one of {BOX_SOURCES}, got {mode!r}")
        if mode == "detector" and detector is None:
            raise ValueError("mode 'detector' needs a detector callable")
        detect_every = 1 if detect_every is None else detect_every
        if detect_every < 1 or (max_people is not None and max_people < 1):
            raise ValueError("detect_every and max_people must be at least 1")
        self.mode = mode
        self.detector = detector
        self.detect_every = detect_every
        self.max_people = max_people
        self.min_keypoint_score = min_keypoint_score
        self.min_tracked_fraction = min_tracked_fraction
        self.pose_box_scale = pose_box_scale
        self.duplicate_iou = duplicate_iou
        self.min_blob_fraction = min_blob_fraction
        self.sources: collections.Counter[str] = collections.Counter()  # frames per source, for the run summary
        self.reset()

    def reset(self) -> None:
        """Forget the detection schedule and the counts (a new source starts)."""
        self.sources.clear()
        self._last_detection: Optional[int] = None
        self._people_at_detection = 0

    def warm_up(self, image_hw: tuple[int, int]) -> list[str]:
        """Warm the detector (if any) up on the run's frame size, capturing its CUDA graph before
        the first frame; returns its graph warnings for the run summary (`graph_report`)."""
        warm = getattr(self.detector, "warm_up", None)
        if warm is None:
            return []
        warm(image_hw, rgb=True)  # the channel order __call__ uses
        return self.detector.graph_report()

    def graph_report(self) -> list[str]:
        """The detector's CUDA graph warnings (failed or mid-run captures), for the run summary."""
        report = getattr(self.detector, "graph_report", None)
        return report() if report is not None else []

    def __call__(
        self,
        image_rgb: np.ndarray,
        index: int,
        previous: Sequence[Person] = (),
        seg: Optional[np.ndarray] = None,
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """Boxes for frame `index`.

        image_rgb: (H, W, 3) uint8 RGB frame; index: the frame's index (gaps are fine);
        previous: the people of the latest frame whose inference finished (with
        keypoints); seg: (h, w) class map of the latest segmentation (0 = background),
        any resolution, or None.
        Returns boxes (N, 4) float32 xyxy px, scores (N,) float32 and the source.
        """
        height, width = image_rgb.shape[:2]
        if self.mode == "frame":
            boxes, scores, source = _whole_frame(height, width), np.ones(1, np.float32), "frame"
        elif self.mode == "seg":
            boxes, scores, source = self._from_seg(seg, height, width)
        else:
            boxes, scores, source = self._from_detector_or_pose(image_rgb, index, previous)
        boxes, scores = self._keep_most_confident(boxes, scores)
        self.sources[source] += 1
        return boxes, scores, source

    def _from_detector_or_pose(self, image_rgb, index: int, previous: Sequence[Person]):
        height, width = image_rgb.shape[:2]
        followed = [self.pose_box(p, height, width) for p in previous]
        due = self._last_detection is None or index - self._last_detection >= self.detect_every
        lost = not previous or any(box is None for box in followed) or len(previous) != self._people_at_detection
        if due or lost or _has_duplicates(followed, self.duplicate_iou):
            boxes, scores = self.detector(image_rgb, rgb=True)
            boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
            scores = np.asarray(scores, np.float32).reshape(-1)
            self._last_detection = index
            if len(boxes) == 0:  # nobody: the demo's whole-frame box
                self._people_at_detection = 1
                return _whole_frame(height, width), np.ones(1, np.float32), "frame"
            self._people_at_detection = len(boxes[: self.max_people])
            return boxes, scores, "detector"
        scores = np.array([p.box_score for p in previous], dtype=np.float32)
        return np.stack(followed).astype(np.float32), scores, "pose"

    def pose_box(self, person: Person, height: int, width: int) -> Optional[np.ndarray]:
        """(4,) box around `person`'s confident keypoints, padded and clipped to the
        image, or None when too few keypoints are confident to follow the person."""
        keypoints, scores = person.best_keypoints, person.keypoint_scores
        if keypoints is None or scores is None:
            return None
        confident = (scores > self.min_keypoint_score) & np.isfinite(keypoints).all(axis=1)
        if confident.sum() < max(3, self.min_tracked_fraction * len(scores)):
            return None
        points = keypoints[confident]
        low, high = points.min(axis=0), points.max(axis=0)
        centre, half = (low + high) / 2, (high - low) / 2 * self.pose_box_scale
        box = np.concatenate([centre - half, centre + half])
        box = np.clip(box, 0, [width - 1, height - 1, width - 1, height - 1])
        if box[2] - box[0] < 2 or box[3] - box[1] < 2:
            return None
        return box.astype(np.float32)

    def _from_seg(self, seg: Optional[np.ndarray], height: int, width: int):
        if seg is None:
            return _whole_frame(height, width), np.ones(1, np.float32), "frame"
        boxes = boxes_from_label_map(seg, (height, width), min_fraction=self.min_blob_fraction)
        if len(boxes) == 0:
            return _whole_frame(height, width), np.ones(1, np.float32), "frame"
        return boxes, np.ones(len(boxes), np.float32), "seg"

    def _keep_most_confident(self, boxes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sort by score, then by area (both descending), and keep `max_people`."""
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        order = np.lexsort((-area, -scores))[: self.max_people]
        return boxes[order], scores[order]


def boxes_from_label_map(seg: np.ndarray, image_hw: tuple[int, int], *, min_fraction: float = 0.002) -> np.ndarray:
    """(N, 4) float32 xyxy image-pixel boxes of the connected foreground regions
    (label > 0, 8-connected) of a (h, w) class map, largest first; regions covering
    less than `min_fraction` of the map are ignored. The map may be smaller than the image."""
    mask = (np.asarray(seg) > 0).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    sy, sx = image_hw[0] / mask.shape[0], image_hw[1] / mask.shape[1]
    blobs = [s for s in stats[1:count] if s[cv2.CC_STAT_AREA] >= min_fraction * mask.size]
    blobs.sort(key=lambda s: -s[cv2.CC_STAT_AREA])
    boxes = [[x * sx, y * sy, (x + w) * sx - 1, (y + h) * sy - 1] for x, y, w, h, _ in blobs]
    return np.array(boxes, dtype=np.float32).reshape(-1, 4)


def _whole_frame(height: int, width: int) -> np.ndarray:
    return np.array([[0.0, 0.0, width - 1.0, height - 1.0]], dtype=np.float32)


def _has_duplicates(boxes: Sequence[Optional[np.ndarray]], threshold: float) -> bool:
    real = [b for b in boxes if b is not None]
    for i in range(len(real)):
        for j in range(i + 1, len(real)):
            a, b = real[i], real[j]
            iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if union > 0 and inter / union > threshold:
                return True
    return False


def make_box_finder(
    boxes_from: str = "detector",
    *,
    detector_checkpoint: Optional[str] = None,
    detect_every: Optional[int] = 1,
    max_people: Optional[int] = None,
    device: str = "cpu",
    half: bool = False,
    widen: Optional[float] = 0.75,
    cuda_graphs: bool = False,
) -> BoxFinder:
    """A `BoxFinder` from CLI-style options (`--boxes-from`, `--detector`,
    `--detect-every`, `--max-people`, `--cuda-graphs`), loading the detector when needed.

    Raises `UserError` for invalid options, and one sentence naming
    `sapiens-rt download --tasks detector` and `--boxes-from seg|frame` when
    the detector file is missing and cannot be downloaded.
    """
    if boxes_from not in BOX_SOURCES:
        raise UserError(f"--boxes-from must be one of {', '.join(BOX_SOURCES)}, not {boxes_from!r}; pick one of those.")
    detect_every = 1 if detect_every is None else detect_every
    if detect_every < 1:
        raise UserError(f"--detect-every must be at least 1, not {detect_every}; use 1 to detect on every frame.")
    if max_people is not None and max_people < 1:
        raise UserError(f"--max-people must be at least 1, not {max_people}; leave it out to keep everyone.")
    detector = None
    if boxes_from == "detector":
        import torch

        from realtime.models.rtmdet import DETECTOR_FETCH_COMMAND, detector_path, load_detector

        if detector_checkpoint is None:
            try:
                detector_checkpoint = str(detector_path())
            except UserError:
                raise UserError(
                    f"The person detector file is not on this machine and could not be downloaded; run "
                    f"`{DETECTOR_FETCH_COMMAND}` on a machine with internet access, or run without it "
                    f"with `--boxes-from seg` or `--boxes-from frame`."
                ) from None
        dtype = torch.float16 if half and device != "cpu" else torch.float32
        detector = load_detector(detector_checkpoint, widen=widen, device=device, dtype=dtype, cuda_graphs=cuda_graphs)
    return BoxFinder(boxes_from, detector, detect_every=detect_every, max_people=max_people)
