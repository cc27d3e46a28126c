"""Prompts as data: the shipped YAML files load, fill, and bad files give clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from intercode_agents.errors import ConfigError
from intercode_agents.strategies import available_strategies, get_strategy, load_prompts

ENVS = ("bash", "sql", "python", "ctf")


@pytest.mark.parametrize("strategy", ["try_again", "react", "plan_solve", "tool_calling"])
def test_every_strategy_has_prompts_and_demos_for_every_env(strategy: str) -> None:
    prompts = load_prompts(strategy)
    for env in ENVS:
        texts = prompts.language(env)
        assert texts.environment and texts.submit
        assert prompts.demo_block(env).strip().startswith("Here is an example")
    get_strategy(strategy)  # the strategy finds every template it needs


def test_conversation_template_fills_system_task_and_history() -> None:
    prompts = load_prompts("react")
    template = prompts.conversation()
    values = {
        "environment": "ENV",
        "submit": "SUBMIT",
        "language_name": "Bash",
        "max_turns": 7,
        "demo": "",
        "query": "count {braces} safely",
        "entry_point_note": "",
    }
    messages = template.format_messages(**values, history=[HumanMessage(content="Observation: x")])
    assert isinstance(messages[0], SystemMessage)
    assert "ENV" in messages[0].content and "7 turns" in messages[0].content
    assert messages[1].content == "Task: count {braces} safely"
    assert messages[2].content == "Observation: x"


def test_literal_braces_in_per_env_texts_survive() -> None:
    ctf = load_prompts("react").language("ctf")
    assert "picoCTF{{...}}" in ctf.submit  # template source; filled, it reads picoCTF{...}
    python = load_prompts("react").language("python")
    assert python.entry_point is not None and "{entry_point}" in python.entry_point


def test_render_needs_its_fields() -> None:
    prompts = load_prompts("try_again")
    assert prompts.render("feedback", observation="3\n", reward="0.5") == "Output:\n3\n\nReward: 0.5"
    with pytest.raises(ConfigError, match="needs observation"):
        prompts.render("feedback", reward="1")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "custom.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_field_in_a_template_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "templates:\n  system: 'hi {nme}'\n  task: '{query}'\n")
    with pytest.raises(ConfigError, match=r"template 'system' uses unknown field\(s\) nme"):
        load_prompts("react", path)


def test_stray_brace_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "templates:\n  system: 'flag picoCTF{x'\n  task: '{query}'\n")
    with pytest.raises(ConfigError, match="malformed"):
        load_prompts("react", path)


def test_missing_template_is_reported_by_the_strategy(tmp_path: Path) -> None:
    path = write(tmp_path, "templates:\n  system: 'S {environment}'\n  task: 'T {query}'\n")
    with pytest.raises(ConfigError, match="needs template"):
        get_strategy("try_again", prompt_file=str(path))


def test_bad_yaml_and_bad_shape(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_prompts("react", write(tmp_path, "templates: [unclosed\n"))
    with pytest.raises(ConfigError, match="unexpected shape"):
        load_prompts("react", write(tmp_path, "templatez: {}\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_prompts("react", tmp_path / "missing.yaml")


def test_a_custom_prompt_file_overrides_env_texts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "templates:\n  system: '{environment}'\n  task: '{query}'\n  observation: '{observation}'\n"
        "  last_turn: '{observation}'\n  invalid: '{reason}'\n"
        "languages:\n  bash:\n    environment: 'A tiny shell.'\n",
    )
    strategy = get_strategy("react", prompt_file=str(path))
    assert strategy.prompts.language("bash").environment == "A tiny shell."
    assert strategy.prompts.language("sql").name == "SQL"  # the rest comes from common.yaml


def test_unknown_strategy_and_settings_list_the_choices() -> None:
    every = "guarded, plan_solve, react, single_shot, tool_calling, try_again"
    with pytest.raises(ConfigError, match=f"choose one of {every}"):
        get_strategy("reflexion")
    with pytest.raises(ConfigError, match=r"max_turn.*settings: max_turns"):
        get_strategy("react", max_turn=3)
    with pytest.raises(ConfigError, match="refine_turns"):
        get_strategy("plan_solve", refine_turns=-1)
    assert available_strategies() == every.split(", ")
