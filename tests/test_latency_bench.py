"""bench/latency.py in a tiny configuration: a paced loopback camera into `sapiens-rt run` (tiny
fixture pose model) and a python-osc receiver; the report has its lines and its last line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = r"([-+]?[\d.]+|n/a)"


def test_the_latency_bench_reports_glass_to_datagram_per_configuration():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "latency.py"), "--rounds", "1", "--seconds", "1.5",
                           "--warmup", "0.5", "--configs", "plain,slow-pipe", "--capture-seconds", "0.5",
                           "--capture-codecs", "raw"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("machine: ") and "load average" in lines[0]
    assert any(re.match(rf"capture \(raw\): sent -> handed on p50 {NUMBER} ms, p95 {NUMBER} ms before", line) for line in lines)
    for config in ("plain", "slow-pipe"):
        row = next(line for line in lines if line.startswith(f"round 1 {config}:"))
        p50 = re.search(r"glass-to-datagram p50 ([\d.]+) ms, p95 ([\d.]+) ms \((\d+) of (\d+) frames sent\)", row)
        assert p50, row  # datagrams arrived for frames of this run
        assert 0 < float(p50.group(1)) <= float(p50.group(2)) and 0 < int(p50.group(3)) <= int(p50.group(4))
        assert re.search(r"model [\d.]+ ms;", row) and re.search(r"read->sent p50 osc [\d.]+ ms", row), row
    assert any(line.startswith("slow-pipe - plain (this tree, paired by round): g2d p50 ") for line in lines)
    assert any(line.startswith("goals: g2d p50 <= model + 10 ms: ") for line in lines)
    last = re.fullmatch(rf"latency: glass-to-datagram p50 {NUMBER} ms \(model {NUMBER} ms\); \+out {NUMBER} ms; "
                        rf"\+slow tracks pipe {NUMBER} ms; read->sent p50 {NUMBER} ms", lines[-1])
    assert last, lines[-1]
    g2d, model, plus_out, plus_pipe, read_sent = last.groups()
    assert plus_out == "n/a"  # not asked for
    assert all(value != "n/a" for value in (g2d, model, plus_pipe, read_sent))
