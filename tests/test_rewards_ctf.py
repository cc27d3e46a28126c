"""The CTF reward: exact-token matching (intercode) and robust flag parsing (strict)."""

from __future__ import annotations

import pytest

from intercode_agents.rewards import ctf_reward, parse_flag

GOLD = "picoCTF{r0t_thirt33n_r0und_tr1p}"


@pytest.mark.parametrize(
    ("submission", "intercode", "strict"),
    [
        (GOLD, 1.0, 1.0),
        (GOLD.upper(), 1.0, 1.0),  # case is ignored in both modes
        (f"  {GOLD}\n", 0.0, 1.0),  # the original split on one space: the leading blanks lose
        (f"`{GOLD}`", 0.0, 1.0),
        (f"'{GOLD}'.", 0.0, 1.0),
        (f"The flag is {GOLD}.", 0.0, 1.0),
        (f"{GOLD} is my answer", 1.0, 1.0),
        (f"{GOLD} or maybe picoCTF{{other}}", 1.0, 0.0),  # several guesses: the original took the first
        ("picoCTF{r0t_thirt33n_r0und_trip}", 0.0, 0.0),  # one character off
        ("", 0.0, 0.0),
    ],
)
def test_flag_matching(submission: str, intercode: float, strict: float) -> None:
    assert ctf_reward(submission, GOLD, "intercode").reward == intercode
    assert ctf_reward(submission, GOLD, "strict").reward == strict


def test_wrong_flag_parts_show_why() -> None:
    result = ctf_reward("the flag is picoCTF{wrong}", GOLD, "strict")
    assert result.parts == {"flag": "picoCTF{wrong}", "parsed_as": "embedded", "correct": False}
    ambiguous = ctf_reward(f"{GOLD} picoCTF{{b}}", GOLD, "strict")
    assert (ambiguous.parts["parsed_as"], ambiguous.note) == (
        "ambiguous",
        "several different flags were submitted",
    )


def test_plain_answers_without_flag_shape() -> None:
    assert parse_flag("The answer is: 0x6e8.") == ("0x6e8", "prose")  # picoCTF task 76 wants a bare number
    assert ctf_reward("flag = `0x6E8`", "0x6e8", "strict").reward == 1.0
    assert ctf_reward("0x6e8", "0x6e8", "intercode").reward == 1.0
    assert parse_flag("I could not find it") == (None, "none")
