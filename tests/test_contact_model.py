"""The learned foot-contact model (realtime/rig/contact_model.py): its weights file, its numpy inference against
torch's layers, its decisions on a held-out project clip (tests/data/mocap, through bench/motion.py's camera, noise and
the run's own stages) at 24, 30 and 60 fps and with hindsight, hostile inputs, the ground stage's fixed lag, and a
tiny run of its training script (bench/train_contacts.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bench import corpus
from bench import motion as bench
from realtime.frames import Frame
from realtime.rig.contact_model import FEATURES, ContactNet, default_model, windows
from realtime.rig.floor import Floor
from realtime.rig.learned_contacts import LearnedContacts
from realtime.stages import GroundStage

CLIP = "cmu_05_01"  # a walk of a subject held out of the model's fit (bench.corpus.HELD_OUT)


@pytest.fixture(scope="module")
def clip():
    return corpus.project_motions([CLIP])[0]


@pytest.fixture(scope="module")
def runs(clip):
    """(lag s, fps) -> bench.motion.Run of the clip seen from the side, noise seed 0."""
    truth = corpus.true_contacts(clip)
    out = {}
    for lag in (0.0, 0.1):
        for fps in (24.0, 30.0, 60.0):
            at_rate = corpus.resample(clip, fps)
            out[lag, fps] = bench.run_clip(at_rate, "side", 0, truth.at(at_rate.times), lag=lag, contacts="learned")
    return out


def test_the_weights_load_and_name_the_clips_they_were_fitted_on():
    net = default_model()
    assert net.header["clips"] and CLIP not in net.header["clips"]
    assert not set(net.header["clips"]) & set(corpus.HELD_OUT)  # nothing held out was trained on
    assert set(net.header["clips"]) <= {m for m in corpus.PROJECT} | {c for c in net.header["clips"] if "_cmu_" in c}
    assert net.header["features"] == list(FEATURES) and net.w1.shape[1] == len(FEATURES)
    assert "bench/train_contacts.py" in net.header["command"]
    assert 1000 <= net.parameters <= 20000  # "a few thousand"
    assert 0 < net.off <= net.on < 1 and net.step > 0 and net.future >= 3


def test_the_numpy_inference_is_torchs_layers():
    torch = pytest.importorskip("torch")
    net = default_model()
    x = np.random.default_rng(0).normal(size=(7, net.width, len(FEATURES))).astype(np.float32) * net.scale + net.mean
    hidden, c = len(net.b1), len(FEATURES)
    model = torch.nn.Sequential(torch.nn.Conv1d(c, hidden, 3), torch.nn.ReLU(),
                                torch.nn.Conv1d(hidden, len(net.b2), 3, dilation=2), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(len(net.w3), 1))
    with torch.no_grad():
        for layer, (w, b) in zip((model[0], model[2], model[5]), ((net.w1, net.b1), (net.w2, net.b2), (net.w3[None], [net.b3]))):
            layer.weight.copy_(torch.tensor(w))
            layer.bias.copy_(torch.tensor(np.asarray(b, np.float32)))
        expected = model(torch.tensor(((x - net.mean) / net.scale).transpose(0, 2, 1).copy()))[:, 0].numpy()
    np.testing.assert_allclose(net.logits(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lag", [0.0, 0.1])
def test_planted_feet_are_planted_and_swinging_feet_released_on_a_held_out_walk(runs, lag):
    for fps in (24.0, 30.0, 60.0):
        run = runs[lag, fps]
        assert run.valid.all()
        tp, fp, fn = bench.contact_counts(run.decided, run.truth.contact, run.times, run.valid)
        # measured: P 0.99-1.00, R 1.00 at every rate and lag
        assert tp / (tp + fp) >= 0.95 and tp / (tp + fn) >= 0.95
        counted = ~bench.near_events(run.truth.contact, run.times)
        for side in range(2):  # each foot swings and plants
            swinging = ~run.truth.contact[:, side] & counted[:, side]
            planted = run.truth.contact[:, side] & counted[:, side]
            assert swinging.sum() >= 0.1 * fps and planted.sum() >= 0.3 * fps
            assert (~run.decided[swinging, side]).mean() >= 0.9
            assert run.decided[planted, side].mean() >= 0.95


def test_24_30_and_60_fps_decide_alike_at_common_timestamps(runs):
    for lag in (0.0, 0.1):
        for a, b in ((30.0, 60.0), (24.0, 60.0), (24.0, 30.0)):
            ra, rb = runs[lag, a], runs[lag, b]
            alike, compared = bench.agreement(ra.times, ra.decided, rb.times, rb.decided, ra.valid, rb.valid)
            assert compared >= 40
            assert alike / compared >= 0.95  # measured 0.97-1.00


def _stream(contacts: LearnedContacts, truth, names, lift_from: int | None, lag_frames: int) -> list[np.ndarray]:
    """Each frame's decision with `lag_frames` of hindsight (decided when the frame that many later comes; the last
    ones at the end) of the walker `truth`, its left foot lifted 4 cm a frame from frame `lift_from` on."""
    foot = [names.index(n) for n in ("left_heel", "left_big_toe", "left_small_toe", "left_ankle")]
    out = []
    for t in range(len(truth.times)):
        points = truth.camera[t].copy()
        if lift_from is not None and t >= lift_from:
            points[foot] += truth.up * 0.04 * (t - lift_from + 1)
        due = [truth.times[t - lag_frames]] if lag_frames and t >= lag_frames else []
        now = contacts.update(truth.times[t], points, hindsight=due)
        out += [contacts.decide(d) for d in due] if lag_frames else [now]
    return out + [contacts.decide(truth.times[t]) for t in range(len(truth.times) - lag_frames, len(truth.times))
                  if lag_frames]


def test_a_lag_sees_ahead():
    """A foot that lifts off fast in mid-stance: with hindsight the model sees it coming on the frames before (their
    odds of contact drop); with none they are decided as if nothing came after them; either way the frames
    before the lag are decided alike and the lifted foot is released within the bench's 67 ms of the lift-off,
    with hindsight no later than without."""
    from realtime.rig.contact_model import _Index, frame_sample
    from tests.ground_synthetic import NAMES, walk

    truth = walk(60, 30.0)
    heel = NAMES.index("left_heel")
    floor = Floor(truth.up, truth.camera[0, heel] - truth.up * truth.world[0, heel, 1])
    plain = {lag: np.array(_stream(LearnedContacts(floor, NAMES, lag=lag), truth, NAMES, None, frames))
             for lag, frames in ((0.0, 0), (0.1, 3))}
    held = plain[0.0][:, 0] & plain[0.1][:, 0]
    lift = next(t for t in range(20, 50) if held[t - 6:t + 4].all())  # mid-stance: planted either way
    lifted_off = (truth.times[lift - 1] + truth.times[lift]) / 2  # the truth's lift-off: 4 cm up on frame `lift`
    released = {}
    for lag, frames in ((0.0, 0), (0.1, 3)):
        a = plain[lag]
        b = np.array(_stream(LearnedContacts(floor, NAMES, lag=lag), truth, NAMES, lift, frames))
        assert len(a) == len(b) == len(truth.times)
        assert np.array_equal(a[:lift - frames], b[:lift - frames])  # the past is the same
        assert not b[truth.times > lifted_off + bench.TOLERANCE, 0].any()  # released within the bench's tolerance
        released[lag] = lift + int(np.argmin(b[lift:, 0]))
    assert released[0.1] <= released[0.0]  # hindsight never releases it later
    net, index = default_model(), _Index(NAMES)
    foot = [NAMES.index(n) for n in ("left_heel", "left_big_toe", "left_small_toe", "left_ankle")]
    lifted = truth.camera.copy()
    lifted[lift:, foot] += truth.up * 0.04 * (np.arange(len(lifted) - lift) + 1)[:, None, None]
    raw = {k: np.array([frame_sample(p, floor, index) for p in points]) for k, points in (("a", truth.camera), ("b", lifted))}
    for future in (0, 3):
        logit = {k: net.logits(windows(truth.times, r, truth.times[[lift - 1]], np.array([future]), net)[:, 0])[0]
                 for k, r in raw.items()}  # the contact's log-odds on the frame before the lift
        assert (logit["b"] < logit["a"] - 1.0) if future else (logit["b"] == logit["a"])


def test_the_future_is_read_only_with_hindsight():
    """A window's frames after the frame decided change its input only where it may see them."""
    net = default_model()
    times = np.arange(40) / 30
    raw = np.random.default_rng(1).normal(size=(40, 30))
    changed = raw.copy()
    changed[21:] += 1.0
    for future in (0, 3):
        a, b = (windows(times, r, times[[20]], np.array([future]), net) for r in (raw, changed))
        assert np.array_equal(a, b) == (future == 0)


