"""Synthetic keypoint tracks with known values, for the export tests.

Person 7 is in every frame but 2; person 9 only in frames 3..5. Keypoint k of
person p at time t sits at a known position (`expected_xy`, `expected_xyz`),
keypoint 5 (left_shoulder) of person 7 is unknown (NaN) in frame 4, and frame 2
has nobody.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realtime.data import keypoint_names
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter

NAMES = keypoint_names()
K = len(NAMES)
FPS = 25.0
IMAGE_SIZE = (640, 480)
NUM_FRAMES = 6
_IMAGE = np.zeros((2, 2, 3), dtype=np.uint8)


def expected_xy(person_id: int, t: float) -> np.ndarray:
    k = np.arange(K, dtype=np.float64)
    return np.stack([50 + 1.5 * k + 40 * t + person_id, 30 + 1.25 * k + 20 * t], axis=1)


def expected_scores(person_id: int, frame: int) -> np.ndarray:
    return (np.arange(K) % 10) / 10.0 + 0.05 + 0.001 * frame


def expected_xyz(person_id: int, t: float) -> np.ndarray:
    k = np.arange(K, dtype=np.float64)
    return np.stack([-0.5 + 0.003 * k + 0.2 * t, -0.8 + 0.005 * k, 2.0 + 0.001 * k + 0.1 * t + 0.01 * person_id], axis=1)


def present(person_id: int, frame: int) -> bool:
    return frame != 2 if person_id == 7 else 3 <= frame <= 5


def make_person(person_id: int, frame: int, *, with_3d: bool) -> Person:
    t = frame / FPS
    xy = expected_xy(person_id, t).astype(np.float32)
    if person_id == 7 and frame == 4:
        xy[5] = np.nan
    return Person(
        box=np.array([10.0, 20.0, 300.0 + frame, 400.0], dtype=np.float32),
        box_score=0.875,
        track_id=person_id,
        keypoints=xy,
        keypoint_scores=expected_scores(person_id, frame).astype(np.float32),
        keypoints3d=expected_xyz(person_id, t).astype(np.float32) if with_3d else None,
    )


def make_frame(index: int, *, with_3d: bool = True, people_ids=(7, 9)) -> Frame:
    people = tuple(make_person(p, index, with_3d=with_3d) for p in people_ids if present(p, index))
    return Frame(index=index, timestamp=index / FPS, image=_IMAGE, people=people)


def write_synthetic(path: Path, *, with_3d: bool = True, people_ids=(7, 9), num_frames: int = NUM_FRAMES) -> Path:
    with TrackWriter(path, keypoint_names=NAMES, image_wh=IMAGE_SIZE, fps=FPS, source="synthetic.mp4",
                     model={"pose": "synthetic"}) as writer:
        for index in range(num_frames):
            writer.write(make_frame(index, with_3d=with_3d, people_ids=people_ids))
    return path
