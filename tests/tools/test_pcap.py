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
    # No expert warnings or errors (malformed packets, bad lengths, checksum errors).
    expert = tshark("-r", str(fwd), "-q", "-z", "expert,warn")
    assert "Warnings" not in expert and "Errors" not in expert and "Malformed" not in expert, expert
    expert = tshark("-r", str(rev), "-q", "-z", "expert,warn")
    assert "Warnings" not in expert and "Errors" not in expert, expert
    # TCP segments and UDP datagrams decode with the lengths we simulated.
    rows = tshark("-r", str(fwd), "-T", "fields", "-e", "ip.len", "-e", "udp.length", "-e", "tcp.len", "-E", "separator=,").split()
    udp = [r for r in rows if r.split(",")[1]]
    tcp = [r for r in rows if r.split(",")[2]]
    assert udp and tcp
    assert all(r.split(",")[0] == "1240" and r.split(",")[1] == "1220" for r in udp)  # 20 IP + 8 UDP + 12 RTP + 1200
    assert all(int(r.split(",")[2]) == int(r.split(",")[0]) - 52 for r in tcp)  # 20 IP + 32 TCP (timestamps)


@needs_tshark
def test_wireshark_tfd_dissector():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "wireshark" / "test_tfd_dissector.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
