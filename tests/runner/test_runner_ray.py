"""Runs on a Ray cluster, on one machine: a head and two nodes, each node driving its own Docker engine.

The head offers no slots (it is the driver's). Node "main" drives the machine's Docker engine, node
"second" a second dockerd (``tests/engines.py``) through its ``DOCKER_HOST``: each node reaches its own
engine only, as nodes on separate hosts would. The cluster is ``ray.cluster_utils.Cluster``, one CPU
and two ``intercode_slots`` a node. Skipped only where Ray or a second dockerd cannot run.

What is checked: a 50-task Bash gold replay over both nodes with "second" removed ungracefully halfway
(every task recorded once, as many solved as a one-engine run, the lost attempts in the records, a
node that joins takes work, neither engine keeps a container of the run); a driver killed mid-run,
after which ``cleanup --ray`` leaves no container of it; a replay of recorded golds and a re-score of
a paper log on both nodes give the local figures; the step-level calls driven from a Ray task on the
cluster; a node that lacks an image, or holds another build of it, named before anything runs;
players that cannot travel refused clearly; a user's agent built on the node.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from intercode_agents.datasets import select_tasks
from intercode_agents.errors import ConfigError
from intercode_agents.fidelity import rescore
from intercode_agents.fidelity.rescore import rescore_file, score_of
from intercode_agents.images import copy_refs, image_ref
from intercode_agents.runner import replay as replay_module
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.episode_registry import EpisodeError, ServerOptions
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.gold import run_gold
from intercode_agents.runner.replay import replay_file
from intercode_agents.runner.run_dir import RUN_JSON, TRAJECTORIES, read_records
from intercode_agents.sandbox import resolve_backend
from intercode_agents.sandbox.config import LABEL_RUN
from intercode_agents.trajectory import Trajectory
from tests import engines
from tests.envs.test_gold_replay import BASH_CORRUPT, BASH_VOLATILE
from tests.runner import ray_gated_model

ray = pytest.importorskip("ray", reason="Ray cannot be installed here (pip install 'intercode-agents[ray]')")

from ray.cluster_utils import Cluster  # noqa: E402

from intercode_agents.runner.ray.driver import SLOTS, RayRun  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "intercode_agents"]
TASKS, HALF = 50, 25
IMAGES = ("bash-fs1", "bash-mini")
RESULTS = Path(os.environ.get("INTERCODE_RESULTS", "/work/shared/intercode-results"))


@dataclass
class TwoNodes:
    cluster: Cluster
    main: Any  # ray._private.node.Node: its node_id is the Ray node ID
    second: Any
    second_spec: str  # the engine string of the second dockerd, as this process reaches it
    second_host: str  # its DOCKER_HOST, as the node sees it

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_second(self) -> Any:
        """A node on the second engine (a node that joins, or one that comes back)."""
        return self.cluster.add_node(
            num_cpus=1, resources={SLOTS: 2}, env_vars={"DOCKER_HOST": self.second_host}
        )


@pytest.fixture(scope="module")
def two_nodes():
    why = engines.available("dockerd")
    if why is not None:
        pytest.skip(f"no second dockerd here: {why}")
    engine = engines.start("dockerd")
    copy_refs([image_ref(name) for name in IMAGES], source="docker", target=engine.spec)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        main = cluster.add_node(num_cpus=1, resources={SLOTS: 2})
        nodes = TwoNodes(cluster, main, None, engine.spec, f"unix://{engine.socket}")
        nodes.second = nodes.add_second()
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)  # one connection for every run here
        yield nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
        if os.environ.get("INTERCODE_TEST_KEEP_ENGINES") != "1":
            engines.stop("dockerd")


def _docker(host: str | None, *args: str) -> None:
    subprocess.run(
        ["docker", *(["-H", host] if host else []), *args], capture_output=True, check=args[0] != "rmi"
    )


def _run_containers(spec: str | None, run_id: str) -> list[Any]:
    backend = resolve_backend(spec) if spec else resolve_backend("docker")
    return backend.leftovers_now({LABEL_RUN: run_id})


def _records(path: Path) -> list[Trajectory]:
    return read_records(path)[0] if path.exists() else []


# -- the command line -------------------------------------------------------------------------------


def test_a_bare_ray_option_takes_rays_own_address_and_excludes_engines(tmp_path):
    """``--ray`` needs no value before another option; with ``--engines`` it is one clear error."""
    for argv in (
        ["--ray", "--engines", "docker"],
        ["--engines", "docker", "--ray"],
        ["--ray=auto", "--engines", "docker"],
    ):
        done = subprocess.run(
            [*CLI, "gold", "bash", "--tasks", "bash/mini/0", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert done.returncode == 2, done.stderr
        assert "--ray and --engines (or $INTERCODE_ENGINES) exclude each other" in done.stderr


# -- on the cluster ---------------------------------------------------------------------------------


async def test_a_trainers_ray_task_drives_episodes_on_the_node_that_holds_them(two_nodes):
    options = ServerOptions(max_episodes=2, evaluate=True, strategy_label="ray", client_label="trainer")
    async with RayRun(two_nodes.address, step_options=options) as cluster:
        held = cluster.actors()
        assert {node.id for node, _ in held} == {two_nodes.main.node_id, two_nodes.second.node_id}
        # A worker of the cluster (not this driver) plays one episode on each node's actor.
        results = await asyncio.gather(*(_rollout.remote(actor) for _, actor in held))
        for (node, _), (record, other_refused) in zip(held, results, strict=True):
            traj = Trajectory.model_validate(record)
            assert traj.node == node.id and traj.engine == node.engine
            assert traj.strategy == "ray" and traj.model == "trainer"
            assert traj.reward == 1.0 and traj.solved
            assert [s.kind for s in traj.steps] == ["action", "evaluate", "submit"]
            assert other_refused  # an id is known only to the actor that made it
        second = next(n for n, _ in held if n.id == two_nodes.second.node_id)
        assert second.engine.startswith(two_nodes.second_host)
        with pytest.raises(EpisodeError, match="no episode 'nope'"):
            await held[0][1].act.remote("nope", "ls")


async def test_a_group_of_rollouts_plays_on_one_node_at_once_and_the_next_on_the_other(two_nodes):
    from intercode_agents.runner.players import GoldPlayer

    player = GoldPlayer()
    async with RayRun(two_nodes.address) as cluster:
        first = await cluster.play_group("bash", "bash/mini/0", 3, player, seed=10)
        second = await cluster.play_group("bash", "bash/mini/0", 3, player, seed=10)
        with pytest.raises(ConfigError, match="at least one episode"):
            await cluster.play_group("bash", "bash/mini/0", 0, player)
    for group in (first, second):
        assert [t.seed for t in group] == [10, 11, 12] and [t.epoch for t in group] == [1, 2, 3]
        assert all(t.task_id == "bash/mini/0" and t.solved and t.reward == 1.0 for t in group)
        assert len({t.node for t in group}) == 1  # a group is played on one node, at once
    assert {first[0].node, second[0].node} == {two_nodes.main.node_id, two_nodes.second.node_id}
    assert first[0].engine != second[0].engine


@ray.remote(num_cpus=0)
def _rollout(actor: Any) -> tuple[dict[str, Any], bool]:
    """What an RL framework's rollout worker does with a node's actor: start, act, evaluate, submit, end."""

    async def run() -> tuple[dict[str, Any], bool]:
        started = await actor.start.remote("bash", "bash/mini/0")
        assert "ERROR" in started["question"] and "gold" not in started["task"]
        step = await actor.act.remote(started["episode_id"], "grep -c ERROR /testbed/logs/app.log")
        assert step["exit_code"] == 0, step
        scored = await actor.evaluate.remote(started["episode_id"])
        done = await actor.submit.remote(started["episode_id"])
        assert scored["reward"] == done["reward"] == 1.0, (scored, done)
        return await actor.end.remote(started["episode_id"]), True

    return asyncio.run(run())


async def test_a_node_without_an_image_or_with_another_build_is_named_before_anything_runs(
    two_nodes, tmp_path, monkeypatch
):
    tag = f"raytest{os.getpid()}"
    ref = image_ref("bash-mini").replace(":latest", f":{tag}")
    other_build = image_ref("bash-fs1")  # (named before the tag changes what image_ref names)
    _docker(None, "tag", image_ref("bash-mini"), ref)
    monkeypatch.setenv("INTERCODE_AGENTS_IMAGE_TAG", tag)  # the driver's tag goes to every node
    try:
        config = EvalConfig(
            env="bash", selector="bash/mini/0", out_dir=tmp_path / "a", progress=False, ray=two_nodes.address
        )
        with pytest.raises(ConfigError) as missing:
            await run_eval(config)
        text = str(missing.value)
        assert f"node {two_nodes.second.node_id[:8]}" in text and ref in text, text
        assert two_nodes.main.node_id[:8] not in text, text  # the node that has it is not blamed
        assert not (tmp_path / "a" / RUN_JSON).exists()  # nothing was started

        _docker(two_nodes.second_host, "tag", other_build, ref)  # another image, the same tag
        with pytest.raises(ConfigError, match="different builds of the image bash-mini") as differ:
            await run_eval(config)
        assert two_nodes.second.node_id[:8] in str(differ.value) and two_nodes.main.node_id[:8] in str(
            differ.value
        )
    finally:
        _docker(None, "rmi", ref)
        _docker(two_nodes.second_host, "rmi", ref)


async def test_players_that_cannot_travel_are_refused_and_a_users_agent_is_built_on_the_node(
    two_nodes, tmp_path, monkeypatch
):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    with pytest.raises(ConfigError, match="--model human plays at this terminal: it cannot run on Ray"):
        await run_eval(
            EvalConfig(
                env="bash", model="human", selector="bash/mini/0", progress=False, ray=two_nodes.address
            )
        )
    unpicklable = GenericFakeChatModel(messages=(m for m in [AIMessage("ls")]))  # a generator: no pickle
    with pytest.raises(ConfigError, match=r"cannot be sent to the Ray nodes.*give the model as a spec"):
        await run_eval(
            EvalConfig(
                env="bash",
                model=unpicklable,
                strategy="react",
                selector="bash/mini/0",
                progress=False,
                ray=two_nodes.address,
            )
        )
    # A relative path to the user's agent, from this working folder: the node is sent it absolute.
    monkeypatch.chdir(REPO)
    result = await run_eval(
        EvalConfig(
            env="bash", model=None, agent="examples/own_agent.py:build", selector="bash/mini/0",
            out_dir=tmp_path / "agent", progress=False, ray=two_nodes.address,
        )
    )  # fmt: skip
    (record,) = result.records
    assert (
        record.solved
        and record.strategy.startswith("agent")
        and record.node
        in {
            two_nodes.main.node_id,
            two_nodes.second.node_id,
        }
    )


def test_cleanup_ray_removes_what_a_killed_driver_left_on_every_node(two_nodes, tmp_path):
    out = tmp_path / "crashed"
    env = {**os.environ, "COLUMNS": "200"}
    driver = subprocess.Popen(
        [
            *CLI,
            "eval",
            "bash",
            "-m",
            "gold",
            "--tasks",
            "fs1",
            "--out",
            str(out),
            "--no-progress",
            f"--ray={two_nodes.address}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 300
        while len(_records(out / TRAJECTORIES)) < 4:
            assert driver.poll() is None, driver.stderr.read().decode() if driver.stderr else ""
            assert time.monotonic() < deadline, "the driver recorded nothing in 300 s"
            time.sleep(0.2)
        run_id = json.loads((out / RUN_JSON).read_text())["sandbox_run_id"]
        assert run_id.startswith("ray-")
        os.kill(driver.pid, signal.SIGKILL)  # no clean-up of its own at all
    finally:
        driver.kill()
        driver.wait()
    held = _wait_for_makers_gone(two_nodes, run_id)
    assert held, "the killed run left nothing behind: this test would prove nothing"
    cleanup = [*CLI, "cleanup", f"--ray={two_nodes.address}", "--run", run_id]  # (others' containers stay)
    done = subprocess.run(cleanup, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    # A create the engine received before its maker died may finish after the count, and a removal
    # under way may finish before the clean-up: what holds is that the clean-up removed the run's.
    total = int(done.stdout.strip().splitlines()[-1].split()[1])  # "removed N containers"
    assert total > 0, done.stdout
    assert _run_containers(None, run_id) == [] and _run_containers(two_nodes.second_spec, run_id) == []


def _wait_for_makers_gone(nodes: TwoNodes, run_id: str) -> int:
    """How many containers the killed run left, once Ray has ended its actors (their makers)."""
    deadline = time.monotonic() + 60
    while True:
        left = _run_containers(None, run_id) + _run_containers(nodes.second_spec, run_id)
        makers = {int(c.labels.get("intercode-agents.pid", "0")) for c in left}
        if not any(_alive(pid) for pid in makers) or time.monotonic() > deadline:
            return len(left)
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


async def test_replay_on_the_cluster_reproduces_the_rewards_and_flags_a_tampered_record(
    two_nodes, tmp_path, monkeypatch
):
    """A local gold run's records replayed on both nodes: the same rewards, a tampered one flagged."""
    out = tmp_path / "gold"
    await run_gold(EvalConfig(env="bash", selector="mini", limit=4, out_dir=out, progress=False))
    lines = (out / TRAJECTORIES).read_text().splitlines()
    tampered = json.loads(lines[0])
    tampered["reward"] = 0.25
    path = tmp_path / "tampered.jsonl"
    path.write_text("\n".join([json.dumps(tampered), *lines[1:]]) + "\n")

    nodes: list[str | None] = []
    compare = replay_module._compare

    def noting_the_node(old: Trajectory, new: Trajectory) -> Any:
        nodes.append(new.node)
        return compare(old, new)

    monkeypatch.setattr(replay_module, "_compare", noting_the_node)
    report = await replay_file(path, progress=False, ray=two_nodes.address)

    assert len(report.episodes) == 4 and not report.skipped
    assert set(nodes) <= {two_nodes.main.node_id, two_nodes.second.node_id} and None not in nodes
    assert [e.task_id for e in report.changed] == [tampered["task_id"]]
    assert report.changed[0].recorded == 0.25 and report.changed[0].replayed == 1.0


