"""Trajectory files of the original InterCode harness: read, check, and match to this project's tasks.

A file holds one entry per episode, keyed by task index; each entry has ``task_id`` (the index of the
task in its dataset file), ``query``, ``turn_history`` (``actions``, ``observations``, ``rewards``, ...)
and ``summary`` (``max_reward``, ...). A task counts as solved when ``summary.max_reward == 1``.
``environment`` (``ic_bash``, ``ic_sql``, ``ic_python``, ``ic_ctf``) and ``dataset`` (the path of the
dataset file) say which tasks the file is about. The original's three experiment loops wrote three
shapes, and each treated a turn its own way, which :class:`LoggedTurn` records (what its env was given,
and whether the state was scored after it):

- **Try Again** (``eval_n_turn.py``): every action that held code ran and was scored at once as if
  submitted (Bash and SQL: the action's output; Python: only an action starting with ``def``,
  submitting the first function it defines; CTF: only ``submit FLAG``). A reply without code got the
  template's retry message as its observation and reward 0, and a policy failure logged the action
  ``blocked`` with no observation: neither ran.
- **ReAct** (``eval_react.py``; Bash and SQL): ``turn_history`` adds ``thoughts``, and each action is
  the model's tool call as written. The loop took the text between ``execute[`` and the last ``]``
  (SQL: up to the first ``;``) as the command, ``submit`` as the submit; any other action ran nothing
  and got the observation "Error executing query: Your last `execute` action did not contain <env>
  code". Only a submit was scored (an action is scored 0 by the env); a run that used every turn
  ended with a forced ``submit``.
- **Plan & Solve** (``eval_plan_solve.py``; Bash and SQL): entries wrapped as ``{"meta": {...},
  "logs": {...}}`` (some files have no wrapper), ``turn_history`` adds ``steps`` (the plan step each
  action carried out; refinement turns have none), and each action is what the loop's parser made of
  the model's reply: the command that ran, as it ran (in one Bash run a fenced block reached the
  shell whole, fences and all). Each command ran and was scored at once; a reply the parser found no
  code in got the retry message and ran nothing (its logged reward is left over from the step before).

Whatever the shape, the actions are replayed as that loop ran them. A file this module cannot read
that way (a shape it does not know, an observation that contradicts the loop's parser, a loop the
original never had for an env) is refused with the reason, never read as something else.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from intercode_agents.datasets import Task, load_tasks
from intercode_agents.datasets.gold_caveats import left_out_of_rescore
from intercode_agents.errors import ConfigError

Shape = Literal["try_again", "react", "plan_solve"]
SHAPE_NAMES: dict[Shape, str] = {"try_again": "Try Again", "react": "ReAct", "plan_solve": "Plan & Solve"}
ENVIRONMENTS = {"ic_bash": "bash", "ic_sql": "sql", "ic_python": "python", "ic_ctf": "ctf"}
DEFAULT_SPLIT = {"sql": "spider", "python": "mbpp", "ctf": "picoctf"}
FULL = 1.0 - 1e-6
_RETRY = re.compile(r"^No [\w ]+ code was found in your last response")
_BASH_DATASET = re.compile(r"nl2bash_fs_(\d+)")
_FIRST_DEF = re.compile(r"def (\w+)\(")  # the original's pattern for the function an action defines
_EXECUTE = re.compile(r"execute\[(.*)\]", re.DOTALL)  # greedy: up to the last "]"
_SUBMIT = re.compile(r"^\s*submit\b[ \t]*(.*)\Z", re.DOTALL)  # the CTF env's submit (as this project's)


class BadLog(ConfigError):
    """A trajectory file that is not in the original harness's format (or does not match the tasks)."""


@dataclass(frozen=True)
class LoggedTurn:
    """One logged turn and how the original's loop treated it."""

    action: str  # as logged (ReAct: the model's tool call, ``execute[...]`` or ``submit``)
    observation: str | None  # None: no observation was logged (a policy failure)
    reward: float
    command: str | None = None  # what the original's env ran for this turn; None: nothing ran
    submits: bool = False  # the env was asked to submit at this turn (nothing else ran)
    scored: bool = False  # the original scored the state after this turn: its reward is a score
    submission: str | None = None  # the answer that scoring submitted; None: the last output
    thought: str | None = None  # ReAct: the model's thought before the action
    step: str | None = None  # Plan & Solve: the plan step the action carried out

    @property
    def executed(self) -> bool:
        """The original's env acted on this turn (ran a command or took a submit)."""
        return self.command is not None or self.submits


