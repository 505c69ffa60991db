"""In-memory keypoint tracks: what `read_tracks` returns and every exporter takes.

A `Tracks` holds T frames (one per JSONL frame line, in file order) and one
`PersonTrack` per identity, each aligned with those T frames: rows where the
person was not seen are NaN (and `present` is False). Coordinates are pixels
of the original image (x right, y down); `keypoints3d` are metres in the
camera frame (x right, y down, z forward).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from realtime.errors import UserError
from realtime.record import TRACK_ARRAYS, person_track_fields


class _PersonTrackMethods:
    @property
    def stature(self) -> Optional[tuple[float, float]]:
        """(metres, confidence): the last height measured, or None."""
        if self.height is None or not np.isfinite(self.height[:, 0]).any():
            return None
        last = self.height[np.flatnonzero(np.isfinite(self.height[:, 0]))[-1]]
        return float(last[0]), float(last[1])

    def replace(self, **changes) -> "PersonTrack":
        return dataclasses.replace(self, **changes)


# One identity over the whole recording; its arrays follow the record's declaration (`realtime.record`).
PersonTrack = dataclasses.make_dataclass("PersonTrack", person_track_fields(), bases=(_PersonTrackMethods,), frozen=True,
                                         kw_only=True)
PersonTrack.__module__ = __name__
PersonTrack.__doc__ = "\n".join([
    "One identity over the whole recording (T = number of frames in the file).",
    "",
    "id:            track id from the JSONL. Persons written without an id are no track: in a file whose header",
    "               says `\"tracked\": true` they are tentative detections and are left out; in other files (stills)",
    "               they are kept in `Tracks.unidentified`.",
    "present:       (T,) bool, True in frames where this person was written.",
    *(f"{spec.name + ':':<14} {spec.doc}" for spec in TRACK_ARRAYS),
])


@dataclass(frozen=True)
class Unidentified:
    """People seen without an identity (stills: unrelated photos), one entry each, in file order
    (N = number of such people in the whole file).

    rows:        (N,) int64 row of `Tracks.frames` each was seen in.
    keypoints:   (N, K, 2) float64 pixels, NaN where unknown.
    scores:      (N, K) float64.
    boxes:       (N, 5) float64 x1, y1, x2, y2, box score; NaN where not written.
    keypoints3d: (N, K, 3) float64 metres, NaN where unknown, or None when nobody had `kpts3d`.
    """

    rows: np.ndarray
    keypoints: np.ndarray
    scores: np.ndarray
    boxes: np.ndarray
    keypoints3d: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.rows)

    def as_person(self) -> PersonTrack:
        """These people as one `PersonTrack` (id -1) whose rows are the N people, not frames:
        lets a per-row writer (OpenPose, COCO) write them with the code it has for tracks."""
        return PersonTrack(id=-1, keypoints=self.keypoints, scores=self.scores, boxes=self.boxes,
                           present=np.ones(len(self), dtype=bool), smoothed=np.zeros(len(self), dtype=bool),
                           predicted=np.zeros(self.scores.shape, dtype=bool), keypoints3d=self.keypoints3d)


@dataclass(frozen=True)
class CameraTrack:
    """The camera of every frame (the world stage's `Frame.camera`), T = the file's frames.

    position:   (T, 3) float64 the camera's centre in the world (metres, y up, origin on the floor),
                NaN on frames without a camera.
    rotation:   (T, 4) float64 quaternion x, y, z, w of world_from_camera (camera axes: x right,
                y down, z forward), NaN without one.
    intrinsics: (T, 4) float64 fx, fy, cx, cy pixels, NaN where not known yet.
    status:     (T,) 'waiting', 'static', 'tracking', 'lost' or 'none' (no camera on that frame).
    world:      (T,) bool: that frame's bones and contacts are in the world frame.
    grounded:   (T,) bool: the world frame was fixed by the floor.
    pointmap_scale: (T,) float64 each depth frame's pointmap scale against the camera path's metres,
                measured on the background (NaN on frames without a pointmap of their own, and in files
                before schema 4).
    """

    position: np.ndarray
    rotation: np.ndarray
    intrinsics: np.ndarray
    status: tuple[str, ...]
    world: np.ndarray
    grounded: np.ndarray
    pointmap_scale: np.ndarray

    @property
    def known(self) -> np.ndarray:
        """(T,) bool: frames with a camera."""
        return np.isfinite(self.position).all(axis=1)

    @property
    def moved(self) -> bool:
        """True when the people were put in the world on some frame (the camera was seen to move)."""
        return bool(self.world.any())

    def world_from_camera(self) -> np.ndarray:
        """(T, 4, 4) float64, NaN on frames without a camera."""
        from scipy.spatial.transform import Rotation

        out = np.full((len(self.position), 4, 4), np.nan)
        known = self.known
        out[known] = np.eye(4)
        if known.any():
            out[known, :3, :3] = Rotation.from_quat(self.rotation[known]).as_matrix()
            out[known, :3, 3] = self.position[known]
        return out


@dataclass(frozen=True)
class Tracks:
    """All frames and identities of one tracks file.

    header:    the JSONL header line as a dict (version, keypoint_names, image_size, fps, ...).
    frames:    (T,) int64 source frame indices.
    times:     (T,) float64 seconds since the start of the source.
    people:    track id -> PersonTrack, sorted by id.
    truncated: True when the file's last line was cut off (a crashed run) and was skipped.
    unidentified: people without an id in a file that is not tracked (stills), or None.
    files:     (T,) the image file of each row in a stills file, else None.
    frame_sizes: (T, 2) int64 (W, H) of each frame's own image where the file gives one
               (stills: photos of different sizes), else None (every frame is `image_size`).
    camera:    the camera per frame (`CameraTrack`) when the run had a world stage, else None.
    floor_up:  (T, 3) float64 the floor's up in each frame's camera (the ground stage's, from the
               pointmap's background), NaN on frames without one; None when no frame has one.
    """

    header: dict
    frames: np.ndarray
    times: np.ndarray
    people: dict[int, PersonTrack]
    truncated: bool = False
    unidentified: Optional[Unidentified] = None
    files: Optional[tuple[str, ...]] = None
    frame_sizes: Optional[np.ndarray] = None
    camera: Optional[CameraTrack] = None
    floor_up: Optional[np.ndarray] = None

    @property
    def keypoint_names(self) -> list[str]:
        return list(self.header["keypoint_names"])

    @property
    def fps(self) -> float:
        return float(self.header["fps"])

    @property
    def image_wh(self) -> tuple[int, int]:
        """(W, H) of the original image in pixels (the header's `image_size`)."""
        width, height = self.header["image_size"]
        return int(width), int(height)

    def frame_size(self, row: int) -> tuple[int, int]:
        """(W, H) of frame `row`'s image in pixels."""
        if self.frame_sizes is None:
            return self.image_wh
        width, height = self.frame_sizes[row]
        return int(width), int(height)

    def __len__(self) -> int:
        return len(self.frames)

    def person(self, track_id: int) -> PersonTrack:
        if track_id not in self.people:
            self.require_identities("--person")
            raise UserError(f"no person with id {track_id} in these tracks (ids: {self.id_list()}); pass one of those to "
                            "--person.")
        return self.people[track_id]

    def select(self, track_id: Optional[int]) -> "Tracks":
        """These tracks with only person `track_id` (all people when None)."""
        if track_id is None:
            return self
        return dataclasses.replace(self, people={track_id: self.person(track_id)}, unidentified=None)

    def single_person(self, what: str) -> PersonTrack:
        """The one person of these tracks; `what` names the format that needs exactly one."""
        self.require_identities(what)
        if len(self.people) != 1:
            raise UserError(
                f"{what} holds one person but these tracks have {len(self.people)} (ids: {self.id_list()}); choose one with "
                "--person ID."
            )
        return next(iter(self.people.values()))

    def require_identities(self, what: str) -> None:
        """People seen only without identities (stills) cannot be followed over time."""
        if not self.people and self.unidentified is not None:
            raise UserError(f"these tracks hold people without identities (unrelated photos, stills), so {what} has no person "
                            "to follow over time; export them with --to csv, npz, openpose or coco, or run on a video for "
                            "tracks.")

    def id_list(self) -> str:
        return ", ".join(str(i) for i in self.people) or "none"

    def replace(self, **changes) -> "Tracks":
        return dataclasses.replace(self, **changes)
