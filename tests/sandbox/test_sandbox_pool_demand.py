"""How many sandboxes an adaptive pool keeps ready (:class:`intercode_agents.sandbox.pool.Demand`)."""

from __future__ import annotations

import time

from intercode_agents.sandbox.pool import Demand


def test_an_idle_pool_keeps_ready_what_its_last_run_took_at_once(monkeypatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    demand = Demand()
    demand.started(0.2)
    assert demand.ready_target() == 1  # nothing taken yet: one spare
    for out in (1, 2, 3, 4, 4, 3):  # four workers at once, slowly
        demand.took(out)
        clock[0] += 2.0
    assert demand.ready_target() == 4  # each of the four finds one ready
    clock[0] += 600  # an idle pause between two runs on the same warm pools
    assert demand.ready_target() == 4  # it does not decay while nobody takes


def test_a_fast_stream_of_takes_keeps_a_start_time_of_demand_ready(monkeypatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    demand = Demand()
    demand.started(1.0)
    for _ in range(21):  # 10 takes a second, one out at a time
        demand.took(1)
        clock[0] += 0.1
    assert round(demand.rate) == 10
    assert demand.ready_target() == 1 + 16  # 10.5/s over a 1 s start, with 1.5x headroom, and a spare
    clock[0] += Demand.WINDOW_S
    for _ in range(3):  # then one take every five seconds
        demand.took(1)
        clock[0] += 5.0
    assert demand.rate == 3 / 10  # the fast takes left the window: three over ten seconds
    assert demand.ready_target() == 2
