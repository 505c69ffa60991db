"""The contact model's live path (`LearnedContacts`: `_live_sample`, `_LiveNet`) against the reference it replaced
(`BatchContacts`: `frame_sample`, `windows`, `ContactNet.probabilities` over the same frames kept): the same
probabilities (to float rounding) and the same decisions on a held-out clip through the run's ground stage (as
bench/contact_speed.py feeds it) at 24, 30 and 60 fps, with no hindsight and 100 ms of it, with dropped frames, a
person who leaves and comes back, points unknown or absurd, and a source that starts again; for a model of other
sizes; and offline (`hindsight_contacts`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bench.contact_speed import recorded_frames
from bench.corpus import NAMES
from realtime.rig import learned_contacts
from realtime.rig.contact_model import _COLUMNS, ContactNet, _Index, default_model, frame_sample
from realtime.rig.floor import Floor
from realtime.rig.learned_contacts import (
    _LIVE,
    _TABLE,
    BatchContacts,
    LearnedContacts,
    _live_net,
    _live_sample,
    hindsight_contacts,
)

CLIP = "cmu_05_01"  # held out of the model's fit
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def frames():
    """fps -> [(timestamp, (K, 3) points, floor)] of the clip as the ground stage decides it (its floor refit as it
    goes)."""
    return {fps: recorded_frames(CLIP, fps) for fps in (24.0, 30.0, 60.0)}


def _run(cls, frames, lag: float, net: ContactNet = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(every probability the model gave (N, 2), every decision (D, 2), each frame's with no hindsight (F, 2)) of
    deciding `frames` as the ground stage does, with `lag` s of hindsight; a time not after the last starts a new
    source (the frames held are decided first)."""
    contacts = cls(frames[0][2], NAMES, net=net, lag=lag)
    given = []
    real = contacts._probabilities

    def recorded(centres, future):
        p = real(centres, future)
        given.append(np.array(p, np.float64).reshape(-1, 2))
        return p

    contacts._probabilities = recorded
    out, now, pending, last = [], [], [], -np.inf
    for timestamp, points, floor in frames:
        if timestamp <= last:
            out += [contacts.decide(t) for t in pending]
            pending = []
        last = timestamp
        contacts.floor = floor
        due = [t for t in pending if t <= timestamp - lag + 1e-6] if lag > 0 else []
        now.append(contacts.update(timestamp, points, hindsight=due))
        out.append(now[-1])
        out += [contacts.decide(t) for t in due]
        pending = pending[len(due):] + ([timestamp] if lag > 0 else [])
    out += [contacts.decide(t) for t in pending]
    return np.concatenate(given), np.array(out), np.array(now)


def _variants(frames):
    """name -> frames: as recorded; a fifth of them dropped (irregular steps); the person gone for 0.2 s and for
    0.6 s (longer than the frames kept); the left heel unknown (NaN), then every point, then a point absurdly far,
    then one at inf; the source started again half way."""
    times = np.array([t for t, _, _ in frames])
    keep = np.random.default_rng(5).random(len(frames)) >= 0.2
    unknown = []
    for i, (t, points, floor) in enumerate(frames):
        points = points.copy()
        if 20 <= i < 26:
            points[NAMES.index("left_heel")] = np.nan
        elif 40 <= i < 43:
            points[:] = np.nan
        elif 60 <= i < 62:
            points[NAMES.index("right_knee")] = 1e6
        elif 70 <= i < 72:
            points[NAMES.index("right_ankle"), 1] = -np.inf
        unknown.append((t, points, floor))
    half = len(frames) // 2
    return {"recorded": frames,
            "dropped": [f for f, k in zip(frames, keep) if k],
            "gone 0.2 s": [f for f, t in zip(frames, times) if not 1.0 <= t - times[0] < 1.2],
            "gone 0.6 s": [f for f, t in zip(frames, times) if not 1.0 <= t - times[0] < 1.6],
            "unknown": unknown,
            "started again": frames[:half] + frames[:half]}


@pytest.mark.parametrize("lag", [0.0, 0.1])
@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_the_live_path_gives_the_references_probabilities_and_decisions(frames, fps, lag):
    for name, variant in _variants(frames[fps]).items():
        live_p, live, now = _run(LearnedContacts, variant, lag)
        reference_p, reference, _ = _run(BatchContacts, variant, lag)
        assert live_p.shape == reference_p.shape and live.shape == reference.shape, name
        assert np.isfinite(live_p).all(), name
        np.testing.assert_allclose(live_p, reference_p, rtol=0, atol=TOLERANCE, err_msg=name)
        assert np.array_equal(live, reference), name
        assert live.any() and not live.all(), name  # feet planted and lifted: the decisions compared are not trivial
        if name == "unknown":  # a foot whose heel is unknown is not held
            assert not now[20:26, 0].any() and not now[40:43].any() and now[26:40].any()


