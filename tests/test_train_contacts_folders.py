"""bench/train_contacts.py --train-extra takes several folders after one flag (as well as the flag again): every
folder's clips are trained on and named in the weights' header under their folder; two folders of one name (the
header's key) are refused in one sentence."""

from __future__ import annotations

import shutil

import pytest

from bench import corpus, train_contacts
from realtime.rig.contact_model import ContactNet

TINY = ["--fps", "30", "--views", "side", "--epochs", "1"]


@pytest.fixture()
def folders(tmp_path):
    """(corpus folder, two train-extra folders) of project clips under corpus-style names."""
    made = []
    for name, clip, target in (("corpus", "cmu_07_04.bvh", "walk_cmu_07_04.bvh"),
                               ("tune", "cmu_08_11.bvh", "walk_cmu_08_11.bvh"),
                               ("runs", "cmu_35_24.bvh", "run_cmu_99_24.bvh")):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(corpus.PROJECT_FOLDER / clip, folder / target)
        (folder / "README.md").write_text(f"# {name}\n\n- Source: tests/data/mocap/{clip}\n")
        made.append(folder)
    return made


def test_one_flag_takes_two_folders_and_trains_on_both(folders, tmp_path):
    base, tune, runs = folders
    out = tmp_path / "model.npz"
    assert train_contacts.main(["--corpus", str(base), "--train-extra", str(tune), str(runs),
                                "--clips", "walk_cmu_08_11", "run_cmu_99_24", *TINY, "--out", str(out)]) == 0
    header = ContactNet.load(out).header
    assert header["clips"] == ["run_cmu_99_24", "walk_cmu_08_11"]
    assert header["train_extra"]["tune"]["clips"]["walk_cmu_08_11"]["source"] == "Source: tests/data/mocap/cmu_08_11.bvh"
    assert header["train_extra"]["runs"]["clips"]["run_cmu_99_24"]["source"] == "Source: tests/data/mocap/cmu_35_24.bvh"


def test_the_list_and_the_repeated_flag_train_the_same_clips_in_the_same_order(folders, monkeypatch):
    base, tune, runs = folders
    listed = train_contacts.training_motions(base, None, [tune, runs])
    assert [m.name for m in listed][-2:] == ["walk_cmu_08_11", "run_cmu_99_24"]  # each folder after the one before
    given = []

    def spy(folder, names=None, train_extra=(), extra=()):
        given.append(list(train_extra))
        raise corpus.CorpusError("stop before training")

    monkeypatch.setattr(train_contacts, "training_motions", spy)
    for argv in (["--train-extra", str(tune), str(runs)], ["--train-extra", str(tune), "--train-extra", str(runs)],
                 ["--train-extra", str(tune)]):
        assert train_contacts.main(["--corpus", str(base), *argv]) == 2
    assert given == [[tune, runs], [tune, runs], [tune]]


def test_two_folders_of_one_name_are_refused_in_one_sentence(folders, tmp_path, capsys):
    base, tune, _ = folders
    other = tmp_path / "elsewhere" / "tune"
    other.mkdir(parents=True)
    shutil.copy(corpus.PROJECT_FOLDER / "cmu_16_18.bvh", other / "turn_cmu_99_18.bvh")
    out = tmp_path / "m.npz"
    assert train_contacts.main(["--corpus", str(base), "--train-extra", str(tune), str(other), *TINY,
                                "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "two folders named tune" in err, err
    assert not out.exists()


def test_a_clip_named_in_passing_in_another_clips_section_gets_its_own_sections_source(tmp_path):
    """A README whose first clip's section names the second as a rejected candidate ("... kept only cut,
    run_b.bvh below"): the second clip's line and source are its own section's, not the first's."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("run_a", "run_b"):
        (folder / f"{name}.bvh").write_text("")
    (folder / "README.md").write_text(
        "# runs\n\n## run_a.bvh (category `run`)\n\n- Source: trial A.\n- Candidates not kept: trial B whole (kept only\n"
        "  cut, run_b.bvh below): its path curves.\n\n## run_b.bvh (category `run`)\n\n- Source: trial B.\n")
    named = train_contacts.provenance([folder])["runs"]["clips"]
    assert named["run_a"] == {"line": "## run_a.bvh (category `run`)", "source": "Source: trial A."}
    assert named["run_b"] == {"line": "## run_b.bvh (category `run`)", "source": "Source: trial B."}
