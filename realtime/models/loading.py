"""Loading released Sapiens2 checkpoints: find the file, map foreign key names,
work out the arch from tensor shapes, and load strictly with a readable report.

Accepted layouts: Meta's task files (`backbone.*` + `decode_head.*`), the
pretrain files (backbone keys without prefix), the hub's `model.safetensors`
(same keys, maybe without `rope_embed.periods`), and transformers' own naming
(`model.layer.N.attention.q_proj...`, see `hf_naming.py`).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Mapping, Optional

import torch

from realtime.errors import UserError
from realtime.models import hub, registry
from realtime.models.archs import ARCHS, DEFAULT_SIZE, SIZES, BackboneArch, size_of
from realtime.models.checkpoint import load_strict, mismatch_report, read_state_dict
from realtime.models.hf_naming import from_transformers_naming, is_transformers_naming
from realtime.models.sapiens2 import Sapiens2, rope_periods
from realtime.models.task_model import Sapiens2TaskModel, check_task, head_kwargs_for, lookup_arch, warn_if_slow_on_cpu

log = logging.getLogger(__name__)

PERIODS_KEY = "rope_embed.periods"


# ----------------------------------------------------------------------------- where files are


def hub_repo(task: str, size: str) -> str:
    repo = registry.spec(task).repo(size)
    if repo is None:
        raise UserError(f"No {task} weights are released; pass your own checkpoint with --checkpoint {task}=PATH.")
    return repo


def checkpoint_filenames(task: str, size: str) -> list[str]:
    """Names a hub repo may carry, preferred first (Meta's, then transformers')."""
    return [f"sapiens2_{size}_{task}.safetensors", "model.safetensors"]


def fetch_command(task: str, size: str) -> str:
    return f"sapiens-rt download --tasks {task} --size {size}"


def check_size(size: str) -> None:
    """A user error unless task weights of `size` are released."""
    if size == "0.1b":
        raise UserError(f"No Sapiens2 0.1b task weights are released (only its backbone); choose the size {', '.join(SIZES)}.")
    if size not in SIZES:
        raise UserError(f"Unknown size {size!r}; choose one of {', '.join(SIZES)}.")


def checkpoint_path(task: str, size: str = DEFAULT_SIZE, checkpoint: Optional[str | os.PathLike] = None, *,
                    download: bool = True) -> Path:
    """The file for (task, size): explicit path, `$SAPIENS_CHECKPOINT_ROOT/<task>/...`, HF cache, hub."""
    if checkpoint is None:
        check_size(size)
    return hub.resolve_file(
        explicit=checkpoint,
        root_relative=[f"{task}/sapiens2_{size}_{task}.safetensors"],
        repo_id=hub_repo(task, size),
        filenames=checkpoint_filenames(task, size),
        what=f"the Sapiens2 {size} {task} checkpoint",
        fetch_command=fetch_command(task, size),
        download=download,
    )


# ----------------------------------------------------------------------------- key names

def filter_state_dict(state_dict: Mapping[str, torch.Tensor], backbone_prefix: str) -> dict[str, torch.Tensor]:
    """Pure clean-up before a strict load: drop wrapper prefixes, map transformers naming,
    and fill in `rope_embed.periods` from the spec when the file lacks it."""
    sd = {k.removeprefix("module.").removeprefix("_orig_mod."): v for k, v in state_dict.items()}
    if is_transformers_naming(sd):
        sd = from_transformers_naming(sd)
    q_norm = f"{backbone_prefix}blocks.0.attn.q_norm.weight"
    periods_key = backbone_prefix + PERIODS_KEY
    if periods_key not in sd and q_norm in sd:
        log.info("checkpoint has no %s; recomputing it from the spec", periods_key)
        sd[periods_key] = rope_periods(sd[q_norm].shape[0]).float()
    elif periods_key in sd and q_norm in sd:
        expected = rope_periods(sd[q_norm].shape[0]).float()
        if sd[periods_key].shape == expected.shape and not torch.equal(sd[periods_key].to(torch.bfloat16).float(), expected):
            log.warning("%s in the checkpoint differs from the spec's values; using the file's", periods_key)
    return sd


# ----------------------------------------------------------------------------- shapes -> arch


def _indices(sd: Mapping[str, torch.Tensor], pattern: str) -> list[int]:
    rx = re.compile(pattern)
    return sorted({int(m[1]) for k in sd if (m := rx.match(k))})


def infer_backbone(sd: Mapping[str, torch.Tensor], prefix: str = "") -> Optional[BackboneArch]:
    """The backbone arch the tensors describe (a table entry when one matches), or None."""
    try:
        embed = sd[f"{prefix}patch_embed.projection.weight"].shape[0]
        head_dim = sd[f"{prefix}blocks.0.attn.q_norm.weight"].shape[0]
    except KeyError:
        return None
    layers = len(_indices(sd, rf"^{re.escape(prefix)}blocks\.(\d+)\.ln1\.weight$"))
    tokenizer = len(_indices(sd, rf"^{re.escape(prefix)}tokenizer\.blocks\.(\d+)\.ln1\.weight$"))
    found = BackboneArch("", embed, layers, embed // head_dim, tokenizer)
    for arch in ARCHS.values():
        if ((arch.embed_dim, arch.num_layers, arch.num_heads, arch.num_tokenizer_layers)
                == (embed, layers, found.num_heads, tokenizer)):
            return arch
    return BackboneArch(f"custom_e{embed}_h{found.num_heads}_l{layers}", embed, layers, found.num_heads, tokenizer)


def infer_task(sd: Mapping[str, torch.Tensor]) -> Optional[str]:
    for model in registry.all_specs():
        if f"decode_head.{model.output_layer}.weight" in sd:
            return model.name
    return None


def infer_head_kwargs(task: str, sd: Mapping[str, torch.Tensor]) -> dict:
    """Head channel lists read off the `decode_head.*` shapes (so any official size loads)."""

    def out_channels(seq: str, step: int = 1) -> list[int]:
        idx = _indices(sd, rf"^decode_head\.{seq}\.(\d+)(?:\.0)?\.weight$")
        return [sd[f"decode_head.{seq}.{i}{'.0' if seq == 'upsample_blocks' else ''}.weight"].shape[0] // step for i in idx]

    head = registry.spec(task).head
    if hasattr(head, "output_channels_arg"):  # the deconvolution heads (pose, seg)
        deconv = _indices(sd, r"^decode_head\.deconv_layers\.(\d+)\.weight$")
        kwargs = dict(
            deconv_out_channels=[sd[f"decode_head.deconv_layers.{i}.weight"].shape[1] for i in deconv],
            conv_out_channels=out_channels("conv_layers"),
        )
        kwargs[head.output_channels_arg] = sd[f"decode_head.{registry.spec(task).output_layer}.weight"].shape[0]
        return kwargs
    kwargs = dict(upsample_channels=out_channels("upsample_blocks", 4), conv_out_channels=out_channels("conv_layers"))
    if any(k.startswith("decode_head.scale_final_layer.") for k in sd):  # pointmap's scale branch
        linear = _indices(sd, r"^decode_head\.scale_final_layer\.(\d+)\.weight$")
        weights = [sd[f"decode_head.scale_final_layer.{i}.weight"] for i in linear]
        kwargs["scale_conv_out_channels"] = out_channels("scale_conv_layers")
        kwargs["scale_final_layer"] = [weights[0].shape[1]] + [w.shape[0] for w in weights]
    return kwargs


def describe(sd: Mapping[str, torch.Tensor]) -> str:
    """One sentence on what a state dict holds, e.g. 'It looks like a sapiens2_0.4b pose checkpoint.'"""
    task = infer_task(sd)
    arch = infer_backbone(sd, "backbone.") or infer_backbone(sd, "")
    if arch is None and task is None:
        return "It does not look like a Sapiens2 checkpoint at all."
    if arch is None:
        return f"It holds {'an' if task[0] in 'aeiou' else 'a'} {task} head and no backbone."
    what = f"{task} checkpoint" if task else "backbone-only (pretrain) checkpoint"
    return f"It looks like a {arch.name} {what}."


def _shown(keys: list[str], label: str) -> str:
    """'N <label> (a; b; c; ... N-3 more)', as `mismatch_report` lists keys."""
    return f"{len(keys)} {label} ({'; '.join(keys[:3])}{f'; ... {len(keys) - 3} more' if len(keys) > 3 else ''})"


def key_report(sd: Mapping[str, torch.Tensor], task: str, found: Optional[BackboneArch]) -> str:
    """What a file that is not a whole `task` checkpoint lacks or has too much, by key name."""
    parts = []
    if found is None:
        with torch.device("meta"):
            backbone = Sapiens2(lookup_arch(DEFAULT_SIZE))
        parts.append(_shown([f"backbone.{k}" for k in backbone.state_dict()], "backbone keys missing"))
    head = f"decode_head.{registry.spec(task).output_layer}.weight"
    if head not in sd:
        parts.append(f"the {task} head's keys missing ({head} and the rest of decode_head.*)")
    foreign = [k for k in sd if not k.startswith(("backbone.", "decode_head."))]
    if foreign:
        parts.append(_shown(foreign, "keys unexpected"))
    return ", ".join(parts)


# ----------------------------------------------------------------------------- public API


def load_model(
    task: str,
    checkpoint: Optional[str | os.PathLike] = None,
    *,
    arch: Optional[str] = None,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Sapiens2TaskModel:
    """A Sapiens2 task model with official weights, in eval mode (see `Sapiens2TaskModel`
    for outputs). `checkpoint` is a path; when None the file for `arch` (default 0.4b) is
    found via `$SAPIENS_CHECKPOINT_ROOT`, the HF cache, or a hub download. `arch` is
    read off the file's shapes when None. bf16/fp16 keep RoPE in bf16 as trained."""
    check_task(task)
    warn_if_slow_on_cpu(device, dtype)
    if checkpoint is None:
        size = size_of(arch) if arch else DEFAULT_SIZE
        if size not in SIZES:
            raise UserError(f"No released checkpoint exists for arch {arch!r}; pass a checkpoint path, or one of the sizes "
                            f"{', '.join(SIZES)}.")
        checkpoint = checkpoint_path(task, size)
    source = str(checkpoint)
    sd = filter_state_dict(read_state_dict(checkpoint), "backbone.")
    file_task = infer_task(sd)
    if file_task is not None and file_task != task:
        raise UserError(f"Checkpoint {source} is for {file_task}, not {task}: "
                        f"decode_head.{registry.spec(task).output_layer}.weight is missing and "
                        f"decode_head.{registry.spec(file_task).output_layer}.weight unexpected. {describe(sd)} Pass a {task} "
                        f"checkpoint, or ask for task {file_task}.")
    found = infer_backbone(sd, "backbone.")
    if arch is not None and (found is None or found.name != lookup_arch(arch).name):
        spec = lookup_arch(arch)  # the file does not look like it: build what was asked, report the difference
        kwargs = head_kwargs_for(task, spec)
    elif found is not None and file_task == task:
        spec, kwargs = found, infer_head_kwargs(task, sd)
    else:
        raise UserError(f"Checkpoint {source} is not a whole Sapiens2 {task} checkpoint: {key_report(sd, task, found)}. "
                        f"{describe(sd)} Pass a {task} checkpoint holding both the backbone and the head.")
    with torch.device("meta"):
        model = Sapiens2TaskModel(task, spec, kwargs)
    _load_into_meta(model, sd, source=source, what=f"the {spec.name} {task} model")
    model.trained_hw = declared_input_hw(checkpoint)  # None: the file does not say (the registry's size applies)
    log.info("loaded %s %s from %s", spec.name, task, source)
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)