def test_non_finite_points_never_give_non_finite_decisions():
    from tests.ground_synthetic import NAMES, walk

    truth = walk(90, 30.0)
    heel = NAMES.index("left_heel")
    floor = Floor(truth.up, truth.camera[0, heel] - truth.up * truth.world[0, heel, 1])  # the world's y = 0
    contacts = LearnedContacts(floor, NAMES, lag=0.1)
    out = []
    for t in range(90):
        points = truth.camera[t].copy()
        if 30 <= t < 40:
            points[:] = np.nan  # the person unseen
        elif 40 <= t < 50:
            points[heel] = np.inf
        elif 50 <= t < 55:
            points[heel] = -1e300
        decided = contacts.update(truth.times[t], points, hindsight=[truth.times[t - 3]] if t >= 3 else [])
        assert decided.dtype == bool and decided.shape == (2,)
        if 30 <= t < 50:
            assert not decided[0]  # its heel unknown: the left foot is not held
        if t >= 3:
            late = contacts.decide(truth.times[t - 3])
            assert late.dtype == bool and late.shape == (2,)
        out.append(decided)
        assert np.isfinite(contacts._probabilities(np.array([truth.times[t]]), np.array([0]))).all()
    assert np.array(out)[60:].any()  # it decides again once the points are back
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="finite timestamp"):
            contacts.update(bad, truth.camera[0])


