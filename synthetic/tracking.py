"""Synthetic multi-person scenes with ground truth, and CLEAR-MOT-style error counts.

Used by the identity tests and `bench/identity.py`. People are boxes of aspect
0.4 moving along known paths, with 308 keypoints placed from one shared body
template (so poses do not tell people apart: only position, size and motion
do), Gaussian noise on boxes and keypoints, occlusion by nearer (taller) people,
and occasional one-frame false detections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

NUM_KEYPOINTS = 308
ASPECT = 0.4  # box width / height
Path = Callable[[float], Optional[tuple[float, float, float]]]  # t (s) -> (cx, cy, height) px, None = absent


@dataclass(frozen=True)
class SceneFrame:
    """What a detector + pose model would report for one frame, with the truth.

    boxes (N, 4) xyxy px, keypoints (N, K, 2) px, scores (N, K), truth (N,) int64:
    the ground-truth person of each detection, -1 for a false detection.
    """

    timestamp: float
    boxes: np.ndarray
    keypoints: np.ndarray
    scores: np.ndarray
    truth: np.ndarray


@dataclass(frozen=True)
class TrackingErrors:
    """Counts over a scene, in the spirit of CLEAR MOT (ground truth = visible people).

    misses: true people left without an ID (tentative); false_positives: false
    detections that got an ID; id_switches: a person's ID differs from the ID
    it had last; mota = 1 - (misses + false_positives + id_switches) / truths.
    """

    truths: int
    misses: int
    false_positives: int
    id_switches: int

    def __add__(self, other: "TrackingErrors") -> "TrackingErrors":
        return TrackingErrors(
            self.truths + other.truths,
            self.misses + other.misses,
            self.false_positives + other.false_positives,
            self.id_switches + other.id_switches,
        )

    @property
    def mota(self) -> float:
        return 1.0 - (self.misses + self.false_positives + self.id_switches) / max(self.truths, 1)


def body_template(seed: int = 7) -> np.ndarray:
    """(K, 2) keypoint positions in the unit box (x, y in [0.05, 0.95]), the same for everyone."""
    return np.random.default_rng(seed).uniform(0.05, 0.95, size=(NUM_KEYPOINTS, 2))


def person_box(cx: float, cy: float, height: float) -> np.ndarray:
    """(4,) xyxy box of a person centred at (cx, cy) px."""
    half = np.array([ASPECT * height, height]) / 2
    return np.concatenate([[cx, cy] - half, [cx, cy] + half])


def person_keypoints(box: np.ndarray, template: np.ndarray) -> np.ndarray:
    """(K, 2) px: the template placed in `box`."""
    return box[:2] + template * (box[2:] - box[:2])


def render_scene(
    paths: Sequence[Path],
    *,
    seconds: float,
    fps: float = 25.0,
    size: tuple[int, int] = (640, 480),
    occlusion: bool = True,
    false_rate: float = 0.0,
    box_noise: float = 0.02,
    keypoint_noise: float = 0.01,
    seed: int = 0,
) -> list[SceneFrame]:
    """Detections for every frame of a scene.

    paths: one function per person (t -> (cx, cy, height) or None when absent).
    size: (W, H) px. A person is detected when at least 30 % of its box is in
    view and (with `occlusion`) at most 60 % of it is hidden behind taller
    people; hidden keypoints get low scores. Noise is relative to the height.
    false_rate: probability per frame of one false detection somewhere.
    """
    rng = np.random.default_rng(seed)
    template = body_template()
    width, height = size
    frames = []
    for i in range(int(round(seconds * fps))):
        t = i / fps
        states = [(p, path(t)) for p, path in enumerate(paths)]
        present = [(p, person_box(*s), s[2]) for p, s in states if s is not None]
        boxes, keypoints, scores, truth = [], [], [], []
        for p, box, h in present:
            clipped = np.clip(box, 0, [width - 1, height - 1, width - 1, height - 1])
            if _area(clipped) < 0.3 * _area(box):
                continue
            kp = person_keypoints(box, template) + rng.normal(0, keypoint_noise * h, (NUM_KEYPOINTS, 2))
            score = rng.uniform(0.5, 1.0, NUM_KEYPOINTS)
            score[rng.random(NUM_KEYPOINTS) < 0.15] = rng.uniform(0.0, 0.3)  # some keypoints are always unsure
            hidden = np.zeros(NUM_KEYPOINTS, dtype=bool)
            covered = 0.0
            if occlusion:
                for q, other, other_h in present:
                    if q != p and other_h > h:
                        covered = max(covered, _area(_intersection(box, other)) / _area(box))
                        hidden |= np.all((kp >= other[:2]) & (kp <= other[2:]), axis=1)
            if covered > 0.6:
                continue
            score[hidden] = rng.uniform(0.0, 0.2, hidden.sum())
            inside = np.all((kp >= 0) & (kp <= [width - 1, height - 1]), axis=1)
            score[~inside] = 0.0
            boxes.append(np.clip(box + rng.normal(0, box_noise * h, 4), 0, [width - 1, height - 1] * 2))
            keypoints.append(kp)
            scores.append(score)
            truth.append(p)
        if rng.random() < false_rate:
            h = rng.uniform(60, 160)
            box = person_box(rng.uniform(0, width), rng.uniform(0, height), h)
            boxes.append(np.clip(box, 0, [width - 1, height - 1] * 2))
            keypoints.append(person_keypoints(box, rng.random((NUM_KEYPOINTS, 2))))
            scores.append(rng.uniform(0.0, 0.6, NUM_KEYPOINTS))
            truth.append(-1)
        frames.append(
            SceneFrame(
                timestamp=t,
                boxes=np.array(boxes, dtype=np.float32).reshape(-1, 4),
                keypoints=np.array(keypoints, dtype=np.float32).reshape(-1, NUM_KEYPOINTS, 2),
                scores=np.array(scores, dtype=np.float32).reshape(-1, NUM_KEYPOINTS),
                truth=np.array(truth, dtype=np.int64),
            )
        )
    return frames


def _area(box: np.ndarray) -> float:
    return float(max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0))


def _intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([np.maximum(a[:2], b[:2]), np.minimum(a[2:], b[2:])])


def crossing_scene(seed: int = 0, false_rate: float = 0.0) -> list[SceneFrame]:
    """Two people walk towards each other and cross mid-frame; both stay visible (4 s)."""
    paths = [lambda t: (80 + 120 * t, 260.0, 300.0), lambda t: (560 - 120 * t, 250.0, 270.0)]
    return render_scene(paths, seconds=4.0, occlusion=False, false_rate=false_rate, seed=seed)


def occlusion_scene(seed: int = 0, false_rate: float = 0.0) -> list[SceneFrame]:
    """Like the crossing, but the nearer person hides the farther one for a few frames (4 s)."""
    paths = [lambda t: (80 + 120 * t, 260.0, 320.0), lambda t: (560 - 120 * t, 230.0, 240.0)]
    return render_scene(paths, seconds=4.0, occlusion=True, false_rate=false_rate, seed=seed)


def leave_and_return_scene(seed: int = 0, false_rate: float = 0.0) -> list[SceneFrame]:
    """One person walks out of view on the right and comes back about a second later,
    while a second one stands on the left and a third walks across in the back (6 s)."""

    def out_and_back(t: float) -> tuple[float, float, float]:
        turn = 2.95  # s; at 150 px/s the person is out of view for about 1 s around the turn
        return (300 + 150 * (t if t < turn else 2 * turn - t), 250.0, 280.0)

    paths = [
        out_and_back,
        lambda t: (120 + 6 * np.sin(2 * t), 240.0, 260.0),
        lambda t: (40 + 100 * t, 200.0, 150.0) if t > 0.5 else None,
    ]
    return render_scene(paths, seconds=6.0, occlusion=True, false_rate=false_rate, seed=seed)


SCENES: dict[str, Callable[..., list[SceneFrame]]] = {
    "crossing": crossing_scene,
    "occlusion": occlusion_scene,
    "leave_and_return": leave_and_return_scene,
}


def count_errors(frames: Sequence[SceneFrame], ids: Sequence[np.ndarray]) -> TrackingErrors:
    """Compare the IDs a tracker gave (one (N,) array per frame, -1 = none) with the truth."""
    truths = misses = false_positives = switches = 0
    last_id: dict[int, int] = {}
    for frame, frame_ids in zip(frames, ids):
        for person, track in zip(frame.truth.tolist(), np.asarray(frame_ids).tolist()):
            if person < 0:
                false_positives += track >= 0
                continue
            truths += 1
            if track < 0:
                misses += 1
                continue
            if person in last_id and last_id[person] != track:
                switches += 1
            last_id[person] = track
    return TrackingErrors(truths, misses, false_positives, switches)


def run_tracker(tracker, frames: Sequence[SceneFrame], *, use_keypoints: bool = True) -> list[np.ndarray]:
    """Feed a scene to an `IdentityTracker`-like object; the ids of every frame."""
    return [
        tracker.update(f.boxes, f.keypoints if use_keypoints else None, f.scores if use_keypoints else None, f.timestamp)
        for f in frames
    ]
