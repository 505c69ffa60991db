import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from realtime.errors import UserError
from realtime.models.checkpoint import load_strict, read_state_dict
from realtime.models.hub import resolve_file


def test_truncated_and_empty_files_give_clear_errors(tmp_path):
    good = tmp_path / "m.safetensors"
    save_file({"w": torch.zeros(64, 64)}, str(good))
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(good.read_bytes()[:200])
    with pytest.raises(UserError, match="truncated"):
        read_state_dict(cut)
    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="empty"):
        read_state_dict(empty)
    text = tmp_path / "notes.pth"
    text.write_text("hello")
    with pytest.raises(UserError, match="weights_only"):
        read_state_dict(text)


def test_pth_unwraps_state_dict_and_module_prefix(tmp_path):
    path = tmp_path / "det.pth"
    torch.save({"meta": {"a": 1}, "state_dict": {"module.x.weight": torch.ones(2)}}, path)
    assert list(read_state_dict(path)) == ["x.weight"]


def test_strict_load_reports_keys():
    model = nn.Sequential(nn.Linear(2, 3))
    sd = {"0.weight": torch.zeros(4, 2), "extra": torch.zeros(1)}
    with pytest.raises(UserError) as err:
        load_strict(model, sd, source="f.safetensors", what="the test model")
    msg = str(err.value)
    assert "1 keys missing (0.bias)" in msg and "1 keys unexpected (extra)" in msg
    assert "0.weight: file [4, 2] vs model [3, 2]" in msg


def test_offline_missing_file_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    with pytest.raises(UserError) as err:
        resolve_file(explicit=None, root_relative=["pose/x.safetensors"], repo_id="facebook/sapiens2-pose-0.4b",
                     filenames=["sapiens2_0.4b_pose.safetensors"], what="the Sapiens2 0.4b pose checkpoint",
                     fetch_command="sapiens-rt download --tasks pose --size 0.4b")
    msg = str(err.value)
    assert "facebook/sapiens2-pose-0.4b/sapiens2_0.4b_pose.safetensors" in msg
    assert "sapiens-rt download --tasks pose --size 0.4b" in msg and "offline" in msg
    root = tmp_path / "root"
    (root / "pose").mkdir(parents=True)
    (root / "pose" / "x.safetensors").write_bytes(b"1")
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(root))
    assert resolve_file(explicit=None, root_relative=["pose/x.safetensors"], repo_id="r/r", filenames=["f"],
                        what="w", fetch_command="c") == root / "pose" / "x.safetensors"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_checkpoint_with_non_finite_weights_is_refused_in_one_sentence(tmp_path, capsys, fixtures_dir, bad):
    from safetensors.torch import load_file, save_file

    from media import numbered_frames, write_video
    from realtime.cli import main

    sd = load_file(str(fixtures_dir / "pose_weights.safetensors"))
    key = sorted(k for k in sd if k.endswith("weight"))[3]
    sd[key] = sd[key].clone()
    sd[key].view(-1)[5] = bad
    save_file(sd, str(tmp_path / "broken.safetensors"))
    src = write_video(tmp_path / "v.mp4", numbered_frames(2))
    code = main(["run", str(src), "--tasks", "pose", "--boxes-from", "frame", "--device", "cpu", "--no-progress",
                 "--output-dir", str(tmp_path / "rec"), "--checkpoint", f"pose={tmp_path / 'broken.safetensors'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "NaN or infinite weights" in err and key in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "rec").exists()
