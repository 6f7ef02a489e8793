"""A real sender's TFD option reserves in a simulated TFD router (scenarios/emulation/tfd):
`qoelab tfd-send` in the client's namespace sets the option through IP_OPTIONS; the router
reserves for the real flow and serves it through an overload that takes the baseline's packets;
the capture shows the option through the project's Wireshark dissector."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import ROOT
from qoelab.emulate import emulate
from qoelab.scenario import Scenario

SCEN = ROOT / "scenarios" / "emulation" / "tfd" / "scenario.toml"


def _run(tmp_path, extra: str):
    trace = tmp_path / "trace.csv"
    lines = (ROOT / "data" / "traces" / "cif_bbb_qp26.trace.csv").read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:301]))  # the first 300 NAL units: 2 s of video
    out = tmp_path / ("base" if extra else "tfd")
    cmd = f"{sys.executable} -m qoelab.cli tfd-send {trace} $QOELAB_ADDR_SERVER:5004 --rtp {extra}"
    em = emulate(Scenario.load(SCEN), out, execs=[("client", cmd)])
    assert em.commands[0].exit_code == 0, (out / "exec" / "client-0.log").read_text()
    video = next(r for r in em.results.tables["real_flows"].to_pylist() if r["dst_port"] == 5004)
    return em, video, out


def test_a_real_flow_announced_in_the_tfd_option_is_reserved_for(emulation, tmp_path):
    _, video, out = _run(tmp_path, "")
    _, base, _ = _run(tmp_path, "--no-option")
    assert video["sent_pkts"] == base["sent_pkts"] == 300
    # Reserved: nothing lost to the 11 Mbit/s overload of the 10 Mbit/s port; best effort loses.
    assert video["drop_queue_pkts"] == 0, video
    assert base["drop_queue_pkts"] > 30, base
    if shutil.which("tshark") is None:
        raise AssertionError("tshark is missing: scripts/install-system-deps.sh installs it")
    lua = ROOT / "tools" / "wireshark" / "tfd.lua"
    p = subprocess.run(["tshark", "-n", "-X", f"lua_script:{lua}", "-r", str(out / "R1_to_R2.pcap"), "-Y", "tfd",
                        "-T", "fields", "-e", "ip.src", "-e", "tfd.flags", "-e", "tfd.next_data", "-e", "tfd.next_time"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Lua: Error" not in p.stderr, p.stderr
    rows = [r.split("\t") for r in p.stdout.splitlines() if r]
    # 2 s of video, an option per 300-ms horizon: 7 of them, each the encoder's description.
    assert 6 <= len(rows) <= 8, rows
    for src, flags, nd, nt in rows:
        assert src == "10.0.0.1" and int(flags, 16) == 0 and int(nd) > 0 and nt == "300"
