"""The paper's execution mode: actions (and the gold) run as the original InterCode ran them.

The rules are checked by hand first (how docker-py split the command string, how the original
tracked ``cd``), then against real sandboxes, side by side with the default persistent session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import get_task
from intercode_agents.envs.bash.changes import INTERCODE_IGNORED_NAMES
from intercode_agents.envs.bash.paper import (
    CHDIR_FAILED,
    MALFORMED,
    TIMED_OUT,
    MalformedCommand,
    PaperShell,
    gold_command,
    paper_argv,
    paper_image,
    paper_shell,
    plan,
    resolve_cd,
)
from intercode_agents.errors import ConfigError
from intercode_agents.images import image_ref
from intercode_agents.paths import data_dir
from intercode_agents.sandbox import Sandbox
from tests.cli.test_cli_run_commands import cli


def test_the_command_string_is_split_the_way_docker_py_split_it() -> None:
    assert paper_argv('find . -name "*.txt"') == ["/bin/bash", "-c", "find . -name *.txt"]  # quotes vanish
    # Unquoted blanks between inner quotes split the script: bash runs "echo a", "b c" becomes $0.
    assert paper_argv('echo "a b" c') == ["/bin/bash", "-c", "echo a", "b c"]
    assert paper_argv("echo 'x  y'") == ["/bin/bash", "-c", "echo 'x  y'"]  # single quotes stay inside "..."
    # Inside the outer quotes a backslash escapes only " and \; between the action's own quotes it
    # escapes anything.
    assert paper_argv(r'echo \x "\y"') == ["/bin/bash", "-c", r"echo \x y"]
    assert paper_argv("  ls -l  \n") == ["/bin/bash", "-c", "ls -l"]  # the action was stripped
    with pytest.raises(MalformedCommand):
        paper_argv('echo "unbalanced')
    assert paper_argv("echo $0", paper_shell("bash-fstest")) == ["/bin/sh", "-c", "echo $0"]


def test_cd_is_tracked_by_text_only() -> None:
    assert resolve_cd("/testbed", "notes/../logs/./archive") == "/testbed/logs/archive"
    assert resolve_cd("/testbed", "/tmp//x/") == "/tmp/x"
    assert resolve_cd("/", "../..") == "/"
    assert resolve_cd("/testbed", "") == "/testbed"
    assert resolve_cd("/", "$HOME") == "/$HOME"  # no expansion: the original joined the text
    step = plan("cd /testbed && ls", "/")
    assert (step.argv, step.workdir, step.tracks) == (
        ["/bin/bash", "-c", "cd /testbed && ls"],
        "/",
        "/testbed && ls",
    )
    assert plan(" cd /tmp", "/x").tracks is None  # only an action that starts with "cd"
    assert plan("cdrecord --help", "/x") == plan("cdrecord --help", "/x")  # runs as written...
    assert plan("cdrecord --help", "/x").tracks is None and plan("cdrecord --help", "/x").workdir == "/x"


def test_gold_command_runs_the_split_gold_in_a_subshell() -> None:
    command = gold_command('echo "a b" c')
    assert "/bin/bash -c 'echo a' 'b c' 2>&1 | cat" in command and command.endswith("</dev/null")
    assert "/ && false 2>&1" in gold_command('echo "oops')  # a gold the original could not split


async def _outputs(
    execution: str, actions: list[str], task: str = "bash/mini/0"
) -> list[tuple[str, int | None]]:
    async with make_env("bash", execution=execution, facts_cache="process") as env:
        await env.reset(task_id=task)
        seen = []
        for action in actions:
            obs, _, _, _, info = await env.gym.step(action)
            seen.append((obs, info["exit_code"]))
        return seen


async def test_inner_quotes_vanish_and_no_shell_state_survives() -> None:
    actions = [
        "cd /testbed/notes",
        'find . -name "*.txt" | sort',  # *.txt matches two files in the tracked folder: find fails
        "X=1; f() { echo fn; }; alias ll=ls; umask 077; set -o noclobber",
        "echo ${X:-unset}; type f 2>&1 | head -1; alias ll 2>&1; umask; [[ -o noclobber ]] || echo off",
        "pwd",
    ]
    paper = await _outputs("paper", actions)
    session = await _outputs("session", actions)
    assert "paths must precede expression" in paper[1][0]
    assert session[1] == ("./poem.txt\n./todo.txt\n", 0)
    assert paper[3][0].split("\n")[0] == "unset" and "f: not found" in paper[3][0]
    assert "0022" in paper[3][0] and paper[3][0].endswith("off\n")
    assert session[3][0].split("\n")[:2] == ["1", "f is a function"] and "0077" in session[3][0]
    assert paper[4] == session[4] == ("/testbed/notes\n", 0)  # only the folder was carried over


async def test_cd_tracking_follows_the_original_even_where_it_breaks() -> None:
    seen = await _outputs(
        "paper",
        [
            "cd /testbed/notes",
            "cd ../logs",
            "pwd",
            "cd /nowhere",
            "pwd",
            "cd /testbed && ls",
            "pwd",
            "cd /",
            "pwd",
        ],
    )
    assert seen[2] == ("/testbed/logs\n", 0)
    assert "No such file or directory" in seen[3][0] and seen[4] == ("/testbed/logs\n", 0)  # a failed cd
    assert "data" in seen[5][0]  # the whole action ran, from /
    assert seen[6] == (CHDIR_FAILED.format("/testbed && ls"), 126)  # ...and its text became the folder
    assert seen[8] == ("/\n", 0)


async def test_malformed_commands_output_and_background_jobs() -> None:
    seen = await _outputs(
        "paper",
        [
            'echo "unbalanced',
            "printf 'ok\\n'; printf '\\377\\376'",
            "(sleep 0.5; echo late) & echo early",
            "echo next",
        ],
    )
    assert seen[0] == (MALFORMED, None)  # never ran
    assert seen[1][0] == MALFORMED  # ran, but its output was not UTF-8
    assert seen[2] == ("early\nlate\n", 0)  # the action lasts as long as its output is held open
    assert seen[3] == ("next\n", 0)  # and nothing of it leaks into the next action


async def test_timeout_gives_the_originals_observation() -> None:
    async with Sandbox(image=image_ref(paper_image("bash"))) as sb:
        shell = PaperShell(sb, timeout=1.0)
        result = await shell.run("sleep 5 & echo started")  # a background job holds the output open
        assert (result.observation, result.timed_out, result.errored) == (TIMED_OUT, True, True)
        assert (await shell.run("echo alive")).observation == "alive\n"


def test_the_image_sweep_skips_exactly_the_originals_ignored_names() -> None:
    script = (data_dir("docker") / "bash-paper" / "as-after-git-reset.sh").read_text()
    [names] = re.findall(r"^IGNORED='([^']*)'$", script, re.MULTILINE)
    assert set(names.split("|")) == INTERCODE_IGNORED_NAMES


async def test_the_sandbox_starts_as_the_originals_git_reset_left_it() -> None:
    paper = await _outputs(
        "paper", ["ls -d /tmp /testbed/empty /testbed/notes /etc/opt 2>&1; echo x > /tmp/f"]
    )
    session = await _outputs("session", ["ls -d /tmp /testbed/empty /testbed/notes 2>&1"])
    lines = paper[0][0].splitlines()
    assert "cannot access '/tmp'" in lines[0] and "cannot access '/testbed/empty'" in lines[1]
    assert "/etc/opt" in lines and "/testbed/notes" in lines  # kept: under an ignored name, or not empty
    assert "No such file or directory" in lines[-1]  # writing to /tmp failed, as in the original
    assert session[0] == ("/testbed/empty\n/testbed/notes\n/tmp\n", 0)
    # The clock of the original's runs: what fs1's fixture made is half an hour old, at any time; of the
    # two files it dated with `touch -t`, one (2022) is old, the other (31 May 2023) yet to come.
    count = (
        "date -u '+%F %T'; find /testbed -mtime +7 | wc -l; find /testbed -mmin -60 | wc -l; "
        "find /testbed -mmin +5 | wc -l; find /testbed | wc -l"
    )
    for _ in range(2):  # two episodes, the same ages
        [(times, _)] = await _outputs("paper", [count], "bash/fs1/0")
        day, hour, *counts = times.split()
        old, recent, older_than_five, everything = map(int, counts)
        assert f"{day} {hour}" == "2023-05-21 00:14:00" and old == 1
        assert recent == older_than_five == everything - 1


async def test_the_gold_runs_the_papers_way_too() -> None:
    base = get_task("bash/mini/0")
    task = base.model_copy(update={"id": "bash/mini/paper-gold", "gold": 'echo "a b" c'})
    for execution, expected in (("paper", 1.0), ("session", 0.67)):
        async with make_env("bash", execution=execution, facts_cache="process") as env:
            await env.reset(task=task)
            await env.gym.step("echo a")  # what the original's gold printed
            result = await env.evaluate()
            assert result.reward == expected, (execution, result.parts)


async def test_the_test_split_ran_with_sh_and_the_fixture_script_sits_in_root() -> None:
    [(test_split, _)] = await _outputs("paper", ["echo ${BASH_VERSION:-sh}; ls /setup*.sh"], "bash/test/0")
    assert test_split == "sh\n/setup_fs.sh\n"
    [(fs1, _)] = await _outputs(
        "paper", ["echo ${BASH_VERSION:+bash}; ls /setup*.sh /.gitignore"], "bash/fs1/0"
    )
    assert fs1 == "bash\n/.gitignore\n/setup_nl2b_fs_1.sh\n"


async def test_ctf_paper_execution_starts_in_the_task_folder() -> None:
    async with make_env("ctf", execution="paper") as env:
        await env.reset(task_id="ctf/mini/0")
        obs, *_ = await env.gym.step("pwd; ls")
        assert obs.startswith("/ctf\n") and "message.txt" in obs
        obs, *_ = await env.gym.step("X=1; echo ${X}")
        obs, *_ = await env.gym.step("echo ${X:-unset}")
        assert obs == "unset\n"


def test_execution_mode_is_checked() -> None:
    with pytest.raises(ConfigError, match="has 'session', 'paper'"):
        make_env("bash", execution="docker")
    with pytest.raises(ConfigError, match="sql env cannot run actions in 'paper' execution"):
        make_env("sql", execution="paper")


def test_eval_records_the_execution_mode_and_resume_checks_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "bash", "--model", "gold", "--tasks", "bash/mini/0,bash/mini/4", "--out", str(out)]
    ran = cli([*args, "--execution", "paper"])
    assert ran.returncode == 0, ran.stderr
    assert json.loads((out / "run.json").read_text())["execution"] == "paper"
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [(r["execution"], r["reward"]) for r in records] == [("paper", 1.0), ("paper", 1.0)]
    resumed = cli([*args, "--resume"])
    assert resumed.returncode == 2 and "execution: 'paper' -> 'session'" in resumed.stderr
    wrong = cli(["eval", "sql", "--model", "gold", "--tasks", "mini", "--execution", "paper"], cwd=tmp_path)
    assert wrong.returncode == 2 and "the sql env has no 'paper' execution" in wrong.stderr
