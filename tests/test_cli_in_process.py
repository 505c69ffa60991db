"""`realtime.cli.main(argv)` called from Python: it returns the exit status and gives the caller's
Ctrl+C / SIGTERM handlers back, whether the command ended, failed or was stopped; a later Ctrl+C or
SIGTERM still reaches the caller (before, a stopped call left both signals swallowed for good)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import realtime.cli as cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def callers_handlers():
    """The caller's own handlers (counting what reaches them), put back after the test."""
    received: list[int] = []
    own = {sig: (lambda signum, _frame: received.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    before = {sig: signal.signal(sig, handler) for sig, handler in own.items()}
    try:
        yield own, received
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_a_failed_command_gives_the_callers_handlers_back(tmp_path, callers_handlers, capsys):
    own, received = callers_handlers
    assert cli.main(["export", str(tmp_path / "missing.jsonl"), "--to", "csv"]) == 2
    assert "error: " in capsys.readouterr().err
    assert {sig: signal.getsignal(sig) for sig in own} == own
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)
    assert received == [signal.SIGTERM, signal.SIGINT]


def test_a_stopped_command_gives_the_callers_handlers_back(callers_handlers, monkeypatch, capsys):
    own, received = callers_handlers

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)  # Ctrl+C as the command starts
    assert cli.main(["export", "x.jsonl", "--to", "csv"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert {sig: signal.getsignal(sig) for sig in own} == own
    os.kill(os.getpid(), signal.SIGTERM)
    assert received == [signal.SIGTERM]
    assert cli._early == []  # nothing held over to stop the next call


def test_a_program_importing_the_cli_keeps_pythons_own_ctrl_c_before_and_after_a_call(tmp_path):
    """Only the `sapiens-rt` command catches Ctrl+C from the module's import on (for its own start); a
    program that imports the module keeps the handlers it started with (Python's defaults; Ctrl+C ignored where a
    shell without job control started it in the background), and has them after a call too."""
    code = ("import signal, sys\n"
            "own = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))\n"
            "from realtime.cli import main\n"
            "def default(): return (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == own\n"
            "imported = default()\n"
            f"code = main(['export', {str(tmp_path / 'missing.jsonl')!r}, '--to', 'csv'])\n"
            "print(imported, code, default())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["True", "2", "True"], done.stderr
