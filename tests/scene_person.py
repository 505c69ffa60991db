"""One person in bench/rig.py's tilted camera, as the collect stage hands frames on: noisy 2D keypoints every
frame, noisy 3D (with the frame's scale jitter) and the scene's pointmap and seg on depth frames. Shared by the
floor-from-the-scene tests (tests/test_floor_scene.py) and the world-up tests (tests/test_world_up.py)."""

from __future__ import annotations

from typing import Iterator, Optional

import numpy as np
from scipy.spatial.transform import Rotation

from bench import rig as bench
from realtime.frames import DenseMaps, Frame, Person
from tests.ground_synthetic import CENTRE, FOCAL, camera_pose, walk
from tests.mocap_synthetic import NAMES

HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]


def degrees(a: np.ndarray, b: np.ndarray) -> float:
    """The angle between two vectors."""
    return float(np.degrees(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1))))


def standing_leaning(frames: int, lean_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """The walker's first pose (both feet planted) held still, its upper body leaning `lean_deg` about the
    line through its ankles (across the feet: the tilt feet in one spot cannot give). (T, K, 3) camera metres
    and the true up in the camera."""
    truth = walk(1)
    world = truth.world[0].copy()
    ankles = world[[NAMES.index("left_ankle"), NAMES.index("right_ankle")]]
    axis = (ankles[0] - ankles[1]) * [1, 0, 1]
    pivot = world[HIPS].mean(axis=0)
    upper = np.flatnonzero(np.isfinite(world).all(axis=1) & (world[:, 1] > pivot[1] + 1e-6))
    turn = Rotation.from_rotvec(np.radians(lean_deg) * axis / np.linalg.norm(axis)).as_matrix()
    world[upper] = (world[upper] - pivot) @ turn.T + pivot
    rotation, centre = camera_pose()
    camera = (world - centre) @ rotation.T
    return np.repeat(camera[None], frames, axis=0), truth.up


def person_frames(camera: np.ndarray, background: Optional[np.ndarray], seed: int = 0) -> Iterator[Frame]:
    """Frames of a person (T, K, 3 camera metres; 2D and 3D noise as bench/rig.py), with a pointmap of
    `background` (h, w, 3) and the person drawn over it on depth frames (None: no pointmap)."""
    rng, map_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])
    for t in range(len(camera)):
        depth_frame = t % bench.DEPTH_EVERY == 0
        scale = 1.0 + rng.normal(0, bench.SCALE_JITTER)
        points = camera[t] * scale + rng.normal(0, bench.NOISE_M, camera[t].shape)
        pixels = FOCAL * camera[t, :, :2] / camera[t, :, 2:] + CENTRE + rng.normal(0, bench.NOISE_PX, (len(NAMES), 2))
        person = Person(box=np.array([0, 0, 10, 10], np.float32), track_id=1, keypoints=pixels.astype(np.float32),
                        keypoint_scores=np.where(np.isfinite(pixels[:, 0]), 0.9, 0.0).astype(np.float32),
                        keypoints3d=points.astype(np.float32) if depth_frame else None)
        dense = None
        if background is not None and depth_frame:
            maps = bench.scene_maps(background, camera[t], scale, map_rng)
            dense = DenseMaps(computed_on=t, seg=maps.seg, pointmap=maps.pointmap)
        yield Frame(index=t, timestamp=t / 30, image=np.zeros((2, 2, 3), np.uint8), people=(person,), dense=dense)
