"""pcap captures: tshark reads them without warnings and sees the headers we simulated."""

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run_cli

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (make install installs it)")

SCEN = """
[sim]
duration = "2s"
[[links]]
a = "S"
b = "R"
rate = "100Mbps"
delay = "1ms"
[[links]]
a = "R"
b = "D"
rate = "10Mbps"
delay = "10ms"
queue = { kind = "fifo", limit = "30p" }
[[flows]]
name = "rtp"
src = "S"
dst = "D"
transport = { kind = "rtp" }
app = { kind = "cbr", rate = "2Mbps", payload = "1200B" }
[[flows]]
name = "tcp"
src = "S"
dst = "D"
transport = { kind = "tcp", cc = "cubic" }
app = { kind = "bulk" }
[output]
pcap = ["R->D", "D->R"]
"""


def tshark(*args: str) -> str:
    p = subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


# Expert items a well-formed capture never shows. Sequence warnings (segments not captured,
# out-of-order, duplicate ACKs) are real at a capture point behind a dropping queue.
BAD_EXPERT = ("Zero Window", "Malformed", "Bad checksum", "illegal", "Errors")


def bad_expert_items(pcap: Path) -> list[str]:
    """Lines of tshark's expert summary naming a malformed or wrong header, checksums verified."""
    expert = tshark("-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-q", "-z", "expert")
    return [line for line in expert.splitlines() if any(b.lower() in line.lower() for b in BAD_EXPERT)]


def fields(pcap: Path, *names: str, where: str = "") -> list[list[str]]:
    """One row per packet (matching the display filter `where`) of the named tshark fields."""
    args = [a for n in names for a in ("-e", n)] + (["-Y", where] if where else [])
    return [r.split(",") for r in tshark("-r", str(pcap), "-T", "fields", *args, "-E", "separator=,").split()]


@needs_tshark
def test_tshark_reads_capture_without_warnings(tmp_path: Path):
    s = tmp_path / "s.toml"
    s.write_text(SCEN)
    code, _, err = run_cli("run", str(s), "-o", str(tmp_path / "out"), "--no-plot")
    assert code == 0, err
    fwd = tmp_path / "out" / "R_to_D.pcap"
    rev = tmp_path / "out" / "D_to_R.pcap"
    assert fwd.exists() and rev.exists()
    links = pq.read_table(tmp_path / "out" / "links.parquet").to_pylist()
    started = {l["link"]: l["dequeued_pkts"] for l in links}
    # Every packet the port started to send is in the capture.
    n = len(tshark("-r", str(fwd), "-T", "fields", "-e", "frame.number").split())
    assert n == started["R->D"]
    # No malformed packets, bad lengths, checksum errors or zero windows.
    assert bad_expert_items(fwd) == [] and bad_expert_items(rev) == []
    # TCP segments and UDP datagrams decode with the lengths we simulated.
    rows = fields(fwd, "ip.len", "udp.length", "tcp.len", "tcp.flags.syn")
    udp = [r for r in rows if r[1]]
    tcp = [r for r in rows if r[2] and r[3] in ("0", "False")]
    syn = [r for r in rows if r[3] in ("1", "True")]
    assert udp and tcp and len(syn) == 1
    assert all(r[0] == "1240" and r[1] == "1220" for r in udp)  # 20 IP + 8 UDP + 12 RTP + 1200
    assert all(int(r[2]) == int(r[0]) - 52 for r in tcp)  # 20 IP + 32 TCP (timestamps)
    assert syn[0][:3] == ["60", "", "0"]  # 20 IP + 40 TCP (20 B of options), no payload


@needs_tshark
def test_bench_dumbbell_capture_has_the_headers_a_real_stack_sends(tmp_path: Path):
    """Issue 14, item 9: on the dumbbell bench scenario (10 bulk TCP flows, SACK, timestamps, 4 MiB
    buffers, a dropping bottleneck), tshark finds no zero window, malformed packet or bad checksum
    in either direction of the bottleneck; SYNs announce MSS and window scale and carry no
    payload; the window tshark computes from the scaled field is what Linux's autotuning offers
    within the 4 MiB receive buffer."""
    scen = ROOT / "scenarios" / "bench" / "dumbbell-10m.toml"
    out = tmp_path / "out"
    # The scenario has no [output] table: `output` is set whole (its parent, the root, exists).
    pcap = 'output={ pcap = ["R1->R2", "R2->R1"] }'
    code, _, err = run_cli("run", str(scen), "--set", "sim.duration=4s", "--set", pcap, "-o", str(out), "--no-plot")
    assert code == 0, err
    fwd, rev = out / "R1_to_R2.pcap", out / "R2_to_R1.pcap"
    assert bad_expert_items(fwd) == [] and bad_expert_items(rev) == []

    # 10 SYNs data-ward, 10 SYN-ACKs back: MSS 1460 (MTU − 40), shift 7 (4 MiB >> 7 = 32768),
    # SACK-permitted, 20 B of options, no payload.
    syn = ("tcp.flags.ack", "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.sack_perm", "tcp.len", "tcp.hdr_len")
    for pcap, ack in ((fwd, ("0", "False")), (rev, ("1", "True"))):
        rows = fields(pcap, *syn, where="tcp.flags.syn==1")
        assert len(rows) == 10, rows
        for r in rows:
            assert r[0] in ack and r[1] == "1460" and r[2] == "7" and r[3] and r[4] == "0" and r[5] == "40", r

    # The window tshark computes (field × 2^shift announced in the SYN) on every non-SYN segment.
    # The scenario runs the `linux` profile, so receive-buffer autotuning is on (`rcv_autotune`,
    # `rcv_buf` = 4 MiB is tcp_rmem[2], 160/256 of it window once a full segment is measured):
    # the ACKs coming back offer windows from Linux's first one (the first segment moves the
    # clamp to 81920 and rcv_ssthresh from the SYN-ACK's 65160 by 2 × 1460 to 68080, rounded up
    # to 128 B) up to 2.5 MiB; the data segments carry the window of a receiver that never gets
    # data, the SYN's 65160 B edge rounded up to the 128-B unit.
    rows = fields(rev, "tcp.window_size", "tcp.window_size_scalefactor", where="tcp.flags.syn==0")
    assert len(rows) > 1000
    wnds = [int(r[0]) for r in rows]
    assert all(r[1] == "128" for r in rows)
    # (Out-of-order data held after a drop occupies the buffer, so a window can be smaller.)
    assert all(0 < w <= (4 << 20) * 160 // 256 and w % 128 == 0 for w in wnds), sorted(set(wnds))[:10]
    assert wnds[0] == 68096, wnds[:5]
    assert max(wnds) > 4 * 64128, max(wnds)
    rows = fields(fwd, "tcp.window_size", "tcp.window_size_scalefactor", where="tcp.flags.syn==0")
    assert len(rows) > 1000
    assert all(r[1] == "128" and r[0] == "65280" for r in rows), {tuple(r) for r in rows}


@needs_tshark
def test_wireshark_tfd_dissector():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "wireshark" / "test_tfd_dissector.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
