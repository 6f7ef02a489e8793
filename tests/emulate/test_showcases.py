"""The emulation showcases (scenarios/emulation/*), as their READMEs run them, shortened:
kernel TCP (iperf3) through a 10 Mbit/s bottleneck; SQF keeping a real ping's delay short beside
simulated downloads; a real ffmpeg RTP stream through the SQF bottleneck, its received bitstream
scored by the video pipeline."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from conftest import ROOT
from qoelab.emulate import emulate
from qoelab.scenario import Scenario

SCEN = ROOT / "scenarios" / "emulation"


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is missing: scripts/install-system-deps.sh installs it")


def test_iperf3_fills_the_bottleneck_and_its_retransmissions_are_the_drops(emulation, tmp_path):
    _need("iperf3")
    sc = Scenario.load(SCEN / "dumbbell" / "scenario.toml")
    # Retransmissions are the sender namespace's own count (nstat: every TCP socket there, read
    # 2 s after iperf3 has ended), not iperf3's report: iperf3 reads its socket's counter when the
    # test ends, while the kernel still drains the send buffer, so drops in that tail were
    # retransmitted after the report (17 drops against a report of 12, in one CI run).
    cmd = ("iperf3 -c $QOELAB_ADDR_RECEIVER -t 12 -C cubic -J > $QOELAB_OUT/iperf.json; "
           "sleep 2; nstat -asz TcpRetransSegs > $QOELAB_OUT/nstat.txt")
    em = emulate(sc, tmp_path, daemons=[("receiver", "iperf3 -s")], execs=[("sender", cmd)])
    rep = json.loads((tmp_path / "iperf.json").read_text())["end"]
    goodput = rep["sum_received"]["bits_per_second"]
    m = re.search(r"^TcpRetransSegs\s+(\d+)", (tmp_path / "nstat.txt").read_text(), re.M)
    assert m, "nstat printed no TcpRetransSegs"
    retrans = int(m.group(1))
    links = {r["link"]: r for r in em.results.tables["links"].to_pylist()}
    drops = links["R1->R2"]["drop_queue_pkts"]
    assert goodput >= 9.3e6, goodput
    # Each drop is retransmitted once; a tail-loss probe may resend a segment that was not lost.
    assert abs(drops - retrans) <= 3, (drops, retrans)
    flows = em.results.tables["real_flows"].to_pylist()
    data = [r for r in flows if r["dst_port"] == 5201 and r["sent_bytes"] > 1e6]
    assert len(data) == 1
    # Every packet the bottleneck dropped belongs to some real flow through it: the data
    # connection, and now and then iperf3's control connection (the same port) when its few
    # packets meet a full queue.
    through = [r for r in flows if r["from_node"] == "sender" and r["to_node"] == "receiver"]
    assert sum(r["drop_queue_pkts"] for r in through) == drops, through
    assert data[0]["drop_queue_pkts"] >= drops - 3, (data[0]["drop_queue_pkts"], drops)


def _ping_median(log: str) -> float:
    return statistics.median(float(x) for x in re.findall(r"time=([0-9.]+) ms", log))


def test_sqf_keeps_a_real_ping_short_beside_simulated_downloads(emulation, tmp_path):
    medians = {}
    for q in ("sqf", "fifo"):
        sc = Scenario.load(SCEN / "sqf" / "scenario.toml")
        sc.set("links[2].queue_ab.kind", q)
        out = tmp_path / q
        emulate(sc, out, execs=[("client", "sleep 2; ping -c 40 -i 0.05 $QOELAB_ADDR_SERVER")])
        medians[q] = _ping_median((out / "exec" / "client-0.log").read_text())
    # Base RTT 2 x 12 ms. SQF serves the ping's one-packet queue first; FIFO queues it behind
    # the downloads' backlog (up to 50 packets, 60 ms).
    assert medians["sqf"] < 24.0 + 2.0, medians
    assert medians["fifo"] > 24.0 + 20.0, medians


def test_a_real_rtp_stream_is_scored_by_the_video_pipeline(emulation, tmp_path):
    """The RTP showcase's pipeline (scenarios/emulation/sqf/README.md) on the dumbbell with 2 %
    random loss at the bottleneck, where what the network loses is known: the bitstream ffmpeg
    wrote in the receiver's namespace, scored against the source, lost exactly what the network
    lost."""
    import imageio_ffmpeg

    from qoelab.video.sources.encode import EncodeConfig, encode
    from qoelab.video.quality.evaluate import evaluate

    ff = imageio_ffmpeg.get_ffmpeg_exe()
    enc = encode(EncodeConfig(input=str(ROOT / "data" / "clips" / "bigbuckbunny.mp4"), frames=90, qp=34,
                              slice_max_bytes=1200, retime=True), tmp_path / "enc", "bbb")
    sc = Scenario.load(SCEN / "dumbbell" / "scenario.toml")
    sc.set("links[1].loss_ab", {"kind": "bernoulli", "p": 0.02})
    out = tmp_path / "run"
    sdp = SCEN / "sqf" / "h264-rtp.sdp"  # client 10.0.0.1 -> server 10.0.0.2: the dumbbell's two hosts
    receiver = (f"{ff} -hide_banner -loglevel warning -protocol_whitelist file,udp,rtp -reorder_queue_size 0 -i {sdp} "
                "-c copy -flush_packets 1 -f h264 -y $QOELAB_OUT/received.h264")
    sender = (f"sleep 1; {ff} -hide_banner -loglevel warning -re -framerate 30 -f h264 -i {enc.bitstream} "
              "-bsf:v 'setts=ts=N/(30*TB)' -c copy -f rtp -pkt_size 1400 rtp://$QOELAB_ADDR_RECEIVER:5004; sleep 1")
    em = emulate(sc, out, daemons=[("receiver", receiver)], execs=[("sender", sender)])
    video = next(r for r in em.results.tables["real_flows"].to_pylist() if r["dst_port"] == 5004)
    r = evaluate(enc.trace, enc.bitstream, out / "received.h264", recipe_path=enc.recipe)
    s = r.summary
    psnr, undamaged = s["mean_psnr_y_vs_source_db"], s["ref_mean_psnr_y_vs_source_db"]
    lost = video["drop_channel_pkts"]
    assert video["drop_queue_pkts"] == 0 and lost > 0, video
    # A lost datagram loses the NAL unit(s) it carried (ffmpeg aggregates small ones: STAP-A),
    # and nothing else is lost but, possibly, the last access unit ffmpeg holds when stopped.
    assert lost <= s["nal_lost"] <= 3 * lost + 2, (s["nal_lost"], lost)
    assert 5.0 < psnr < undamaged, (psnr, undamaged)


MPTCP_SERVER = "ip mptcp limits set subflow 2 add_addr_accepted 2; mptcpize run iperf3 -s"
MPTCP_CLIENT = ("ip mptcp limits set subflow 2 add_addr_accepted 2; ip mptcp endpoint add 10.1.1.1 dev qoe0 subflow; "
                "sleep 0.5; mptcpize run iperf3 -c $QOELAB_ADDR_S -B 10.1.0.1 -t 6 -R")


@pytest.mark.parametrize("config", ["balanced", "unbalanced"])
def test_kernel_mptcp_uses_both_emulated_paths(emulation, tmp_path, config):
    _need("mptcpize")
    _need("iperf3")
    sc = Scenario.load(SCEN / "mptcp" / f"{config}.toml")
    em = emulate(sc, tmp_path, daemons=[("S", MPTCP_SERVER)], execs=[("C", MPTCP_CLIENT)])
    per_path = {"10.1.0.1": 0, "10.1.1.1": 0}
    for r in em.results.tables["real_flows"].to_pylist():
        if r["src_port"] == 5201 and r["dst"] in per_path:
            per_path[r["dst"]] += r["recv_bytes"]
    total = sum(per_path.values())
    assert total > 10e6, per_path
    share1 = per_path["10.1.0.1"] / total
    if config == "balanced":  # 15 + 15 Mbit/s
        assert 1 / 3 < share1 < 2 / 3, per_path
    else:  # 25 + 5 Mbit/s: path 2 carries data, about a sixth
        assert 0.05 < 1 - share1 < 0.35, per_path
    links = {r["link"]: r["tx_bytes"] for r in em.results.tables["links"].to_pylist()}
    assert links["R1->C"] > 1e6 and links["R2->C"] > 1e6
