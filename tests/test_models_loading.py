"""Checkpoint loading: strict reports for wrong task / arch / broken files, the
transformers naming, files without `rope_embed.periods`, where files are found,
and the `download` command offline."""

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from realtime.cli import main
from realtime.errors import UserError
from realtime.models import build_model, download, load_backbone, load_model
from realtime.models.hf_naming import from_transformers_naming
from realtime.models.hub import DETECTOR_FILENAME, DETECTOR_REPO
from realtime.models.sapiens2 import rope_periods


@pytest.fixture(scope="module")
def pose_file(fixtures_dir):
    return fixtures_dir / "pose_weights.safetensors"


@pytest.fixture(scope="module")
def pose_io(fixtures_dir):
    return load_file(str(fixtures_dir / "pose_io.safetensors"))


def _heatmaps(model, io):
    with torch.no_grad():
        return model(io["input"])


def test_wrong_task_names_what_the_file_is(pose_file):
    with pytest.raises(UserError) as err:
        load_model("seg", pose_file)
    msg = str(err.value)
    assert "is for pose, not seg" in msg and "fixture_e32_h4_l18 pose checkpoint" in msg and msg.endswith(".")
    assert "decode_head.conv_seg.weight is missing and decode_head.conv_pose.weight unexpected" in msg


def test_wrong_arch_gives_the_key_report(pose_file):
    with pytest.raises(UserError) as err:
        load_model("pose", pose_file, arch="sapiens2_0.4b")
    msg = str(err.value)
    assert "does not fit the sapiens2_0.4b pose model" in msg
    assert "keys with other shapes" in msg and "keys missing" in msg  # 24 vs 18 layers, 1024 vs 32 wide
    assert "backbone.cls_token: file [1, 1, 32] vs model [1, 1, 1024]" in msg
    assert "It looks like a fixture_e32_h4_l18 pose checkpoint." in msg
    assert load_model("pose", pose_file, arch="fixture_e32_h4_l18").arch == "fixture_e32_h4_l18"  # the right arch loads


def test_truncated_and_foreign_files(tmp_path, pose_file):
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(pose_file.read_bytes()[:100_000])
    with pytest.raises(UserError, match="truncated"):
        load_model("pose", cut)
    other = tmp_path / "other.safetensors"
    save_file({"conv.weight": torch.zeros(2, 2)}, str(other))
    with pytest.raises(UserError, match="does not look like a Sapiens2 checkpoint"):
        load_model("pose", other)


def test_backbone_only_file_is_recognised(fixtures_dir):
    with pytest.raises(UserError) as err:
        load_model("pose", fixtures_dir / "backbone_weights.safetensors")
    assert "fixture_e64_h4_l18 backbone-only (pretrain) checkpoint" in str(err.value)
    with pytest.raises(UserError, match="holds no bare Sapiens2 backbone"):
        load_backbone(fixtures_dir / "pose_weights.safetensors")