def declared_input_hw(checkpoint: str | os.PathLike) -> Optional[tuple[int, int]]:
    """The (H, W) a checkpoint says its model was trained at (the official config's
    `backbone.img_size`, kept in a safetensors file's `model_cfg` metadata), or None."""
    if not str(checkpoint).endswith(".safetensors"):
        return None
    import json

    from safetensors import safe_open

    try:
        with safe_open(str(checkpoint), "pt") as handle:
            config = json.loads((handle.metadata() or {}).get("model_cfg", "{}"))
        h, w = config["backbone"]["img_size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (int(h), int(w)) if h > 0 and w > 0 else None


def _load_into_meta(model: torch.nn.Module, sd: dict[str, torch.Tensor], *, source: str, what: str) -> None:
    """Strict load into a model built on the meta device: the file's tensors are used as
    they are (no second copy, no allocation of a model that may not fit)."""
    if mismatch_report(model, sd):
        load_strict(model, sd, source=source, what=what, hint=describe(sd))  # raises the readable report
    model.load_state_dict(sd, strict=True, assign=True)


def load_backbone(
    checkpoint: str | os.PathLike, *, arch: Optional[str] = None, device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Sapiens2:
    """A bare Sapiens2 backbone from a pretrain file (keys without prefix; the 4K file too)."""
    source = str(checkpoint)
    sd = filter_state_dict(read_state_dict(checkpoint), "")
    spec = lookup_arch(arch) if arch else infer_backbone(sd, "")
    if spec is None:
        raise UserError(f"Checkpoint {source} holds no bare Sapiens2 backbone: {describe(sd)} Pass a pretrain checkpoint.")
    with torch.device("meta"):
        model = Sapiens2(spec)
    _load_into_meta(model, sd, source=source, what=f"the {spec.name} backbone")
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)


def cli_name(task: str) -> str:
    """The name `--tasks` shows for a task: `depth` for the pointmap model."""
    known = {spec.name: spec for spec in registry.all_specs()}
    return (known[task].cli_name if task in known else None) or task


def download_command(tasks, size: str) -> str:
    """The one `sapiens-rt download` command that fetches every file of `tasks` (and "detector")."""
    names = ",".join(cli_name(t) for t in tasks)
    return f"sapiens-rt download --tasks {names}" + ("" if list(tasks) == ["detector"] else f" --size {size}")


def missing_weights(tasks, size: str = DEFAULT_SIZE) -> list[tuple[str, str]]:
    """(task, "repo/file") for every file of `tasks` (canonical names, and "detector") that is
    neither under $SAPIENS_CHECKPOINT_ROOT nor in the Hugging Face cache; nothing is downloaded."""
    from realtime.models.rtmdet import detector_path

    check_size(size)
    missing = []
    for task in tasks:
        if task == "detector":
            where = f"{hub.DETECTOR_REPO}/{hub.DETECTOR_FILENAME}"
        else:
            where = f"{hub_repo(task, size)}/{checkpoint_filenames(task, size)[0]}"  # no weights released: raises
        try:
            detector_path(download=False) if task == "detector" else checkpoint_path(task, size, download=False)
        except UserError:
            missing.append((task, where))
    return missing


def download(tasks: list[str], size: str = DEFAULT_SIZE) -> dict[str, Path]:
    """Fetch the checkpoints of `tasks` (canonical task names, and "detector") of one size
    into the HF cache, with huggingface_hub's progress bars; returns where each went, by
    task name. (`sapiens-rt download` turns aliases such as `depth` into canonical names.)"""
    released = [s.name for s in registry.all_specs() if s.hub_repo]
    unreleased = [s.name for s in registry.all_specs() if not s.hub_repo]
    for name in tasks:
        if name not in released + ["detector"]:
            note = f" (no {' or '.join(unreleased)} weights are released)" if unreleased else ""
            raise UserError(f"Cannot download {name!r}; choose from {', '.join(released + ['detector'])}{note}.")
    names = list(tasks)
    check_size(size_of(size))
    missing = missing_weights(names, size_of(size))
    if missing and not hub.hub_reachable():
        raise UserError(f"Cannot download {', '.join(where for _, where in missing)}: the hub cannot be reached from this "
                        f"machine (offline); connect it to the internet (or set HTTPS_PROXY), or fetch the files on a "
                        f"machine with internet access and copy its Hugging Face cache here or set ${hub.CHECKPOINT_ROOT_ENV}.")
    out: dict[str, Path] = {}
    for task in names:
        if task == "detector":
            from realtime.models.rtmdet import detector_path

            out[task] = detector_path()
        else:
            out[task] = checkpoint_path(task, size_of(size))
    return out
