"""How much contact precision the measured heels allow: the heel truth's own rule, run on them with hindsight.

The true contacts of the real walks (`tests.mocap_clips.heel_contacts`) are a heel within CONTACT_HEIGHT (3 cm) of
its lowest in the clip and slower than CONTACT_SPEED (0.15 m/s) along the floor. The live detector
(`realtime.rig.contacts.ContactDetector`) reads heels measured by the ground stage (bench/rig.py's chain: noisy 2D every
frame, a noisy, scale-jittered pointmap every 5th, 3D lifted between). Here an oracle gets far more than the live
detector has: the whole take at once (hindsight), the true floor (the measured heels put in the capture's world
frame), the heels smoothed zero-phase over W frames, and the truth's rule itself, its height and speed gates swept
(H, V). Where even that does not reach a precision of 0.90 at a recall of 0.90, no detector reading these heels
does: the gap is the measurement's (a 1-2 cm rise of a heel through about 7 mm of noise a frame), not the rule's.

Also printed: the live detector scored against the truth with its height gate moved (`--truth-heights`), which shows
how far after the truth's heel-off the detector's stances end.

Run: python bench/contact_bound.py [--motion walks held-out unseen] [--headings 0 45 90 135 180] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.ndimage import uniform_filter1d

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import rig  # noqa: E402
from tests.ground_synthetic import camera_pose  # noqa: E402
from tests.mocap_clips import HELD_OUT, NAMES, UNSEEN, WALKS, clip_walk, heel_contacts, load_clip  # noqa: E402

MOTIONS = {"walks": WALKS, "held-out": HELD_OUT, "unseen": UNSEEN}
HEIGHTS = (0.02, 0.025, 0.03, 0.035, 0.04, 0.05)  # m: the oracle's heel height gates
SPEEDS = (0.1, 0.15, 0.2, 0.3)  # m/s: its speed gates
SMOOTHING = (1, 3, 5)  # frames: its zero-phase smoothing of the measured heels
GOAL = 0.90
HEELS = [NAMES.index("left_heel"), NAMES.index("right_heel")]


def to_world(points_camera: np.ndarray) -> np.ndarray:
    """(..., 3) metres in the bench's camera (`tests.ground_synthetic.camera_pose`, which `clip_walk` sees through) ->
    the walk's world (y up, the floor at 0)."""
    rotation, centre = camera_pose()
    return points_camera @ rotation + centre


def oracle_contacts(heels_world: np.ndarray, fps: float, height: float, speed: float, smoothing: int) -> np.ndarray:
    """(T, 2, 3) heels in the world (rows without a heel NaN) -> (T, 2) the truth's rule on them, with hindsight:
    smoothed zero-phase over `smoothing` frames, read only on the rows where both heels are known."""
    rows = np.flatnonzero(np.isfinite(heels_world).all(axis=(1, 2)))
    out = np.zeros(heels_world.shape[:2], bool)
    if len(rows) < 3:
        return out
    heels = heels_world[rows]
    if smoothing > 1:
        heels = uniform_filter1d(heels, smoothing, axis=0, mode="nearest")
    joints = np.full((len(rows), len(NAMES), 3), np.nan)
    joints[:, HEELS] = heels
    out[rows] = heel_contacts(joints, fps, height, speed)
    return out