def _to_transformers_naming(sd: dict, layer: str) -> dict:
    """Official keys -> transformers' Sapiens2 names (written independently of the loader);
    `layer` is "model.layer" (older transformers) or "layer" (newer)."""
    out = {}
    for key, value in sd.items():
        parts = key.split(".")
        if key.startswith("decode_head."):
            name, rest = parts[1], parts[2:]
            if name.startswith("conv_") and name != "conv_layers":
                new = "decode_head.predictor." + rest[-1]
            elif name == "deconv_layers":
                new = f"decode_head.deconv_layers.{int(rest[0]) // 3}.conv.{rest[-1]}"
            elif name == "conv_layers":
                new = f"decode_head.conv_layers.{int(rest[0]) // 3}.convolution.{rest[-1]}"
            elif name == "input_conv":
                new = f"decode_head.input_conv.convolution.{rest[-1]}"
            elif name == "upsample_blocks":
                new = f"decode_head.upsample_layers.{rest[0]}.conv.{rest[-1]}"
            elif name == "scale_conv_layers":
                new = f"scale_head.conv_layers.{int(rest[0]) // 3}.convolution.{rest[-1]}"
            else:  # scale_final_layer
                new = f"scale_head.predictor.mlp.{rest[0]}.{rest[-1]}"
            out[new] = value
            continue
        k = key.removeprefix("backbone.")
        parts = k.split(".")
        if k == "cls_token":
            new = "embeddings.cls_token"
        elif k == "storage_tokens":
            new = "embeddings.register_tokens"
        elif k.startswith("patch_embed.projection."):
            new = "embeddings.patch_embeddings." + parts[-1]
        elif k == "rope_embed.periods":
            new = "rope_embeddings.periods"
        elif k == "ln1.weight":
            new = "norm.weight"
        else:
            i, rest = parts[1], ".".join(parts[2:])
            if rest.startswith("ffn.w12."):
                gate, up = value.chunk(2)
                out[f"sapiens2.{layer}.{i}.mlp.gate_proj.{parts[-1]}"] = gate
                out[f"sapiens2.{layer}.{i}.mlp.up_proj.{parts[-1]}"] = up
                continue
            table = {"ln1.weight": "norm1.weight", "ln2.weight": "norm2.weight", "attn.gamma.weight": "layer_scale1.lambda1",
                     "ffn.w3.weight": "mlp.down_proj.weight", "ffn.w3.bias": "mlp.down_proj.bias",
                     "attn.q_norm.weight": "attention.q_norm.weight", "attn.k_norm.weight": "attention.k_norm.weight"}
            for a, b in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("proj", "o_proj")):
                for p in ("weight", "bias"):
                    table[f"attn.{a}.{p}"] = f"attention.{b}.{p}"
            new = f"{layer}.{i}.{table[rest]}"
        out["sapiens2." + new] = value
    return out


@pytest.mark.parametrize("task,layer", [("pose", "model.layer"), ("seg", "layer"), ("pointmap", "layer")])
def test_transformers_naming_loads_and_gives_the_same_output(tmp_path, fixtures_dir, task, layer):
    path_official = fixtures_dir / f"{task}_weights.safetensors"
    official = load_file(str(path_official))
    renamed = _to_transformers_naming(official, layer)
    assert f"sapiens2.{layer}.9.attention.q_proj.weight" in renamed and "backbone.cls_token" not in renamed
    assert not any(k.startswith("decode_head.conv_") and "layers" not in k for k in renamed)
    path = tmp_path / "model.safetensors"
    save_file(renamed, str(path))
    model = load_model(task, path)
    assert model.arch == "fixture_e32_h4_l18"
    assert set(from_transformers_naming(renamed)) == set(official)
    io = load_file(str(fixtures_dir / f"{task}_io.safetensors"))
    a, b = _heatmaps(model, io), _heatmaps(load_model(task, path_official), io)
    for x, y in zip(a if task == "pointmap" else [a], b if task == "pointmap" else [b]):
        assert torch.allclose(x, y, rtol=1e-5, atol=1e-5)  # same weights; BLAS may pick other kernels per buffer


def test_missing_periods_are_recomputed(tmp_path, pose_file, pose_io):
    sd = load_file(str(pose_file))
    del sd["backbone.rope_embed.periods"]
    path = tmp_path / "model.safetensors"
    save_file(sd, str(path))
    model = load_model("pose", path)
    assert torch.equal(model.backbone.rope_embed.periods, rope_periods(8))
    assert torch.equal(_heatmaps(model, pose_io), _heatmaps(load_model("pose", pose_file), pose_io))


def test_checkpoint_root_layout_is_found(tmp_path, monkeypatch, pose_file, pose_io):
    (tmp_path / "pose").mkdir()
    shutil.copy(pose_file, tmp_path / "pose" / "sapiens2_0.4b_pose.safetensors")
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    model = load_model("pose")  # default size 0.4b; the arch then comes from the file
    assert model.arch == "fixture_e32_h4_l18"
    assert download(["pose"], "0.4b") == {"pose": tmp_path / "pose" / "sapiens2_0.4b_pose.safetensors"}


