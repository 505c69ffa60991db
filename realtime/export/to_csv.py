"""CSV export: wide, one row per frame, columns per person and keypoint.

Columns: `frame`, `time` (s), then for each person (by id) and each keypoint of
the subset: `p<id>_<name>_x`, `p<id>_<name>_y` (pixels), `p<id>_<name>_score`,
and when the person has 3D keypoints also `p<id>_<name>_X`, `_Y`, `_Z` (metres,
camera frame: x right, y down, z forward). After a person's keypoints, what the tracks
carry of the performance: `p<id>_face_<ARKit name>` (27 blendshape weights in [0, 1],
`realtime.rig.face.ARKIT_NAMES`), `p<id>_head_qx` .. `_qw` (head rotation quaternion, rig
axes, relative to the neutral head), `p<id>_contact_left`, `_right` (1: the foot on the floor,
0: not, or not known yet). An unknown value (or a person not seen) is an empty cell.

Tracks with people without identities (stills: unrelated photos) have no
person to give columns to, so they are written long instead: one row per
person per image, `frame`, `time`, `file` (stills), `id` (empty for nobody's
track), then `<name>_x`, `<name>_y`, `<name>_score` (and `_X`, `_Y`, `_Z`).
"""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.numbers import format_rows
from realtime.export.subsets import Subset, get_subset
from realtime.export.tracks import PersonTrack, Tracks

log = logging.getLogger(__name__)


def write_csv(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None) -> Path:
    """Write `tracks` as one wide CSV (long, one row per person, when some have no identity);
    returns the path written."""
    path = Path(path)
    chosen = get_subset(subset, tracks.keypoint_names)
    header, lines = _long(tracks, chosen) if tracks.unidentified is not None else _wide(tracks, chosen)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow(header)
        handle.write("\r\n".join(lines) + ("\r\n" if lines else ""))  # csv's own line ending
    log.info("wrote %s: %d rows x %d columns", path, len(lines), len(header))
    return path


def _wide(tracks: Tracks, chosen: Subset) -> tuple[list[str], list[str]]:
    header = ["frame", "time"]
    blocks = [tracks.frames[:, None].astype(np.float64), tracks.times[:, None]]
    decimals = [0, 6]
    for track_id, person in tracks.people.items():
        xy = chosen.take(person.keypoints, axis=1)
        scores = chosen.take(person.scores, axis=1)
        columns = [(xy[..., 0], "x", 2), (xy[..., 1], "y", 2), (scores, "score", 3)]
        if person.keypoints3d is not None:
            xyz = chosen.take(person.keypoints3d, axis=1)
            columns += [(xyz[..., 0], "X", 4), (xyz[..., 1], "Y", 4), (xyz[..., 2], "Z", 4)]
        # Interleave per keypoint: name_x, name_y, name_score[, name_X, name_Y, name_Z].
        blocks.append(np.stack([values for values, _, _ in columns], axis=-1).reshape(len(tracks), -1))
        decimals += [n for _ in chosen.names for _, _, n in columns]
        header += [f"p{track_id}_{name}_{suffix}" for name in chosen.names for _, suffix, _ in columns]
        for values, names, places in _performance_columns(person):
            blocks.append(values)
            decimals += [places] * len(names)
            header += [f"p{track_id}_{name}" for name in names]
    return header, format_rows(np.concatenate(blocks, axis=1), decimals, separator=",", missing="")


def _performance_columns(person: PersonTrack) -> list[tuple[np.ndarray, list[str], int]]:
    """(values (T, N), column names, decimals) for the face weights, head rotation and foot contacts the person has."""
    out = []
    if person.face is not None:
        from realtime.rig.face import ARKIT_NAMES

        out.append((person.face, [f"face_{name}" for name in ARKIT_NAMES], 3))
    if person.head_rotation is not None:
        out.append((person.head_rotation, ["head_qx", "head_qy", "head_qz", "head_qw"], 4))
    if person.contacts is not None:
        known = person.present[:, None] & person.contacts_known  # per foot
        contacts = np.where(known, person.contacts.astype(np.float64), np.nan)  # empty where not seen or not known
        out.append((contacts, ["contact_left", "contact_right"], 0))
    return out


def _long(tracks: Tracks, chosen: Subset) -> tuple[list[str], list[str]]:
    """One row per person seen: those with an id, then those without, frame by frame."""
    seen = tracks.unidentified
    rows = [seen.rows]
    xy, scores, xyz = [seen.keypoints], [seen.scores], [seen.keypoints3d]
    ids = [np.full(len(seen), np.nan)]
    for track_id, person in tracks.people.items():
        present = np.flatnonzero(person.present)
        rows.append(present)
        ids.append(np.full(len(present), float(track_id)))
        xy.append(person.keypoints[present])
        scores.append(person.scores[present])
        xyz.append(None if person.keypoints3d is None else person.keypoints3d[present])
    has_3d = any(values is not None for values in xyz)
    xyz = [np.full((*s.shape, 3), np.nan) if values is None else values for values, s in zip(xyz, scores)]
    rows_all = np.concatenate(rows)
    order = np.argsort(rows_all, kind="stable")  # by frame; within a frame, as listed above
    rows_all = rows_all[order]
    xy_all = chosen.take(np.concatenate(xy)[order], axis=1)
    columns = [(xy_all[..., 0], "x", 2), (xy_all[..., 1], "y", 2),
               (chosen.take(np.concatenate(scores)[order], axis=1), "score", 3)]
    if has_3d:
        xyz_all = chosen.take(np.concatenate(xyz)[order], axis=1)
        columns += [(xyz_all[..., 0], "X", 4), (xyz_all[..., 1], "Y", 4), (xyz_all[..., 2], "Z", 4)]
    points = np.stack([values for values, _, _ in columns], axis=-1).reshape(len(rows_all), -1)
    numbers = np.concatenate([tracks.frames[rows_all, None].astype(np.float64), tracks.times[rows_all, None],
                              np.concatenate(ids)[order, None], points], axis=1)
    decimals = [0, 6, 0] + [n for _ in chosen.names for _, _, n in columns]
    lines = format_rows(numbers, decimals, separator=",", missing="")
    header = ["frame", "time", "id"] + [f"{name}_{suffix}" for name in chosen.names for _, suffix, _ in columns]
    if tracks.files is not None:  # stills: the image each row comes from, after the time
        header.insert(2, "file")
        lines = [_with_file(line, tracks.files[row]) for line, row in zip(lines, rows_all)]
    return header, lines


def _with_file(line: str, file: str) -> str:
    """Insert the file name (quoted as CSV needs) as the third cell of a formatted row."""
    cell = io.StringIO()
    csv.writer(cell, lineterminator="").writerow([file])
    frame, time, rest = line.split(",", 2)
    return f"{frame},{time},{cell.getvalue()},{rest}"
