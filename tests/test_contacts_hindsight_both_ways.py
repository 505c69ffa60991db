"""Offline, `hindsight_contacts` reads the learned decider's hysteresis both ways: a stance begins where the model's
probability rose to `off` before it reached `on` (live, a plant waits for `on`), as it ends where the probability
falls below `off`; a rise to `off` that never reaches `on` plants nothing, and a stance does not reach back over a
frame whose heel is unknown. The model's probabilities are scripted here (`LearnedContacts._probabilities`); the
synthetic take's test (tests/test_contacts_hindsight.py) runs the model itself."""

from __future__ import annotations

import numpy as np

from realtime.rig.floor import Floor
from realtime.rig.learned_contacts import LearnedContacts, LearnedGates, hindsight_contacts
from tests.ground_synthetic import NAMES, walk

GATES = LearnedGates()
LOW, BETWEEN, HIGH = GATES.off / 2, (GATES.off + GATES.on) / 2, (GATES.on + 1) / 2
# the left foot's probability per frame: a rise through `off` to `on`, a stance, a fall below `off`, then a rise to
# `off` that never reaches `on`; the right foot's stays low
LEFT = [LOW, BETWEEN, BETWEEN, HIGH, HIGH, HIGH, BETWEEN, LOW, BETWEEN, BETWEEN, LOW, LOW]


def _scripted(monkeypatch, times):
    def probabilities(self, centres, future):
        return [[LEFT[int(np.argmin(np.abs(times - c)))], LOW] for c in np.asarray(centres).tolist()]

    monkeypatch.setattr(LearnedContacts, "_probabilities", probabilities)


def test_a_stance_begins_where_its_probability_rose_to_off(monkeypatch):
    truth = walk(len(LEFT), 30.0)
    _scripted(monkeypatch, truth.times)
    offline = hindsight_contacts(truth.times, truth.world, NAMES)
    assert offline[:, 0].tolist() == [False, True, True, True, True, True, True, False, False, False, False, False]
    assert not offline[:, 1].any()
    # live, with the same lag (every frame still kept, decided in time order), the stance waits for `on`
    live = LearnedContacts(Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3)), NAMES, lag=0.2)
    for t, points in zip(truth.times, truth.world):
        live.update(t, points)
    decided = [bool(live.decide(t)[0]) for t in truth.times]
    assert decided == [False, False, False, True, True, True, True, False, False, False, False, False]


def test_a_stance_does_not_reach_back_over_an_unknown_heel(monkeypatch):
    truth = walk(len(LEFT), 30.0)
    _scripted(monkeypatch, truth.times)
    points = truth.world.copy()
    points[1, NAMES.index("left_heel")] = np.nan
    offline = hindsight_contacts(truth.times, points, NAMES)
    assert offline[:, 0].tolist() == [False, False, True, True, True, True, True, False, False, False, False, False]
