"""Where checkpoint files come from: an explicit path, the official folder layout
under `$SAPIENS_CHECKPOINT_ROOT`, or the Hugging Face hub (its cache first).

Every failure is a `UserError` that names the file, where it was looked for,
and the command that fetches it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional, Sequence

from realtime.errors import UserError

log = logging.getLogger(__name__)

CHECKPOINT_ROOT_ENV = "SAPIENS_CHECKPOINT_ROOT"

# The person detector the official pose demo uses (RTMDet-m, person only).
DETECTOR_REPO = "facebook/sapiens-pose-bbox-detector"
DETECTOR_FILENAME = "rtmdet_m_8xb32-100e_coco-obj365-person-235e8209.pth"

# Seconds to wait for the hub before calling it unreachable (huggingface_hub itself
# retries for about 30 s when there is no network at all).
CONNECT_TIMEOUT_S = 3.0


def resolve_file(
    *,
    explicit: Optional[str | os.PathLike],
    root_relative: Sequence[str],
    repo_id: str,
    filenames: Sequence[str],
    what: str,
    fetch_command: str,
    download: bool = True,
) -> Path:
    """Find one checkpoint file, downloading it from the hub if needed.

    explicit:      a path given by the user; used as is (and must exist).
    root_relative: paths tried under `$SAPIENS_CHECKPOINT_ROOT`, in order.
    repo_id:       Hugging Face repo that serves the file.
    filenames:     names accepted in that repo, in order of preference.
    what:          words for messages, e.g. "the Sapiens2 0.4b pose checkpoint".
    fetch_command: the `sapiens-rt download ...` command that fetches it ahead of time.
    """
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise UserError(f"Checkpoint {path} does not exist; check the path, or leave the option out to use {what} from the "
                            "hub.")
        return path

    root = os.environ.get(CHECKPOINT_ROOT_ENV)
    if root:
        for rel in root_relative:
            path = Path(root).expanduser() / rel
            if path.is_file():
                return path

    cached = _from_hub_cache(repo_id, filenames)
    if cached is not None:
        return cached
    if not download:
        raise UserError(f"{_capital(what)} is not in the Hugging Face cache; run `{fetch_command}` first.")
    return _download(repo_id, filenames, what, fetch_command, root)


def _from_hub_cache(repo_id: str, filenames: Sequence[str]) -> Optional[Path]:
    from huggingface_hub import try_to_load_from_cache

    for name in filenames:
        hit = try_to_load_from_cache(repo_id, name)
        if isinstance(hit, str) and Path(hit).is_file():
            return Path(hit)
    return None


def _download(repo_id: str, filenames: Sequence[str], what: str, fetch_command: str, root: Optional[str]) -> Path:
    from huggingface_hub import hf_hub_download

    tried = f" (also looked under ${CHECKPOINT_ROOT_ENV}={root})" if root else ""
    last_error: Optional[Exception] = None
    if not hub_reachable():
        raise UserError(
            f"Could not get {what} ({repo_id}/{filenames[0]}): the hub cannot be reached (offline) and the file "
            f"is not in the local cache{tried}; run `{fetch_command}` on a machine with internet access, or set "
            f"${CHECKPOINT_ROOT_ENV} or pass the checkpoint path."
        )
    for name in filenames:
        try:
            log.info("downloading %s/%s", repo_id, name)
            return Path(hf_hub_download(repo_id, name))
        except Exception as err:  # offline, missing file, gated repo, HTTP error: all end the same way
            if _is_missing_file(err):
                last_error = err
                continue
            last_error = err
            break
    reason = _short_reason(last_error)
    raise UserError(
        f"Could not get {what} ({repo_id}/{filenames[0]}): {reason}{tried}; "
        f"run `{fetch_command}` on a machine with internet access, or set ${CHECKPOINT_ROOT_ENV} "
        f"or pass the checkpoint path."
    )


def hub_reachable() -> bool:
    """A quick TCP connect to the hub endpoint, so that no network fails in seconds, not
    after huggingface_hub's retries. Offline mode (HF_HUB_OFFLINE) counts as unreachable."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
        return False
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # only the proxy knows; let huggingface_hub try
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def _is_missing_file(err: Exception) -> bool:
    return type(err).__name__ in {"EntryNotFoundError", "RemoteEntryNotFoundError"}


def _short_reason(err: Optional[Exception]) -> str:
    if err is None:
        return "no file found"
    name = type(err).__name__
    if name in {"LocalEntryNotFoundError", "OfflineModeIsEnabled"} or "offline" in str(err).lower():
        return "the hub cannot be reached (offline) and the file is not in the local cache"
    if name in {"RepositoryNotFoundError", "GatedRepoError"}:
        return "the repository is not accessible (log in with `hf auth login` if it is gated)"
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else name
    return f"{name}: {first_line}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
