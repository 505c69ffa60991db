"""Fast fixed-decimal text for rows of numbers (CSV, TRC)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def format_rows(values: np.ndarray, decimals: Sequence[int], *, separator: str, missing: str) -> list[str]:
    """(T, N) floats -> T lines of N numbers with per-column `decimals`; non-finite -> `missing`.

    One %-format per row over a template, several times faster than formatting
    each number in Python.
    """
    values = np.asarray(values, dtype=np.float64)
    template = separator.join(f"%.{n}f" for n in decimals)
    lines = []
    for row in values:
        text = template % tuple(row.tolist())
        if not np.isfinite(row).all():
            # Whole fields only: split, swap, join (a field is exactly nan / inf / -inf).
            text = separator.join(missing if field in ("nan", "inf", "-inf") else field for field in text.split(separator))
        lines.append(text)
    return lines
