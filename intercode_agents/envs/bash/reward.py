"""The Bash reward: file-system changes, their contents, and the answer text.

What the env supplies, per side (the agent's container after its episode, and a fresh container of the
same image after the gold command ran), as a :class:`BashSide`:

1. ``changes``: the container's change list (``Sandbox.diff()``; ``changes_from_docker`` reads the
   Engine API's own answer, ``GET /containers/{id}/changes``).
2. ``digests``: for ``paths_to_probe(agent.changes, gold.changes, mode)``, the state of each path in
   that container (``Sandbox.path_states``). Probe the same path list in both containers.
3. ``output``: the last observation (the agent's last command output; the gold command's output).
   ``None`` for the gold means the gold could not run at all.

Optionally ``base_digests`` (the same probe in a pristine container of the image) lets files that were
only touched drop out of the change list, as git's content check did in the original.

The reward is ``0.01 + file_diff + file_content + answer``, each part worth up to 0.33 and rounded to
two decimals as in the original InterCode:

- ``file_diff = round(0.33 * (1 - erf(missing + extra)), 2)`` over the change entries
  (:func:`~intercode_agents.envs.bash.changes.change_entries`) of the two sides;
- ``file_content``: intercode mode checks the entries both sides added (git's untracked files) and
  scores ``round(0.33 * equal / common, 2)``, or 0.33 when there are none (the original's free points
  for editing the wrong file). As in the original, only an entry whose path holds a dot is compared,
  by what ``md5sum`` shows of it (a file's content, a link's target's; any folder alike). Strict
  mode checks every file the gold added or modified, so a missed or wrong edit costs here too;
- ``answer = round(0.33 * cosine, 2)``: TF-IDF (scikit-learn defaults) of the two outputs; when TF-IDF
  cannot run (no word of two or more characters) it is 1 for identical outputs and 0 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from sklearn.feature_extraction.text import TfidfVectorizer

from intercode_agents.envs.bash.changes import change_entries, md5sum_view, same
from intercode_agents.reward import RewardMode, RewardResult, check_mode
from intercode_agents.sandbox import Change, PathState

#: What an agent may see of this reward (:mod:`intercode_agents.envs.reward_view`): the three part scores,
#: the answer's similarity, and the changes the agent made that the gold does not (its own paths). Hidden:
#: ``missing_changes`` and ``missing_paths`` (the gold's changes), ``content_checked`` (in strict mode, how
#: many files the gold writes), ``content_equal``, ``wrong_content_paths`` (gold paths, with the gold's
#: mode and owner) and ``gold_failed``.
AGENT_PARTS = frozenset(
    {"file_diff", "file_content", "answer", "answer_similarity", "extra_changes", "extra_paths"}
)

PART_WEIGHT = 0.33
BASE_REWARD = 0.01
_SHOWN_PATHS = 8


@dataclass(frozen=True)
class BashSide:
    """One container's state at scoring time."""

    changes: tuple[Change, ...]
    digests: Mapping[str, PathState]
    output: str | None


def answer_similarity(agent_output: str | None, gold_output: str | None) -> float:
    """TF-IDF cosine similarity of two outputs, with the original's fallback to plain equality."""
    try:
        tfidf = TfidfVectorizer().fit_transform([agent_output, gold_output])
        return float((tfidf @ tfidf.T).toarray()[0][1])
    except (ValueError, AttributeError, TypeError):  # empty vocabulary, or a missing output
        return 1.0 if agent_output == gold_output else 0.0


def _diff_part(agent: set[tuple[str, str]], gold: set[tuple[str, str]]) -> tuple[float, int, int]:
    missing, extra = len(gold - agent), len(agent - gold)
    return round(PART_WEIGHT * (1 - math.erf(missing + extra)), 2), missing, extra


def _same_intercode(entry: str, agent: Mapping[str, PathState], gold: Mapping[str, PathState]) -> bool:
    """The original's check of one untracked entry: ``md5sum PATH`` for a path holding a dot, else
    ``md5deep -r PATH``. Its image had no md5deep, so that command failed alike in both containers and
    the entry passed; md5sum follows links and fails alike on any two folders."""
    if "." not in entry:
        return True
    path = entry.rstrip("/")
    return md5sum_view(agent.get(path)) == md5sum_view(gold.get(path))


