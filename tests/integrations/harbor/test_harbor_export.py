"""Harbor task folders, checked with Docker and without Harbor (it needs Python 3.12).

For a sample of each family (Bash, SQL, CTF; the project's tasks and InterCode's own), the exported
environment is built with Docker and started without network, and the verifier run as Harbor runs
it: for CTF in a container of its own built from the task's tests/, given only the answer file; for
Bash and SQL in the agent's container once the agent has ended (tests/ copied in only then):

- solve.sh, then test.sh: reward 1;
- test.sh alone (nothing solved): the reward our env gives an empty episode (``submit`` right after
  ``reset``);
- a wrong try (Bash, SQL, Python): the reward our env gives the same action (a Bash task in the
  strict reward mode too);
- the agent's container holds no gold anywhere in its file system, and no tests/ or solution/.

The environment's stages are our images' Dockerfiles verbatim (checked); they are not rebuilt here:
the task's stage is built on our built sandbox image, which those same Dockerfiles made. Its own
steps install the reward's Python packages from PyPI; the build is given this machine's CA bundle,
as its egress goes through a proxy with a certificate of its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from intercode_agents.datasets import get_task
from intercode_agents.envs import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.images.catalog import default_docker_dir, image_ref, load_catalog
from intercode_agents.integrations.harbor.environment import image_chain
from intercode_agents.integrations.harbor.export import export_tasks, slug

SAMPLES = {
    "ctf": ["ctf/mini/0", "ctf/mini/2", "ctf/0", "ctf/3"],
    "sql": ["sql/mini/0", "sql/mini/3", "sql/mini/5"],
    "bash": ["bash/mini/0", "bash/mini/4", "bash/mini/5", "bash/mini/7"],
    "python": ["python/mini/0", "python/mini/3", "python/mbpp/2", "python/mbpp/11"],
}
STRICT = ["bash/mini/4"]  # also exported in the strict reward mode (every path of the file system counts)
SEPARATE = ("ctf", "python")  # scored in a verifier container of their own
# A wrong try per task: the action, and for Bash the answer it leaves (its output), for SQL the query,
# for Python the solution: one that reads the verifier's expected values (it must not be able to).
WRONG = {
    "sql": "SELECT title FROM book",
    "bash": "mkdir -p /testbed/backup && echo 'call the plumber' > /testbed/notes/new.txt && ls /testbed",
    "python": (
        "def {entry}(*args, **kwargs):\n"
        "    import json\n"
        "    found = {}\n"
        "    exec(json.load(open('/tests/expected.json'))['gold'], found)\n"
        "    return found['{entry}'](*args, **kwargs)\n"
    ),
}
# The verifier image's base here: any image with Python 3 (Harbor's default, python:3.12-slim, is
# not on this machine).
VERIFIER_BASE = image_ref("bash")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _docker(*args: str, input: bytes | None = None, user: str | None = None) -> str:
    if user is not None:
        args = (args[0], "-u", user, *args[1:])
    done = subprocess.run(["docker", *args], capture_output=True, input=input, timeout=900)
    assert done.returncode == 0, f"docker {' '.join(args[:3])}: {done.stderr.decode(errors='replace')}"
    return done.stdout.decode(errors="replace")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor")
    for env, sample in SAMPLES.items():
        export_tasks(",".join(sample), out / env, env=env)
    for task_id in STRICT:
        export_tasks(task_id, out / "strict", env="bash", mode="strict")
    return out


class Images:
    """The sample's images and containers, made once and removed at the end."""

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
        _docker("build", "-q", "--network", "host", "-t", ref, *extra, str(context))
        self.made.append(ref)
        return ref

    def start(self, image: str, healthcheck: str | None = None) -> str:
        """As Harbor's docker provider starts it: the image's entrypoint, the command `sleep infinity`;
        then, as Harbor does before the agent starts, the task's healthcheck until it passes."""
        container = _docker("run", "-d", "--network", "none", image, "sh", "-c", "sleep infinity").strip()
        self.containers.append(container)
        for _ in range(120):
            if (
                healthcheck is None
                or subprocess.run(
                    ["docker", "exec", container, "sh", "-c", healthcheck], capture_output=True
                ).returncode
                == 0
            ):
                return container
            time.sleep(1)
        raise AssertionError(f"the healthcheck never passed: {healthcheck}")


@pytest.fixture(scope="module")
def images() -> Iterator[Images]:
    made = Images()
    yield made
    for container in made.containers:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    for ref in made.made:
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)