@dataclass(frozen=True)
class LoggedEpisode:
    key: str  # the entry's key in the file
    index: int  # the task's index in its dataset file
    query: str
    turns: tuple[LoggedTurn, ...]
    max_reward: float
    final_info: dict[str, Any] = field(default_factory=dict)  # the original's info of the last scoring
    turns_max: int | None = None  # the loop's turn limit, where its summary logged one (ReAct)

    @property
    def solved(self) -> bool:
        return self.max_reward >= FULL


@dataclass(frozen=True)
class PaperLog:
    path: Path
    env: str
    split: str
    shape: Shape
    episodes: tuple[LoggedEpisode, ...]
    meta: dict[str, Any] = field(default_factory=dict)  # Plan & Solve: the run's arguments

    @property
    def success_rate(self) -> float:
        return sum(e.solved for e in self.episodes) / len(self.episodes) if self.episodes else 0.0


@dataclass(frozen=True)
class LeftOut:
    """An entry left out of a re-score, and why."""

    key: str
    task_id: str | None
    kind: str  # "stale query", "unavailable", or a caveat's treatment ("corrupt", "volatile", ...)
    reason: str


@dataclass(frozen=True)
class Matched:
    """The episodes of a log paired with their tasks, and the entries that could not be paired."""

    pairs: list[tuple[Task, LoggedEpisode]]
    left_out: list[LeftOut]


# -- reading the file ------------------------------------------------------------------------------------


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a trajectory file can hold")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no such trajectory file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder; give the trajectory files themselves") from None
    except UnicodeDecodeError as exc:
        raise BadLog(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise BadLog(f"{path} is not JSON: {exc}") from None
    except RecursionError:
        raise BadLog(f"{path} nests arrays or objects too deeply to be a trajectory file") from None
    except ValueError as exc:  # NaN, Infinity, 1e999, an integer of thousands of digits
        raise BadLog(f"{path} is not a trajectory file: {exc}") from None


def _target(entry: dict[str, Any], override: str | None, where: str) -> tuple[str, str]:
    if override:
        env, _, split = override.partition("/")
        if env not in ENVIRONMENTS.values():
            raise ConfigError(
                f"--env {override!r}: choose bash/fsN, bash/test, sql, sql/wikisql, python or ctf"
            )
        if not split:
            if env == "bash":
                raise ConfigError("--env bash needs its file system: bash/fs1, bash/fs2, ... or bash/test")
            split = DEFAULT_SPLIT[env]
        return env, split
    environment = entry.get("environment")
    found = ENVIRONMENTS.get(environment) if isinstance(environment, str) else None
    if found is None:
        raise BadLog(
            f"{where}: cannot tell the env from environment={environment!r} "
            f"(expected one of {', '.join(ENVIRONMENTS)}); pass --env"
        )
    env = found
    dataset = str(entry.get("dataset") or "")
    if env == "bash":
        fs = _BASH_DATASET.search(dataset)
        if fs:
            return env, f"fs{fs.group(1)}"
        if "test_queries" in dataset:
            return env, "test"
        raise BadLog(
            f"{where}: cannot tell the Bash file system from dataset={dataset!r}; pass --env bash/fsN"
        )
    if env == "sql" and "wikisql" in dataset.lower():
        return env, "wikisql"
    return env, DEFAULT_SPLIT[env]


def _text(value: Any) -> str:
    if isinstance(value, list):  # the CTF harness logged some actions as a one-item list
        value = value[0] if value else ""
    return value if isinstance(value, str) else json.dumps(value)


def _shape_of(entry: Any) -> Shape:
    history = entry.get("turn_history") if isinstance(entry, dict) else None
    if not isinstance(history, dict):
        return "try_again"  # (the entry's own check says what is wrong)
    if "thoughts" in history:
        return "react"
    if "steps" in history:
        return "plan_solve"
    return "try_again"


def _entries(raw: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any], Shape]:
    """The entries of the file, the Plan & Solve wrapper's ``meta``, and the file's shape."""
    if not isinstance(raw, dict) or not raw:
        kind = "an empty object" if raw == {} else type(raw).__name__
        raise BadLog(
            f"{path}: expected an InterCode trajectory file (an object keyed by task index), got {kind}"
        )
    meta: dict[str, Any] = {}
    wrapped = "logs" in raw and "meta" in raw
    if wrapped:
        if (
            set(raw) != {"meta", "logs"}
            or not isinstance(raw["logs"], dict)
            or not isinstance(raw["meta"], dict)
        ):
            raise BadLog(f"{path}: a Plan & Solve file holds exactly the objects meta and logs")
        meta, raw = raw["meta"], raw["logs"]
        if not raw:
            raise BadLog(f"{path}: its logs object holds no entry")
    shapes: dict[Shape, str] = {}
    for key, entry in raw.items():
        history = entry.get("turn_history") if isinstance(entry, dict) else None
        if isinstance(history, dict) and "thoughts" in history and "steps" in history:
            raise BadLog(
                f"{path} entry {key!r}: its turns have both thoughts (ReAct) and steps (Plan & Solve); "
                "no loop of the original wrote that"
            )
        shapes.setdefault(_shape_of(entry), key)
    if len(shapes) > 1:
        found = ", ".join(f"{SHAPE_NAMES[s]} (entry {k!r})" for s, k in shapes.items())
        raise BadLog(f"{path}: its entries are of different loops: {found}")
    shape = next(iter(shapes))
    if wrapped and shape != "plan_solve":
        raise BadLog(f"{path}: a meta/logs file is Plan & Solve's, but its turns have no steps")
    return raw, meta, shape