FS1_LOG = RESULTS / "bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json"


@pytest.mark.skipif(not FS1_LOG.is_file(), reason="the paper's logs are not at " + str(RESULTS))
async def test_rescore_on_the_cluster_gives_the_local_figures(two_nodes, tmp_path, monkeypatch):
    """A slice of the paper's fs_1 log re-scored on both nodes gives what a local re-score gives, turn
    by turn, the gold-cut rule (read from the scores that came back from the nodes) included."""
    entries = json.loads(FS1_LOG.read_text())
    log = tmp_path / FS1_LOG.name
    log.write_text(json.dumps({key: entries[key] for key in map(str, range(8))}))
    local = await rescore_file(log, concurrency=2, progress=False)

    nodes: list[str | None] = []

    def noting_the_node(traj: Trajectory) -> Any:
        nodes.append(traj.node)
        return score_of(traj)

    monkeypatch.setattr(rescore, "score_of", noting_the_node)
    on_ray = await rescore_file(log, concurrency=2, progress=False, ray=two_nodes.address)

    assert set(nodes) == {two_nodes.main.node_id, two_nodes.second.node_id}  # both nodes played
    assert len(on_ray.episodes) == len(local.episodes) >= 6 and on_ray.errors == local.errors == []
    assert [(e.task_id, e.ours_max) for e in on_ray.episodes] == [
        (e.task_id, e.ours_max) for e in local.episodes
    ]
    assert [[t.ours for t in e.turns] for e in on_ray.episodes] == [
        [t.ours for t in e.turns] for e in local.episodes
    ]
    assert (on_ray.our_rate, on_ray.logged_rate, on_ray.quirks) == (
        local.our_rate,
        local.logged_rate,
        local.quirks,
    )
    assert [x.task_id for x in on_ray.left_out] == [x.task_id for x in local.left_out]


