"""`benchmarks/engine_tokens.py` end to end on the real embedded test model (SmolLM2-135M):
the main job decoded under two settings in fresh processes, one per-stage table each, and the
ratio line. About two minutes on two CPU cores; the figures themselves are not asserted (they
are measured with `qwen1.5b` in benchmarks/measured/)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedded

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "engine_tokens.py"


def test_the_engine_token_benchmark_prints_both_tables_and_the_ratio_line(tmp_path):
    out = tmp_path / "engine_tokens.md"
    done = subprocess.run([sys.executable, str(BENCHMARK), "--model", "smollm2",
                           "--config", "today", "--config", "new", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = out.read_text()
    assert report == done.stdout
    for name in ("today", "new"):
        table = report.split(f"### {name} (idle)")[1].split("###")[0]
        assert re.search(r"planted errors fixed [0-3]/3", table)
        total = re.search(r"\| \*\*total\*\* \| (\d+) \| ([\d,]+) \| ([\d,]+) \|", table)
        assert total and int(total[1]) > 0 and int(total[2].replace(",", "")) > 0
    assert re.search(r"ratio new/today \(idle\): uncached prompt tokens \d+\.\d\dx, prompt "
                     r"tokens \d+\.\d\dx, completion tokens \d+\.\d\dx, wall \d+\.\d\dx", report)
    for name in ("today", "new"):  # each run's figures kept as JSON as soon as it ended
        kept = json.loads((tmp_path / f"engine_tokens-{name}-idle.json").read_text())
        assert kept["name"] == name and kept["total"]["calls"] > 0
        assert isinstance(kept["rulings"], list) and kept["statuses"]
        assert 1 <= kept["threads"] <= len(os.sched_getaffinity(0))
