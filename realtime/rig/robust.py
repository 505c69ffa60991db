"""np.nanmedian over the first axis, with the same numbers, quicker for the live solvers.

numpy's nanmedian of a short axis (< 600) sorts a masked array, which costs milliseconds
on the (frames, bones, 3) windows of the live skeleton refresh and the face's neutral.
Columns without NaN take np.median (the same value: the middle one, or the mean of the
two middle ones), columns that are all NaN are NaN, and only the rest go to nanmedian.
"""

from __future__ import annotations

import numpy as np


def nanmedian(samples: np.ndarray) -> np.ndarray:
    """(N, ...) -> (...): the median of each column over axis 0, NaN ignored (all NaN: NaN, no warning)."""
    samples = np.asarray(samples, dtype=np.float64)
    missing = np.isnan(samples)
    out = np.median(samples, axis=0)  # NaN where a column has a NaN
    partial = missing.any(axis=0) & ~missing.all(axis=0)
    if np.any(partial):
        out[partial] = np.nanmedian(samples[:, partial], axis=0)
    return out
