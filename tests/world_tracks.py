"""A synthetic take through egomotion -> ground -> world -> motion (the room of
`synthetic/world_scene.py`, two walkers): the frames as the collect stage hands them on, the chain's
output, and a tracks file of it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from realtime.data import keypoint_names
from realtime.frames import DenseMaps, Frame, Person
from realtime.stages import EgomotionStage, GroundStage, MotionStage, WorldStage
from synthetic.world_scene import SceneRenderer, scene_truth, walkers

NAMES = keypoint_names()
DEPTH_EVERY = 5


def scene_frames(path: str, frames: int, seed: int = 0, motions=None):
    """The scene as the collect stage would hand it on: image, seg (every frame), pointmap (every
    DEPTH_EVERY), two tracked people with 2D keypoints and, on depth frames, 3D keypoints. `motions`:
    the two performers (`synthetic.world_scene.Motion`), by default two synthetic walkers."""
    truth = scene_truth(walkers(2, frames, seed) if motions is None else motions, path, seed=seed)
    renderer, rng = SceneRenderer(seed), np.random.default_rng(seed)
    scores = np.full(len(NAMES), 0.9, np.float32)
    for t in range(frames):
        depth = t % DEPTH_EVERY == 0
        seen = renderer.observe(truth, t, rng, depth_frame=depth)
        people = []
        for p in range(2):
            known = np.isfinite(truth.joints[p, t]).all(axis=-1)
            pixels = np.where(known[:, None], seen.keypoints2d[p], np.nan).astype(np.float32)
            box = np.array([*np.nanmin(pixels, axis=0), *np.nanmax(pixels, axis=0)], np.float32)
            points = (None if seen.keypoints3d is None
                      else np.where(known[:, None], seen.keypoints3d[p], np.nan).astype(np.float32))
            people.append(Person(box=box, track_id=p + 1, keypoints=pixels, keypoint_scores=scores, keypoints3d=points))
        dense = DenseMaps(computed_on=t, seg=seen.person_mask.astype(np.uint8), pointmap=seen.pointmap)
        image = np.repeat(seen.gray[..., None], 3, axis=2)
        yield truth, Frame(index=t, timestamp=float(truth.times[t]), image=image, people=tuple(people), dense=dense)


def run_chain(path: str, frames: int, camera: str = "auto", world: bool = True, background_scale: bool = True,
              hold: str = "world", seed: int = 0, motions=None, cost: dict | None = None, contacts: str = "rules"):
    """The scene through egomotion -> ground -> world -> motion (world False: ground -> motion only).
    background_scale False: the ground stage not shown the egomotion's `Odometry.pointmap_scale`; hold 'camera':
    not shown the egomotion's odometry at all (its lifter holds planted feet in the camera frame); `motions`: the
    performers (`scene_frames`); `cost`: filled with each stage's seconds per frame, by stage name; `contacts`: the
    ground and world stages' decider ("learned" or "rules")."""
    stages = (([EgomotionStage(camera=camera)] if world else []) + [GroundStage(NAMES, contacts=contacts)]
              + ([WorldStage(NAMES, camera=camera, contacts=contacts)] if world else []) + [MotionStage(NAMES)])
    out, truth = [], None
    for truth, frame in scene_frames(path, frames, seed, motions):  # noqa: B007 (the last truth is returned)
        for stage in stages:
            start = time.perf_counter()
            if stage.name == "ground" and hold == "camera":
                frame = stage.process(frame.replace(odometry=None)).replace(odometry=frame.odometry)
            elif stage.name == "ground" and not background_scale and frame.odometry is not None:
                frame = stage.process(frame.replace(odometry=dataclasses.replace(frame.odometry, pointmap_scale=None)))
            else:
                frame = stage.process(frame)
            if cost is not None:
                cost.setdefault(stage.name, []).append(time.perf_counter() - start)
        out.append(frame)
    return truth, out, stages


def write_tracks(frames: list[Frame], bone_names, path: Path) -> Path:
    from realtime.sinks.tracks import TrackWriter

    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=30.0, source="synthetic", model={}, tracked=True,
                     bone_names=bone_names) as writer:
        for frame in frames:
            writer.write(frame)
    return path
