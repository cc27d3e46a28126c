"""The OpenEnv application of this environment package: one intercode-agents env, served.

``uvicorn server.app:app`` (openenv.yaml's ``app``) or ``uv run server`` serves the env named by
``INTERCODE_ENV`` (default ``bash``; a name or an env YAML's path) on ``PORT`` (default 8000), with
the settings of ``intercode-agents serve openenv`` (``INTERCODE_TURNS``, ``INTERCODE_TASKS``).
The host needs a Docker engine and the sandbox images (``intercode-agents images build``).
"""

from __future__ import annotations

import os

from intercode_agents.integrations.openenv.server import ServerSettings, build_app, serve
from intercode_agents.runner.rollout import RolloutOptions


def settings() -> ServerSettings:
    turns = os.environ.get("INTERCODE_TURNS")
    rollout = RolloutOptions(
        max_turns=int(turns) if turns else None, tasks=os.environ.get("INTERCODE_TASKS"), client="openenv"
    )
    return ServerSettings(env=os.environ.get("INTERCODE_ENV", "bash"), rollout=rollout)


app = build_app(settings())


def main() -> None:
    serve(settings(), host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8000")))


if __name__ == "__main__":
    main()
