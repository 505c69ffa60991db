"""Foot locking on synthetic ground truth, measured in the exported files.

`write_walk_tracks`: `tests/ground_synthetic.py`'s walker (exact foot plants) as a tracks file: 3D
keypoints (camera frame) with NOISE_M metres of noise per point and SCALE_JITTER per-frame scale
jitter (as bench/rig.py), 2D by the camera, and the true contacts. `bvh_ankles` reads an exported
BVH back with bvhio (its own forward kinematics) and `glb_ankles` a .glb with pygltflib (node rest
translations and the animation's samples, composed here); both give the ankles (the `leftFoot` /
`rightFoot` heads) per frame in metres. `slide` is the ankles' mean travel per frame (mm) over
pairs of consecutive frames both in contact.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter
from tests.ground_synthetic import FPS, walk
from tests.mocap_synthetic import NAMES

NOISE_M, SCALE_JITTER = 0.015, 0.02
FEET = ("leftFoot", "rightFoot")
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def write_walk_tracks(path: Path, frames: int = 150, seed: int = 0) -> np.ndarray:
    """Write the walker's tracks (track id 1) to `path`; returns the true contacts (frames, 2)."""
    truth = walk(frames)
    rng = np.random.default_rng(seed)
    scale = 1.0 + rng.normal(0, SCALE_JITTER, (frames, 1, 1))
    depth = truth.camera * scale + rng.normal(0, NOISE_M, truth.camera.shape)
    scores = np.where(np.isfinite(truth.pixels[..., 0]), 0.9, 0.0).astype(np.float32)
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(1280, 720), fps=FPS, source="walk.mp4",
                     model={"pose": "synthetic"}) as writer:
        for t in range(frames):
            person = Person(box=np.array([0, 0, 1280, 720], np.float32), track_id=1, keypoints=truth.pixels[t].astype(np.float32),
                            keypoint_scores=scores[t], keypoints3d=depth[t].astype(np.float32), contacts=truth.contacts[t])
            writer.write(Frame(index=t, timestamp=float(truth.times[t]), image=_IMAGE, people=(person,)))
    return truth.contacts


def bvh_ankles(path: Path) -> np.ndarray:
    """(frames, 2, 3) world positions (m) of the leftFoot / rightFoot joints, by bvhio."""
    import bvhio

    root = bvhio.readAsHierarchy(str(path))
    joints = {joint.Name: joint for joint, _, _ in root.layout()}
    count = len(joints[FEET[0]].Keyframes)
    out = np.empty((count, 2, 3))
    for frame in range(count):
        root.loadPose(frame)
        out[frame] = [list(joints[name].PositionWorld) for name in FEET]
    return out / 100.0  # cm -> m


def glb_ankles(path: Path) -> np.ndarray:
    """(frames, 2, 3) world positions (m) of the leftFoot / rightFoot nodes of a .glb's animation."""
    import pygltflib

    gltf = pygltflib.GLTF2().load(str(path))
    blob = gltf.binary_blob()

    def samples(accessor_index: int, width: int) -> np.ndarray:
        accessor = gltf.accessors[accessor_index]
        view = gltf.bufferViews[accessor.bufferView]
        offset = (view.byteOffset or 0) + (accessor.byteOffset or 0)
        return np.frombuffer(blob, np.float32, count=accessor.count * width, offset=offset).reshape(accessor.count, width)

    (animation,) = gltf.animations
    count = gltf.accessors[animation.samplers[0].input].count
    local_t = {i: np.tile(node.translation or [0.0, 0.0, 0.0], (count, 1)) for i, node in enumerate(gltf.nodes)}
    local_r = {i: np.tile(node.rotation or [0.0, 0.0, 0.0, 1.0], (count, 1)) for i, node in enumerate(gltf.nodes)}
    for channel in animation.channels:
        values = samples(animation.samplers[channel.sampler].output, 3 if channel.target.path == "translation" else 4)
        (local_t if channel.target.path == "translation" else local_r)[channel.target.node] = values.astype(np.float64)
    parent = {child: i for i, node in enumerate(gltf.nodes) for child in node.children}
    world: dict[int, tuple[np.ndarray, Rotation]] = {}

    def place(i: int) -> tuple[np.ndarray, Rotation]:
        if i not in world:
            rotation = Rotation.from_quat(local_r[i])
            if i in parent:
                position, turn = place(parent[i])
                world[i] = (position + turn.apply(local_t[i]), turn * rotation)
            else:
                world[i] = (local_t[i], rotation)
        return world[i]

    names = [node.name for node in gltf.nodes]
    return np.stack([place(names.index(name))[0] for name in FEET], axis=1)


def slide(ankles: np.ndarray, contacts: np.ndarray) -> float:
    """Mean travel (mm per frame) of the ankles (T, 2, 3) between consecutive frames both in contact (T, 2)."""
    both = contacts[1:] & contacts[:-1]
    steps = np.linalg.norm(np.diff(ankles, axis=0), axis=-1)
    return 1000.0 * float(steps[both].mean())
