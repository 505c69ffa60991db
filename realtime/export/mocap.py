"""One person's 3D keypoint track -> a solved `Motion` on a uniform frame grid, for BVH / glTF.

The tracks' `kpts3d` are smoothed with a zero-phase offline smoother (default RTS),
cut to the frames between the person's first and last appearance, and sampled on a
grid of 1/fps steps from the first of them (nearest tracks frame, so frames a live
source dropped repeat their neighbour and the clip keeps its real duration).
When the tracks carry foot `contacts`, each foot in contact is then held still and the leg
follows by two-bone IK (`realtime.rig.leg_ik`), before the rig solve (`foot_lock=False`: not).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.tracks import PersonTrack, Tracks
from realtime.rig.leg_ik import contact_spans, lock_feet
from realtime.rig.solver import Motion, solve

log = logging.getLogger(__name__)

NO_3D = ("these tracks have no 3D keypoints (kpts3d), which {what} needs; record them with the depth task, "
         "e.g. `sapiens-rt run VIDEO --tasks pose,depth --tracks TRACKS.jsonl`, then export again.")


def motion_from_tracks(tracks: Tracks, what: str, *, smooth: Optional[str] = "rts", fingers: bool = False,
                       foot_lock: bool = True) -> tuple[Motion, float]:
    """Solve the one person of `tracks` (select it first with `Tracks.select`).

    what:   the format, for messages ("a BVH file").
    smooth: "rts", "savgol", "butterworth" or None (the keypoints as recorded).
    foot_lock: hold the feet still during the tracks' `contacts` (no effect without them).
    Returns the motion on a uniform grid and its frame rate (Hz).
    """
    person = tracks.single_person(what)
    rows, nearest, grid, fps = clip_frames(tracks, person, what)
    times = tracks.times[rows]
    points = person.keypoints3d[rows]
    if smooth is not None and len(times) > 1:
        from trackers.offline import smooth_track

        points = smooth_track(times, points, person.scores[rows], method=smooth)
    if foot_lock and person.contacts is not None:
        contacts = person.contacts[rows] & person.present[rows, None]
        points = lock_feet(points, tracks.keypoint_names, contacts, times)
        log.info("feet locked over %d + %d contact frames (left + right)", *contacts.sum(axis=0))
    if len(grid) != len(times):
        log.info("%d tracks frames resampled to %d frames at %.3f fps", len(times), len(grid), fps)
    motion = solve(points[nearest], tracks.keypoint_names, grid, fingers=fingers)
    held = motion.held.mean() if motion.held.size else 0.0
    if held > 0:
        log.info("%.1f%% of bone rotations held over missing keypoints", 100 * held)
    return motion, fps


def clip_frames(tracks: Tracks, person: PersonTrack, what: str) -> tuple[slice, np.ndarray, np.ndarray, float]:
    """The exported clip's frames: `rows`, the tracks rows from the person's first to last frame
    with 3D keypoints; `nearest` (N,), the row (within `rows`) each clip frame takes; `grid` (N,),
    the clip frames' times (s, from 0, steps of 1/fps); and fps."""
    if person.keypoints3d is None:
        raise UserError(NO_3D.format(what=what))
    seen = np.flatnonzero(person.present & np.isfinite(person.keypoints3d).any(axis=(1, 2)))
    if len(seen) == 0:
        raise UserError(NO_3D.format(what=what))
    rows = slice(seen[0], seen[-1] + 1)
    times = tracks.times[rows]
    fps = tracks.fps if tracks.fps > 0 else 30.0
    count = int(np.floor((times[-1] - times[0]) * fps + 1e-6)) + 1
    grid = times[0] + np.arange(count) / fps
    nearest = np.clip(np.searchsorted(times, grid - 0.5 / fps), 0, len(times) - 1)
    return rows, nearest, grid - grid[0], fps


def frame_ranges(mask: np.ndarray) -> list[list[int]]:
    """(T,) bool -> [[first, last], ...] inclusive runs of True (as JSON lists)."""
    return [[first, last] for first, last in contact_spans(mask)]


def held_marks(motion: Motion, fps: float) -> dict:
    """Where the solver held a bone's last rotation (or the hips' last position) over missing keypoints.

    Frames are 0-based indices of the exported clip (frame f is at f / fps s), as inclusive
    [first, last] ranges: `held` {bone: ranges} for the bones with held frames, `root_held` the
    hips' ranges; each key only when it has any (glTF writers drop empty values).
    """
    names = motion.skeleton.names
    marks: dict = {"fps": float(fps), "frames": int(len(motion.times))}
    held = {names[b]: frame_ranges(motion.held[:, b]) for b in range(len(names)) if motion.held[:, b].any()}
    if held:
        marks["held"] = held
    if motion.root_held.any():
        marks["root_held"] = frame_ranges(motion.root_held)
    return marks


def marks_path(out: Path) -> Path:
    """The sidecar of a BVH / FBX file: `walk.bvh` -> `walk.bvh.marks.json`."""
    return out.with_name(out.name + ".marks.json")


def write_marks(motion: Motion, fps: float, path: Path) -> Path:
    path.write_text(json.dumps(held_marks(motion, fps), indent=1) + "\n", encoding="utf-8")
    return path
