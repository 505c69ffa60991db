"""The learned contact model's cost per person-frame on this CPU: the live path (`LearnedContacts`) against the
reference path it replaced (`BatchContacts`: `frame_sample`, `windows`, `ContactNet.probabilities`), in one run.

A clip of the project (tests/data/mocap) seen as bench/motion.py sees it (its camera, noise and scene, 30 fps, from the
side), through the egomotion and ground stages once; then, per frame as the ground stage calls it, `update` alone
(--motion-lag 0) and `update` plus `decide` with hindsight (--motion-lag 100 and 200), timed over every frame: CPU time
of this process (`time.process_time`: what the model costs, not what other programs on a shared machine take) and
wall time, the best of --repeats passes of each path, the passes of the two paths interleaved so that both see the
machine alike; then their ratio. Also the model passes per frame, whether both paths decided every frame alike, and
the machine and its load average before and after.

    python bench/contact_speed.py [--clip cmu_05_01] [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import motion as motion_bench  # noqa: E402
from bench.corpus import NAMES  # noqa: E402
from realtime.rig import contact_model  # noqa: E402
from realtime.rig.contact_model import default_model  # noqa: E402
from realtime.rig.learned_contacts import BatchContacts, LearnedContacts  # noqa: E402
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


def one_pass(frames, lag: float, net, path=LearnedContacts) -> tuple[float, float, int, np.ndarray]:
    """(CPU s, wall s, model passes, every decision) of deciding every frame as the ground stage does with `lag` s of
    hindsight, by `path` (`LearnedContacts` or `BatchContacts`)."""
    contacts = path(frames[0][2], NAMES, net=net, lag=lag)
    calls = 0
    real = contacts._probabilities

    def counted(centres, future):
        nonlocal calls
        calls += 1
        return real(centres, future)

    contacts._probabilities = counted  # count the model's passes
    decided = []
    pending: list[float] = []
    cpu, wall = time.process_time(), time.perf_counter()
    for timestamp, points, floor in frames:
        contacts.floor = floor
        due = [t for t in pending if t <= timestamp - lag + 1e-6] if lag > 0 else []
        decided.append(contacts.update(timestamp, points, hindsight=due))
        for t in due:
            decided.append(contacts.decide(t))
        pending = pending[len(due):] + ([timestamp] if lag > 0 else [])
    for t in pending:
        decided.append(contacts.decide(t))
    return time.process_time() - cpu, time.perf_counter() - wall, calls, np.array(decided)


def machine() -> str:
    """This machine's CPU model and cores, and its load average (1, 5, 15 minutes)."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            name = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), name)
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return f"{name}, {os.cpu_count()} cores, load average {load}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="cmu_05_01", choices=sorted(corpus.PROJECT))
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    frames = recorded_frames(args.clip)
    net = default_model()
    print(f"{net.parameters} parameters, {Path(contact_model.__file__).parent.parent / 'data' / contact_model.WEIGHTS}; "
          f"{len(frames)} frames of {args.clip} at 30 fps")
    print(f"before: {machine()}")
    for lag_ms in LAGS_MS:
        runs = {path: [] for path in (BatchContacts, LearnedContacts)}
        for _ in range(args.repeats):  # interleaved: both paths see the machine alike
            for path, passes in runs.items():
                passes.append(one_pass(frames, lag_ms / 1000, net, path))
        best = {path: (min(r[0] for r in passes) / len(frames), min(r[1] for r in passes) / len(frames))
                for path, passes in runs.items()}
        old, new = best[BatchContacts], best[LearnedContacts]
        alike = all(np.array_equal(runs[BatchContacts][0][3], r[3]) for r in runs[LearnedContacts])
        print(f"--motion-lag {lag_ms:3d}: live {1000 * new[0]:.3f} ms CPU ({1000 * new[1]:.3f} wall), reference "
              f"{1000 * old[0]:.3f} ms CPU ({1000 * old[1]:.3f} wall) per person-frame, best of {args.repeats}: "
              f"{old[0] / new[0]:.2f}x; {runs[LearnedContacts][0][2] / len(frames):.2f} model passes per frame; "
              f"decisions {'alike' if alike else 'DIFFERENT'}")
    print(f"after: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
