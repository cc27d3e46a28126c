"""The settings of a run, as one typed object built at the edge and passed down whole.

The command line (``intercode-agents eval``), the Python API and every other front end build one
:class:`EvalConfig`; :func:`~intercode_agents.runner.eval.run_eval` takes it and nothing else that
changes what is played (a console or a shared progress display only changes how it is shown). The
config checks itself when it is made, so a bad number is one clear error before anything starts, and
``dataclasses.replace`` makes a variant (each model of a comparison, the gold policy of ``gold``).

Example::

    result = await run_eval(EvalConfig(env="sql", strategy="react", model="openai:gpt-4o-mini",
                                       selector="mini", concurrency=4, out_dir=Path("runs/react")))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from intercode_agents.errors import ConfigError
from intercode_agents.reward import check_mode

DEFAULT_TURNS = 10


@dataclass(frozen=True)
class EpisodeBudgets:
    """Budgets of each episode besides its turns (None: unlimited), and whether the model is told
    what is left (see :mod:`intercode_agents.strategies.budget`)."""

    max_tokens: int | None = None
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    show: bool = False

    def __post_init__(self) -> None:
        for flag, value in (
            ("--max-tokens-per-episode", self.max_tokens),
            ("--max-seconds-per-episode", self.max_seconds),
            ("--max-cost-per-episode", self.max_cost_usd),
        ):
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise ConfigError(f"{flag} must be a positive number, got {value!r}")

    def any(self) -> bool:
        return any(v is not None for v in (self.max_tokens, self.max_seconds, self.max_cost_usd))

    def strategy_settings(self) -> dict[str, Any]:
        """The strategy settings that carry these budgets."""
        settings: dict[str, Any] = {
            "episode_max_tokens": self.max_tokens,
            "episode_timeout_s": self.max_seconds,
            "episode_max_cost_usd": self.max_cost_usd,
        }
        settings = {key: value for key, value in settings.items() if value is not None}
        return settings | ({"show_budget": True} if self.show else {})


@dataclass(frozen=True)
class EvalConfig:
    """Everything that decides what a run plays and where it is recorded.

    ``model`` is a model spec (``"local"``, ``"provider:model"``, ``"PATH.py:NAME"``), a
    ``BaseChatModel``, or one of the runner's own policies, ``"gold"`` and ``"human"``; ``strategy`` a
    strategy's name or reference; ``agent`` a user's agent factory (see
    :mod:`intercode_agents.strategies.agent`). ``selector`` picks the tasks (see
    :mod:`intercode_agents.datasets.select`), ``limit`` keeps the first N. ``epochs`` plays every task
    K times, epoch ``e`` with seed ``seed + e - 1`` (seed 0 when several epochs are asked for without
    one). ``retry_errors``: how often an episode ending in an env or model error is played again
    before it is recorded (None: the defaults of :class:`~intercode_agents.runner.retries.RetryPolicy`);
    given on a resume, the recorded errors are played again too. ``max_cost_usd`` caps the whole run.
    ``execution`` "paper" runs Bash and CTF actions as the original InterCode ran them. ``engines``
    says where the sandboxes run (an engine string, ``"a,b"``, a list, an ``EngineSet``; None:
    ``$INTERCODE_ENGINES``, else the default backend). ``ray`` plays the episodes on a Ray cluster
    instead (:mod:`intercode_agents.runner.ray`): True for Ray's own resolution of the address
    (``$RAY_ADDRESS``, else ``auto``, the cluster this machine belongs to), or the address; each node
    then drives its own engines, so ``engines`` is not given with it, and each node plays as many
    episodes at once as the ``intercode_slots`` it offers (``concurrency`` is for local runs).
    """

    env: str | Path
    model: str | BaseChatModel | None = "gold"
    strategy: str | None = None
    agent: str | None = None
    strategy_settings: dict[str, Any] = field(default_factory=dict)
    model_settings: dict[str, Any] = field(default_factory=dict)
    selector: str | None = None
    limit: int | None = None
    turns: int = DEFAULT_TURNS
    epochs: int = 1
    concurrency: int = 1
    reward: str = "intercode"
    execution: str = "session"
    out_dir: Path | None = None
    resume: bool = False
    seed: int | None = None
    retry_errors: int | None = None
    retry_wait_s: float = 1.0
    budgets: EpisodeBudgets = field(default_factory=EpisodeBudgets)
    max_cost_usd: float | None = None
    progress: bool = True
    engines: Any = None
    ray: str | bool | None = None

    def __post_init__(self) -> None:
        if self.out_dir is not None and not isinstance(self.out_dir, Path):
            object.__setattr__(self, "out_dir", Path(self.out_dir))
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be at least 1, got {self.limit}")
        if self.turns < 1:
            raise ConfigError(f"--turns must be at least 1, got {self.turns}")
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {self.concurrency}")
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, int) or self.epochs < 1:
            raise ConfigError(f"--epochs must be a whole number >= 1, got {self.epochs!r}")
        cap = self.max_cost_usd
        if cap is not None and (isinstance(cap, bool) or cap <= 0):
            raise ConfigError(f"--max-cost must be a positive number of USD, got {cap!r}")
        check_mode(self.reward)
        check_ray(self.ray, self.engines)
        if self.resume and self.out_dir is None:
            raise ConfigError("resume needs the run directory: pass --out DIR together with --resume")

    @property
    def ray_address(self) -> str | None:
        """The Ray address asked for ("" for Ray's own resolution), or None for a local run."""
        return ray_address(self.ray)

    @property
    def epoch_seed(self) -> int | None:
        """The seed of epoch 1: as given, or 0 when several epochs need several seeds."""
        return 0 if self.seed is None and self.epochs > 1 else self.seed


def ray_address(ray: str | bool | None) -> str | None:
    """``ray`` as an address: None (a local run), "" (Ray's own resolution) or the address given."""
    if ray is None or ray is False:
        return None
    return "" if ray is True else ray.strip()


def check_ray(ray: object, engines: object) -> None:
    """A clear error for a ``ray`` setting that is no address, or one given with ``engines``."""
    if ray is not None and not isinstance(ray, str | bool):
        raise ConfigError(f"ray is True (Ray's own address resolution) or an address, not {ray!r}")
    if ray not in (None, False) and engines not in (None, ""):
        raise ConfigError(
            "--ray and --engines (or $INTERCODE_ENGINES) exclude each other: on Ray each node drives its "
            "own engines (the node's $INTERCODE_ENGINES or $DOCKER_HOST, else its local Docker engine)"
        )
