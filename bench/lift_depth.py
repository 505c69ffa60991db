"""What the lift knows of a foot's motion along the line of sight between depth frames.

The pointmap comes every DEPTH_PERIOD (1/6 s); between its frames the lifter (`realtime.rig.lift.Lifter`) holds a
planted or still foot on its ray nearest to where it was (its move along the line of sight 0) and carries any other
foot at its depth relative to the root. Here each foot's ankle, on each frame between depth frames, is compared with
the truth: its move along its line of sight since the last depth frame, true against

- `lift`: the lifter's own output;
- `carried`: the lifter's output before a held foot is held (the foot at its depth relative to the root);
- `knee`: on its ray at its shin's length (the last depth frame's) from the lifted knee, the root nearer the lift;
- `true knee`: the same from the true knee (moved as the lifter's frame) with the true shin: what the image's shin
  says of the ankle's depth were the knee's known;
- `floor`: on its ray at the height over the floor it had on the last depth frame (the image's drop read as a move
  along the floor instead of as a height).

Frames are classed per foot (outside `bench.motion.near_events` of the foot's own touchdowns and lift-offs): a true
contact the lifter holds, a false contact (the detector planted, the truth off), a foot off the floor held as still,
and one not held. For each class: the true move's size, each estimate's error, and the share of frames whose
estimated move is over `ContactGates.off_along` (what the detector's release along the line of sight would read).

Run: python bench/lift_depth.py [--corpus DIR] [--extra DIR ...] --clips NAME ... [--views side] [--fps 30 60]
     [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import motion as bench_motion  # noqa: E402
from bench.corpus import NAMES  # noqa: E402
from realtime.rig import lift  # noqa: E402
from realtime.rig.contacts import ContactGates  # noqa: E402

ESTIMATES = ("lift", "carried", "knee", "true knee", "floor")
CLASSES = ("true contact, held", "false contact", "off, held as still", "off, not held")
INDEX = {n: i for i, n in enumerate(NAMES)}


@contextmanager
def recording_lifters(log: list):
    """Every `Lifter.update` call while inside, appended to `log` as a dict: the lifter's id, whether it was a depth
    frame, its output, its output before the feet were held ("carried"), which feet it held, the rays' intrinsics and
    the last depth frame's points."""
    update, hold = lift.Lifter.update, lift.Lifter._hold_feet

    def held(self, out, ray, planted, camera_motion, time):
        self._carried = out.copy()
        self._held = hold(self, out, ray, planted, camera_motion, time)
        return self._held

    def updated(self, pixels, points3d=None, *args, **kwargs):
        self._carried, self._held = None, None
        out = update(self, pixels, points3d, *args, **kwargs)
        log.append(dict(lifter=id(self), depth=points3d is not None, out=None if out is None else out.copy(),
                        carried=self._carried, held=self._held, pixels=np.asarray(pixels, float).copy(),
                        intrinsics=self.intrinsics.solve() if self.intrinsics.ready else None,
                        last3d=None if self._last3d is None else self._last3d.copy()))
        return out

    lift.Lifter.update, lift.Lifter._hold_feet = updated, held
    try:
        yield
    finally:
        lift.Lifter.update, lift.Lifter._hold_feet = update, hold


def on_ray_at_distance(centre: np.ndarray, ray: np.ndarray, length: float, prior: float) -> float:
    """The depth z of the point z * ray (ray z = 1) `length` from `centre`, of the two the nearer `prior`; where none
    is (the ray passes further), the ray's nearest approach."""
    rr, rc = float(ray @ ray), float(ray @ centre)
    disc = rc * rc - rr * (float(centre @ centre) - length * length)
    if not disc >= 0:
        return rc / rr
    roots = (rc + np.array([-1.0, 1.0]) * np.sqrt(disc)) / rr
    return float(roots[np.argmin(np.abs(roots - prior))])


