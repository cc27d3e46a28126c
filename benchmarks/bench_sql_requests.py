"""What one SQL helper request costs the machine, by transport and by session, side by side.

    python benchmarks/bench_sql_requests.py [--clients 8] [--requests 300] [--rounds 3]

``--clients`` helpers on one agents' server (each with its own account, as the envs hold them) send
``--requests`` requests each, all at once, for every variant in turn, round after round. Printed:
the machine's CPU (every process: the harness, the engine and the shims, the helpers, MariaDB;
``/proc/stat``) per request, the median of the rounds, and its ratio to the first row's.

- ``stream``: ``SELECT 1`` on the helper's connection, requests through the engine's exec stream;
- ``socket``: the same through the helper's unix socket reached from this host (the SQL servers'
  transport where the local engine's fast paths are: ``intercode_agents/sandbox/host_sockets.py``);
- ``socket, fresh session``: a gold's request (the server resets the connection's session first);
- ``socket, episode reset``: an episode's first request (a new connection, the account's other
  threads gone, the task's database).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Any

from bench_gold import machine_cpu_seconds

from intercode_agents.envs.sql.server import SqlClient, close_server, open_server
from intercode_agents.images import image_ref
from intercode_agents.sandbox import close_docker_client

QUERY = {"op": "query", "sql": "SELECT 1", "db": "car_1"}
VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {  # name: (through the socket, request extras)
    "stream": (False, {}),
    "socket": (True, {}),
    "socket, fresh session": (True, {"fresh": True}),
    "socket, episode reset": (True, {"reset": True}),
}


async def burst(clients: list[SqlClient], requests: int, extra: dict[str, Any]) -> float:
    """Machine CPU microseconds per request while every client sends ``requests`` at once."""

    async def run(client: SqlClient) -> None:
        for _ in range(requests):
            reply = await client.request(QUERY | extra, timeout=10)
            if not reply.get("ok"):
                raise RuntimeError(f"the helper failed: {reply.get('error')}")

    before = machine_cpu_seconds()
    await asyncio.gather(*(run(c) for c in clients))
    return (machine_cpu_seconds() - before) * 1e6 / (requests * len(clients))


async def main(n_clients: int, requests: int, rounds: int) -> None:
    server = await open_server(image_ref("sql"), "agents")
    made: dict[bool, list[SqlClient]] = {}
    try:
        with server.sandbox.slow_paths():  # (no fast paths while they start: they keep their stream)
            made[False] = [await server.client() for _ in range(n_clients)]
        made[True] = [await server.client() for _ in range(n_clients)]
        if any(c.session is None or c.session.transport != "socket" for c in made[True]):
            raise SystemExit("the helpers' sockets are not reachable here (a remote engine, or not root)")
        samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(rounds):
            for name, (socket, extra) in VARIANTS.items():
                samples[name].append(await burst(made[socket], requests, extra))
    finally:
        for clients in made.values():
            for client in clients:
                await client.close()
        await close_server(server)
        await close_docker_client()
    print(f"{n_clients} helpers, {requests} requests each at once, {rounds} rounds; machine CPU per request")
    first = statistics.median(samples["stream"])
    for name, values in samples.items():
        median = statistics.median(values)
        each = ", ".join(f"{v:.0f}" for v in values)
        print(f"  {name:<24} {median:7.0f} us  ({each})  {median / first:5.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.clients, args.requests, args.rounds))