def test_a_model_of_other_sizes_runs_live_as_the_reference(frames):
    """Another fit may change the hidden sizes, the window or the grid: the live path reads them from the weights."""
    rng = np.random.default_rng(3)
    base = default_model()
    h1, h2, past, future = 5, 7, 9, 4
    channels = len(base.mean)
    net = dataclasses.replace(
        base, w1=rng.normal(0, 0.3, (h1, channels, 3)).astype(np.float32), b1=rng.normal(0, 0.1, h1).astype(np.float32),
        w2=rng.normal(0, 0.3, (h2, h1, 3)).astype(np.float32), b2=rng.normal(0, 0.1, h2).astype(np.float32),
        w3=rng.normal(0, 0.2, h2 * (past + 1 + future - 6)).astype(np.float32), b3=0.1, step=0.04, past=past,
        future=future)
    for lag in (0.0, 0.12):
        live_p, live, _ = _run(LearnedContacts, frames[30.0], lag, net)
        reference_p, reference, _ = _run(BatchContacts, frames[30.0], lag, net)
        assert live_p.std() > 0.05  # probabilities that vary
        np.testing.assert_allclose(live_p, reference_p, rtol=0, atol=TOLERANCE)
        assert np.array_equal(live, reference)


def test_the_live_networks_logits_are_the_models_on_each_foot():
    net = default_model()
    rng = np.random.default_rng(0)
    scale = np.r_[np.full(20, 1.0), np.full(4, 0.5), 0.0]  # `windows`' table: heights, speeds, angles, known
    table = (rng.normal(size=(5, net.width, 25)) * scale + np.r_[np.full(20, 0.1), np.full(4, 2.0), 0.0]).astype(np.float32)
    table[..., 24] = rng.random((5, net.width)) > 0.2
    expected = np.stack([net.logits(table[:, :, _COLUMNS[side]]) for side in range(2)], axis=1)
    live = np.concatenate((table[:, :, _TABLE], np.ones((5, net.width, 1), np.float32)), axis=2)  # then its ones
    np.testing.assert_allclose(_live_net(net).logits(live), expected, rtol=1e-5, atol=1e-4)


def test_the_live_sample_is_frame_samples(frames):
    index = _Index(NAMES)
    knee, ankle = NAMES.index("left_knee"), NAMES.index("left_ankle")
    for _, points, floor in frames[30.0][::7]:
        cases = [(points, floor, None), (points, floor, np.array([0.1, -1.4, 0.3])),
                 (points, Floor(floor.normal * 3.0, floor.point), None)]  # a normal not of unit length
        for change in (np.nan, np.inf, -1e300, 2e3):
            bad = points.copy()
            bad[knee, 2] = change
            cases.append((bad, floor, None))
        same = points.copy()
        same[ankle] = same[knee]  # an angle with no direction: NaN
        cases += [(same, floor, None), (points, Floor(np.zeros(3), floor.point), None),
                  (points, Floor(np.full(3, np.nan), floor.point), None)]
        for p, f, camera in cases:
            with np.errstate(invalid="ignore", divide="ignore"):
                expected = frame_sample(p, f, index, camera)[_LIVE]
                sample, missing = _live_sample(p, f, index, camera)
            np.testing.assert_allclose(sample, expected, rtol=1e-12, atol=1e-12)
            assert missing == (not np.isfinite(expected).all())


def test_offline_hindsight_decides_as_the_reference(monkeypatch):
    """`hindsight_contacts` (world points, the camera's centre per frame) decides live as the reference does."""
    from tests.ground_synthetic import NAMES as WALKER
    from tests.ground_synthetic import camera_pose, walk

    truth = walk(150, 30.0)
    times = truth.times + np.where(np.arange(len(truth.times)) % 11 == 5, 0.006, 0.0)  # uneven steps
    centre = np.tile(camera_pose()[1], (len(times), 1)) + np.linspace(0, 0.5, len(times))[:, None] * [1.0, 0.0, 0.0]
    live = hindsight_contacts(times, truth.world, WALKER, camera=centre)
    monkeypatch.setattr(learned_contacts, "LearnedContacts", BatchContacts)
    reference = hindsight_contacts(times, truth.world, WALKER, camera=centre)
    assert np.array_equal(live, reference)
    assert live.any() and not live.all()


def test_the_speed_bench_runs_both_paths_and_finds_them_alike(capsys):
    from bench import contact_speed

    assert contact_speed.main(["--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("decisions alike") == 3 and "DIFFERENT" not in out and "load average" in out
    with pytest.raises(SystemExit) as stop:
        contact_speed.main(["--repeats", "0"])
    assert stop.value.code == 2


def test_frames_remembered_without_deciding_feed_the_later_decisions_as_decided_ones_do(frames):
    """`remember` keeps a frame for the windows without running the model (the world stage's decider while the camera
    has not moved): the later frames' probabilities are those of a decider that decided every frame."""
    clip = frames[30.0]
    every, warm = LearnedContacts(clip[0][2], NAMES), LearnedContacts(clip[0][2], NAMES)
    runs = {"every": [], "warm": []}
    for contacts, name in ((every, "every"), (warm, "warm")):
        real = contacts._probabilities

        def recorded(centres, future, real=real, name=name):
            p = real(centres, future)
            runs[name].append(np.array(p, np.float64).reshape(-1, 2)[0])
            return p

        contacts._probabilities = recorded
    half = len(clip) // 2
    for k, (timestamp, points, floor) in enumerate(clip):
        every.floor = warm.floor = floor
        every.update(timestamp, points)
        if k < half:
            warm.remember(timestamp, points)
        else:
            warm.update(timestamp, points)
    assert len(runs["warm"]) == len(clip) - half  # the model not run on the remembered frames
    np.testing.assert_allclose(runs["warm"], runs["every"][half:], atol=TOLERANCE)
