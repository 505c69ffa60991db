"""The learned contact model's cost per person-frame on this CPU (`realtime.rig.contact_model.LearnedContacts`).

A clip of the project (tests/data/mocap) seen as bench/motion.py sees it (its camera, noise and scene, 30 fps, from the
side), through the egomotion and ground stages once; then, per frame as the ground stage calls it, `update` alone
(--motion-lag 0) and `update` plus `decide` with hindsight (--motion-lag 100 and 200), timed over every frame: CPU time
of this process (`time.process_time`: what the model costs, not what other programs on a shared machine take) and
wall time, the best of --repeats passes. Also the model calls per frame (counted) and its size.

    python bench/contact_speed.py [--clip cmu_05_01] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import motion as motion_bench  # noqa: E402
from bench.corpus import NAMES  # noqa: E402
from realtime.rig import contact_model  # noqa: E402
from realtime.rig.contact_model import LearnedContacts, default_model  # noqa: E402
from realtime.stages import EgomotionStage, GroundStage  # noqa: E402

LAGS_MS = (0, 100, 200)


def recorded_frames(name: str, fps: float = 30.0) -> list[tuple[float, np.ndarray, object]]:
    """(timestamp, (K, 3) points, floor) of each frame of clip `name` the ground stage decided contacts on."""
    motion = corpus.resample(corpus.project_motions([name])[0], fps)
    walk = motion_bench.seen(motion, "side", corpus.true_contacts(motion))
    ground = GroundStage(NAMES, contacts="learned")
    stages = [EgomotionStage(camera="static"), ground]
    frames = [(f.timestamp, f.people[0].keypoints3d.astype(np.float64), ground.floor)
              for f in motion_bench.run_frames(stages, motion, walk, 0) if f.people[0].contacts is not None]
    for stage in stages:
        stage.close()
    return frames


def one_pass(frames, lag: float, net) -> tuple[float, float, int]:
    """(CPU s, wall s, model calls) of deciding every frame as the ground stage does with `lag` s of hindsight."""
    contacts = LearnedContacts(frames[0][2], NAMES, net=net, lag=lag)
    calls = 0
    real = net.logits

    def counted(x):
        nonlocal calls
        calls += 1
        return real(x)

    object.__setattr__(net, "logits", counted)  # count the model's passes (a frozen dataclass: on the instance)
    try:
        pending: list[float] = []
        cpu, wall = time.process_time(), time.perf_counter()
        for timestamp, points, floor in frames:
            contacts.floor = floor
            due = [t for t in pending if t <= timestamp - lag + 1e-6] if lag > 0 else []
            contacts.update(timestamp, points, hindsight=due)
            for t in due:
                contacts.decide(t)
            pending = pending[len(due):] + ([timestamp] if lag > 0 else [])
        for t in pending:
            contacts.decide(t)
        return time.process_time() - cpu, time.perf_counter() - wall, calls
    finally:
        object.__delattr__(net, "logits")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="cmu_05_01", choices=sorted(corpus.PROJECT))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    frames = recorded_frames(args.clip)
    net = default_model()
    print(f"{net.parameters} parameters, {Path(contact_model.__file__).parent.parent / 'data' / contact_model.WEIGHTS}; "
          f"{len(frames)} frames of {args.clip} at 30 fps")
    for lag_ms in LAGS_MS:
        runs = [one_pass(frames, lag_ms / 1000, net) for _ in range(args.repeats)]
        cpu, wall, calls = min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]
        print(f"--motion-lag {lag_ms:3d}: {1000 * cpu / len(frames):.3f} ms CPU, {1000 * wall / len(frames):.3f} ms wall per "
              f"person-frame (best of {args.repeats}); {calls / len(frames):.2f} model passes per frame")
    return 0


if __name__ == "__main__":
    sys.exit(main())