def _environment(folder: Path, images: Images, image: str, part: str = "environment") -> str:
    """Build the task's environment (or Python's verifier, ``part="tests"``): its stages checked to be
    our Dockerfiles, its last stage built on our built image of the one before."""
    dockerfile = (folder / part / "Dockerfile").read_text()
    stages, _, task_stage = dockerfile.partition("# --- the task ---\n")
    chain = image_chain(image, load_catalog(default_docker_dir()))
    for spec in chain:
        ours = (spec.folder / "Dockerfile").read_text()
        for run in re.findall(r"^RUN .*?(?<!\\)$", ours, flags=re.MULTILINE | re.DOTALL):
            assert run in stages, f"the {spec.name} stage lost: {run[:60]}"
    assert task_stage.startswith(f"FROM {image} AS {'task' if part == 'environment' else 'verifier'}\n")
    parent = f"FROM {image_ref(image)} AS {image}\n"
    if "pip install" in task_stage:
        (folder / part / "machine-ca.crt").write_bytes(CA_BUNDLE.read_bytes())
        parent += "COPY machine-ca.crt /etc/ssl/machine-ca.crt\nENV PIP_CERT=/etc/ssl/machine-ca.crt\n"
    return images.build(folder / part, f"{slug(folder.name)}-{part}", dockerfile=parent + task_stage)


def _planted_reward(container: str) -> None:
    """What an agent could leave for the verifier: a reward file of its own."""
    _docker(
        "exec",
        container,
        "sh",
        "-c",
        "mkdir -p /logs/verifier && chmod 777 /logs/verifier"
        " && echo '{\"reward\": 1}' > /logs/verifier/reward.json",
        user="root",
    )


def _verify_apart(folder: Path, images: Images, answer: bytes | None, image: str) -> dict[str, float]:
    """Harbor's separate verifier: a container of the tests/ image given only the answer file."""
    if image == "python":
        built = _environment(folder, images, image, part="tests")
    else:
        built = images.build(folder / "tests", slug(folder.name) + "-verifier", BASE=VERIFIER_BASE)
    verifier = images.start(built)
    _planted_reward(verifier)
    path = json.loads((folder / "tests" / "expected.json").read_text())["answer_file"]
    if answer is not None:
        _docker(
            "exec", "-i", verifier, "sh", "-c", f"mkdir -p {Path(path).parent} && cat > {path}", input=answer
        )
    _docker("exec", verifier, "/tests/test.sh")
    return json.loads(_docker("exec", verifier, "cat", "/logs/verifier/reward.json"))


def _verify_in(folder: Path, container: str) -> dict[str, float]:
    """Harbor's shared verifier: tests/ copied into the agent's container once the agent ended, test.sh
    run as the container's user."""
    _planted_reward(container)
    _docker("cp", str(folder / "tests"), f"{container}:/tests")
    _docker("exec", container, "/tests/test.sh")
    return json.loads(_docker("exec", container, "cat", "/logs/verifier/reward.json"))


def _answer(container: str, path: str) -> bytes | None:
    done = subprocess.run(["docker", "exec", container, "cat", path], capture_output=True)
    return done.stdout if done.returncode == 0 else None


async def _our_reward(task_id: str, action: str | None = None, mode: str = "intercode") -> float:
    """Our env's reward: an empty episode (``submit`` right after ``reset``), or one action then submit
    (for Python, of the function the tests call)."""
    task = get_task(task_id)
    async with make_env(task.env, reward=mode) as env:
        await env.reset(task_id=task_id)
        if action is not None:
            await env.step(action)
        return (
            await env.submit(str(task.meta["entry_point"]) if action and task.env == "python" else "")
        ).reward


def _no_gold_in(container: str, gold: str) -> None:
    """The agent's container: the gold in no file, no tests or solution folder, no network. (grep reads
    a pattern per line: the files holding the gold's longest line are read whole, for the whole gold.)"""
    needle = max(gold.splitlines(), key=len)
    found = subprocess.run(
        [
            "docker", "exec", "-u", "root", container, "grep", "-rlaF", "--exclude-dir=proc",
            "--exclude-dir=sys", needle, "/",
        ],
        capture_output=True,
    )  # fmt: skip
    assert found.returncode in (0, 1), found.stderr
    for path in found.stdout.decode(errors="surrogateescape").splitlines():
        held = subprocess.run(["docker", "exec", "-u", "root", container, "cat", path], capture_output=True)
        assert gold.encode() not in held.stdout, path
    assert _docker("exec", container, "sh", "-c", "ls -d /tests /solution 2>/dev/null || true").strip() == ""
    assert _docker("exec", container, "ls", "/sys/class/net").split() == ["lo"]


