"""A planted foot held in the world when the camera moves, through the run's own stages
(egomotion -> ground -> world -> motion, `tests/world_tracks.py`): the egomotion stage's camera
motion reaches the ground stage's lifter, so between depth frames a foot in contact does not move
in the world with the camera (realtime/rig/lift.py, step 4)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.world_tracks import DEPTH_EVERY, NAMES, run_chain

FEET = [[NAMES.index(f"{side}_{point}") for point in ("ankle", "heel")] for side in ("left", "right")]


def lifted_slide(truth, frames) -> np.ndarray:
    """Per lifted frame (not a depth frame) of a foot in contact on it and the frame before, once the
    world is fixed: how far the ground stage's ankle and heel moved in the world (the world stage's
    camera of each frame), metres."""
    steps = []
    for t in range(1, len(frames)):
        if t % DEPTH_EVERY == 0 or not frames[t - 1].camera.grounded:
            continue  # a depth frame re-measures the foot (its noise is not the hold's)
        before, now = frames[t - 1], frames[t]
        for p, (a, b) in enumerate(zip(before.people, now.people)):
            for side, foot in enumerate(FEET):
                if not (truth.contacts[p, t, side] and truth.contacts[p, t - 1, side]):
                    continue
                world = [f.camera.world_from_camera for f in (before, now)]
                wa, wb = (pose[:3, :3] @ q.keypoints3d[foot].T.astype(np.float64) + pose[:3, 3:4]
                          for pose, q in zip(world, (a, b)))
                steps.append(np.linalg.norm(wb - wa, axis=0).mean())
    return np.array(steps)


@pytest.mark.parametrize("path", ["dolly", "pan"])
def test_a_planted_foot_stays_put_in_the_world_while_the_camera_moves(path):
    # Measured (2-core VM): held in the world 13.3 mm/frame (dolly), 16.1 (pan); held in the camera
    # frame as before the egomotion stage ran first: 31.8, 58.0; a static camera: 12.1.
    truth, frames, stages = run_chain(path, 150)
    assert stages[0].moved and all(f.camera.world for f in frames[90:])
    slide = lifted_slide(truth, frames)
    assert len(slide) == 152
    assert 1000 * slide.mean() < 20.0
