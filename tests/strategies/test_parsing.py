"""Action parsing: every reply shape a model produces, and the text is never mangled."""

from __future__ import annotations

import pytest

from intercode_agents.strategies.parsing import InvalidReply, ParsedAction, parse_plan, parse_reply


def action_of(reply: str, language: str | None = None) -> str:
    result = parse_reply(reply, language=language)
    assert isinstance(result, ParsedAction), result
    return result.action


def reason_of(reply: str, language: str | None = None) -> str:
    result = parse_reply(reply, language=language)
    assert isinstance(result, InvalidReply), result
    return result.reason


# -- code fences ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```bash\nls -la /testbed\n```", "ls -la /testbed"),
        ("```\nls -la\n```", "ls -la"),
        ("```sh\nfind . -name '*.py' | wc -l\n```", "find . -name '*.py' | wc -l"),
        ("```ls -la```", "ls -la"),
        ("```pwd\n```", "pwd"),
        ("```bash\nls\n", "ls"),  # unclosed (cut by a stop sequence)
        ("```\n\n  \ncat a.txt\n\n```", "cat a.txt"),
        ("```SQL\nSELECT 1\n```", "SELECT 1"),
    ],
)
def test_fenced_block(reply: str, expected: str) -> None:
    assert action_of(reply) == expected


def test_fence_first_line_with_spaces_is_code_not_tag() -> None:
    assert action_of("```ls -la\n/tmp\n```") == "ls -la\n/tmp"


def test_text_before_fence_is_the_thought() -> None:
    result = parse_reply("I will count the lines.\n```bash\nwc -l log.txt\n```\nThat should do.")
    assert isinstance(result, ParsedAction)
    assert result.action == "wc -l log.txt"
    assert result.thought == "I will count the lines."


def test_first_non_empty_fence_wins() -> None:
    assert action_of("```\n```\nthen\n```bash\necho one\n```\n```bash\necho two\n```") == "echo one"


def test_empty_fence_is_invalid() -> None:
    assert "empty" in reason_of("Here:\n```bash\n\n```")


# -- Action labels --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Action: ls", "ls"),
        ("action: ls", "ls"),
        ("Action 3: grep -c ERROR app.log", "grep -c ERROR app.log"),
        ("**Action:** cat notes.txt", "cat notes.txt"),
        ("**Action**: cat notes.txt", "cat notes.txt"),
        ("Action: `ls -l`", "ls -l"),
        ("Action:\n```bash\nmkdir -p out && touch out/x\n```", "mkdir -p out && touch out/x"),
        ("Action: ```sql\nSELECT name FROM users\n```", "SELECT name FROM users"),
    ],
)
def test_action_label(reply: str, expected: str) -> None:
    assert action_of(reply) == expected


def test_thought_and_action() -> None:
    result = parse_reply("Thought: the log is in /var/log.\nAction: ls /var/log")
    assert isinstance(result, ParsedAction)
    assert result.thought == "the log is in /var/log."
    assert result.action == "ls /var/log"


def test_hallucinated_observation_is_cut() -> None:
    reply = "Thought: look\nAction: ls\nObservation: a.txt b.txt\nThought: now cat\nAction: cat a.txt"
    assert action_of(reply) == "ls"


def test_action_label_inside_a_fence_is_not_a_label() -> None:
    reply = "```python\naction: str = 'x'\nprint(action)\n```"
    assert action_of(reply, "python") == "action: str = 'x'\nprint(action)"


def test_action_then_prose_after_blank_line() -> None:
    assert action_of("Action: ls -la\n\nThis lists every file.") == "ls -la"


def test_multiline_action_after_label_line() -> None:
    reply = "Action:\nSELECT name,\n       age\nFROM people\nWHERE age > 30"
    assert action_of(reply, "sql") == "SELECT name,\n       age\nFROM people\nWHERE age > 30"


def test_action_with_prose_before_its_fence() -> None:
    assert action_of("Action: I will run this\n```bash\ndu -sh .\n```") == "du -sh ."


def test_empty_action_label_is_invalid() -> None:
    assert "empty" in reason_of("Thought: hmm\nAction:\nObservation: nothing")


# -- text is kept as written ----------------------------------------------------------------------
def test_inner_quotes_backslashes_and_case_are_kept() -> None:
    cmd = """grep -E "^Error: \\"[A-Z]+\\"" Log.TXT | sed 's/\\t/ /g'"""
    assert action_of(f"```bash\n{cmd}\n```") == cmd


def test_python_indentation_is_kept() -> None:
    code = "def f(x):\n    if x:\n        return 'Yes'\n    return \"No\""
    assert action_of(f"```python\n{code}\n```", "python") == code