def test_offline_without_file_says_how_to_fetch(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(UserError) as err:
        load_model("normal", arch="1b")
    msg = str(err.value)
    assert "facebook/sapiens2-normal-1b/sapiens2_1b_normal.safetensors" in msg
    assert "`sapiens-rt download --tasks normal --size 1b`" in msg and "offline" in msg
    with pytest.raises(UserError, match=f"{DETECTOR_REPO}/{DETECTOR_FILENAME}"):
        download(["detector"])
    assert main(["download", "--tasks", "pose,seg", "--size", "0.4b"]) == 2
    err = capsys.readouterr().err  # both files at once; offline, download does not tell you to run download
    assert "facebook/sapiens2-pose-0.4b" in err and "facebook/sapiens2-seg-0.4b" in err and "offline" in err
    assert "sapiens-rt download" not in err
    assert main(["download", "--tasks", "pose,albedo"]) == 2
    assert "no albedo weights are released" in capsys.readouterr().err


def test_cli_download_prints_where_files_are(tmp_path, monkeypatch, capsys, pose_file):
    (tmp_path / "seg").mkdir()
    shutil.copy(pose_file, tmp_path / "seg" / "sapiens2_1b_seg.safetensors")
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(tmp_path))
    assert main(["download", "--tasks", "seg", "--size", "1b"]) == 0
    assert capsys.readouterr().out.strip() == f"seg: {tmp_path / 'seg' / 'sapiens2_1b_seg.safetensors'}"


def test_unknown_task_and_arch():
    with pytest.raises(UserError, match="Unknown task 'depth'"):
        build_model("depth", "0.4b")
    with pytest.raises(UserError, match="Unknown arch '3b'"):
        build_model("pose", "3b")
    with pytest.raises(UserError, match="No pose head is defined for fixture_e64_h4_l18"):
        build_model("pose", "fixture_e64_h4_l18")


def test_albedo_round_trip_and_released_sizes_only(tmp_path):
    model = build_model("albedo", "fixture_e32_h4_l18")
    path = tmp_path / "albedo.safetensors"
    save_file(model.state_dict(), str(path))
    loaded = load_model("albedo", path)
    x = torch.randn(1, 3, 64, 48)
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    with pytest.raises(UserError, match="No released checkpoint exists for arch 'fixture_e32_h4_l18'"):
        load_model("pose", arch="fixture_e32_h4_l18")


def test_0p1b_is_no_size_choice_while_no_0p1b_task_weights_exist(capsys):
    sentence = "No Sapiens2 0.1b task weights are released (only its backbone); choose the size 0.4b, 0.8b, 1b, 5b."
    with pytest.raises(UserError) as err:
        download(["pose"], "0.1b")
    assert str(err.value) == sentence
    with pytest.raises(UserError, match="No released checkpoint exists for arch '0.1b'"):
        load_model("pose", arch="0.1b")
    with pytest.raises(UserError, match="No pose head is defined for sapiens2_0.1b"):
        build_model("pose", "0.1b")  # no head shapes are made up for it
    with pytest.raises(SystemExit) as exit_:
        main(["run", "clip.mp4", "--size", "0.1b"])
    assert exit_.value.code == 2 and "invalid choice: '0.1b'" in capsys.readouterr().err


def test_unreachable_hub_fails_before_any_download_attempt(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there

    def no_download(*args, **kwargs):
        raise AssertionError("hf_hub_download must not be tried when the hub is unreachable")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_download)
    with pytest.raises(UserError, match="cannot be reached"):
        load_model("seg", arch="0.8b")


def test_a_checkpoint_that_declares_its_input_size_runs_at_it(tmp_path, fixtures_dir):
    """The fixture's metadata says it was trained at 64x48: without --input-size the run uses
    that size (the tracks header's model card says so), not the released models' 1024x768."""
    import json

    from media import gaussian_marker, write_video
    from realtime.cli import main
    from realtime.models.loading import declared_input_hw

    assert declared_input_hw(fixtures_dir / "pose_weights.safetensors") == (64, 48)
    assert declared_input_hw(fixtures_dir / "pointmap_weights.safetensors") == (256, 128)
    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 40, 48, 8)] * 2, fps=10)
    tracks = tmp_path / "t.jsonl"
    assert main(["run", str(clip), "--tasks", "pose", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
                 "--boxes-from", "frame", "--device", "cpu", "--no-video", "--no-progress", "--tracks", str(tracks)]) == 0
    header = json.loads(tracks.read_text().splitlines()[0])
    assert header["model"]["input_size"] == [64, 48]
    tracks.unlink()
    assert main(["run", str(clip), "--tasks", "pose", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
                 "--boxes-from", "frame", "--device", "cpu", "--no-video", "--no-progress", "--tracks", str(tracks),
                 "--input-size", "128x96"]) == 0
    assert json.loads(tracks.read_text().splitlines()[0])["model"]["input_size"] == [128, 96]
