"""The report's episode view, filters and run-vs-run comparison, in headless Chromium, on a large
synthetic run (two runs of 10,000 episodes): only the rows in view are rendered, filters count what
Python counts, an opened episode shows its question and every step, and record text stays text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.report import load_run, write_report
from intercode_agents.report.episodes import flips
from intercode_agents.runner.run_dir import write_json
from intercode_agents.trajectory import Step, Trajectory
from tests.chromium import CHROMIUM, HeadlessChromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
N = 10_000
EVIL = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


def episode(i: int, run: int) -> Trajectory:
    fs = f"fs{i % 4 + 1}"
    outcome = "solved" if (i * (run + 3)) % 5 < 2 else ("failed", "timeout", "env_error")[i % 3]
    looks = [
        Step(turn=t, action=f"ls /testbed/dir{t}", observation=f"file{t}.txt\n" * 3) for t in (1, 2, 3, 4)
    ]
    steps = looks if outcome != "solved" else looks[:1]
    steps = [
        *steps,
        Step(turn=len(steps) + 1, action="cat /testbed/x", observation="boom", exit_code=1, errored=True),
        Step(turn=len(steps) + 2, kind="submit", action="submit", reward=1.0 if outcome == "solved" else 0.0),
    ]
    steps[0].thought = f"first I look around (episode {i})"
    if i == 7:
        steps[0].action, steps[0].observation = EVIL, EVIL
    return Trajectory(
        task_id=f"bash/{fs}/{i}",
        env="bash",
        strategy="react",
        model=("local", "openai:gpt-4o-mini")[run],
        group={"fs": fs},
        question=EVIL if i == 7 else f"Question number {i}: count the files.",
        steps=steps,
        reward=None if outcome in ("timeout", "env_error") else (1.0 if outcome == "solved" else 0.0),
        reward_parts={"file_diff": 0.33, "answer": 0.5} if outcome == "failed" else {},
        outcome=outcome,
        input_tokens=1000 + i,
        output_tokens=100,
    )


def write_run(directory: Path, run: int) -> Path:
    directory.mkdir(parents=True)
    records = [episode(i, run) for i in range(N)]
    (directory / "trajectories.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    settings = {
        "env": "bash",
        "task_ids": [r.task_id for r in records],
        "strategy": "react",
        "model": records[0].model,
        "reward": "intercode",
        "seed": None,
        "turns": 10,
        "turn_budget": 10,
        "epochs": 1,
    }
    write_json(directory / "run.json", settings)
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("big")
    return [write_run(root / "a", 0), write_run(root / "b", 1)]


@pytest.fixture(scope="module")
def report(runs: list[Path]) -> Path:
    return write_report(runs, runs[0].parent / "report.html")[0]


@pytest.fixture
async def browser() -> AsyncIterator[HeadlessChromium]:
    async with HeadlessChromium() as chromium:
        yield chromium


ROWS = "document.querySelectorAll('#episode-list .erow')"


async def test_ten_thousand_episodes_render_lazily_and_scroll(
    report: Path, browser: HeadlessChromium
) -> None:
    page = await browser.open(report.as_uri())
    await page.wait_for("document.body.dataset.ready === '1'")
    assert await page.evaluate("document.getElementById('episode-count').textContent") == (
        "Showing 10,000 of 10,000 episodes"
    )
    assert 10 < await page.evaluate(f"{ROWS}.length") < 100  # not 10,000 rows
    assert await page.evaluate("document.querySelectorAll('.erow').length") < 200  # the flip list too
    await page.evaluate(
        "(() => { const l = document.getElementById('episode-list'); l.scrollTop = l.scrollHeight; "
        "l.dispatchEvent(new Event('scroll')); })()"
    )
    await page.wait_for(f"[...{ROWS}].some(r => r.dataset.index === '{N - 1}')")
    assert await page.evaluate(f"{ROWS}.length") < 100


async def test_filters_count_what_python_counts(
    report: Path, runs: list[Path], browser: HeadlessChromium
) -> None:
    run = load_run(runs[0])
    trajs = list(run.trajectories.values())
    failed = sum(t.outcome == "failed" for t in trajs)
    paralysed = sum("paralysis" in failure_tags(t) for t in trajs)
    paralysed_fs2 = sum("paralysis" in failure_tags(t) and t.group["fs"] == "fs2" for t in trajs)
    assert 0 < paralysed_fs2 < paralysed < N
    page = await browser.open(report.as_uri())
    await page.wait_for("document.body.dataset.ready === '1'")

    async def choose(select: str, value: str) -> str:
        return await page.evaluate(
            f"(() => {{ const s = document.getElementById('{select}'); s.value = {json.dumps(value)}; "
            "s.dispatchEvent(new Event('change')); "
            "return document.getElementById('episode-count').textContent; })()"
        )

    assert await choose("f-outcome", "failed") == f"Showing {failed:,} of 10,000 episodes"
    await choose("f-outcome", "")
    assert await choose("f-tag", "paralysis") == f"Showing {paralysed:,} of 10,000 episodes"
    assert await choose("f-group", "fs=fs2") == f"Showing {paralysed_fs2:,} of 10,000 episodes"
    assert "tag=paralysis" in await page.evaluate("location.hash")
    shown = await page.evaluate(f"[...{ROWS}].map(r => r.querySelector('.tags').textContent)")
    assert shown and all("paralysis" in tags for tags in shown)


async def test_an_opened_episode_shows_the_question_and_every_step(
    report: Path, browser: HeadlessChromium
) -> None:
    page = await browser.open(report.as_uri() + "#run=0&open=0:1:bash/fs4/3")
    await page.wait_for("document.body.dataset.ready === '1'")
    view = "document.getElementById('episode-view')"
    assert await page.evaluate(f"{view}.querySelector('pre.question').textContent") == (
        "Question number 3: count the files."
    )
    steps = await page.evaluate(
        f"[...{view}.querySelectorAll('.step')].map(s => ({{head: s.querySelector('.step-head').textContent, "
        "pres: [...s.querySelectorAll('pre')].map(p => [p.className, p.textContent])}))"
    )
    traj = episode(3, 0)
    assert traj.outcome == "failed"
    assert len(steps) == len(traj.steps) == 6
    assert steps[0]["pres"][0] == ["thought", "first I look around (episode 3)"]
    assert steps[0]["pres"][1] == ["action", "ls /testbed/dir1"]
    assert steps[0]["pres"][2] == ["observation", "file1.txt\n" * 3]
    assert "exit code 1" in steps[4]["head"] and "errored" in steps[4]["head"]
    assert steps[5]["head"].startswith("6. turn 6 · submit") and "reward 0.00" in steps[5]["head"]
    text = await page.evaluate(f"{view}.textContent")
    assert "file_diff" in text and "0.33" in text  # the reward parts
    assert "1,003 / 100" in text  # tokens in / out
    assert "open=0%3A1%3Abash%2Ffs4%2F3" in await page.evaluate("location.hash")
    # clicking another row opens it (rows are in task order: bash/fs1/0, bash/fs1/4, ...)
    await page.evaluate(f"{ROWS}[1].click()")
    heading = await page.evaluate(f"{view}.querySelector('h3').textContent")
    assert heading == "bash/fs1/4 · epoch 1 · react · local"


async def test_record_text_is_shown_as_text_never_run(report: Path, browser: HeadlessChromium) -> None:
    html = report.read_text()  # noqa: ASYNC240 - a test reading its fixture
    assert html.count("<script") == 2 and EVIL not in html  # ours only: the data and the app
    page = await browser.open(report.as_uri() + "#open=0:1:bash/fs4/7")
    await page.wait_for("document.body.dataset.ready === '1'")
    view = "document.getElementById('episode-view')"
    assert await page.evaluate(f"{view}.querySelector('pre.question').textContent") == EVIL
    assert await page.evaluate(f"{view}.querySelector('pre.action').textContent") == EVIL
    assert await page.evaluate("document.querySelectorAll('img, script').length") == 2
    assert await page.evaluate("window.pwned === undefined")


async def test_the_comparison_lists_the_flipped_episodes(
    report: Path, runs: list[Path], browser: HeadlessChromium
) -> None:
    expected = flips(load_run(runs[0]), load_run(runs[1]))
    assert expected.gained and expected.lost
    page = await browser.open(report.as_uri())
    await page.wait_for("document.body.dataset.ready === '1'")
    summary = "document.getElementById('compare-summary')"
    assert await page.evaluate(f"{summary}.dataset.gained") == str(len(expected.gained))
    assert await page.evaluate(f"{summary}.dataset.lost") == str(len(expected.lost))
    text = await page.evaluate(f"{summary}.textContent")
    assert (
        f"{expected.both} solved in both, {expected.neither} in neither; {expected.only_one} not comparable"
        in text
    )
    rows = await page.evaluate("document.querySelectorAll('#flip-list .erow').length")
    assert 0 < rows < 100
    # swapping A and B swaps the directions
    await page.evaluate(
        "(() => { const a = document.getElementById('c-a'), b = document.getElementById('c-b'); "
        "a.value = '1'; a.dispatchEvent(new Event('change')); "
        "b.value = '0'; b.dispatchEvent(new Event('change')); })()"
    )
    assert await page.evaluate(f"{summary}.dataset.gained") == str(len(expected.lost))
    md = report.with_suffix(".md").read_text()
    assert f"{len(expected.gained)} solved only in B, {len(expected.lost)} solved only in A" in md