def _content_part(
    mode: RewardMode,
    agent: BashSide,
    gold: BashSide,
    agent_entries: set[tuple[str, str]],
    gold_entries: set[tuple[str, str]],
) -> tuple[float, int, int, list[str]]:
    if mode == "intercode":
        targets = sorted(p for p, status in agent_entries & gold_entries if status == "??")
        equal = [p for p in targets if _same_intercode(p, agent.digests, gold.digests)]
    else:
        # Every file, link or other entry the gold added or changed, and the folders whose own mode or
        # owner it changed (an added folder is its files: an empty `mkdir` earns nothing).
        targets = sorted(
            p
            for p, status in gold_entries
            if status == "C" or (status == "A" and getattr(gold.digests.get(p), "kind", None) != "dir")
        )
        equal = [
            p
            for p in targets
            if agent.digests.get(p) is not None and same(agent.digests[p], gold.digests.get(p), "strict")
        ]
    if not targets:
        return PART_WEIGHT, 0, 0, []
    wrong = [
        p if mode == "intercode" else f"{p} ({difference(agent.digests.get(p), gold.digests.get(p))})"
        for p in sorted(set(targets) - set(equal))
    ]
    return round(PART_WEIGHT * len(equal) / len(targets), 2), len(targets), len(equal), wrong


def difference(agent: PathState | None, gold: PathState | None) -> str:
    """What differs between the agent's and the gold's state of one path, in a few words."""
    if agent is None or agent.kind == "missing":
        return "missing"
    if gold is None or gold.kind == "missing":
        return "should not exist"
    if agent.kind != gold.kind:
        return f"a {agent.kind}, not a {gold.kind}"
    what = []
    if agent.md5 != gold.md5 or agent.files != gold.files:
        what.append("target" if agent.kind == "link" else "content")
    if agent.mode != gold.mode:
        what.append(f"mode {_octal(agent.mode)}, not {_octal(gold.mode)}")
    if (agent.uid, agent.gid) != (gold.uid, gold.gid):
        what.append(f"owner {agent.uid}:{agent.gid}, not {gold.uid}:{gold.gid}")
    return ", ".join(what) or "different"


def _octal(mode: int | None) -> str:
    return "-" if mode is None else f"{mode:o}"


def _shown(paths: list[str]) -> str:
    more = len(paths) - _SHOWN_PATHS
    return ", ".join(paths[:_SHOWN_PATHS]) + (f" (+{more} more)" if more > 0 else "")


def bash_reward(
    agent: BashSide,
    gold: BashSide,
    mode: str = "intercode",
    *,
    base_digests: Mapping[str, PathState] | None = None,
) -> RewardResult:
    """Score the agent's container against the gold's (see the module docstring)."""
    mode = check_mode(mode)
    agent_entries = change_entries(agent.changes, agent.digests, mode, base_digests)
    gold_entries = change_entries(gold.changes, gold.digests, mode, base_digests)
    file_diff, missing, extra = _diff_part(agent_entries, gold_entries)
    file_content, checked, equal, wrong = _content_part(mode, agent, gold, agent_entries, gold_entries)
    similarity = answer_similarity(agent.output, gold.output)
    answer = round(PART_WEIGHT * similarity, 2)
    parts: dict[str, float | int | str | bool | None] = {
        "file_diff": file_diff,
        "file_content": file_content,
        "answer": answer,
        "missing_changes": missing,
        "extra_changes": extra,
        "missing_paths": _shown(sorted(f"{s} {p}" for p, s in gold_entries - agent_entries)),
        "extra_paths": _shown(sorted(f"{s} {p}" for p, s in agent_entries - gold_entries)),
        "content_checked": checked,
        "content_equal": equal,
        "wrong_content_paths": _shown(wrong),
        "answer_similarity": round(similarity, 4),
        "gold_failed": gold.output is None,
    }
    if gold.output is None:  # both modes: the original scored such a gold as empty output, a free win
        return RewardResult(
            0.0, parts, corrupt=True, note="the gold command could not run; the task is unscored"
        )
    return RewardResult(round(BASE_REWARD + file_diff + file_content + answer, 2), parts)