def _frame(index: int, timestamp: float) -> Frame:
    return Frame(index=index, timestamp=timestamp, image=np.zeros((4, 4, 3), np.uint8), people=())


def test_the_ground_stage_with_a_lag_lets_every_frame_go_once_in_order_after_the_lag():
    stage = GroundStage(corpus.NAMES, lag=0.1)
    with pytest.raises(ValueError, match="push"):
        stage.process(_frame(0, 0.0))
    out = []
    for i in range(30):
        left = stage.push(_frame(i, i / 30))
        assert all(f.timestamp <= i / 30 - 0.1 + 1e-6 for f in left)
        out += left
    assert [f.index for f in out] == list(range(27))
    out += stage.flush()
    assert [f.index for f in out] == list(range(30)) and stage.flush() == []
    assert GroundStage(corpus.NAMES).push(_frame(0, 0.0))[0].index == 0  # no lag: at once
    for bad in (-0.1, float("nan"), float("inf"), 5.0, "0.1", True):
        with pytest.raises(ValueError, match="lag"):
            GroundStage(corpus.NAMES, lag=bad)


def test_a_tiny_training_run_writes_a_loadable_model(tmp_path):
    from bench import train_contacts

    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(corpus.PROJECT_FOLDER / "cmu_08_11.bvh", folder / "walk_cmu_08_11.bvh")  # a training clip as a corpus's
    out = tmp_path / "model.npz"
    assert train_contacts.main(["--corpus", str(folder), "--clips", "walk_cmu_08_11", "--fps", "30", "--views", "side",
                                "--epochs", "1", "--out", str(out)]) == 0
    net = ContactNet.load(out)
    assert net.header["clips"] == ["walk_cmu_08_11"] and net.header["rates_fps"] == [30.0]
    assert json.loads(json.dumps(net.header))["scores"]["future_0"]["recall"] > 0
    x = np.zeros((2, net.width, len(FEATURES)), np.float32)
    assert np.isfinite(net.probabilities(x)).all()
    assert train_contacts.main(["--corpus", str(folder), "--clips", "cmu_05_01", "--out", str(out)]) == 2  # held out
