"""COCO keypoint JSON: one image entry per frame, one annotation per person and frame.

Subsets:
- "coco-wholebody" (default): the COCO-WholeBody annotation layout that its
  tools (xtcocotools, MMPose) read: `keypoints` (17 body), `foot_kpts` (6),
  `face_kpts` (68), `lefthand_kpts` (21), `righthand_kpts` (21) = 133 points,
  plus `*_box` and `*_valid` per part. Points come from `coco_wholebody_to_308`;
  the 80 unmapped ones (face, hand roots, first finger joints) are 0, 0, v=0.
- "coco17": plain COCO person keypoints (17).
- "308": the same plain layout with all 308 Sapiens points in `keypoints`.
Each triple is x, y (pixels), v with v = 2 for a known point and 0 (x = y = 0)
for an unknown one. Annotations also carry `track_id`, `score` (mean of the
known keypoint scores, clipped to [0, 1]) and `keypoint_scores`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.data import keypoint_table
from realtime.export.subsets import get_subset
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)

# COCO-17 skeleton, 1-based, as in the COCO person category.
COCO17_SKELETON = [
    [16, 14], [14, 12], [17, 15], [15, 13], [12, 13], [6, 12], [7, 13], [6, 7], [6, 8],
    [7, 9], [8, 10], [9, 11], [2, 3], [1, 2], [1, 3], [2, 4], [3, 5], [4, 6], [5, 7],
]
# COCO-WholeBody parts: (annotation field, first index, count) in the 133-point order.
WHOLEBODY_PARTS = [("keypoints", 0, 17), ("foot_kpts", 17, 6), ("face_kpts", 23, 68), ("lefthand_kpts", 91, 21),
                   ("righthand_kpts", 112, 21)]


def _triples(xy: np.ndarray) -> tuple[list[float], int]:
    """(K, 2) -> flat [x, y, v] list (unknown: 0, 0, 0) and the number of known points."""
    known = np.isfinite(xy).all(axis=1)
    flat = np.zeros((len(xy), 3))
    flat[known, :2] = np.round(xy[known], 2)
    flat[known, 2] = 2
    return flat.ravel().tolist(), int(known.sum())


def _text(value) -> str:
    """A header field that should be text; anything else (a hostile file) becomes ''."""
    return value if isinstance(value, str) else ""


def _seconds(value: float) -> Optional[float]:
    """A frame time for JSON: None where unknown (JSON has no NaN)."""
    return round(float(value), 6) if np.isfinite(value) else None


def _extent(xy: np.ndarray) -> list[float]:
    """[x, y, w, h] around the known points of (K, 2), zeros when none."""
    known = xy[np.isfinite(xy).all(axis=1)]
    if not len(known):
        return [0.0, 0.0, 0.0, 0.0]
    low, high = known.min(axis=0), known.max(axis=0)
    with np.errstate(over="ignore"):
        extent = [round(float(v), 2) for v in (low[0], low[1], high[0] - low[0], high[1] - low[1])]
    return extent if np.isfinite(extent).all() else [0.0, 0.0, 0.0, 0.0]


def _finite(value: float) -> float:
    return value if np.isfinite(value) else 0.0


def _category(subset_name: str, names: list[str]) -> dict:
    if subset_name == "308":
        skeleton = [[a + 1, b + 1] for a, b in (link["indices"] for link in keypoint_table()["skeleton_links"])]
        names_out = names
    else:
        skeleton, names_out = COCO17_SKELETON, names[:17]
    return {"id": 1, "name": "person", "supercategory": "person", "keypoints": names_out, "skeleton": skeleton}


def write_coco(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None, stem: str = "frame") -> Path:
    """Write a COCO keypoint JSON (images = frames); returns the path written.

    subset: "coco-wholebody" (default), "coco17" or "308"; image file names are
    `<stem>_<frame:012d>.jpg` (the frames themselves are not written).
    """
    path = Path(path)
    chosen = get_subset(subset or "coco-wholebody", tracks.keypoint_names)
    images = [
        {"id": row + 1, "file_name": f"{stem}_{int(frame):012d}.jpg", "width": tracks.frame_size(row)[0],
         "height": tracks.frame_size(row)[1], "frame_index": int(frame), "time": _seconds(tracks.times[row])}
        for row, frame in enumerate(tracks.frames)
    ]  # each image its own size: the photos of a stills run differ
    annotations = []
    # (person, its row -> frame row); people without identity (stills) have one row each and no track_id.
    people = [(person, np.arange(len(tracks))) for person in tracks.people.values()]
    if tracks.unidentified is not None:
        people.append((tracks.unidentified.as_person(), tracks.unidentified.rows))
    for person, frame_rows in people:
        xy_all, scores_all = chosen.take(person.keypoints), chosen.take(person.scores)
        for row in np.flatnonzero(person.present):
            xy, scores = xy_all[row], scores_all[row]
            x1, y1, x2, y2, _ = person.boxes[row]
            box = [round(float(v), 2) for v in (x1, y1, x2 - x1, y2 - y1)]
            if not np.isfinite(box).all():  # no box, or one of garbage numbers: the keypoints' extent
                box = _extent(xy)
            known_scores = np.clip(scores[np.isfinite(scores) & np.isfinite(xy).all(axis=1)], 0.0, 1.0)
            track = {"track_id": int(person.id)} if person.id >= 0 else {}
            annotation = {
                "id": len(annotations) + 1, "image_id": int(frame_rows[row]) + 1, "category_id": 1, **track,
                "bbox": box, "area": _finite(round(box[2] * box[3], 2)), "iscrowd": 0,
                "score": round(float(known_scores.mean()), 4) if len(known_scores) else 0.0,
                "keypoint_scores": [round(float(s), 3) if np.isfinite(s) else 0.0 for s in scores],
            }
            if chosen.name == "coco-wholebody":
                for field, start, count in WHOLEBODY_PARTS:
                    annotation[field], known = _triples(xy[start:start + count])
                    if field == "keypoints":
                        annotation["num_keypoints"] = known
                    else:
                        part = field.replace("_kpts", "")
                        annotation[f"{part}_valid"] = known > 0
                        if part != "foot":
                            annotation[f"{part}_box"] = _extent(xy[start:start + count])
            else:
                annotation["keypoints"], annotation["num_keypoints"] = _triples(xy)
            annotations.append(annotation)
    document = {
        "info": {"description": f"sapiens-realtime keypoints ({chosen.name})", "source": _text(tracks.header.get("source")),
                 "fps": tracks.fps, "version": "1.0"},
        "images": images,
        "annotations": annotations,
        "categories": [_category(chosen.name, chosen.names)],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, separators=(",", ":"), allow_nan=False), encoding="utf-8")  # strict JSON
    log.info("wrote %s: %d images, %d annotations (%s)", path, len(images), len(annotations), chosen.name)
    return path