def study(motion, view: str, seed: int, truth=None) -> list[tuple]:
    """(class index, true move, each estimate's move) per foot and frame between depth frames of one run (metres,
    along the ankle's line of sight since the last depth frame); frames near the foot's own events left out. truth:
    `run_clip`'s (the true contacts at the motion's timestamps)."""
    log: list = []
    record: dict = {}
    with recording_lifters(log):
        run = bench_motion.run_clip(motion, view, seed, truth, record=record)
    frames = len(run.times)
    ours = [entry for entry in log if entry["lifter"] == log[-1]["lifter"]][-frames:]
    truth3d = record["true_camera"]
    near = bench_motion.near_events(run.truth.contact, run.times)
    rows, last = [], None
    for t, entry in enumerate(ours):
        if entry["depth"]:
            last = t
            continue
        up = record["frames"][t].floor_up
        if last is None or entry["out"] is None or entry["intrinsics"] is None or entry["held"] is None or up is None:
            continue
        ray = lift.rays(entry["pixels"], entry["intrinsics"])
        before, true_before = ours[last]["out"], truth3d[last]
        for side, name in enumerate(("left", "right")):
            if near[t, side]:
                continue
            ankle, knee = INDEX[f"{name}_ankle"], INDEX[f"{name}_knee"]
            sight = entry["out"][ankle] / np.linalg.norm(entry["out"][ankle])
            prior = entry["out"][ankle, 2]
            shin = np.linalg.norm(entry["last3d"][ankle] - entry["last3d"][knee])
            true_shin = np.linalg.norm(truth3d[t, ankle] - truth3d[t, knee])
            true_knee = truth3d[t, knee] + (before[ankle] - true_before[ankle])
            depths = (on_ray_at_distance(entry["out"][knee], ray[ankle], shin, prior),
                      on_ray_at_distance(true_knee, ray[ankle], true_shin, prior),
                      float(up @ before[ankle]) / float(up @ ray[ankle]))
            points = (entry["out"][ankle], entry["carried"][ankle], *(ray[ankle] * z for z in depths))
            moves = [float((p - before[ankle]) @ sight) for p in points]
            true_move = float((truth3d[t, ankle] - true_before[ankle]) @ sight)
            on, decided, held = run.truth.contact[t, side], run.decided[t, side], entry["held"][side]
            kind = 0 if on and held else 1 if not on and decided else 2 if not on and held else 3 if not on else -1
            if kind >= 0:
                rows.append((kind, true_move, *moves))
    return rows


def table(rows: list[tuple], gate: float) -> list[str]:
    """Per class: frames, the true move's median size and its share of frames over `gate`, each estimate's median and
    90th-percentile error (cm) and its share of frames moved over `gate`."""
    rows_array = np.array(rows, float).reshape(-1, 2 + len(ESTIMATES))
    lines = [f"{'class':20s} {'n':>4s} {'true':>11s}  " + "  ".join(f"{e:>17s}" for e in ESTIMATES),
             f"{'':20s} {'':>4s} {'cm, >g':>11s}  " + "  ".join(f"{'err 50/90 cm, >g':>17s}" for _ in ESTIMATES)]
    for kind, label in enumerate(CLASSES):
        part = rows_array[rows_array[:, 0] == kind]
        if not len(part):
            continue
        true_move = part[:, 1]
        cells = []
        for k in range(len(ESTIMATES)):
            error = np.abs(part[:, 2 + k] - true_move) * 100
            over = np.mean(np.abs(part[:, 2 + k]) > gate)
            cells.append(f"{np.median(error):5.1f} {np.percentile(error, 90):5.1f} {over:5.2f}")
        true_cell = f"{np.median(np.abs(true_move)) * 100:5.1f} {np.mean(np.abs(true_move) > gate):5.2f}"
        lines.append(f"{label:20s} {len(part):4d} {true_cell}  " + "  ".join(
            f"{c:>17s}" for c in cells))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--extra", type=Path, action="append", metavar="DIR")
    parser.add_argument("--clips", nargs="+", required=True)
    parser.add_argument("--views", nargs="+", default=["side"], choices=list(bench_motion.VIEWS))
    parser.add_argument("--fps", type=float, nargs="+", default=[30.0, 60.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    motions = {m.name: m for m in bench_motion.select(argparse.Namespace(
        corpus=args.corpus, extra=args.extra, clips=args.clips, categories=None, held_out_only=False))}
    truths = {name: corpus.true_contacts(m) for name, m in motions.items()}  # at the clip's own rate, as the bench
    gate = ContactGates().off_along
    for view in args.views:
        for fps in args.fps:
            rows = []
            for name in args.clips:
                at = corpus.resample(motions[name], fps)
                for seed in args.seeds:
                    rows += study(at, view, seed, truths[name].at(at.times))
            print(f"\n{view}, {fps:g} fps, {', '.join(args.clips)}, seeds {args.seeds} (g = off_along "
                  f"{gate * 100:.1f} cm)")
            print("\n".join(table(rows, gate)))


if __name__ == "__main__":
    main()