def test_common_indentation_is_removed_only() -> None:
    assert action_of("Action:\n    for i in range(2):\n        print(i)", "python") == (
        "for i in range(2):\n    print(i)"
    )


def test_sql_with_cte_is_kept_verbatim() -> None:
    sql = "WITH t AS (SELECT dept, COUNT(*) AS n FROM emp GROUP BY dept)\nSELECT dept FROM t WHERE n > 2"
    assert action_of(f"```sql\n{sql}\n```", "sql") == sql
    assert action_of(sql, "sql") == sql  # bare, multi-line


def test_crlf_line_endings() -> None:
    assert action_of("```bash\r\nls\r\n```") == "ls"


# -- bare replies ---------------------------------------------------------------------------------
def test_single_bare_line_is_an_action() -> None:
    assert action_of("ls -la /testbed") == "ls -la /testbed"


def test_bare_python_code() -> None:
    code = "def add(a, b):\n    return a + b"
    assert action_of(code, "python") == code


def test_multiline_prose_is_invalid() -> None:
    reason = reason_of("I am not sure what to do.\nMaybe list the files first?", "bash")
    assert "no code block" in reason


def test_single_prose_sentence_is_invalid() -> None:
    assert "no code block" in reason_of("I think the answer is in the log file.")


def test_thought_without_action_is_invalid() -> None:
    result = parse_reply("Thought: I should look at the files first.")
    assert isinstance(result, InvalidReply)
    assert "no Action" in result.reason
    assert result.thought == "I should look at the files first."


@pytest.mark.parametrize("reply", ["", "   \n\t"])
def test_empty_reply_is_invalid(reply: str) -> None:
    assert reason_of(reply) == "the reply is empty"


# -- submit forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "action", "argument"),
    [
        ("submit", "submit", ""),
        ("Submit", "submit", ""),
        ("`submit`", "submit", ""),
        ("```\nsubmit\n```", "submit", ""),
        ("```submit```", "submit", ""),
        ("Action: submit", "submit", ""),
        ("Thought: done.\nAction: submit", "submit", ""),
        ("submit picoCTF{b4s3_64_is_n0t_crypt0}", "submit picoCTF{b4s3_64_is_n0t_crypt0}", None),
        ("Action: submit `picoCTF{x_y}`", "submit picoCTF{x_y}", None),
        ("Action: `submit picoCTF{x_y}`", "submit picoCTF{x_y}", None),
        ("submit 'picoCTF{it''s}'", "submit picoCTF{it''s}", None),
        ('submit "picoCTF{q}"', "submit picoCTF{q}", None),
        ("submit: picoCTF{colon}", "submit picoCTF{colon}", None),
        ("```bash\nsubmit picoCTF{fenced}\n```", "submit picoCTF{fenced}", None),
        ("submit\nI am confident in the output.", "submit", ""),
    ],
)
def test_submit_forms(reply: str, action: str, argument: str | None) -> None:
    result = parse_reply(reply)
    assert isinstance(result, ParsedAction)
    assert result.is_submit
    assert result.action == action
    assert result.submit_argument == (argument if argument is not None else action.removeprefix("submit "))


def test_submit_function_name_for_python() -> None:
    for reply in ("submit count_vowels", "submit `count_vowels`", "submit count_vowels()"):
        result = parse_reply(reply, language="python")
        assert isinstance(result, ParsedAction)
        assert result.action == "submit count_vowels"


def test_flag_case_is_kept() -> None:
    result = parse_reply("SUBMIT picoCTF{MiXeD_CaSe}")
    assert isinstance(result, ParsedAction)
    assert result.action == "submit picoCTF{MiXeD_CaSe}"


@pytest.mark.parametrize("reply", ["submit_report.sh --all", "./submit", "cat submit.txt", "submitter"])
def test_words_containing_submit_are_not_submits(reply: str) -> None:
    result = parse_reply(reply)
    assert isinstance(result, ParsedAction)
    assert not result.is_submit
    assert result.action == reply


# -- plans ----------------------------------------------------------------------------------------
def test_numbered_plan() -> None:
    plan = "Plan:\n1. List the files in /testbed.\n2) Count the lines of log.txt\nStep 3: Submit the count."
    assert parse_plan(plan) == [
        "List the files in /testbed.",
        "Count the lines of log.txt",
        "Submit the count.",
    ]


def test_bulleted_plan_and_bold_steps() -> None:
    assert parse_plan("- **Inspect the table**\n- Write the query") == [
        "Inspect the table",
        "Write the query",
    ]


def test_no_plan() -> None:
    assert parse_plan("I will just do it.") == []
