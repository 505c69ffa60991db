"""The live cost of the avatar's feet: ms per person-frame of the bone pin on one CPU core.

The synthetic walker (tests/ground_synthetic.py, its true contacts) through the motion stage in the world, its 3D with
1 cm of noise per point. Timed per frame (time.perf_counter), each over the same frames: the pin's own work,
`realtime.rig.lock.FootPin.frame` (the resting heights) and `realtime.rig.solver.LiveSolver._pin` (the feet's targets
and the legs' IK, `realtime.rig.leg_ik.pin_leg`), and the whole `MotionStage.process` for scale. The pin runs on
the motion stage's thread and touches no drawing, encoding or disk.
Run: python bench/feet_cost.py [--seconds 20] [--fps 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.frames import Frame, Person, rounded_camera  # noqa: E402
from realtime.rig.lock import FootPin  # noqa: E402
from realtime.rig.solver import LiveSolver  # noqa: E402
from realtime.stages.motion import MotionStage  # noqa: E402
from tests.ground_synthetic import walk, world_from_camera  # noqa: E402
from tests.mocap_synthetic import NAMES  # noqa: E402

_IMAGE = np.zeros((2, 2, 3), np.uint8)


def timed(owner, name: str, spent: list):
    """Wraps `owner.name` so each call's seconds are appended to `spent`; returns the original."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    setattr(owner, name, wrapper)
    return original


def run(seconds: float, fps: float, seed: int) -> dict[str, float]:
    seen = walk(int(round(seconds * fps)), fps=fps)
    camera = rounded_camera(world_from_camera(), None, "static", True, True)
    rng = np.random.default_rng(seed)
    spent = {"pin frame": [], "pin IK": [], "motion stage": []}
    originals = [(FootPin, "frame", timed(FootPin, "frame", spent["pin frame"])),
                 (LiveSolver, "_pin", timed(LiveSolver, "_pin", spent["pin IK"]))]
    try:
        stage = MotionStage(NAMES)
        for t, stamp in enumerate(seen.times):
            points = seen.camera[t] + rng.normal(0.0, 0.01, seen.camera[t].shape)
            person = Person(box=np.zeros(4, np.float32), track_id=1, keypoints=np.zeros((len(NAMES), 2), np.float32),
                            keypoints3d=points.astype(np.float32), contacts=seen.contacts[t].copy())
            frame = Frame(index=t, timestamp=float(stamp), image=_IMAGE, people=(person,), camera=camera)
            start = time.perf_counter()
            stage.process(frame)
            spent["motion stage"].append(time.perf_counter() - start)
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    frames = len(seen.times)
    return {key: 1000.0 * sum(values) / frames for key, values in spent.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if not (np.isfinite(args.seconds) and 1.0 <= args.seconds <= 600.0):
        parser.error(f"--seconds {args.seconds}: give 1 to 600")
    if not (np.isfinite(args.fps) and 1.0 <= args.fps <= 240.0):
        parser.error(f"--fps {args.fps}: give 1 to 240")
    if not 1 <= args.repeat <= 20:
        parser.error(f"--repeat {args.repeat}: give 1 to 20")
    runs = [run(args.seconds, args.fps, seed) for seed in range(args.repeat)]
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"{key:>13}: {min(values):.3f} ms per person-frame (best of {args.repeat}; "
              f"{', '.join(f'{v:.3f}' for v in values)})")
    pin = min(r["pin frame"] + r["pin IK"] for r in runs)
    print(f"the pin in all: {pin:.3f} ms per person-frame")
    return 0


if __name__ == "__main__":
    sys.exit(main())
