"""Harbor task folders, checked with Docker and without Harbor (it needs Python 3.12).

For a sample of CTF tasks (the project's and InterCode's own), the exported environment is built with
Docker, the agent's container started without network, and the verifier run in a container of its
own built from the task's tests/, given only the answer file, as Harbor's separate verifier is:

- solve.sh, then test.sh: reward 1;
- test.sh alone (nothing solved): the reward our env gives an empty episode;
- the agent's container holds no gold anywhere in its file system, and no tests/ or solution/.

The environment's stages are our images' Dockerfiles verbatim (checked); they are not rebuilt here,
as this machine has no package mirror for their apt-get steps: the task's stage is built on our
built sandbox image, which those same Dockerfiles made.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from intercode_agents.datasets import get_task
from intercode_agents.envs import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.images.catalog import default_docker_dir, image_ref
from intercode_agents.integrations.harbor.export import export_tasks, slug

SAMPLE = ["ctf/mini/0", "ctf/mini/2", "ctf/0", "ctf/3"]
# The verifier image's base here: any image with Python 3 (Harbor's default, python:3.12-slim, is
# not on this machine).
VERIFIER_BASE = image_ref("bash")


def _docker(*args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, input=input, timeout=600)
    assert done.returncode == 0, f"docker {' '.join(args[:3])}: {done.stderr.decode(errors='replace')}"
    return done.stdout.decode(errors="replace")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor")
    export_tasks(",".join(SAMPLE), out, env="ctf")
    return out


class Images:
    """The sample's images, built once and removed at the end."""

    def __init__(self) -> None:
        self.tag = f"intercode-harbor-test-{uuid.uuid4().hex[:8]}"
        self.made: list[str] = []
        self.containers: list[str] = []

    def build(self, context: Path, name: str, *, dockerfile: str | None = None, **args: str) -> str:
        ref = f"{self.tag}-{name}".lower()
        extra = [f"--build-arg={k}={v}" for k, v in args.items()]
        if dockerfile is not None:
            (context / "Dockerfile.test").write_text(dockerfile)
            extra += ["-f", str(context / "Dockerfile.test")]
        _docker("build", "-q", "-t", ref, *extra, str(context))
        self.made.append(ref)
        return ref

    def start(self, image: str) -> str:
        container = _docker("run", "-d", "--network", "none", image, "sleep", "infinity").strip()
        self.containers.append(container)
        return container


@pytest.fixture(scope="module")
def images() -> Iterator[Images]:
    made = Images()
    yield made
    for container in made.containers:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    for ref in made.made:
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)


def _environment(folder: Path, images: Images) -> str:
    """Build the task's environment: its stages checked to be our Dockerfiles, its task stage built."""
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    stages, _, task_stage = dockerfile.partition("# --- the task ---\n")
    for name in ("bash", "ctf"):
        ours = (default_docker_dir() / name / "Dockerfile").read_text()
        for run in re.findall(r"^RUN .*?(?<!\\)$", ours, flags=re.MULTILINE | re.DOTALL):
            assert run in stages, f"the {name} stage lost: {run[:60]}"
    assert task_stage.startswith("FROM ctf AS task\n")
    built = f"FROM {image_ref('ctf')} AS ctf\n{task_stage}"
    return images.build(folder / "environment", slug(folder.name) + "-env", dockerfile=built)


def _verify(folder: Path, images: Images, answer: bytes | None) -> dict[str, float]:
    """Harbor's separate verifier: a container of the tests/ image given only the answer file."""
    image = images.build(folder / "tests", slug(folder.name) + "-verifier", BASE=VERIFIER_BASE)
    verifier = images.start(image)
    _docker(
        "exec",
        verifier,
        "sh",
        "-c",
        "mkdir -p /logs/verifier && echo '{\"reward\": 1}' > /logs/verifier/reward.json",
    )
    if answer is not None:
        _docker("exec", "-i", verifier, "sh", "-c", "mkdir -p /ctf && cat > /ctf/answer.txt", input=answer)
    _docker("exec", verifier, "/tests/test.sh")
    return json.loads(_docker("exec", verifier, "cat", "/logs/verifier/reward.json"))


def _answer(container: str) -> bytes | None:
    done = subprocess.run(["docker", "exec", container, "cat", "/ctf/answer.txt"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


async def _empty_episode_reward(task_id: str) -> float:
    async with make_env("ctf") as env:
        await env.reset(task_id=task_id)
        return (await env.submit("")).reward


@pytest.mark.parametrize("task_id", SAMPLE)
async def test_the_gold_scores_1_nothing_scores_as_an_empty_episode_and_the_agent_cannot_read_the_gold(
    exported: Path, images: Images, task_id: str
) -> None:
    folder = exported / slug(task_id)
    gold = get_task(task_id).gold
    config = tomllib.loads((folder / "task.toml").read_text())
    assert config["schema_version"] == "1.3" and config["verifier"]["environment_mode"] == "separate"
    assert (
        config["environment"]["network_mode"]
        == config["verifier"]["environment"]["network_mode"]
        == "no-network"
    )
    assert config["artifacts"] == ["/ctf/answer.txt"]
    assert gold not in (folder / "instruction.md").read_text()
    environment = _environment(folder, images)

    # Nothing solved: the verifier gets no answer file.
    untouched = images.start(environment)
    assert _answer(untouched) is None
    assert _verify(folder, images, None)["reward"] == await _empty_episode_reward(task_id)

    # The agent's container: no gold in any file, no tests or solution folder, no network.
    found = subprocess.run(  # noqa: ASYNC221 - the docker CLI, as a user would look
        ["docker", "exec", untouched, "grep", "-rlaF", "--exclude-dir=proc", "--exclude-dir=sys", gold, "/"],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1 and found.stdout == "", found.stdout
    assert _docker("exec", untouched, "sh", "-c", "ls -d /tests /solution 2>/dev/null || true").strip() == ""
    assert _docker("exec", untouched, "ls", "/sys/class/net").split() == ["lo"]
    assert sorted(_docker("exec", untouched, "ls", "/ctf").split()) == sorted(
        p.name for p in (folder / "environment" / "task").iterdir()
    )

    # The oracle: solve.sh in the agent's container (as Harbor uploads it), then the verifier.
    solved = images.start(environment)
    _docker("cp", str(folder / "solution"), f"{solved}:/solution")
    _docker("exec", solved, "/solution/solve.sh")
    reward = _verify(folder, images, _answer(solved))
    assert reward == {"reward": 1.0, "correct": 1.0}


def test_envs_whose_reward_needs_a_gold_replay_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the bash reward compares the agent's final state"):
        export_tasks("bash/mini/0", tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_task_that_cannot_run_here_is_left_out_and_named(tmp_path: Path) -> None:
    unavailable = get_task("ctf/1").unavailable
    assert unavailable
    with pytest.raises(ConfigError, match=re.escape(f"ctf/1: {unavailable}")):
        export_tasks("ctf/1", tmp_path)
    export_tasks("ctf/0,ctf/1", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "ctf__0"]
    assert f"- ctf/1: {unavailable}" in (tmp_path / "README.md").read_text()
