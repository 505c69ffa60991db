"""Gate objects: the rig's thresholds on body motion, in seconds, metres and metres per second.

Each job of the rig (`floor`, `contacts`, `lock`, `lift`) holds its gates in a frozen dataclass whose fields are
made by `gate(default, unit, why)`: the unit ("s", "m" or "m/s") and a one-line reason travel with the value
(`describe` lists them), and the object checks on creation that every value is a finite positive number. A caller
overrides any of them by keyword (`ContactGates(on_speed=0.35)`), as filterpy's filters take their parameters.

Durations are judged on the stream's own timestamps, so a 60 fps stream makes the decisions a 30 fps one makes:
a run of frames lasts from the frame before its first to its last (each frame stands for the interval since the
one before it), and it has lasted `duration` once that is within half of the current frame's interval of it
(`lasted`: rounded to the nearest frame, so 0.1 s is exactly 3 frames at 30 fps and 6 at 60, whatever the
rounding of the timestamps).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

UNITS = ("s", "m", "m/s")


def gate(default: float, unit: str, why: str) -> Any:
    """A gate field: its default, its unit (one of UNITS) and a one-line reason."""
    if unit not in UNITS:
        raise ValueError(f"a gate's unit is one of {UNITS}, not {unit!r}")
    return dataclasses.field(default=default, metadata={"unit": unit, "why": why})


@dataclasses.dataclass(frozen=True)
class Gates:
    """The base of the gate objects: every field a finite positive number (`gate`)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{type(self).__name__}.{field.name} must be a finite number of {field.metadata['unit']} "
                                 f"above 0, got {value!r}")

    @classmethod
    def describe(cls) -> list[tuple[str, float, str, str]]:
        """(name, default, unit, why) of each gate."""
        return [(f.name, f.default, f.metadata["unit"], f.metadata["why"]) for f in dataclasses.fields(cls)]


def lasted(elapsed: float, duration: float, step: float) -> bool:
    """Whether a run of frames that has lasted `elapsed` seconds (from the frame before its first to the current one)
    has lasted `duration`, to the nearest frame: `step` is the current frame's interval (s)."""
    return elapsed > duration - 0.5 * step