def _config(folder: Path, env: str) -> dict:
    config = tomllib.loads((folder / "task.toml").read_text())
    assert config["schema_version"] == "1.3"
    assert config["environment"]["network_mode"] == "no-network"
    if env in SEPARATE:
        assert config["verifier"]["environment_mode"] == "separate"
        assert config["verifier"]["environment"]["network_mode"] == "no-network"
        assert config["artifacts"] == [f"/{env}/answer.txt" if env == "ctf" else "/python/solution.py"]
    else:
        assert config["verifier"]["environment_mode"] == "shared" and "artifacts" not in config
    return config


CASES = [
    *((env, task_id, "intercode") for env, sample in SAMPLES.items() for task_id in sample),
    *(("bash", task_id, "strict") for task_id in STRICT),
]


@pytest.mark.parametrize(("env", "task_id", "mode"), CASES, ids=[f"{t}-{m}" for _, t, m in CASES])
async def test_the_gold_scores_1_nothing_scores_as_an_empty_episode_and_the_agent_cannot_read_the_gold(
    exported: Path, images: Images, env: str, task_id: str, mode: str
) -> None:
    task = get_task(task_id)
    folder = exported / ("strict" if mode == "strict" else env) / slug(task_id)
    config = _config(folder, env)
    check = config["environment"].get("healthcheck", {}).get("command")
    expected = json.loads((folder / "tests" / "expected.json").read_text())
    answer_file = expected["answer_file"]
    assert expected["reward_mode"] == mode
    assert task.gold not in (folder / "instruction.md").read_text()
    assert task.gold not in "".join(
        p.read_text(errors="replace") for p in (folder / "environment").rglob("*") if p.is_file()
    )
    environment = _environment(folder, images, task.image)

    # Nothing solved: the verifier gets no answer file (and our env an empty submit).
    untouched = images.start(environment, check)
    assert _answer(untouched, answer_file) is None
    _no_gold_in(untouched, task.gold)
    if env in SEPARATE:
        empty = _verify_apart(folder, images, None, task.image)
    else:
        empty = _verify_in(folder, untouched)
    assert empty["reward"] == await _our_reward(task_id, mode=mode)

    # A wrong try: the same action in our env and in the container scores the same.
    if env in WRONG:
        wrong = WRONG[env].replace("{entry}", str(task.meta.get("entry_point")))
        tried = images.start(environment, check)
        if env == "bash":
            _docker("exec", tried, "bash", "-c", f"cd / && ({wrong}) > {answer_file} 2>&1")
        else:
            _docker("exec", "-i", tried, "sh", "-c", f"cat > {answer_file}", input=wrong.encode())
        ours = await _our_reward(task_id, wrong, mode)
        if env in SEPARATE:
            theirs = _verify_apart(folder, images, _answer(tried, answer_file), task.image)
        else:
            theirs = _verify_in(folder, tried)
        assert theirs["reward"] == ours < 1.0

    # The oracle: solve.sh in the agent's container (as Harbor uploads it), then the verifier.
    solved = images.start(environment, check)
    _docker("cp", str(folder / "solution"), f"{solved}:/solution")
    _docker("exec", solved, "/solution/solve.sh")
    if env in SEPARATE:
        reward = _verify_apart(folder, images, _answer(solved, answer_file), task.image)
        assert reward["reward"] == 1.0
        if env == "ctf":
            assert reward == {"reward": 1.0, "correct": 1.0}
    else:
        reward = _verify_in(folder, solved)
        assert reward["reward"] == 1.0, json.loads(
            _docker("exec", solved, "cat", "/logs/verifier/parts.json")
        )


def test_an_env_that_cannot_be_exported_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=re.escape("export harbor covers the ctf, python, sql, bash envs, not 'nope'")
    ):
        export_tasks("nope/0", tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_task_that_cannot_run_here_is_left_out_and_named(tmp_path: Path) -> None:
    unavailable = get_task("ctf/1").unavailable
    assert unavailable
    with pytest.raises(ConfigError, match=re.escape(f"ctf/1: {unavailable}")):
        export_tasks("ctf/1", tmp_path)
    export_tasks("ctf/0,ctf/1", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "ctf__0"]
    assert f"- ctf/1: {unavailable}" in (tmp_path / "README.md").read_text()
