"""``scenarios/mptcp/handover.toml``: DASH over MPTCP and over single-path TCP while the client
roams (``[[handovers]]``, docs/models/handovers.md). Both sessions play the whole clip; the gaps
are the outages table's; MPTCP's segment downloaded across interface 1's gap still comes in over
interface 2 and its segments at the far access point beat its 6 Mbit/s, while TCP's fall to the
far access point's rate; MPTCP stalls no more than TCP (README, "Handover example")."""

from __future__ import annotations

from conftest import ROOT
from qoelab import Scenario

EXAMPLE = ROOT / "scenarios" / "mptcp" / "handover.toml"


def _segments(probe: list[dict], flow: str) -> list[dict]:
    """Each segment of ``flow``: its index, arrival time (s) and download rate (Mbit/s)."""
    out: list[dict] = []
    for r in probe:
        if r["flow"] != flow:
            continue
        if r["name"] == "dash_segment":
            out.append({"i": int(r["value"]), "t": r["t_ns"] / 1e9})
        elif out and r["name"] in ("dash_bytes", "dash_download_s"):
            out[-1][r["name"]] = r["value"]
    for s in out:
        s["start"] = s["t"] - s["dash_download_s"]
        s["mbps"] = s["dash_bytes"] * 8 / s["dash_download_s"] / 1e6
    return out


def test_mptcp_carries_the_session_through_the_handovers_and_tcp_slows_to_the_far_access_point():
    res = Scenario.load(EXAMPLE).run()
    flows = {r["flow"]: r for r in res.tables["flows"].to_pylist()}
    mp, tcp = flows["dash_mptcp"], flows["dash_tcp"]
    for r in (mp, tcp):
        assert r["dash_segments"] == 30 and r["dash_played_s"] == 180.0, r["flow"]
    assert mp["dash_stalls"] <= tcp["dash_stalls"]
    gaps = sorted(zip(res.tables["outages"]["link"].to_pylist(), res.tables["outages"]["start_ns"].to_pylist()))
    assert gaps == sorted([(l, 60e9) for l in ("M->AP1", "AP1->M", "T->AP3", "AP3->T")]
                          + [(l, 90e9) for l in ("M->AP2", "AP2->M")]
                          + [(l, 120e9) for l in ("M->AP1", "AP1->M", "T->AP3", "AP3->T")])
    probe = res.tables["probe_app"].to_pylist()
    segs = {f: _segments(probe, f) for f in ("dash_mptcp", "dash_tcp")}
    across = lambda f, t: next(s for s in segs[f] if s["start"] < t < s["t"])  # noqa: E731
    # Across interface 1's gap at 60 s: MPTCP's segment still comes in (interface 2) at more than
    # the far access point's 6 Mbit/s; TCP's at less.
    assert across("dash_mptcp", 61.0)["mbps"] > 6.0
    assert across("dash_tcp", 61.0)["mbps"] < 6.0
    # At the far access point (after the gap, before 120 s): TCP gets at most its 6 Mbit/s,
    # MPTCP more (its interface 2 at 15 Mbit/s), except across interface 2's own gap at 90 s.
    far = lambda f: [s for s in segs[f] if s["start"] > 63.0 and s["t"] < 120.0]  # noqa: E731
    assert far("dash_tcp") and all(s["mbps"] <= 6.0 for s in far("dash_tcp"))
    assert far("dash_mptcp") and all(s["mbps"] > 6.0 for s in far("dash_mptcp"))
    assert sum(s["mbps"] for s in far("dash_mptcp")) / len(far("dash_mptcp")) > 2 * max(s["mbps"] for s in far("dash_tcp"))
