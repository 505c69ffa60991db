"""bench/train_contacts.py --train-extra: folders of more training clips, named in the weights' header with their
README's provenance; hostile folders and held-out clips refused with one sentence (exit 2). --near-weight: the loss's
weight of frames near a true event, and --seed, torch's seed: both named in the header, hostile values refused
likewise."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from bench import corpus, train_contacts
from bench.motion import near_events
from realtime.rig.contact_model import RAW, ContactNet

TINY = ["--fps", "30", "--views", "side", "--epochs", "1"]


@pytest.fixture()
def folders(tmp_path):
    """(corpus folder, train-extra folder, held-out extra folder) of project clips under corpus-style names."""
    made = []
    for name, clip, target in (("corpus", "cmu_07_04.bvh", "walk_cmu_07_04.bvh"),
                               ("train", "cmu_08_11.bvh", "walk_cmu_08_11.bvh"),
                               ("extra", "cmu_07_06.bvh", "walk_cmu_07_06.bvh")):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(corpus.PROJECT_FOLDER / clip, folder / target)
        made.append(folder)
    (made[1] / "README.md").write_text("# clips\n\n- Source: tests/data/mocap (CMU)\n\n| file | source |\n|---|---|\n"
                                       "| walk_cmu_08_11.bvh | tests/data/mocap/cmu_08_11.bvh |\n")
    return made


def test_a_train_extra_clip_is_trained_on_and_named_with_its_provenance(folders, tmp_path):
    base, train, extra = folders
    out = tmp_path / "model.npz"
    assert train_contacts.main(["--corpus", str(base), "--train-extra", str(train), "--extra", str(extra),
                                "--clips", "walk_cmu_08_11", *TINY, "--out", str(out)]) == 0
    header = ContactNet.load(out).header
    assert header["clips"] == ["walk_cmu_08_11"] and "--train-extra" in header["command"]
    assert header["near_weight"] == train_contacts.NEAR_WEIGHT and header["torch_seed"] == train_contacts.TORCH_SEED
    named = header["train_extra"]["train"]
    assert named["source"] == "Source: tests/data/mocap (CMU)"
    assert named["clips"] == {"walk_cmu_08_11": {"line": "| walk_cmu_08_11.bvh | tests/data/mocap/cmu_08_11.bvh |",
                                                 "source": "Source: tests/data/mocap (CMU)"}}


def test_each_train_extra_clip_is_named_with_the_source_of_its_own_readme_section(tmp_path):
    """A folder of clips from two sources (as /work/mocap-tune's README: a table under the folder's source, then a
    section per clip with its own): each clip gets its section's 'Source:' paragraph, whole."""
    folder = tmp_path / "tune"
    folder.mkdir()
    for name in ("jump_a", "kick_b", "sit_c"):
        (folder / f"{name}.bvh").write_text("")
    (folder / "README.md").write_text(
        "# Tuning clips\n\nSource: repository one at commit\nabc123, file one.bvh.\n\n| file | motion |\n|---|---|\n"
        "| jump_a.bvh | jumps |\n\n## kick_b.bvh (a kick)\n\n- File: `kick_b.bvh`. Source: repository two at commit\n"
        "  def456, file two.bvh.\n- Motion: a kick.\n\n## sit_c.bvh\n\n- Motion: a sit, no source line.\n")
    named = train_contacts.provenance([folder])["tune"]
    assert named["source"] == "Source: repository one at commit abc123, file one.bvh."
    assert named["clips"]["jump_a"] == {"line": "| jump_a.bvh | jumps |", "source": named["source"]}
    assert named["clips"]["kick_b"] == {"line": "## kick_b.bvh (a kick)",
                                        "source": "Source: repository two at commit def456, file two.bvh."}
    assert named["clips"]["sit_c"] == {"line": "## sit_c.bvh", "source": named["source"]}  # none of its own


def test_without_train_extra_nothing_more_is_trained_on(folders, tmp_path):
    base, train, _ = folders
    with pytest.raises(corpus.CorpusError, match="no training clip named walk_cmu_08_11"):
        train_contacts.training_motions(base, ["walk_cmu_08_11"])
    names = {m.name for m in train_contacts.training_motions(base, None, [train])}
    assert "walk_cmu_08_11" in names and "walk_cmu_07_04" in names and not names & set(corpus.HELD_OUT)


def _refused(capsys, argv, words):
    assert train_contacts.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and words in err, err
    return err


