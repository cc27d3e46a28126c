"""The report renders in a real browser: headless Chromium lays out every chart and series.

Skipped when Debian's ``chromium`` is not installed (``apt-get install -y chromium``).
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from intercode_agents.report import write_report
from intercode_agents.trajectory import Step, Trajectory
from tests.chromium import CHROMIUM, FLAGS

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

# Measures every chart and every run's series after layout and writes the numbers into the page.
PROBE = """<script>
const charts = [...document.querySelectorAll("svg.chart")].map(svg => {
  const box = svg.getBoundingClientRect();
  const series = [...svg.querySelectorAll("g.series")].map(g => {
    const b = g.getBBox();
    return {run: g.dataset.run, width: b.width, height: b.height};
  });
  return {label: svg.getAttribute("aria-label"), width: box.width, height: box.height, series};
});
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify(charts);
document.body.appendChild(out);
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def run_dir(root: Path, name: str, model: str, outcomes: list[str]) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    lines = []
    for i, outcome in enumerate(outcomes):
        steps = [Step(turn=t, action=f"cat file{t}.txt", observation="x") for t in range(i % 3 + 1)]
        steps[-1].reward = 1.0 if outcome == "solved" else 0.0
        record = Trajectory(
            task_id=f"sql/spider/{i}",
            env="sql",
            strategy="react",
            model=model,
            group={"hardness": ("easy", "hard")[i % 2]},
            steps=steps,
            reward=steps[-1].reward,
            outcome=outcome,
        )
        lines.append(record.model_dump_json())
    (directory / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    return directory


@pytest.fixture
def report(tmp_path: Path) -> Path:
    runs = [
        run_dir(tmp_path, "a", "local", ["solved", "failed", "solved", "solved", "failed", "env_error"]),
        run_dir(
            tmp_path, "b", "openai:gpt-4o-mini", ["failed", "solved", "failed", "solved", "solved", "failed"]
        ),
    ]
    return write_report(runs, tmp_path / "report.html")[0]


def test_every_chart_and_series_is_laid_out(report: Path) -> None:
    probe = report.with_name("probe.html")
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    done = chromium("--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    charts = json.loads(found[1])
    labels = [c["label"] for c in charts]
    assert labels == [
        "success rate vs turn budget",
        "success rate by hardness",
        "failure-mode shares",
        "turns histogram",
    ]
    for chart in charts:
        assert chart["width"] == 760 and chart["height"] > 100, chart
        assert [s["run"] for s in chart["series"]] == ["0", "1"], chart
        assert all(s["width"] > 5 and s["height"] > 5 for s in chart["series"]), chart


def test_screenshot(report: Path) -> None:
    shot = report.with_name("report.png")
    done = chromium(f"--screenshot={shot}", "--window-size=1200,2000", report.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1200, 2000)  # IHDR width, height
    assert len(data) > 40_000  # a blank page of this size compresses to about 11 kB
