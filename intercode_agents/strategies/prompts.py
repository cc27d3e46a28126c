"""Prompts as data: ``prompts/common.yaml`` plus one ``prompts/<strategy>.yaml`` per strategy.

A strategy file has ``templates`` (name -> text), ``demos`` (env name -> example transcript, plain
text), optionally ``languages`` (overrides of the common per-env texts) and ``style``: ``default``, or
``paper`` for the InterCode paper's own loops (the shipped set ``prompts/paper/``, see
:mod:`intercode_agents.strategies.paper_loops`), which need templates of their own. Templates use Python's
format syntax; the fields they may use are listed in :data:`KNOWN_FIELDS`, and an unknown field or a
stray brace is a :class:`~intercode_agents.errors.ConfigError` naming the file and template.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir

KNOWN_FIELDS = frozenset(
    {
        "environment",
        "submit",
        "language_name",
        "max_turns",
        "max_plan_steps",
        "demo",
        "query",
        "entry_point",
        "entry_point_note",
        "observation",
        "reward",
        "reason",
        "step_number",
        "step",
        "turns_left",
        "run_tool",
        "turn",
        "thought",
        "action",
        "env_name",
    }
)
DEMO_HEADER = "Here is an example of a whole episode on another task:\n\n"
PROMPT_SETS = ("default", "paper")  # the shipped sets (prompts/, prompts/paper/), and the styles
PromptStyle = Literal["default", "paper"]


class LanguageTexts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    environment: str
    submit: str
    entry_point: str | None = None


class PromptFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    style: PromptStyle = "default"
    templates: dict[str, str] = Field(default_factory=dict)
    demos: dict[str, str] = Field(default_factory=dict)
    languages: dict[str, dict[str, str]] = Field(default_factory=dict)


class PromptSet(BaseModel):
    """The prompts of one strategy, validated; ``conversation()`` is the episode's chat template."""

    strategy: str
    source: str
    style: PromptStyle = "default"
    templates: dict[str, str]
    demos: dict[str, str]
    languages: dict[str, LanguageTexts]

    def require(self, *names: str) -> None:
        missing = [name for name in names if name not in self.templates]
        if missing:
            raise ConfigError(
                f"{self.source}: the {self.strategy} strategy needs template(s) {', '.join(missing)}"
            )

    def language(self, env_name: str, env_texts: dict[str, str] | None = None) -> LanguageTexts:
        """The texts for ``env_name``: the prompt files' own, else the env's (``Env.prompt_texts``,
        which an env YAML's ``prompts`` sets)."""
        if env_name in self.languages:
            return self.languages[env_name]
        if env_texts:
            try:
                return LanguageTexts(**env_texts)
            except ValidationError as exc:
                raise ConfigError(f"the prompt texts of env {env_name!r} are incomplete: {exc}") from exc
        known = ", ".join(sorted(self.languages))
        raise ConfigError(
            f"no prompts for env {env_name!r} in {self.source} (known: {known}), and the env defines "
            "none: give its YAML a 'prompts' section with name, environment and submit"
        )

    def demo_block(self, env_name: str) -> str:
        demo = self.demos.get(env_name, "").strip()
        return f"\n{DEMO_HEADER}{demo}\n" if demo else ""

    def render(self, name: str, **values: Any) -> str:
        """Fill template ``name`` from ``values`` (values it does not use are ignored)."""
        self.require(name)
        template = PromptTemplate.from_template(self.templates[name])
        missing = [key for key in template.input_variables if key not in values]
        if missing:
            raise ConfigError(
                f"{self.source}: template {name!r} needs {', '.join(missing)}, "
                "which this strategy does not fill"
            )
        return template.format(**{key: values[key] for key in template.input_variables})

    def conversation(self) -> ChatPromptTemplate:
        """System text, the task, then the recent history (a ``history`` list of messages)."""
        self.require("system", "task")
        return ChatPromptTemplate.from_messages(
            [
                ("system", self.templates["system"]),
                ("human", self.templates["task"]),
                MessagesPlaceholder("history", optional=True),
            ]
        )


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"prompt file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"prompt file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"prompt file {path} must hold a mapping at the top level")
    return data


def _parse(path: Path) -> PromptFile:
    try:
        return PromptFile.model_validate(_read_yaml(path))
    except ValidationError as exc:
        raise ConfigError(f"prompt file {path} has an unexpected shape: {exc}") from exc


def _check_template(source: str, name: str, text: str) -> None:
    try:
        fields = set(PromptTemplate.from_template(text).input_variables)
    except (ValueError, KeyError) as exc:
        raise ConfigError(
            f"{source}: template {name!r} is malformed ({exc}); write literal braces twice"
        ) from exc
    unknown = fields - KNOWN_FIELDS
    if unknown:
        raise ConfigError(
            f"{source}: template {name!r} uses unknown field(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(KNOWN_FIELDS))}"
        )


def _merge_languages(common: PromptFile, own: PromptFile, source: str) -> dict[str, LanguageTexts]:
    merged: dict[str, LanguageTexts] = {}
    for env_name in sorted(set(common.languages) | set(own.languages)):
        texts = {**common.languages.get(env_name, {}), **own.languages.get(env_name, {})}
        try:
            merged[env_name] = LanguageTexts.model_validate(texts)
        except ValidationError as exc:
            raise ConfigError(f"{source}: the texts of env {env_name!r} are incomplete: {exc}") from exc
        for key, text in texts.items():
            _check_template(source, f"languages.{env_name}.{key}", text)
    return merged


def load_prompts(strategy: str, path: str | Path | None = None, prompt_set: str = "default") -> PromptSet:
    """The prompt set of ``strategy``: ``path`` if given, else the shipped ``prompts/<strategy>.yaml``
    (``prompt_set="paper"``: ``prompts/paper/<strategy>.yaml``)."""
    if prompt_set not in PROMPT_SETS:
        raise ConfigError(f"unknown prompt set {prompt_set!r}; shipped: {', '.join(PROMPT_SETS)}")
    folder = data_dir("prompts")
    if prompt_set != "default":
        folder = folder / prompt_set
    file = Path(path) if path is not None else folder / f"{strategy}.yaml"
    if path is None and not file.is_file():
        shipped = ", ".join(sorted(p.stem for p in folder.glob("*.yaml") if p.stem != "common"))
        raise ConfigError(
            f"no prompt file for strategy {strategy!r} in the {prompt_set} prompt set ({folder}); "
            f"that set has: {shipped}"
        )
    stamp = file.stat().st_mtime_ns if file.is_file() else 0
    return _load_cached(strategy, str(file.resolve()), stamp)


@lru_cache(maxsize=64)
def _load_cached(strategy: str, file: str, _stamp: int) -> PromptSet:
    path = Path(file)
    common = _parse(data_dir("prompts") / "common.yaml")
    own = _parse(path)
    for name, text in own.templates.items():
        _check_template(file, name, text)
    return PromptSet(
        strategy=strategy,
        source=file,
        style=own.style,
        templates=own.templates,
        demos=own.demos,
        languages=_merge_languages(common, own, file),
    )
