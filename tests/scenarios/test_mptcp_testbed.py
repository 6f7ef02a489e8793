"""``scenarios/mptcp/base.toml``, the testbed of Wejin & Amca (UHD HEVC DASH over MPTCP and
single-path TCP): the paper's Table 1 values are in it, the single-path flow runs over path 1
only, and the README's reading of Table 1's loss rates (the literal values contradict the
paper's Fig. 5; loss ÷ 100 fits it) holds on the simulator."""

from __future__ import annotations

import tomllib

from conftest import ROOT
from qoelab import Scenario

BASE = ROOT / "scenarios" / "mptcp" / "base.toml"
# The session: the bundled ladder's content (its recipe's length: 180 s) played once (README).
LADDER_S = tomllib.loads((ROOT / "data" / "traces" / "dash_hevc.recipe.toml").read_text())["config"]["duration_s"]
MEDIA_S = LADDER_S  # loops = 1


def _dash(loss: float, seed: int = 1, **set_: object) -> dict:
    sc = Scenario.load(BASE)
    sc.set("sim.seed", seed)
    sc.data["links"][0]["loss_ba"] = {"kind": "bernoulli", "p": loss}
    for k, v in set_.items():
        sc.set(k, v)
    rows = [r for r in sc.run().tables["flows"].to_pylist() if r["flow"] == "dash"]
    assert len(rows) == 1
    return rows[0]


def test_base_is_the_balanced_single_path_row_of_table_1():
    d = tomllib.loads(BASE.read_text())
    access = [l for l in d["links"] if l["a"] == "C"]
    assert [(l["b"], l["a_addr"]) for l in access] == [("R1", "10.1.0.1"), ("R2", "10.1.1.1")]
    # SPTCP, balanced: 20 %, 10 ms (RTT, half each way), 30 Mbit/s on path 1.
    assert access[0]["rate"] == "30Mbps" and access[0]["delay"] == "5ms"
    assert access[0]["loss_ba"] == {"kind": "bernoulli", "p": 0.20}
    (f,) = d["flows"]
    assert f["transport"]["kind"] == "tcp" and (f["src_addr"], f["dst_addr"]) == ("10.1.0.1", "10.2.0.1")
    assert f["app"]["mpd"].endswith("dash_hevc_6s.mpd") and f["app"]["loops"] == 1
    # At least three minutes of media (issue 20), in a run with room for start-up and stalls.
    assert MEDIA_S >= 180.0
    assert float(d["sim"]["duration"].removesuffix("s")) >= MEDIA_S + 30.0
    assert f["peer_app"] == {"kind": "http_server"}


def test_single_path_flow_uses_path_1_only():
    # Path 2 broken (all its downstream packets lost) and slowed: a flow pinned to path 1 must
    # not notice; one that leaked onto path 2 would.
    a = _dash(0.0)
    b = _dash(0.0, **{"links[2].rate": "1Mbps", "links[2].loss_ba": {"kind": "bernoulli", "p": 1.0}})
    for k in ("dash_mean_bitrate_bps", "dash_startup_s", "dash_segments", "rev_bytes_sent"):
        assert a[k] == b[k], k
    # ...while path 1's rate does matter.
    c = _dash(0.0, **{"links[0].rate": "5Mbps"})
    assert c["dash_mean_bitrate_bps"] < 0.5 * a["dash_mean_bitrate_bps"]


def test_literal_loss_contradicts_fig5_and_loss_div_100_fits_it():
    # Fig. 5: single-path TCP retransmits about one packet per second over the whole run.
    dur = float(tomllib.loads(BASE.read_text())["sim"]["duration"].removesuffix("s"))
    for seed in (1, 2):
        lit = _dash(0.20, seed)
        assert lit["rev_retransmitted_segments"] / dur > 10, "literal 20 % loss: many retransmissions per second"
        assert lit["dash_stalls"] >= 1 and lit["dash_played_s"] < MEDIA_S, "literal loss cannot carry the session"
        d100 = _dash(0.002, seed)
        assert d100["rev_retransmitted_segments"] / dur < 3, "loss / 100: about Fig. 5's one per second"
        assert d100["dash_stalls"] == 0 and abs(d100["dash_played_s"] - MEDIA_S) < 1e-6
        assert d100["dash_mean_bitrate_bps"] > 2 * lit["dash_mean_bitrate_bps"]
