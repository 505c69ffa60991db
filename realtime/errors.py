"""The one exception type a user can cause, and the signals that stop a command.

Anything a user can fix (a bad path, an unreadable video, a checkpoint of the
wrong task, no network for a download) raises `UserError` with one sentence
that says what happened and what to do. The CLI prints that sentence and exits
non-zero; everything else is a bug and keeps its traceback. Ctrl+C and SIGTERM
stop a command as `KeyboardInterrupt` / `Terminated`; `signals_held` holds them
back over a step that must not be cut in two.
"""

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class UserError(Exception):
    """A problem the user can fix; `str(err)` is one sentence ending in what to do."""

    exit_code = 2


class OutputWriteError(UserError):
    """An output file could not be written (disk full, size limit); it keeps what was written
    before. It ends the run like a failed stage (exit 1)."""

    exit_code = 1


class ReaderClosed(Exception):
    """The program reading an output stream (standard output, a pipe, a FIFO) closed it, as
    `head -n 20` does: the run ends there, normally (exit status 0), with every frame written
    until then."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl+C's KeyboardInterrupt so the same clean-up runs (exit status 143)."""


def stop_exit_code(stop: KeyboardInterrupt) -> int:
    """The exit status of a run a signal stopped: 143 for SIGTERM, 130 for Ctrl+C."""
    return 143 if isinstance(stop, Terminated) else 130


@contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl+C and SIGTERM wait until the block is done, then act as they would have (main thread only:
    Python runs signal handlers there). For steps a signal must not cut in two: a C extension's import
    (a KeyboardInterrupt inside its init can abort the interpreter), or moving an export's files into
    place together."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    saved = {sig: signal.signal(sig, lambda signum, _frame: held.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: a handler set outside Python
        if held:
            signal.raise_signal(held[-1])  # the handler back in place runs now, as it would have
