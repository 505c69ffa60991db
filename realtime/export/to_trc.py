"""TRC export (OpenSim marker file): one person, its keypoints plus `hip_center` as markers.

Layout (tab-separated, as OpenSim's TRCFileAdapter reads and writes it):

    PathFileType  4  (X/Y/Z)  <file name>
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  OrigNumFrames
    <fps>     <fps>       <T>        <M>         m|px   <fps>         <first frame + 1>   <T>
    Frame#  Time  <marker 1>  <tab> <tab> <marker 2> ...
                  X1  Y1  Z1  X2  Y2  Z2 ...
    <blank line>
    <frame + 1>  <t>  x  y  z ...

Frame# is the 1-based source frame number, Time the frame's timestamp (s).
Unknown values are written `NaN` (OpenSim reads them as missing markers).

3D (default when the tracks have `kpts3d`): metres, OpenSim axes (Y up):
X = x, Y = -y, Z = -z of the camera frame (a 180 degree rotation about X).
2D: pixels, X = x, Y = H - y (so +Y points up as in OpenSim), Z = 0; units "px".
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.axes import camera_to_y_up
from realtime.export.markers import marker_data
from realtime.export.numbers import format_rows
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)


def write_trc(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None, use_3d: Optional[bool] = None,
              file_name: Optional[str] = None) -> Path:
    """Write the one person of `tracks` as an OpenSim .trc marker file.

    use_3d: True for metres (needs `kpts3d`), False for pixels, None to pick 3D when
    the person has 3D keypoints. file_name: the name the header gives (default: the
    name of `path`; an export written to a temporary first passes its final name).
    Returns the path written.
    """
    path = Path(path)
    person = tracks.single_person("a TRC file")
    if use_3d is None:
        use_3d = person.keypoints3d is not None
    names, points, _ = marker_data(tracks, subset, use_3d=use_3d, what="a TRC file")
    if use_3d:
        xyz, units, decimals = camera_to_y_up(points), "m", 5
    else:
        height = tracks.image_wh[1]
        xyz = np.stack([points[..., 0], height - points[..., 1], np.where(np.isfinite(points[..., 0]), 0.0, np.nan)], axis=-1)
        units, decimals = "px", 2
    xyz = np.where(np.isfinite(xyz).all(axis=-1, keepdims=True), xyz, np.nan)  # a marker is known or not, as a whole

    fps, count, markers = tracks.fps, len(tracks), len(names)
    first = int(tracks.frames[0]) + 1 if count else 1
    lines = [
        f"PathFileType\t4\t(X/Y/Z)\t{file_name or path.name}",
        "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames",
        f"{fps:g}\t{fps:g}\t{count}\t{markers}\t{units}\t{fps:g}\t{first}\t{count}",
        "Frame#\tTime\t" + "\t\t\t".join(names) + "\t\t",
        "\t\t" + "\t".join(f"X{i}\tY{i}\tZ{i}" for i in range(1, markers + 1)),
        "",
    ]
    numbers = format_rows(xyz.reshape(count, markers * 3), [decimals] * (markers * 3), separator="\t", missing="NaN")
    lines += [f"{int(frame) + 1}\t{time:.6f}\t{text}" for frame, time, text in zip(tracks.frames, tracks.times, numbers)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log.info("wrote %s: %d markers x %d frames (%s)", path, markers, count, units)
    return path
