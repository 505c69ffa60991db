"""BVH export: the solved skeleton and its motion as a Biovision hierarchy file.

Written plainly (the format is a few lines of text): joints named as the VRM humanoid
bones, offsets of the rest T-pose, `hips` with 6 channels (position, then rotation) and
every other joint with 3, rotation order `Zrotation Xrotation Yrotation` (R = Rz Rx Ry,
degrees, each channel unwrapped so curves do not jump by 360). Units: CENTIMETRES.
Axes: Y up, the character facing +Z, +X its left (camera x, -y, -z).
`Frame Time` = 1 / the tracks' fps.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.rig.solver import Motion

log = logging.getLogger(__name__)

CM_PER_M = 100.0
ORDER = "ZXY"  # scipy intrinsic order: R = Rz @ Rx @ Ry, BVH's "Zrotation Xrotation Yrotation"


def bvh_euler(rotations: np.ndarray) -> np.ndarray:
    """(T, B, 4) quaternions -> (T, B, 3) degrees (z, x, y), unwrapped over time."""
    count, bones = rotations.shape[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # gimbal lock: still a valid triple
        angles = Rotation.from_quat(rotations.reshape(-1, 4)).as_euler(ORDER, degrees=True).reshape(count, bones, 3)
    return np.unwrap(angles, period=360.0, axis=0)


def write_bvh(motion: Motion, path: str | Path, fps: float) -> Path:
    path = Path(path)
    skeleton = motion.skeleton
    parents = skeleton.parents
    leaves = skeleton.leaves
    lines = ["HIERARCHY"]
    depth_of = np.zeros(len(parents), int)

    def fmt(v):
        return " ".join(f"{c * CM_PER_M:.6f}" for c in v)

    # Bones are depth-first (parents before children, subtrees contiguous): close braces on the way.
    open_depth = -1
    for b, bone in enumerate(skeleton.bones):
        depth = 0 if parents[b] < 0 else depth_of[parents[b]] + 1
        depth_of[b] = depth
        while open_depth >= depth:
            lines.append("  " * open_depth + "}")
            open_depth -= 1
        pad = "  " * depth
        lines.append(f"{pad}{'ROOT' if depth == 0 else 'JOINT'} {bone.name}")
        lines.append(pad + "{")
        lines.append(f"{pad}  OFFSET {fmt(skeleton.offsets[b])}")
        if depth == 0:
            lines.append(f"{pad}  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation")
        else:
            lines.append(f"{pad}  CHANNELS 3 Zrotation Xrotation Yrotation")
        if leaves[b]:
            lines += [f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET {fmt(skeleton.ends[b])}", f"{pad}  }}"]
        open_depth = depth
    while open_depth >= 0:
        lines.append("  " * open_depth + "}")
        open_depth -= 1

    euler = bvh_euler(motion.rotations)
    count = len(motion.times)
    values = np.concatenate([motion.root_position * CM_PER_M, euler.reshape(count, -1)], axis=1)
    lines += ["MOTION", f"Frames: {count}", f"Frame Time: {1.0 / fps:.8f}"]
    lines += [" ".join(f"{v:.6f}" for v in row) for row in values]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log.info("wrote %s: %d joints, %d frames at %.3f fps", path, len(skeleton.bones), count, fps)
    return path
