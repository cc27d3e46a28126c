"""The CTF reward: exact-token matching (intercode) and the exact flag (strict)."""

from __future__ import annotations

import pytest

from intercode_agents.envs.ctf.reward import ctf_reward

GOLD = "picoCTF{r0t_thirt33n_r0und_tr1p}"


@pytest.mark.parametrize(
    ("submission", "intercode", "strict"),
    [
        (GOLD, 1.0, 1.0),
        (f"  {GOLD}\n", 0.0, 1.0),  # the original split on one space: the leading blanks lose
        (GOLD.upper(), 1.0, 0.0),  # the original ignored case; strict compares the flag exactly
        (f"{GOLD}\tjunk", 0.0, 0.0),  # (issue finding: strict used to parse the flag out of this)
        (f"`{GOLD}`", 0.0, 0.0),
        (f"The flag is {GOLD}.", 0.0, 0.0),
        (f"{GOLD} is my answer", 1.0, 0.0),  # the original took the first token
        (f"{GOLD} or maybe picoCTF{{other}}", 1.0, 0.0),
        ("picoCTF{r0t_thirt33n_r0und_trip}", 0.0, 0.0),  # one character off
        ("", 0.0, 0.0),
    ],
)
def test_flag_matching(submission: str, intercode: float, strict: float) -> None:
    assert ctf_reward(submission, GOLD, "intercode").reward == intercode
    assert ctf_reward(submission, GOLD, "strict").reward == strict


def test_parts_show_what_was_compared() -> None:
    result = ctf_reward(f"  {GOLD.upper()} ", GOLD, "strict")
    assert result.parts == {"flag": GOLD.upper(), "correct": False}
    assert "only in case" in (result.note or "")
    assert ctf_reward("0x6e8", "0x6e8", "strict").reward == 1.0  # a bare answer is a flag too
