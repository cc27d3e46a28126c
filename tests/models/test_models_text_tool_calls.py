"""Tool calls written as text by small models become proper tool calls; other text is left alone."""

from __future__ import annotations

import pytest

from intercode_agents.models.text_tool_calls import parse_text_tool_calls

TOOLS = ["run_bash", "submit"]


def test_json_in_a_fenced_block_becomes_a_tool_call() -> None:
    text = '```json\n{\n  "name": "run_bash",\n  "arguments": {\n    "command": "ls /testbed"\n  }\n}\n```'
    content, calls = parse_text_tool_calls(text, TOOLS)
    assert content == ""
    assert [(c["name"], c["args"]) for c in calls] == [("run_bash", {"command": "ls /testbed"})]
    assert calls[0]["id"] and calls[0]["id"].startswith("call_")


def test_prose_around_the_block_is_kept() -> None:
    text = (
        'Let me look.\n```\n{"name": "run_bash", "arguments": {"command": "pwd"}}\n```\nThen I will decide.'
    )
    content, calls = parse_text_tool_calls(text, TOOLS)
    assert calls[0]["args"] == {"command": "pwd"}
    assert "Let me look." in content and "Then I will decide." in content and "```" not in content


def test_bare_json_and_string_arguments() -> None:
    text = 'I will call {"name": "run_bash", "arguments": "{\\"command\\": \\"echo hi\\"}"} now'
    content, calls = parse_text_tool_calls(text, TOOLS)
    assert calls[0]["args"] == {"command": "echo hi"}
    assert content == "I will call  now"


def test_tool_call_tags_openai_shape_and_lists() -> None:
    tagged = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    assert parse_text_tool_calls(tagged, TOOLS)[1][0]["name"] == "submit"

    openai_shape = '{"type": "function", "function": {"name": "run_bash", "parameters": {"command": "id"}}}'
    assert parse_text_tool_calls(openai_shape, TOOLS)[1][0]["args"] == {"command": "id"}

    many = '[{"name": "run_bash", "arguments": {"command": "a"}}, {"name": "submit"}]'
    assert [c["name"] for c in parse_text_tool_calls(many, TOOLS)[1]] == ["run_bash", "submit"]


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        "```bash\nfind . -name '*.py' | xargs wc -l\n```",
        '```json\n{"name": "Alice", "age": 3}\n```',  # a name, but not of a bound tool
        '{"name": "delete_everything", "arguments": {}}',
        '{"name": "run_bash", "arguments": ["not", "an", "object"]}',
        '{"name": "run_bash", "unexpected": 1}',
        '{"result": {"name": "run_bash", "arguments": {"command": "ls"}}}',  # nested in other JSON
        '```json\n{"name": "run_bash", "arguments": {"command": "ls"}\n```',  # broken JSON
    ],
)
def test_plain_text_and_non_calls_are_left_alone(text: str) -> None:
    assert parse_text_tool_calls(text, TOOLS) == (text, [])


def test_nothing_is_parsed_without_bound_tools() -> None:
    text = '{"name": "run_bash", "arguments": {"command": "ls"}}'
    assert parse_text_tool_calls(text, []) == (text, [])
