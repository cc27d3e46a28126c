"""How an action's output is shown to a model (head + tail) and kept in full for the artifact."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_OBSERVATION_LIMIT = 4000  # characters a model sees per observation
ARTIFACT_OUTPUT_CAP = 1 << 20  # characters of output kept in a tool artifact
MIN_OBSERVATION_LIMIT = 200
NO_OUTPUT = "(no output)"


def truncate_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail of ``text`` within about ``limit`` characters.

    The cut is marked in the text itself (``[... N characters omitted ...]``) so a model knows that
    something is missing. Returns the text and whether it was cut.
    """
    if len(text) <= limit:
        return text, False
    head = limit // 2
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[-tail:]}", True


@dataclass(frozen=True)
class ModelView:
    """An observation as a model sees it."""

    text: str
    truncated: bool


def model_view(
    observation: str,
    limit: int,
    *,
    exit_code: int | None = None,
    timed_out: bool = False,
    notes: tuple[str, ...] = (),
) -> ModelView:
    """The observation cut to ``limit`` with short bracketed notes (exit code, timeout) appended."""
    text, truncated = truncate_middle(observation, limit)
    lines = [text if text.strip() else NO_OUTPUT]
    if exit_code not in (0, None):
        lines.append(f"[exit code: {exit_code}]")
    if timed_out and "timed out" not in observation.lower():
        lines.append("[the command timed out]")
    lines.extend(f"[{note}]" for note in notes)
    return ModelView("\n".join(lines), truncated)


def cap_output(text: str, cap: int = ARTIFACT_OUTPUT_CAP) -> str:
    """The full output for an artifact, bounded so a flood cannot fill memory twice."""
    return truncate_middle(text, cap)[0]
