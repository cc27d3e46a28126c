"""``intercode``: our envs and task selectors as one Inspect task.

::

    inspect eval intercode_agents/intercode -T env=bash -T tasks='bash/mini/*' --model openai/gpt-4o-mini
    inspect eval intercode_agents/intercode -T env=sql -T tasks=mini -T solver=gold --model mockllm/model

Task arguments (``-T``; Inspect reads their values as YAML, so numbers and lists arrive typed):

- ``env``: an env name (``bash``, ``sql``, ``python``, ``ctf``) or the path of a user's env YAML;
- ``tasks``: a task selector as our CLI takes it (``mini``, ``bash/fs1/*``, ``hardness=easy``, a list);
  none: the env's default splits;
- ``solver``: ``agent`` (our tool-calling loop on Inspect's model) or ``gold`` (the gold policy);
- ``reward``: ``intercode`` (the paper's maths) or ``strict``;
- ``turns``, ``observation_limit``, ``history_turns``: the agent's turn budget and context handling,
  as our ``tool_calling`` strategy takes them;
- ``execution``: ``session`` or ``paper`` (Bash and CTF actions as the original ran them);
- ``engines``: where the sandboxes run (an engine string; none: ``$INTERCODE_ENGINES``, else local).

A sample is one task: its id is the task id, its input the question the env gives (``reset``), its
metadata the task's public view (:meth:`Task.public <intercode_agents.datasets.Task.public>`: id,
env, split, groups and public fields, never the gold, tests or set-up scripts), and its sandbox an
``intercode`` sandbox of the env, where the episode is reset on the task. The turn budget and the
context handling are the task's metadata (``log.eval.metadata``) and each record's context.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.util import SandboxEnvironmentSpec

from intercode_agents import __version__
from intercode_agents.datasets import Task as IntercodeTask
from intercode_agents.envs import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.integrations.inspect.episode import AGENT_STRATEGY
from intercode_agents.integrations.inspect.sandbox import PROVIDER, IntercodeSandboxConfig
from intercode_agents.integrations.inspect.scorer import intercode_scorer
from intercode_agents.integrations.inspect.solvers import intercode_agent, intercode_gold
from intercode_agents.reward import check_mode
from intercode_agents.runner.eval import choose_tasks
from intercode_agents.spec import load_spec
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT

SOLVERS = ("agent", "gold")


def selector_text(tasks: Any) -> str | None:
    """A selector from a ``-T tasks=...`` value: YAML may make it a number or a list."""
    if tasks is None or tasks == "":
        return None
    if isinstance(tasks, (list, tuple)):
        return ",".join(str(t) for t in tasks)
    return str(tasks)


def sample_of(task: IntercodeTask, question: str) -> Sample:
    """One of our tasks as an Inspect sample: the question, and the task's public view only."""
    public = task.public()
    metadata = {
        "task_id": public.id,
        "env": public.env,
        "split": public.split,
        "group": dict(task.group),
        "fields": dict(public.fields),
    }
    return Sample(id=public.id, input=question, metadata=metadata)


@task
def intercode(
    env: str = "bash",
    tasks: Any = None,
    solver: str = "agent",
    reward: str = "intercode",
    turns: int = 10,
    observation_limit: int = DEFAULT_OBSERVATION_LIMIT,
    history_turns: int | None = None,
    execution: str = "session",
    engines: str | None = None,
) -> Task:
    """Our env ``env``'s tasks (``tasks``) for Inspect (see the module docstring)."""
    env, solver, reward, execution = str(env), str(solver), str(reward), str(execution)
    if solver not in SOLVERS:
        raise ConfigError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    check_mode(reward)
    spec = load_spec(env)
    chosen = choose_tasks(spec.name, selector_text(tasks), None)
    prompts = make_env(env, reward=reward, execution=execution)  # (not started: only its questions)
    samples = [sample_of(t, prompts.task_prompt(t)) for t in chosen]
    config = IntercodeSandboxConfig(env=env, reward=reward, execution=execution, engines=engines)
    budget = {"turns": int(turns), "observation_limit": int(observation_limit)}
    play = intercode_gold() if solver == "gold" else intercode_agent(**budget, history_turns=history_turns)
    metadata = {
        "intercode_agents": __version__,
        "env": spec.name,
        "selector": selector_text(tasks),
        "solver": solver,
        "reward_mode": reward,
        "execution": execution,
        # The agent's turn budget and context handling (each record's context says it again):
        "turn_budget": None if solver == "gold" else int(turns),
        "turn_rules": f"as our {AGENT_STRATEGY} strategy: one turn per tool call; a reply without one is "
        "answered with a reminder and uses a turn; calls past the budget are not run; an episode not "
        "submitted when the turns are spent is submitted as it stands",
        "context": {
            "observation_limit": int(observation_limit),
            "observation_cut": "head + tail of each tool output, marked where cut",
            "history_turns": history_turns,
            "history": "every turn" if history_turns is None else f"the last {history_turns} turns",
        },
    }
    return Task(
        dataset=MemoryDataset(samples, name=f"intercode-{spec.name}"),
        solver=play,
        scorer=intercode_scorer(**budget, history_turns=history_turns),
        sandbox=SandboxEnvironmentSpec(PROVIDER, config),
        metadata=metadata,
        version=1,
    )
