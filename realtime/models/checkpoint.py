"""Reading checkpoint files and loading them strictly with a readable report.

Safetensors first (no pickle); `.pth`/`.pt`/`.bin` only through
`torch.load(weights_only=True)`. A file that does not fit the model raises a
`UserError` that lists missing, unexpected and shape-mismatched keys instead
of a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import torch
from torch import nn

from realtime.errors import UserError


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint file, on the CPU, as stored (unwrapped from
    `state_dict` / `model` containers, `module.` prefixes removed)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"Checkpoint {path} does not exist; check the path.")
    if path.stat().st_size == 0:
        raise UserError(f"Checkpoint {path} is empty (0 bytes); delete it and download it again.")
    state_dict = _read_safetensors(path) if path.suffix == ".safetensors" else _read_torch(path)
    check_finite(state_dict, path)
    return state_dict


def check_finite(state_dict: Mapping[str, torch.Tensor], path: str | os.PathLike) -> None:
    """Refuse weights holding NaN or Inf: such a model gives confident garbage, never an error."""
    bad = [key for key, value in state_dict.items()
           if value.is_floating_point() and value.numel() and not torch.isfinite(value.sum(dtype=torch.float32))]
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise UserError(f"Checkpoint {path} holds NaN or infinite weights (in {shown}), so its outputs would be "
                        f"meaningless; delete it and download it again, or pass an intact checkpoint.")


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise UserError(
            f"Checkpoint {path} is not a readable safetensors file ({err}); it is probably truncated "
            f"or not a checkpoint, so delete it and download it again."
        ) from None


def _read_torch(path: Path) -> dict[str, torch.Tensor]:
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, pickle with disallowed globals, not a torch file at all
        raise UserError(
            f"Checkpoint {path} could not be read as a PyTorch file with weights_only=True "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); it is probably "
            f"truncated or not a checkpoint, so delete it and download it again."
        ) from None
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model"):
            if key in obj and isinstance(obj[key], Mapping):
                obj = obj[key]
                break
    if not isinstance(obj, Mapping) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise UserError(f"Checkpoint {path} holds no state dict of tensors; pass a model checkpoint file.")
    return {k.removeprefix("module."): v for k, v in obj.items()}


def mismatch_report(model: nn.Module, state_dict: Mapping[str, torch.Tensor]) -> str:
    """'' when `state_dict` fits `model` exactly, else a short readable report."""
    expected = model.state_dict()
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    shapes = [
        f"{k}: file {list(state_dict[k].shape)} vs model {list(v.shape)}"
        for k, v in expected.items()
        if k in state_dict and tuple(state_dict[k].shape) != tuple(v.shape)
    ]
    parts = []
    for label, keys in (("missing", missing), ("unexpected", unexpected), ("with other shapes", shapes)):
        if keys:
            shown = "; ".join(keys[:3]) + (f"; ... {len(keys) - 3} more" if len(keys) > 3 else "")
            parts.append(f"{len(keys)} keys {label} ({shown})")
    return ", ".join(parts)


MATCHING_CHECKPOINT = "Pass the checkpoint that matches the task and size you asked for."


def load_strict(model: nn.Module, state_dict: Mapping[str, torch.Tensor], *, source: str, what: str, hint: str = "",
                fix: str = MATCHING_CHECKPOINT) -> None:
    """Load `state_dict` into `model` with strict=True, or raise a `UserError`
    that says which keys do not fit, what the file looks like (`hint`), and what to do (`fix`)."""
    report = mismatch_report(model, state_dict)
    if report:
        looks = f" {hint}" if hint else ""
        raise UserError(f"Checkpoint {source} does not fit {what}: {report}.{looks} {fix}")
    model.load_state_dict(state_dict, strict=True)
