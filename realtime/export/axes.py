"""The axis conventions of 3D exports. 3D keypoints are camera-space points read off
the pointmap (metres, x right, y down, z forward: `realtime.transforms.sample_keypoints_3d`);
3D tools want other axes."""

from __future__ import annotations

import numpy as np


# Camera frame (x right, y down, z forward) to the frames 3D tools expect. Both are
# proper rotations (no mirroring); for a level camera "up" becomes the vertical axis.
def camera_to_y_up(points: np.ndarray) -> np.ndarray:
    """OpenSim convention, Y up: (x, y, z) -> (x, -y, -z) (180 degrees about X). (..., 3) -> (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    return np.stack([points[..., 0], -points[..., 1], -points[..., 2]], axis=-1)


def camera_to_z_up(points: np.ndarray) -> np.ndarray:
    """C3D / Blender convention, Z up, Y away from the camera: (x, y, z) -> (x, z, -y). (..., 3) -> (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    return np.stack([points[..., 0], points[..., 2], -points[..., 1]], axis=-1)