async def test_a_node_that_joins_takes_work_and_one_removed_halfway_has_its_episodes_played_again(
    two_nodes, tmp_path
):
    """50 Bash tasks over two nodes, each answered with its gold; a third node (on the second engine)
    joins once the run is under way, and the first node on the second engine is removed ungracefully
    halfway. The model answers only once the join is done (a gate file), so that the joined node
    finds work left however fast the golds play."""
    skip = set(BASH_VOLATILE) | set(BASH_CORRUPT)  # golds whose result depends on the moment
    tasks = [t for t in select_tasks("bash", "fs1") if t.id not in skip]
    golds = {t.query: t.gold for t in tasks}
    tasks = [t for t in tasks if sum(t.query in q for q in golds) == 1][:TASKS]  # told apart by question
    assert len(tasks) == TASKS
    selector = ",".join(t.id for t in tasks)
    one_engine = await run_gold(EvalConfig(env="bash", selector=selector, concurrency=4, progress=False))
    assert one_engine.total == TASKS

    out, gate = tmp_path / "run", tmp_path / "gate"
    said = io.StringIO()
    removed: dict[str, Any] = {}

    async def join_a_node_then_remove_second_halfway() -> None:
        while not (out / TRAJECTORIES).exists():  # noqa: ASYNC110 - a file, not an event
            await asyncio.sleep(0.1)
        removed["joined"] = two_nodes.add_second()  # (Ray starts a node from the main thread only)
        deadline = time.monotonic() + 90
        while "joined with 2 slots" not in said.getvalue() and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        gate.touch()  # the episodes held on the first two nodes answer now
        while len(_records(out / TRAJECTORIES)) < HALF:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        removed["before"] = {r.node for r in _records(out / TRAJECTORIES)}
        await asyncio.to_thread(two_nodes.cluster.remove_node, two_nodes.second, False)  # ungracefully

    ray.cloudpickle.register_pickle_by_value(ray_gated_model)  # the nodes need not import tests
    model = ray_gated_model.gated_gold(gate, {t.query: t.gold for t in tasks})
    changes = asyncio.create_task(join_a_node_then_remove_second_halfway())
    try:
        result = await run_eval(
            EvalConfig(
                env="bash", model=model, strategy="try_again", selector=selector, out_dir=out,
                progress=False, ray=two_nodes.address,
            ),
            console=Console(file=said, width=400),
        )  # fmt: skip
    finally:
        ray.cloudpickle.unregister_pickle_by_value(ray_gated_model)
    async with asyncio.timeout(60):
        await changes
    lost, joined = two_nodes.second.node_id, removed["joined"].node_id
    two_nodes.second = removed["joined"]  # (for any test after this one)

    records = _records(out / TRAJECTORIES)
    assert sorted(r.task_id for r in records) == sorted(t.id for t in tasks)  # every task, once
    assert sum(r.solved for r in records) == len(one_engine.solved) == TASKS
    assert {two_nodes.main.node_id, lost} <= removed["before"]  # both nodes played before the loss
    retried = [a for r in records for a in r.retries]
    assert all(a.outcome == "env_error" for a in retried), retried
    lost_attempts = [a for a in retried if a.node == lost and "lost with node" in (a.error or "")]
    assert lost_attempts, f"no attempt was recorded as lost with the removed node: {retried}"
    played_by = {r.node for r in records}
    assert joined in played_by, f"the node that joined took no work: {played_by}\n{said.getvalue()}"
    for r in records:
        assert r.engine is not None and r.image_id is not None
        assert r.engine.startswith(two_nodes.second_host if r.node != two_nodes.main.node_id else "local@")
    states = {n["node"]: n["state"] for n in result.nodes}
    assert states[lost] == "lost" and states[joined] == "up" and states[two_nodes.main.node_id] == "up"

    run_id = json.loads((out / RUN_JSON).read_text())["sandbox_run_id"]
    assert _run_containers(None, run_id) == []  # the main engine
    assert _run_containers(two_nodes.second_spec, run_id) == []  # the second, the lost node's included