def run(name: str, heading: float, seed: int, truth_heights) -> dict:
    """One clip, heading and seed through bench/rig.py's chain: the live detector's and the oracle's (per setting)
    true positives and counts, and the live detector against truths of other heel heights."""
    clip = load_clip(name)
    truth = clip_walk(clip, None, heading)
    record: dict = {}
    rig.evaluate(len(truth.times), seed, truth=truth, warmup=[clip_walk(clip, heading=heading)] * rig.warmup_passes(clip),
                 record=record)
    grounded, truth_contacts, live = record["grounded"], record["truth_contacts"], record["contacts"]
    heels = to_world(record["lifted"][:, HEELS])
    heels[~grounded] = np.nan

    def counts(contacts, against=truth_contacts):
        contacts = contacts & grounded[:, None]
        return int((contacts & against).sum()), int(contacts.sum()), int(against.sum())

    oracle = {(h, v, w): counts(oracle_contacts(heels, clip.fps, h, v, w))
              for h in HEIGHTS for v in SPEEDS for w in SMOOTHING}
    other_truths = {h: counts(live, heel_contacts(truth.world, clip.fps, h) & grounded[:, None]) for h in truth_heights}
    return {"name": name, "heading": heading, "live": counts(live), "oracle": oracle, "truths": other_truths}


def precision_recall(runs, pick) -> tuple[float, float]:
    """Means over runs of the precision and recall of the (true positives, held, true) counts `pick(run)`."""
    tp, held, true = np.array([pick(r) for r in runs], float).T
    return float(np.mean(tp / np.maximum(held, 1))), float(np.mean(tp / np.maximum(true, 1)))


def best_oracle(runs) -> tuple[tuple | None, tuple]:
    """The oracle's setting with the best mean precision at a mean recall of GOAL or more (None if none reaches it),
    and the best precision at any recall: each (precision, recall, (height, speed, smoothing))."""
    scored = [(*precision_recall(runs, lambda r, k=key: r["oracle"][k]), key) for key in runs[0]["oracle"]]
    reaching = [s for s in scored if s[1] >= GOAL]
    return (max(reaching) if reaching else None), max(scored)


def describe(result) -> str:
    if result is None:
        return f"none reaches recall {GOAL:.2f}"
    precision, recall, (height, speed, smoothing) = result
    return f"P {precision:.3f} R {recall:.3f} (heel within {100 * height:g} cm, {speed:g} m/s, over {smoothing} frames)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--motion", nargs="+", choices=sorted(MOTIONS), default=["walks", "held-out", "unseen"],
                        help="which real walks (tests/data/mocap): the tuned ones, the held-out ones, the unseen ones")
    parser.add_argument("--headings", type=float, nargs="+", default=[0.0, 45.0, 90.0, 135.0, 180.0],
                        help="the walks turned this many degrees about the vertical (0: straight away from the camera)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--truth-heights", type=float, nargs="+", default=[0.03, 0.04, 0.05],
                        help="heel height gates (m) of the truths the live detector is also scored against (3 cm: the truth)")
    args = parser.parse_args()
    names = [name for motion in args.motion for name in MOTIONS[motion]]
    runs = []
    for name in names:
        for heading in args.headings:
            for seed in args.seeds:
                runs.append(run(name, heading, seed, args.truth_heights))
            print(f"{name} at {heading:g} deg done", file=sys.stderr, flush=True)
    print(f"{len(runs)} runs: {', '.join(names)}; headings {' '.join(f'{h:g}' for h in args.headings)}; "
          f"seeds {' '.join(map(str, args.seeds))}")
    print("live detector:          P %.3f R %.3f" % precision_recall(runs, lambda r: r["live"]))
    reaching, best = best_oracle(runs)
    print(f"oracle, one setting:    {describe(reaching)}; best P at any recall: {describe(best)}")
    for height in args.truth_heights:
        print(f"live against a heel truth of {100 * height:g} cm: P %.3f R %.3f"
              % precision_recall(runs, lambda r, h=height: r["truths"][h]))
    print("per clip and heading (the oracle's setting chosen for each):")
    for name in names:
        for heading in args.headings:
            subset = [r for r in runs if r["name"] == name and r["heading"] == heading]
            live = precision_recall(subset, lambda r: r["live"])
            print(f"  {name} {heading:5g}: live P {live[0]:.3f} R {live[1]:.3f}; oracle {describe(best_oracle(subset)[0])}")


if __name__ == "__main__":
    main()