# -- how each loop treated a turn --------------------------------------------------------------------------


def _number(value: Any, what: str, where: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise BadLog(f"{where}: {what} is {value!r}, not a number")
    return float(value)


def _try_again_turn(env: str, action: str, observation: str | None, reward: float) -> LoggedTurn:
    turn = LoggedTurn(action, observation, reward)
    if observation is None or _RETRY.match(observation):
        return turn  # a policy failure, or a reply without code: nothing ran
    if env == "python":
        match = _FIRST_DEF.match(action) if action.startswith("def") else None
        name = match.group(1) if match else None
        return LoggedTurn(
            action, observation, reward, command=action, scored=name is not None, submission=name
        )
    if env == "ctf":
        flag = _SUBMIT.match(action)
        if flag is None:
            return LoggedTurn(action, observation, reward, command=action)
        answer = flag.group(1).strip().split(" ")[0]
        return LoggedTurn(action, observation, reward, submits=True, scored=True, submission=answer)
    return _ran_and_scored(action, observation, reward)


def _ran_and_scored(command: str, observation: str | None, reward: float, **extra: Any) -> LoggedTurn:
    """A Bash or SQL command the loop ran and then scored as if submitted (the env took any command
    starting with ``submit`` as the submit itself, and ``skip`` ran nothing)."""
    if command.startswith("submit") or command == "skip":
        return LoggedTurn(command, observation, reward, submits=True, scored=True, **extra)
    return LoggedTurn(command, observation, reward, command=command, scored=True, **extra)


def react_command(env: str, action: str) -> str | None:
    """The command the original's ReAct loop read from a model's action, or None when it found none."""
    if action == "submit":
        return action
    match = _EXECUTE.search(action)
    if match is None:
        return None
    command = match.group(1)
    return command.split(";", 1)[0] if env == "sql" else command


def _react_turn(
    env: str, action: str, observation: str, reward: float, thought: str, where: str
) -> LoggedTurn:
    command = react_command(env, action)
    refusal = f"Error executing query: Your last `execute` action did not contain {env} code"
    if (command is None) != (observation == refusal):
        said = "holds no execute[...]" if command is None else f"holds the command {command[:60]!r}"
        raise BadLog(
            f"{where}: the action {action[:80]!r} {said}, but its observation "
            f"{'is not' if command is None else 'is'} the ReAct loop's refusal; this file was not written "
            "by the ReAct loop this reader knows"
        )
    if command is None or command == "skip":
        return LoggedTurn(action, observation, reward, thought=thought)
    if command.startswith("submit"):
        return LoggedTurn(action, observation, reward, submits=True, scored=True, thought=thought)
    if reward != 0:
        raise BadLog(
            f"{where}: the action {action[:80]!r} ran a command, yet its logged reward is {reward:g}; "
            "the ReAct loop scored only its submits"
        )
    return LoggedTurn(action, observation, reward, command=command, thought=thought)


def _plan_solve_turn(action: str, observation: str, reward: float, step: str | None) -> LoggedTurn:
    if _RETRY.match(observation):
        return LoggedTurn(action, observation, reward, step=step)  # no code in the reply: nothing ran
    return _ran_and_scored(action, observation, reward, step=step)


def _strings(history: dict[str, Any], key: str, where: str) -> list[Any]:
    values = history.get(key)
    if not isinstance(values, list):
        raise BadLog(f"{where}: turn_history.{key} must be a list")
    return values


def _turns(env: str, shape: Shape, entry: dict[str, Any], where: str) -> tuple[LoggedTurn, ...]:
    history = entry.get("turn_history")
    if not isinstance(history, dict):
        raise BadLog(f"{where}: no turn_history object")
    actions, observations, rewards = (
        _strings(history, k, where) for k in ("actions", "observations", "rewards")
    )
    if shape == "plan_solve" and not actions and not observations and len(rewards) <= 1:
        return ()  # a plan of no steps: the loop logged a reward for a turn it never took
    if len(rewards) != len(actions) or len(observations) > len(actions):
        raise BadLog(
            f"{where}: {len(actions)} actions, {len(observations)} observations and {len(rewards)} rewards "
            "do not line up"
        )
    if shape != "try_again" and len(observations) != len(actions):
        raise BadLog(f"{where}: {len(actions)} actions but {len(observations)} observations")
    thoughts = _strings(history, "thoughts", where) if shape == "react" else []
    steps = _strings(history, "steps", where) if shape == "plan_solve" else []
    if shape == "react" and len(thoughts) != len(actions):
        raise BadLog(f"{where}: {len(actions)} actions but {len(thoughts)} thoughts")
    if len(steps) > len(actions):
        raise BadLog(f"{where}: {len(steps)} plan steps but only {len(actions)} actions")
    turns = []
    for i, raw_action in enumerate(actions):
        reward = _number(rewards[i], f"reward #{i}", where)
        action = _text(raw_action)
        observation = _text(observations[i]) if i < len(observations) else None
        at = f"{where} turn {i + 1}"
        if shape == "react":
            assert observation is not None
            turns.append(_react_turn(env, action, observation, reward, _text(thoughts[i]), at))
        elif shape == "plan_solve":
            assert observation is not None
            step = _text(steps[i]) if i < len(steps) else None
            turns.append(_plan_solve_turn(action, observation, reward, step))
        else:
            turns.append(_try_again_turn(env, action, observation, reward))
    return tuple(turns)


def _episode(env: str, shape: Shape, key: str, entry: Any, where: str) -> LoggedEpisode:
    if not isinstance(entry, dict):
        raise BadLog(f"{where}: an entry must be an object, not {type(entry).__name__}")
    index, query = entry.get("task_id"), entry.get("query")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise BadLog(f"{where}: task_id must be the task's index (an integer), not {index!r}")
    if not isinstance(query, str):
        raise BadLog(f"{where}: no query text")
    turns = _turns(env, shape, entry, where)
    summary = entry.get("summary")
    max_reward = summary.get("max_reward") if isinstance(summary, dict) else None
    if max_reward is None:
        max_reward = max((t.reward for t in turns), default=0.0)
    max_reward = _number(max_reward, "summary.max_reward", where)
    turns_max = summary.get("turns_max") if isinstance(summary, dict) else None
    if turns_max is not None and (type(turns_max) is not int or turns_max < 1):
        raise BadLog(f"{where}: summary.turns_max is {turns_max!r}, not a number of turns")
    info = entry.get("info")
    return LoggedEpisode(
        key, index, query, turns, max_reward, info if isinstance(info, dict) else {}, turns_max
    )


def read_log(path: str | Path, *, env: str | None = None) -> PaperLog:
    """Read and check one trajectory file; ``env`` ("bash/fs1", "sql", ...) overrides the detection."""
    path = Path(path)
    entries, meta, shape = _entries(_load(path), path)
    first_key = next(iter(entries))
    first = entries[first_key]
    if not isinstance(first, dict):
        raise BadLog(f"{path} entry {first_key!r}: an entry must be an object, not {type(first).__name__}")
    env_name, split = _target(first, env, f"{path} entry {first_key!r}")
    if shape != "try_again" and env_name not in ("bash", "sql"):
        raise BadLog(
            f"{path}: a {SHAPE_NAMES[shape]} log of the {env_name} env; the original ran that loop for Bash "
            "and SQL only, so this reader cannot tell how its actions ran"
        )
    episodes = tuple(_episode(env_name, shape, str(k), v, f"{path} entry {k!r}") for k, v in entries.items())
    return PaperLog(path, env_name, split, shape, episodes, meta)


# -- pairing episodes with tasks ----------------------------------------------------------------------------


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def difference(a: str, b: str, context: int = 20, width: int = 100) -> tuple[str, str]:
    """Where two texts differ: the differing stretch of each, with a little context either side."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1

    def cut(text: str) -> str:
        left, right = max(0, start - context), min(len(text), len(text) - end + context)
        shown = text[left:right]
        if len(shown) > width:
            shown = shown[:width] + "…"
        return ("…" if left else "") + shown + ("…" if right < len(text) and len(shown) <= width else "")

    return cut(a), cut(b)


def match_tasks(
    log: PaperLog, *, data_root: str | Path | None = None, strict_queries: bool = False
) -> Matched:
    """The task of each episode (by its index in the split), checked by the query text.

    An entry whose query differs from its task's (the data was edited after the run) is left out with
    the reason, and so is one whose task cannot run here; with ``strict_queries`` the former refuses
    the whole file. When most entries differ the file is of other tasks, and it is refused.
    """
    split = [t for t in load_tasks(log.env, data_root=data_root) if t.split == log.split]
    if not split:
        raise ConfigError(f"the {log.env} env has no split {log.split!r}")
    pairs: list[tuple[Task, LoggedEpisode]] = []
    left_out: list[LeftOut] = []
    stale: list[str] = []
    for episode in log.episodes:
        where = f"{log.path} entry {episode.key!r}"
        if episode.index >= len(split):
            raise BadLog(
                f"{where}: task index {episode.index} is past the {len(split)} tasks of "
                f"{log.env}/{log.split}; is this file of another split? (--env)"
            )
        task = split[episode.index]
        if not _same_text(task.query, episode.query):
            logged, ours = difference(episode.query, task.query)
            message = f"its query differs from task {task.id}'s (log: {logged!r}, data: {ours!r})"
            if strict_queries:
                raise BadLog(f"{where}: {message}; is this file of another split? (--env)")
            stale.append(f"{where}: {message}")
            left_out.append(
                LeftOut(episode.key, task.id, "stale query", message + "; the data changed since")
            )
        elif task.unavailable:
            left_out.append(
                LeftOut(episode.key, task.id, "unavailable", f"cannot run here: {task.unavailable}")
            )
        else:
            pairs.append((task, episode))
    if stale and 2 * len(stale) > len(log.episodes):
        raise BadLog(
            f"{stale[0]}; {len(stale)} of {len(log.episodes)} entries differ so: is this file of another "
            "split? (--env)"
        )
    return Matched(pairs, left_out)


def episodes_to_compare(
    log: PaperLog,
    execution: str,
    *,
    data_root: str | Path | None = None,
    strict_queries: bool = False,
) -> Matched:
    """The episodes a comparison with ``log`` replays in ``execution``, and those it leaves out.

    :func:`match_tasks`, then the tasks that cannot be scored here as the paper scored them (the
    network, the clock, the host, the original's container history: ``left_out_of_rescore`` of
    :mod:`intercode_agents.datasets.gold_caveats`), each with its cause and reason. Every comparison
    of a log with a replay of it (the re-score of its actions, the replay of its replies through a
    strategy) takes its episodes from here, so the two compare the same ones.
    """
    matched = match_tasks(log, data_root=data_root, strict_queries=strict_queries)
    pairs: list[tuple[Task, LoggedEpisode]] = []
    left_out = list(matched.left_out)
    for task, episode in matched.pairs:
        caveat = left_out_of_rescore(task.id, execution)
        if caveat is None:
            pairs.append((task, episode))
        else:
            left_out.append(
                LeftOut(episode.key, task.id, caveat.treatment, f"{caveat.cause}: {caveat.reason}")
            )
    order = {e.key: i for i, e in enumerate(log.episodes)}
    left_out.sort(key=lambda x: order.get(x.key, len(order)))
    return Matched(pairs, left_out)
