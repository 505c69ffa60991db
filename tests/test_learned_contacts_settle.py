"""The learned decider plants no foot before a track's frames span one step of the model's grid (its first look at
the feet's motion): the project's run (tests/data/mocap cmu_35_24) cut to begin in flight, through bench/motion.py's
camera, noise and the run's own stages, holds no foot on its first frames, where every weights trained held the foot
just lifted (low and flat, it reads as planted with no motion seen); a walk that begins standing holds its standing
foot from one step on."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from bench import motion as bench
from realtime.rig.contact_model import default_model
from tests.test_contact_model_starts import RUN, _cut


@pytest.mark.parametrize("view", ["front", "45"])
def test_a_track_begun_mid_stride_plants_nothing_before_one_grid_step(view):
    """Cut at 0.5 s the run's left foot has just left the floor (the truth has it off): the trained weights read it as
    planted on the track's first frame (p 0.99 at 30 fps) and, held, the lifter pinned it there on the next."""
    step = default_model().step
    motion = corpus.project_motions([RUN])[0]
    piece, truth = _cut(motion, corpus.true_contacts(motion), 0.5)
    assert not truth.contact[:2].any()
    for fps in (24.0, 30.0, 60.0):
        at_rate = corpus.resample(piece, fps)
        run = bench.run_clip(at_rate, view, 0, truth.at(at_rate.times), contacts="learned")
        first = run.valid & (run.times < step - 1e-6)
        assert first.sum() == (2 if fps == 60.0 else 1)
        assert not run.decided[first].any(), (fps, run.decided[first].astype(int).tolist())


def test_a_track_begun_standing_plants_its_standing_foot_from_one_grid_step():
    """The run from its start stands on its right foot for 0.1 s: held from the first frame one grid step on, at
    every rate."""
    step = default_model().step
    motion = corpus.project_motions([RUN])[0]
    truth = corpus.true_contacts(motion)
    assert truth.contact[:3, 1].all()
    for fps in (24.0, 30.0, 60.0):
        at_rate = corpus.resample(motion, fps)
        run = bench.run_clip(at_rate, "front", 0, truth.at(at_rate.times), contacts="learned")
        settled = np.flatnonzero(run.valid & (run.times >= step - 1e-6))[0]
        assert not run.decided[:settled].any()
        assert run.decided[settled, 1], (fps, run.decided[:6].astype(int).tolist())
