"""Env definitions are data: a user's YAML, task file and class add an env without editing the package.

These tests use a small env of their own, defined in a temporary folder (a YAML file, a JSON-lines
task file with its own field names, and an Env subclass in a .py file next to them), and check that
every layer takes what it needs from the env: task loading and selection, the tools' submit schema
and default answer, the prompt texts, the gold policy and the failure-mode rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import get_task, select_tasks, split_names
from intercode_agents.errors import ConfigError, DatasetError
from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.runner.direct import gold_actions
from intercode_agents.spec import env_names, load_spec
from intercode_agents.strategies.prompts import load_prompts
from intercode_agents.tools import EnvToolkit
from intercode_agents.trajectory import Step, Trajectory

# An env whose "sandbox" is the host process: enough to drive the plumbing, with a reward of its own.
ECHO_ENV = """
from intercode_agents.envs.base import ActionResult, Env
from intercode_agents.reward import RewardResult
from intercode_agents.tools import EnvToolkit


class EchoEnv(Env):
    language = "sql"  # borrows the SQL rules of the failure-mode tags
    submit_takes_argument = True
    submit_description = "Finish the task: submit the word."
    answer_description = "The word the task asks for."

    async def _prepare(self, task):
        pass

    async def _execute(self, action):
        return ActionResult(observation=action.upper(), exit_code=0)

    async def _score(self, submission):
        task = self._require_task()
        return RewardResult(1.0 if submission == task.gold else 0.0, {"expected_len": len(task.gold)})

    def default_submission(self):
        return "fallback"
"""


def write_env(folder: Path, name: str, *, tasks: dict | None = None, extra: str = "") -> Path:
    (folder / "echo_env.py").write_text(ECHO_ENV)
    records = [
        {"ask": "Say the word for one.", "word": "uno", "n": 1, "kind": "number"},
        {"ask": "Say the word for red.", "word": "rosso", "n": 2, "kind": "colour"},
        {"ask": "Say the word for two.", "word": "due", "n": 3, "kind": "number"},
    ]
    (folder / "words.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    section = tasks or {
        "splits": {
            "words": {
                "file": "words.jsonl",
                "id": "{env}/{split}/{n}",
                "fields": {"query": "ask", "gold": "word"},
                "options": {"group": ["kind"]},
            }
        }
    }
    spec = {
        "name": name,
        "class": "echo_env.py:EchoEnv",
        "tasks": section,
        "prompts": {"name": "Echo", "environment": "Words echo back.", "submit": "Reply `submit WORD`."},
    }
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(spec) + extra)  # JSON is YAML
    return path


def test_a_user_env_loads_its_tasks_through_its_own_field_mapping(tmp_path: Path) -> None:
    path = write_env(tmp_path, "echo_words")
    tasks = select_tasks(path)
    assert [t.id for t in tasks] == ["echo_words/words/1", "echo_words/words/2", "echo_words/words/3"]
    assert [(t.query, t.gold, t.image) for t in tasks][1] == ("Say the word for red.", "rosso", "echo_words")
    assert tasks[0].group == {"kind": "number"} and tasks[0].meta == {"n": 1, "kind": "number"}
    # once loaded, the env is known by name: its ids resolve and selectors work on it
    assert "echo_words" in env_names()
    assert get_task("echo_words/words/2").gold == "rosso"
    assert [t.id for t in select_tasks("echo_words", "kind=number")] == [
        "echo_words/words/1",
        "echo_words/words/3",
    ]
    assert split_names("echo_words") == ["words"]


async def test_the_env_class_gives_tools_prompts_gold_policy_and_failure_rules(tmp_path: Path) -> None:
    path = write_env(tmp_path, "echo_tools")
    task = select_tasks(path)[0]
    assert gold_actions(task) == ["submit uno"]  # submit takes the answer: the gold policy submits it
    async with make_env(path) as env:
        assert env.name == "echo_tools"
        run, submit = EnvToolkit(env=env).get_tools()
        assert run.name == "run_bash"  # action_language defaults to bash
        assert submit.description == "Finish the task: submit the word."
        schema = submit.args_schema.model_json_schema()  # type: ignore[union-attr]
        assert schema["properties"]["answer"]["description"] == "The word the task asks for."
        texts = load_prompts("react").language(env.name, env.prompt_texts)
        assert (texts.name, texts.submit) == ("Echo", "Reply `submit WORD`.")

        await env.reset(task=task)
        message = await run.ainvoke(
            {"type": "tool_call", "id": "1", "name": run.name, "args": {"command": "hi"}}
        )
        assert message.content == "HI"
        message = await submit.ainvoke(
            {"type": "tool_call", "id": "2", "name": "submit", "args": {"answer": ""}}
        )
        assert message.artifact["submission"] == "fallback"  # the env's default submission
        assert message.artifact["reward"] == 0.0

        await env.reset(task=task)
        message = await submit.ainvoke(
            {"type": "tool_call", "id": "3", "name": "submit", "args": {"answer": "uno"}}
        )
        assert message.artifact["reward"] == 1.0

    # the failure-mode rules follow the env's language (recorded in the trajectory): SQL here
    steps = [
        Step(turn=1, action="DROP TABLE words", observation="ok"),
        Step(turn=2, kind="submit", action="submit x"),
    ]
    traj = Trajectory(
        task_id=task.id, env="echo_tools", strategy="s", model="m", steps=steps, context={"language": "sql"}
    )
    assert "destructive_mutation" in failure_tags(traj)
    assert "destructive_mutation" not in failure_tags(
        traj.model_copy(update={"context": {"language": "python"}})
    )


@pytest.mark.parametrize(
    ("name", "tasks", "error", "message"),
    [
        ("bash", None, ConfigError, "the name 'bash' is taken by a shipped env"),
        (
            "bad_key",
            {"splits": {"words": {"file": "words.jsonl", "colour": "red"}}},
            ConfigError,
            r"split 'words' has unknown keys \['colour'\]",
        ),
        ("unmapped", {"splits": {"words": {"file": "words.jsonl"}}}, DatasetError, "has no 'query' field"),
        (
            "foreign",
            {"splits": {"words": {"file": "words.jsonl", "id": "bash/{n}"}}},
            ConfigError,
            "ids must start with 'foreign/'",
        ),
        (
            "bad_template",
            {"splits": {"words": {"file": "words.jsonl", "fields": {"query": "{question}", "gold": "word"}}}},
            DatasetError,
            r"the template '\{question\}' does not fit",
        ),
        ("no_file", {"splits": {"words": {"file": "gone.jsonl"}}}, DatasetError, "gone.jsonl is missing"),
    ],
)
def test_bad_definitions_are_specific_errors(
    tmp_path: Path, name: str, tasks: dict | None, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        select_tasks(write_env(tmp_path, name, tasks=tasks))


def test_an_unknown_env_path_or_name_says_what_is_known(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        make_env(tmp_path / "nowhere.yaml")
    with pytest.raises(
        ConfigError, match=r"unknown env .cobol.; choose one of .*bash.*give the path of an env YAML"
    ):
        load_spec("cobol")