def test_hostile_train_extra_folders_are_refused_in_one_sentence(folders, tmp_path, capsys):
    base, train, extra = folders
    run = ["--corpus", str(base), *TINY, "--out", str(tmp_path / "m.npz")]
    _refused(capsys, run + ["--train-extra", str(tmp_path / "missing")], "give --train-extra a folder of BVH files")
    (tmp_path / "empty").mkdir()
    _refused(capsys, run + ["--train-extra", str(tmp_path / "empty")], "no .bvh files")
    _refused(capsys, run + ["--train-extra", str(train / "walk_cmu_08_11.bvh")], "is not a folder")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "jump_cmu_99_01.bvh").write_text("not a motion capture file\n")
    _refused(capsys, run + ["--train-extra", str(junk)], "is not a readable BVH file")
    assert not (tmp_path / "m.npz").exists()  # nothing written on a refusal


def test_held_out_clips_are_never_trained_on(folders, tmp_path, capsys):
    base, train, extra = folders
    run = ["--corpus", str(base), *TINY, "--out", str(tmp_path / "m.npz")]
    held = tmp_path / "held"
    held.mkdir()
    shutil.copy(corpus.PROJECT_FOLDER / "cmu_05_01.bvh", held / "cmu_05_01.bvh")  # named in bench.corpus.HELD_OUT
    _refused(capsys, run + ["--train-extra", str(held)], "is a held-out clip")
    # an --extra (held-out) folder's clip, under its own name or copied under another
    _refused(capsys, run + ["--train-extra", str(extra), "--extra", str(extra)], "is a held-out clip")
    shutil.copy(extra / "walk_cmu_07_06.bvh", train / "walk_cmu_99_06.bvh")
    _refused(capsys, run + ["--train-extra", str(train), "--extra", str(extra)], "is a held-out clip")
    _refused(capsys, run + ["--train-extra", str(train), "--extra", str(tmp_path / "missing")], "--extra")
    # a clip of the corpus (or the project) given again
    shutil.copy(base / "walk_cmu_07_04.bvh", held / "walk_cmu_07_04.bvh")
    (held / "cmu_05_01.bvh").unlink()
    _refused(capsys, run + ["--train-extra", str(held)], "already trained on")


def test_near_weight_weighs_the_frames_near_a_true_event():
    """The left foot lifts off at frame 15 of a 30 fps run: the frames within the bench's tolerance of it weigh
    --near-weight in the loss, every other frame (and the right foot, never changing) 1."""
    times = np.arange(30) / 30
    truth = np.zeros((30, 2), bool)
    truth[:15, 0] = True
    run = {"times": times, "raw": np.random.default_rng(0).normal(size=(30, RAW)), "truth": truth}
    near = near_events(truth, times).reshape(-1)
    assert 0 < near.sum() < 10 and not near_events(truth, times)[:, 1].any()
    for weight in (0.3, 1.0, 0.05):
        _, y, w = train_contacts.samples([run], train_contacts.shape_only(), np.random.default_rng(0), weight, 0.0)
        assert np.array_equal(y, truth.reshape(-1)) and np.all(w[near] == np.float32(weight)) and np.all(w[~near] == 1)


def test_near_weight_is_named_and_hostile_values_are_refused(folders, tmp_path, capsys):
    base, train, extra = folders
    out = tmp_path / "m.npz"
    run = ["--corpus", str(base), "--clips", "walk_cmu_07_04", *TINY, "--out", str(out)]
    for value in ("nan", "inf", "-1", "0", "1.5", "abc", "", "1e400"):
        _refused(capsys, run + ["--near-weight", value], "--near-weight must be a number above 0 and at most 1")
        assert not out.exists()
    assert train_contacts.main(run + ["--near-weight", "1"]) == 0
    assert ContactNet.load(out).header["near_weight"] == 1.0


def test_the_seed_is_torchs_named_and_hostile_values_are_refused(folders, tmp_path, capsys):
    base, _, _ = folders
    run = ["--corpus", str(base), "--clips", "walk_cmu_07_04", *TINY]
    for value in ("-1", "1.5", "abc", "", "4294967296", "1e3", "\u00b2"):
        _refused(capsys, run + ["--out", str(tmp_path / "m.npz"), "--seed", value], "--seed must be a whole number")
        assert not (tmp_path / "m.npz").exists()
    nets = {}
    for seed in ("0", "1"):
        assert train_contacts.main(run + ["--out", str(tmp_path / f"{seed}.npz"), "--seed", seed]) == 0
        nets[seed] = ContactNet.load(tmp_path / f"{seed}.npz")
        assert nets[seed].header["torch_seed"] == int(seed)
    assert not np.array_equal(nets["0"].w1, nets["1"].w1)  # another start, another model
