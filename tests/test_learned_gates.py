"""The learned decider's hysteresis is its own (`LearnedGates`), not the weights' in-sample pick: a model sure of
nothing (every foot at one probability) plants at the gates' `on`, and a foot it doubts stays held down to `off`."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from realtime.rig.contact_model import default_model
from realtime.rig.floor import Floor
from realtime.rig.learned_contacts import LearnedContacts, LearnedGates
from tests.world_tracks import NAMES


def _constant(p: float):
    """The package's model with every foot at probability `p` (read-out weights nothing, its bias the logit)."""
    base = default_model()
    return dataclasses.replace(base, w3=np.zeros_like(base.w3), b3=math.log(p / (1 - p)))


def _decisions(net, gates=None, frames: int = 8) -> np.ndarray:
    floor = Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3))
    contacts = LearnedContacts(floor, NAMES, net=net, gates=gates)
    points = np.zeros((len(NAMES), 3))
    points[:, 2] = 3.0
    return np.array([contacts.update(i / 30, points) for i in range(frames)])


def test_a_foot_is_planted_at_the_gates_on_not_the_weights():
    net = _constant(0.55)
    assert net.on > 0.55  # the weights' own pick would not plant it
    planted = _decisions(net)
    assert planted[1:].all() and not planted[0].any()  # from one grid step on (no motion seen on the first frame)
    assert not _decisions(net, LearnedGates(on=net.on, off=net.off)).any()


def test_the_gates_need_off_at_most_on_within_zero_and_one():
    for on, off in ((0.5, 0.6), (1.0, 0.5), (0.5, 0.0), (float("nan"), 0.3), ("0.5", 0.3), (True, 0.3), (0.5, None)):
        with pytest.raises(ValueError, match="LearnedGates"):
            LearnedGates(on=on, off=off)
