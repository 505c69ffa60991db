"""The learned contact model on a track that begins mid-motion: the project's run (tests/data/mocap cmu_35_24) cut to
begin in flight, through bench/motion.py's camera, noise and the run's own stages, holds no foot in the air on the
track's first frames; and the training script's tracks cut to begin anywhere (`bench.train_contacts.starts`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench import corpus, train_contacts
from bench import motion as bench
from realtime.rig.contact_model import RAW

RUN = "cmu_35_24"  # 30 fps; both feet off the floor from 0.47 s to 0.73 s (its truth)


def _cut(motion: corpus.Motion, truth: corpus.Truth, start: float) -> tuple[corpus.Motion, corpus.Truth]:
    """The motion from `start` s on, re-timed to begin at 0, and its truth (the whole clip's, cut)."""
    a = int(round(start * motion.fps))
    times = truth.times[a:] - truth.times[a]
    return (replace(motion, joints=motion.joints[a:]),
            corpus.Truth(times, truth.contact[a:], truth.heel[a:], truth.toes[a:], truth.airborne[a:]))


@pytest.mark.parametrize("view", ["front", "side"])
def test_a_track_begun_in_flight_holds_no_foot_after_its_first_frame(view):
    """Cut at 0.5 s the run's track begins with both feet in the air for 0.23 s: at 24 and 30 fps no foot is held on
    the frames the bench counts there after the track's first frame (the ninth stop's weights held one until 0.08-0.13 s
    from the front). The first frame itself, with no motion seen, is held by every weights tried, and at 60 fps from
    the front these hold a foot again at 0.12-0.13 s (bench/RESULTS.md, "the learned contact model (eleventh stop)")."""
    motion = corpus.project_motions([RUN])[0]
    piece, truth = _cut(motion, corpus.true_contacts(motion), 0.5)
    assert not truth.contact[:7].any()  # in flight at the cut
    for fps in (24.0, 30.0):
        at_rate = corpus.resample(piece, fps)
        run = bench.run_clip(at_rate, view, 0, truth.at(at_rate.times), contacts="learned")
        first = run.valid & (run.times > 0) & (run.times < 0.2)
        counted = ~bench.near_events(run.truth.contact, run.times) & first[:, None]
        assert counted.sum() >= 4 and not run.truth.contact[counted].any()
        assert not run.decided[counted].any(), (fps, run.decided[first].astype(int).tolist())


def test_training_cuts_tracks_to_begin_anywhere():
    """A recorded run of 2 s gives about one track per second cut from it, each beginning at a frame of the run after
    its first, as the model sees a track then: the window before the cut unknown (the mask 0), its labels the truth
    from the cut over the window's past."""
    times = np.arange(60) / 30
    truth = np.zeros((60, 2), bool)
    truth[::3, 0] = True
    run = {"times": times, "raw": np.random.default_rng(1).normal(size=(60, RAW)), "truth": truth}
    net = train_contacts.shape_only()
    cuts = train_contacts.starts(run, net, np.random.default_rng(0), 1.0)
    assert len(cuts) == 2
    for cut_times, raw, labels in cuts:
        k = int(np.flatnonzero(times == cut_times[0])[0])
        assert k >= 1 and np.array_equal(raw, run["raw"][k:])
        assert np.array_equal(labels, truth[k:k + len(labels)]) and len(labels) == min(net.past + 1, 60 - k)
        x = train_contacts.windows(cut_times, raw, cut_times[:1], np.zeros(1, int), net)  # (1, 2, W, C)
        assert not x[0, :, :net.past, -1].any() and x[0, :, net.past, -1].all()  # before the cut unknown
    assert train_contacts.starts(run, net, np.random.default_rng(0), 0.0) == []
    # the samples: the run's own frames and then the cuts' (start_cuts 0: the run's alone)
    _, y0, _ = train_contacts.samples([run], net, np.random.default_rng(0), 0.3, 0.0)
    _, y1, _ = train_contacts.samples([run], net, np.random.default_rng(0), 0.3, 1.0)
    assert len(y0) == 120 and len(y1) == 120 + 2 * sum(len(labels) for _, _, labels in cuts)


def test_the_cut_tracks_weigh_less_and_leave_the_runs_own_samples_as_they_were():
    """The cut tracks' samples weigh `start_weight` (times the near-event weight) in the loss; drawn from a generator
    of their own, the run's own samples (their hindsight draws) are those of a training without cuts."""
    times = np.arange(90) / 30
    truth = np.zeros((90, 2), bool)
    truth[10:40, 0] = truth[50:80, 1] = True
    run = {"times": times, "raw": np.random.default_rng(1).normal(size=(90, RAW)), "truth": truth}
    net = train_contacts.shape_only()
    x0, y0, w0 = train_contacts.samples([run], net, np.random.default_rng(0), 0.3, 0.0)
    x1, y1, w1 = train_contacts.samples([run], net, np.random.default_rng(0), 0.3, 1.0, 0.25,
                                        cut_rng=np.random.default_rng(5))
    own = len(y0)
    assert own == 180 and len(y1) > own  # the run's own frames first, then the cuts'
    assert np.array_equal(x1[:own], x0) and np.array_equal(y1[:own], y0) and np.array_equal(w1[:own], w0)
    assert set(np.unique(w0).tolist()) == {np.float32(0.3), 1.0}
    assert set(np.unique(w1[own:]).tolist()) <= {np.float32(0.25), np.float32(0.3 * 0.25)} and w1[own:].max() == np.float32(0.25)
    # drawn from the one generator the cuts change the run's own hindsight draws
    x2, _, _ = train_contacts.samples([run], net, np.random.default_rng(0), 0.3, 1.0, 0.25)
    assert not np.array_equal(x2[:own], x0)
