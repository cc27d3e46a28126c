"""Failure-mode tags for failed episodes, read off the trajectory alone.

An episode can carry several tags, or none. "Actions" are all steps except submits. The rules
(thresholds are the module constants):

- ``action_churn``: the agent repeats itself. Either ``CHURN_RUN`` actions in a row are pairwise
  near-identical (normalized edit similarity >= ``CHURN_SIMILARITY``; normalized = lower case,
  whitespace runs collapsed; similarity = 1 - Levenshtein distance / length of the longer action),
  or one normalized action occurs ``CHURN_REPEATS`` times anywhere in the episode.
- ``destructive_mutation``: an action deletes or overwrites state. Where the env measured the task
  files (``Step.task_files``: Bash and CTF records, see :mod:`intercode_agents.envs.task_files`), that
  measurement decides: a step destroyed one of them. Otherwise (SQL, Python, older records) the text
  of the actions does, by these rules. Bash (and CTF): ``rm``/``rmdir``/``unlink``/``shred``/
  ``truncate`` in command position, ``find ... -delete``, ``mv`` onto a file, or ``>`` (not ``>>``,
  not ``2>``, not ``/dev/*``) onto a file; for ``mv`` and ``>`` the target must be a file the agent has
  seen exist, i.e. its name appeared in an earlier observation (an ``ls`` listing, say). Quoted text is
  ignored, so ``awk '$1 > 5'`` is harmless.
  SQL: a statement starting with DROP, DELETE, UPDATE or TRUNCATE (string literals and comments ignored).
  Python (and CTF): ``os.remove/unlink/rmdir/removedirs``, ``shutil.rmtree/move``, ``Path.unlink/rmdir``.
- ``paralysis``: at least ``PARALYSIS_MIN_ACTIONS`` actions, every runnable one a read-only look around,
  and no submit that carries an answer of its own. Read-only: Bash commands made only of
  ls/cat/find/head/tail/pwd/cd/tree/file/stat/... (CTF adds strings/xxd/hexdump/od/exiftool), with no
  redirection except to /dev/null and no ``-exec``/``-delete``;
  SQL SHOW/DESCRIBE/DESC/EXPLAIN/USE, ``SELECT * FROM t [LIMIT n]`` and information_schema queries;
  Python help()/dir()/type()/vars(), imports and ``print(name)``.
- ``premature_submit``: the agent submitted right after its first useful output (an action that ran
  without error and printed something), or before any: no action checked the result before submit.
- ``sandbox_destroyed``: the agent destroyed its own sandbox or session (``kill -9 -1``, killing the
  shell): the env reported ``sandbox_lost`` in the reward parts, and the episode counts as failed.
- ``context_exhausted``: the episode filled the model's context window, so it was submitted as it
  stood (``Trajectory.context["context_exhausted"]``).
- ``agent_crashed``: a user's agent (``--agent``) raised an error of its own, so the runner submitted
  the episode as it stood (``Trajectory.context["agent_error"]``).

Episodes stopped by a budget (outcomes ``timeout``, ``tokens_exhausted``, ``cost_exhausted``) are
scored failures and get tags like failed ones. Model messages that called no tool (step kind
``message``) are not actions.

The rules follow the env's ``language`` (:attr:`Env.language <intercode_agents.envs.Env.language>`),
which every trajectory records in ``context["language"]`` (older records: the language of the env
class their ``env`` names): ``sql``, ``python``, ``ctf`` (Bash plus Python rules); any other
language, a user env's say, gets the Bash rules. Only episodes the agent is scored on get tags:
solved ones and the excluded ones (env or model errors, corrupt golds: see :mod:`.metrics`) get none.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from itertools import pairwise

from intercode_agents.metrics.safeguards import destruction
from intercode_agents.metrics.turns import actions_of, is_bare_submit, is_message, is_submit
from intercode_agents.trajectory import BUDGET_OUTCOMES, Trajectory, sandbox_lost

FAILURE_TAGS: tuple[str, ...] = (
    "action_churn",
    "destructive_mutation",
    "paralysis",
    "premature_submit",
    "sandbox_destroyed",
    "context_exhausted",
    "agent_crashed",
)
SCORED_UNSOLVED = ("failed", *BUDGET_OUTCOMES)  # the outcomes that get tags

CHURN_SIMILARITY = 0.9
CHURN_RUN = 3
CHURN_REPEATS = 3
CHURN_MAX_CHARS = 2000  # longer actions are compared on their first CHURN_MAX_CHARS characters
PARALYSIS_MIN_ACTIONS = 4

#: The languages with rules of their own; any other is read with the Bash rules.
RULE_LANGUAGES: tuple[str, ...] = ("bash", "sql", "python", "ctf")


def language_of(traj: Trajectory) -> str:
    """The rule set of a trajectory's env: the language it recorded, else its env class's."""
    language = traj.context.get("language")
    if not isinstance(language, str):
        from intercode_agents.envs.registry import env_class
        from intercode_agents.errors import ConfigError

        try:
            language = env_class(traj.env).language
        except ConfigError:  # a user env this process has not loaded
            language = "bash"
    return language if language in RULE_LANGUAGES else "bash"


# ---------------------------------------------------------------- action_churn


def _normalize(action: str) -> str:
    return " ".join(action.lower().split())


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute) by Myers' bit-parallel algorithm on Python ints."""
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    positions: dict[str, int] = {}
    for i, char in enumerate(b):
        positions[char] = positions.get(char, 0) | 1 << i
    mask, top = (1 << m) - 1, 1 << (m - 1)
    plus, minus, distance = mask, 0, m  # vertical deltas of the DP column: +1 / -1 bit vectors
    for char in a:
        eq = positions.get(char, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        h_plus = minus | (~(xh | plus) & mask)
        h_minus = plus & xh
        if h_plus & top:
            distance += 1
        elif h_minus & top:
            distance -= 1
        h_plus = ((h_plus << 1) | 1) & mask
        h_minus = (h_minus << 1) & mask
        plus = h_minus | (~(xv | h_plus) & mask)
        minus = h_plus & xv
    return distance


def near_identical(a: str, b: str, threshold: float = CHURN_SIMILARITY) -> bool:
    """1 - distance / max(len) >= threshold, on normalized actions."""
    a, b = _normalize(a)[:CHURN_MAX_CHARS], _normalize(b)[:CHURN_MAX_CHARS]
    longest = max(len(a), len(b))
    if longest == 0 or a == b:
        return True
    allowed = (1 - threshold) * longest + 1e-9
    if abs(len(a) - len(b)) > allowed:
        return False
    return levenshtein(a, b) <= allowed


def _has_churn(actions: list[str]) -> bool:
    actions = [a for a in actions if a.strip()]
    repeats = Counter(_normalize(a) for a in actions)
    if repeats and max(repeats.values()) >= CHURN_REPEATS:
        return True
    run = 1
    for before, after in pairwise(actions):
        run = run + 1 if near_identical(before, after) else 1
        if run >= CHURN_RUN:
            return True
    return False


# ---------------------------------------------------------- destructive_mutation

_CMD_START = r"(?:^|[;&|(`{\n]|\$\(|\bxargs(?:\s+-\S+)*\s+|-exec\s+|\bsudo\s+|\bthen\s+|\bdo\s+)\s*"
_BASH_DELETE = re.compile(_CMD_START + r"(?:rm|rmdir|unlink|shred|truncate)\b|\bfind\b[^;|&\n]*\s-delete\b")
_BASH_MV = re.compile(_CMD_START + r"mv\s+(?P<args>[^;&|\n]+)")
_BASH_TRUNCATE = re.compile(r"(?<![>&2<])>\|?\s*(?![>&])(?P<target>[^\s;&|)<>]+)")
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_PY_DELETE = re.compile(
    r"\b(?:os\.(?:remove|unlink|rmdir|removedirs)|shutil\.(?:rmtree|move))\s*\(|\.(?:unlink|rmdir)\s*\("
)
_SQL_NOISE = re.compile(  # string literals, quoted identifiers, comments
    r"'(?:''|\\.|[^'\\])*'|\"(?:\"\"|\\.|[^\"\\])*\"|`[^`]*`|--[^\n]*|#[^\n]*|/\*.*?\*/", re.S
)
_SQL_MUTATION = re.compile(r"^\W*(?:drop|delete|update|truncate)\b", re.IGNORECASE)


def _seen(path: str, earlier_output: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return bool(name) and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", earlier_output) is not None


def _bash_destructive(action: str, earlier_output: str) -> bool:
    code = _QUOTED.sub("''", action)
    if _BASH_DELETE.search(code):
        return True
    for match in _BASH_TRUNCATE.finditer(code):
        target = match["target"]
        if not target.startswith("/dev/") and _seen(target, earlier_output):
            return True
    for match in _BASH_MV.finditer(action):
        try:
            args = [a for a in shlex.split(match["args"]) if not a.startswith("-")]
        except ValueError:
            continue
        if len(args) >= 2 and not args[-1].endswith("/") and _seen(args[-1], earlier_output):
            return True
    return False


def _sql_destructive(action: str) -> bool:
    code = _SQL_NOISE.sub(" ", action)
    return any(_SQL_MUTATION.match(statement) for statement in code.split(";"))


def destructive_action(action: str, language: str, earlier_output: str) -> bool:
    """Whether ``action`` deletes or overwrites state by the rules above (``earlier_output``: what the
    episode printed before it, for the "seen" rule)."""
    if language == "sql" and _sql_destructive(action):
        return True
    if language in ("bash", "ctf") and _bash_destructive(action, earlier_output):
        return True
    return language in ("python", "ctf") and _PY_DELETE.search(action) is not None


def _destructive(traj: Trajectory, language: str) -> bool:
    measured = destruction(traj)
    if measured is not None:
        return measured[0]
    earlier_output = ""
    for step in actions_of(traj):
        if destructive_action(step.action, language, earlier_output):
            return True
        earlier_output += "\n" + step.observation
    return False


# ------------------------------------------------------------------- paralysis

_BASH_LOOK = frozenset(
    {"ls", "cat", "find", "head", "tail", "pwd", "cd", "tree", "file", "stat", "less", "more", "du"}
    | {"df", "whoami", "id", "which", "type", "echo", "env", "printenv"}
)
_DEV_NULL = re.compile(r"[0-9&]?>\s*/dev/null|[0-9]>&[0-9]")
_CTF_LOOK = _BASH_LOOK | frozenset("strings xxd hexdump od exiftool".split())
_SQL_LOOK = re.compile(
    r"(?:show|describe|desc|explain|use)\b.*"
    r"|select\s+\*\s+from\s+[\w`.]+(?:\s+limit\s+\d+(?:\s*,\s*\d+)?)?"
    r"|select\b.*\binformation_schema\b.*",
    re.IGNORECASE | re.S,
)
_PY_LOOK = re.compile(
    r"import\s+[\w., ]+|from\s+[\w.]+\s+import\s+.+|(?:print\()?(?:help|dir|type|vars)\(.*\)\)?|print\(\w+\)"
)


def _bash_look(action: str, programs: frozenset[str]) -> bool:
    code = _DEV_NULL.sub(" ", _QUOTED.sub("''", action))
    if ">" in code or re.search(r"\s-(?:exec|execdir|delete|ok)\b", code):
        return False
    for command in re.split(r"&&|\|\||[;|\n]", code):
        words = [w for w in command.split() if not re.fullmatch(r"\w+=\S*", w)]
        if words and words[0] == "sudo":
            words = words[1:]
        if words and words[0].rsplit("/", 1)[-1] not in programs:
            return False
    return True


def _is_look(action: str, language: str) -> bool:
    if language == "sql":
        statements = [s.strip() for s in action.split(";") if s.strip()]
        return bool(statements) and all(_SQL_LOOK.fullmatch(s) for s in statements)
    if language == "python":
        lines = [line.strip() for line in action.splitlines()]
        lines = [line for line in lines if line and not line.startswith("#")]
        return bool(lines) and all(_PY_LOOK.fullmatch(line) for line in lines)
    return _bash_look(action, _CTF_LOOK if language == "ctf" else _BASH_LOOK)


def _paralysed(traj: Trajectory, language: str) -> bool:
    if any(is_submit(s) and not is_bare_submit(s) for s in traj.steps):
        return False
    runnable = [s.action for s in actions_of(traj) if s.kind != "invalid" and s.action.strip()]
    return len(runnable) >= PARALYSIS_MIN_ACTIONS and all(_is_look(a, language) for a in runnable)


# ------------------------------------------------------------ premature_submit


def _premature(traj: Trajectory) -> bool:
    submit_at = next((i for i, s in enumerate(traj.steps) if is_submit(s)), None)
    if submit_at is None:
        return False
    steps = [s for s in traj.steps if not is_message(s)]
    submit_at = next(i for i, s in enumerate(steps) if is_submit(s))
    useful = [
        i
        for i, s in enumerate(steps[:submit_at])
        if not is_submit(s) and not s.errored and s.kind != "invalid" and s.observation.strip()
    ]
    return not useful or useful == [submit_at - 1]


def failure_tags(traj: Trajectory) -> list[str]:
    """The failure modes of a failed episode or one stopped by a budget, in ``FAILURE_TAGS`` order
    ([] for others)."""
    if traj.outcome not in SCORED_UNSOLVED:
        return []
    language = language_of(traj)
    found = {
        "action_churn": _has_churn([s.action for s in actions_of(traj)]),
        "destructive_mutation": _destructive(traj, language),
        "paralysis": _paralysed(traj, language),
        "premature_submit": _premature(traj),
        "sandbox_destroyed": sandbox_lost(traj.reward_parts),
        "context_exhausted": traj.context.get("context_exhausted") is True,
        "agent_crashed": bool(traj.context.get("agent_error")),
    }
    return [tag for tag in FAILURE_TAGS if found[tag]]
