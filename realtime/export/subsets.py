"""Keypoint subsets for export: all 308 points, COCO-WholeBody (133) or COCO-17.

The COCO mappings are the ones in the keypoint table (`coco_wholebody_to_308`,
`coco17_to_308`): COCO-17 maps fully; COCO-WholeBody maps 53 of its 133 points
(17 body, 6 foot, 30 finger joints). The other 80 (68 face points, both hand
roots, the first joint of each finger) have no same-named 308 point and are
exported as unknown (NaN / null / visibility 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from realtime.data import keypoint_table
from realtime.errors import UserError

SUBSETS = ("308", "coco-wholebody", "coco17")


@dataclass(frozen=True)
class Subset:
    """names: the subset's keypoint names, in its own order.
    source:  (K',) int64 index into the 308 keypoints for each subset point.
    mapped:  (K',) bool, False where the subset point has no 308 counterpart.
    """

    name: str
    names: list[str]
    source: np.ndarray
    mapped: np.ndarray

    def take(self, values: np.ndarray, axis: int = 1) -> np.ndarray:
        """Pick the subset along `axis` of a 308-keypoint float array; unmapped points are NaN."""
        picked = np.take(np.asarray(values, dtype=np.float64), self.source, axis=axis)
        shape = [1] * picked.ndim
        shape[axis] = len(self.mapped)
        return np.where(self.mapped.reshape(shape), picked, np.nan)


def get_subset(name: str | None, keypoint_names: list[str]) -> Subset:
    """The subset called `name` ("308" when None) of tracks whose header lists `keypoint_names`."""
    name = name or "308"
    if name not in SUBSETS:
        raise UserError(f"unknown keypoint subset '{name}'; use one of {', '.join(SUBSETS)}.")
    if name == "308":
        count = len(keypoint_names)
        return Subset(name, list(keypoint_names), np.arange(count), np.ones(count, dtype=bool))
    table = keypoint_table()
    if list(keypoint_names) != [k["name"] for k in table["keypoints"]]:
        raise UserError(f"subset '{name}' needs tracks with the 308 Sapiens keypoints, these have {len(keypoint_names)} others; "
                        "use --subset 308.")
    if name == "coco17":
        source = np.asarray(table["coco17_to_308"], dtype=np.int64)
        return Subset(name, list(table["coco17_names"]), source, np.ones(len(source), dtype=bool))
    names = [table["coco_wholebody_names"][str(i)] for i in range(len(table["coco_wholebody_names"]))]
    mapping = {int(k): v for k, v in table["coco_wholebody_to_308"].items()}
    source = np.array([mapping.get(i, 0) for i in range(len(names))], dtype=np.int64)
    mapped = np.array([i in mapping for i in range(len(names))], dtype=bool)
    return Subset(name, names, source, mapped)
