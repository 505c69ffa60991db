"""C3D export (via ezc3d): 3D keypoints in metres, one marker per keypoint plus the hip centre.

Axes: C3D tools expect Z up, so camera-frame points (x right, y down, z forward)
are written as X = x, Y = z, Z = -y (a rotation; see `axes.camera_to_z_up`).
Residuals carry the keypoint score: invalid (unknown) points get residual -1;
a known point gets residual r * |POINT:SCALE| with r = 1 + round(126 * (1 - clip(score, 0, 1))),
so r = 1 for a fully confident point and 127 for score 0 (never 0, which C3D
reserves for interpolated / filtered points). POINT:SCALE is -max|coordinate| / 32000
as the C3D standard asks for floating-point files.

Tracks without 3D keypoints are refused: C3D holds 3D points, and a 2D file
would be misread as metric data. Use TRC, CSV or NPZ for 2D tracks.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.axes import camera_to_z_up
from realtime.export.markers import marker_data
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)

_MAX_RESIDUAL_COUNT = 127  # ezc3d stores the residual in the word's high byte; 128+ reads as invalid


def _patch_header_scale(path: Path, scale: float) -> None:
    """ezc3d writes -1 as the header's scale whatever POINT:SCALE says; make the two agree.

    The header's words 7-8 (bytes 12-15) hold the scale as a float; ezc3d writes
    Intel (little-endian) files, checked via the parameter section's processor byte.
    """
    with open(path, "r+b") as handle:
        header = handle.read(16)
        handle.seek((header[0] - 1) * 512 + 3)
        if handle.read(1) != bytes([84]):
            raise RuntimeError("ezc3d wrote a non-Intel C3D file; cannot set its header scale")
        handle.seek(12)
        handle.write(struct.pack("<f", scale))


def write_c3d(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None) -> Path:
    """Write the one person of `tracks` as a C3D file of 3D markers (metres, Z up).

    Returns the path written. Raises UserError when the tracks have no 3D keypoints
    or more than one person.
    """
    import ezc3d  # optional dependency, only needed here

    path = Path(path)
    if path.suffix != ".c3d":  # ezc3d appends it otherwise
        path = path.with_name(path.name + ".c3d")
    names, points, scores = marker_data(tracks, subset, use_3d=True, what="a C3D file")
    points = camera_to_z_up(points)  # (T, M, 3)
    known = np.isfinite(points).all(axis=-1)
    max_abs = float(np.abs(points[known]).max()) if known.any() else 1.0
    scale = -max(max_abs, 1e-3) / 32000.0

    confidence = np.clip(np.nan_to_num(scores, nan=0.0), 0.0, 1.0)
    counts = 1 + np.round((_MAX_RESIDUAL_COUNT - 1) * (1.0 - confidence))
    residuals = np.where(known, counts * abs(scale), -1.0)

    c3d = ezc3d.c3d()
    point = c3d["parameters"]["POINT"]
    point["RATE"]["value"] = [tracks.fps]
    point["UNITS"]["value"] = ["m"]
    point["SCALE"]["value"] = [scale]
    point["LABELS"]["value"] = tuple(names)
    data = np.ones((4, len(names), len(points)))
    data[:3] = np.where(known[..., None], points, np.nan).transpose(2, 1, 0)
    c3d["data"]["points"] = data
    c3d["data"]["meta_points"]["residuals"] = residuals.T[None]
    c3d["data"]["meta_points"]["camera_masks"] = np.zeros((7, len(names), len(points)), dtype=bool)
    path.parent.mkdir(parents=True, exist_ok=True)
    c3d.write(str(path))
    _patch_header_scale(path, scale)
    log.info("wrote %s: %d markers x %d frames at %.3f Hz", path, len(names), len(points), tracks.fps)
    return path
