"""bench/contact_bound.py: the truth's own contact rule run with hindsight on measured heels (the oracle that bounds
what the heel truth's precision allows), checked on the truth itself and against bench/rig.py."""

from __future__ import annotations

import numpy as np

from bench import contact_bound as bound
from bench import rig
from tests.mocap_clips import CONTACT_HEIGHT, CONTACT_SPEED, WALKS, clip_walk, heel_contacts, load_clip


def test_the_oracle_on_the_true_heels_is_the_truth():
    """The true heels seen by the bench's camera, put back in the world by `to_world` and read by the oracle with the
    truth's own gates and no smoothing, give the true contacts exactly: the frame change and the rule are the truth's."""
    clip = load_clip(WALKS[0])
    truth = clip_walk(clip, None, 45.0)
    heels = bound.to_world(truth.camera[:, bound.HEELS])
    contacts = bound.oracle_contacts(heels, clip.fps, CONTACT_HEIGHT, CONTACT_SPEED, 1)
    assert truth.contacts.sum() > 40
    np.testing.assert_array_equal(contacts, truth.contacts)
    # a looser height gate holds more frames; the truth's own rule says so on the clip's world
    assert heel_contacts(truth.world, clip.fps, 0.05).sum() > truth.contacts.sum()


def test_a_run_scores_the_live_detector_as_bench_rig_does():
    """One run's live counts give bench/rig.py's precision and recall; the oracle's best setting is scored from the
    same frames (its recall and precision within [0, 1], a setting for every gate)."""
    clip = load_clip(WALKS[0])
    result = bound.run(WALKS[0], 90.0, 0, (0.03, 0.05))
    expected = rig.evaluate_walk(clip, 90.0, [0])[0]
    precision, recall = bound.precision_recall([result], lambda r: r["live"])
    assert abs(precision - expected["contact_precision"]) < 1e-9
    assert abs(recall - expected["contact_recall"]) < 1e-9
    assert result["truths"][0.03] == result["live"]  # the 3 cm truth is the truth
    assert len(result["oracle"]) == len(bound.HEIGHTS) * len(bound.SPEEDS) * len(bound.SMOOTHING)
    reaching, best = bound.best_oracle([result])
    assert 0.0 < best[0] <= 1.0 and 0.0 < best[1] <= 1.0
