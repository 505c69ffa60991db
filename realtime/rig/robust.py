"""np.nanmedian over the first axis, with the same numbers, quicker for the live solvers.

numpy's nanmedian of a short axis (< 600) sorts a masked array: 2.4 ms on a (300, 21, 3) window
of the live skeleton refresh, 0.4 ms on the face's (60, 19) neutral samples; this takes 0.26 and
0.09 ms there (loaded 2-core EPYC).
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
