"""A heel coming down from a swing behind toes already down plants at `ContactGates.on_speed_landing` while it slows
(issue 51, thirteenth stop): subject 131's stylised walks land toes first, and the heel, still swinging down at
0.3-1.5 m/s across the line of sight, held the onset back (`on_speed`) for 1-6 frames the truth has the foot on the
floor, the avatar's unheld foot following the lifted one 10-90 mm per 1/30 s: a quarter to a third of the clips' slide
(bench/RESULTS.md, "Issue 51: late touchdowns, ... (thirteenth stop)"). A heel-first landing (the toes still coming
down) waits for `on_speed` as before: planted earlier, the walks' holds slid more."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from bench import motion as motion_bench
from realtime.rig.contacts import ContactDetector, ContactGates
from realtime.rig.floor import Floor
from tests.mocap_clips import NAMES

FPS = 30.0
# the heel's speed across the line of sight on each frame from 0.3 s: down from its swing, slowing to a stop
HEEL_SPEEDS = [1.5, 1.0, 0.7, 0.5, 0.42, 0.38, 0.34, 0.3, 0.26, 0.2, 0.12, 0.06, 0.0]


def _landing(toes_first: bool, gates: ContactGates | None = None) -> int:
    """A foot 4 m ahead of the camera swinging across the line of sight 15 cm above a level floor for 0.3 s, then
    its heel coming down to the floor as it slows (`HEEL_SPEEDS`); its toes down and still from 0.3 s
    (`toes_first`) or moving with the heel 2 cm above the floor (a heel-first landing, the foot still rolling
    down). Returns the frame the left foot is first held (30 fps)."""
    detector = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES, gates=gates or ContactGates())
    heel, toes = NAMES.index("left_heel"), [NAMES.index("left_big_toe"), NAMES.index("left_small_toe")]
    x, frames = 0.0, int(0.3 * FPS) + len(HEEL_SPEEDS) + 5
    for i in range(frames):
        t = i / FPS
        k = i - int(0.3 * FPS)
        speed = 1.5 if k < 0 else HEEL_SPEEDS[min(k, len(HEEL_SPEEDS) - 1)]
        x += speed / FPS
        up = 0.15 if k < 0 else max(0.05 - 0.01 * k, 0.0)
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = [x, -up, 4.0]  # y is down: -y is up
        if k < 0 or not toes_first:
            toe_x, toe_up = x + 0.2, (0.15 if k < 0 else 0.02)
        else:
            toe_x, toe_up = int(0.3 * FPS) * 1.5 / FPS + 0.25, 0.0  # down ahead of the heel, still
        points[toes] = [[toe_x, -toe_up, 3.8], [toe_x + 0.05, -toe_up, 3.8]]
        if detector.update(t, points)[0]:
            return i
    return frames


def test_a_heel_coming_down_behind_still_toes_plants_while_it_slows():
    """Toes first: held once the heel is slower than on_speed_landing and slowing, 2 frames before the heel is
    slower than on_speed (as with on_speed_landing at on_speed: the rule off)."""
    gates = ContactGates()
    off = ContactGates(on_speed_landing=gates.on_speed)
    early, late = _landing(True), _landing(True, off)
    assert early < late
    assert HEEL_SPEEDS[early - int(0.3 * FPS)] < gates.on_speed_landing


def test_a_heel_first_landing_waits_for_on_speed():
    """The toes coming down with the heel (not still): held on the same frame as with the rule off."""
    off = ContactGates(on_speed_landing=ContactGates().on_speed)
    assert _landing(False) == _landing(False, off)


def _run(name: str, view: str, fps: float) -> motion_bench.Run:
    """The project's clip `name` seen from `view` at `fps`, seed 0, judged as bench/motion.py judges it."""
    motion = corpus.project_motions([name])[0]
    at_rate = corpus.resample(motion, fps)
    midway = "both" if fps > motion.fps + 1e-6 else "later"
    return motion_bench.run_clip(at_rate, view, 0, corpus.true_contacts(motion).at(at_rate.times, midway=midway))


def _slide(run: motion_bench.Run) -> float:
    """The avatar's slide (mm per 1/30 s) during true contact, as bench/motion.py measures it."""
    steps = [motion_bench.slide_steps(run.feet[:, side, part], down[:, side], run.times)
             for side in range(2) for part, down in enumerate((run.truth.heel, run.truth.toes))]
    return float(np.concatenate(steps).mean())


@pytest.mark.parametrize("view, fps, most", [("side", 30.0, 0.8), ("side", 60.0, 0.55)])
def test_a_stylised_walks_toes_first_landings_slide_less(view, fps, most):
    """cmu_131_03 from the side: the avatar's slide during true contact under `most` mm per 1/30 s (before the rule:
    1.26 at 30 fps, 0.67 at 60; with it 0.64 / 0.43)."""
    assert _slide(_run("cmu_131_03", view, fps)) < most


def test_a_walks_heel_first_landings_are_not_planted_early():
    """cmu_07_06 from the front at 30 fps: slide 0.83 mm before and with the rule; planting every slowing heel
    under on_speed_landing (toes down or not) made it 1.87 (holds begun as the heel still moved)."""
    assert _slide(_run("cmu_07_06", "front", 30.0)) < 1.0
