"""Typed errors. Each message says what went wrong and what the user can do about it."""

from __future__ import annotations


class IntercodeError(Exception):
    """Base class of every error the project raises on purpose."""


class ConfigError(IntercodeError, ValueError):
    """A bad argument or configuration value (unknown env, strategy, bad YAML, ...)."""


class EngineUnavailable(IntercodeError):
    """The Docker Engine does not answer."""

    def __init__(self, detail: str = "") -> None:
        msg = (
            "the Docker Engine is not reachable"
            + (f" ({detail})" if detail else "")
            + ". Start it, for example with "
            "`dockerd --bridge=none --iptables=false --ip6tables=false &`, "
            "or point DOCKER_HOST at a running engine."
        )
        super().__init__(msg)


class EngineTimeout(IntercodeError):
    """An engine call did not answer before its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the Docker Engine did not answer within {seconds:g} s (is it overloaded or stuck?). "
            "Lower the concurrency, check `docker info`, or raise $INTERCODE_AGENTS_ENGINE_TIMEOUT."
        )


class ImageMissing(IntercodeError):
    """A sandbox image is not present in the engine."""

    def __init__(self, image: str, engine: str | None = None, build_command: str | None = None) -> None:
        self.image = image
        self.engine = engine
        if engine is not None:
            super().__init__(
                f"image {image!r} is not on engine {engine}. Copy it there with `intercode-agents "
                f"images copy --to {engine}` or build it there with `intercode-agents images build "
                f"--engine {engine}`."
            )
        else:
            super().__init__(
                f"image {image!r} is not built. Build it with `{build_command}`."
                if build_command
                else f"image {image!r} is not built. Build it with `intercode-agents images build` "
                "(or `intercode-agents images build <name>` for just this one)."
            )


class SessionDied(IntercodeError):
    """A long-lived process inside a sandbox exited or its stream broke."""


class SandboxTampered(SessionDied):
    """The programs a slow path would run inside a sandbox to read its files were changed: the
    sandbox cannot answer for itself."""

    def __init__(self, message: str, sandbox_id: str) -> None:
        super().__init__(message)
        self.sandbox_id = sandbox_id


class CommandTimeout(IntercodeError):
    """A helper request did not answer before its deadline."""


class ScorerFault(IntercodeError):
    """The harness's own scoring machinery failed on values it trusts (the check process could not
    start, or could not check the gold's results): the episode cannot be scored, through no fault
    of the agent's."""


class InvalidAction(IntercodeError, ValueError):
    """An action cannot be run as given (a NUL byte, an empty command, a bad submit form)."""


class UnknownTask(IntercodeError, KeyError):
    """No task with that id exists (or it is unavailable here)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown task"


class DatasetError(IntercodeError):
    """The task data cannot be found, downloaded or verified."""


class ModelWeightsError(IntercodeError):
    """Local model weights cannot be found, downloaded or verified."""


class ImageBuildError(IntercodeError):
    """Building a sandbox image failed; ``log_tail`` holds the last lines of the build log."""

    def __init__(self, image: str, detail: str, log_tail: list[str] | None = None) -> None:
        self.image = image
        self.log_tail = list(log_tail or [])
        tail = "\n".join(self.log_tail)
        msg = f"building image {image!r} failed: {detail}"
        super().__init__(msg + (f"\n--- last build log lines ---\n{tail}" if tail else ""))


class ChatModelError(IntercodeError):
    """A chat model failed to answer (a rejected request, an exceeded context, a server failure)."""
