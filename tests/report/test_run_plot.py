"""The run plot's choices: which links get a queue panel, and flow colours."""

from __future__ import annotations

import numpy as np

from qoelab.paths import root as repo_root
from qoelab.report.plots import busiest_links, flow_colors
from qoelab.scenario import Scenario


def test_busiest_links_ranks_unsigned_counters_by_magnitude() -> None:
    # uint64 columns, as the links table has them: negating them wraps, so the old
    # `lexsort((-maxb, -drops))` ranked the idle links (0 → 0) above the busy one.
    drops = np.array([0, 0, 37, 0], dtype=np.uint64)
    maxb = np.array([1, 0, 50, 4], dtype=np.uint64)
    assert busiest_links(drops, maxb) == [2, 3, 0]
    assert busiest_links(drops, maxb, n=1) == [2]
    # links that never held a packet get no panel
    assert busiest_links(np.zeros(3, np.uint64), np.zeros(3, np.uint64)) == []


def test_demo_queue_panel_shows_the_bottleneck() -> None:
    sc = Scenario.load(repo_root() / "scenarios" / "demo" / "scenario.toml")
    sc.data["sim"]["duration"] = "3s"
    res = sc.run()
    links = res.tables["links"]
    chosen = busiest_links(links.column("drop_queue_pkts").to_numpy(),
                           links.column("max_backlog_pkts").to_numpy())
    names = [links.column("link")[i].as_py() for i in chosen]
    assert names, "no link chosen"
    assert names[0] == "router->client", names


def test_flow_colours_are_distinct_beyond_ten_flows() -> None:
    for n in (1, 4, 10, 11, 12, 20, 33):
        cols = flow_colors(n)
        assert len(cols) == n
        assert len({tuple(np.round(c, 6)) for c in cols}) == n
