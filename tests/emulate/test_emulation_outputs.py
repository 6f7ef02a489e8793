"""docs/outputs.md's emulation tables (`real_flows`, `real_rejects`, `lag`, `commands`) and
summary keys against what an emulation writes. The loop runs here on socket pairs standing in
for TUN devices (one datagram per read or write, as a TUN device gives), so the check needs no
root."""

from __future__ import annotations

import json
import re
import socket
import struct

from conftest import ROOT
from qoelab import _native
from qoelab.emulate import _commands_table
from qoelab.results import Results
from qoelab.scenario import Scenario

DOC = ROOT / "docs" / "outputs.md"

SCENARIO = {
    "sim": {"duration": "200ms"},
    "nodes": [{"name": "A", "real": True}, {"name": "B", "real": True}],
    "links": [{"a": "A", "b": "R", "rate": "10Mbps", "delay": "5ms"},
              {"a": "R", "b": "B", "rate": "10Mbps", "delay": "5ms"},
              {"a": "R", "b": "S", "rate": "10Mbps", "delay": "5ms"}],
    "flows": [{"name": "sim", "src": "R", "dst": "S", "transport": {"kind": "udp"},
               "app": {"kind": "cbr", "rate": "100kbps", "payload": "100B"}}],
}


def _checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _echo(src: str, dst: str) -> bytes:
    icmp = bytearray(b"\x08\x00\x00\x00\x00\x01\x00\x01")
    icmp[2:4] = struct.pack("!H", _checksum(bytes(icmp)))
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0x4000, 64, 1, 0, socket.inet_aton(src), socket.inet_aton(dst)))
    ip[10:12] = struct.pack("!H", _checksum(bytes(ip)))
    return bytes(ip + icmp)


def _doc_sections() -> dict[str, dict[str, str]]:
    """`### \\`name\\`` sections and the emulation summary keys → {column: type}."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in DOC.read_text().splitlines():
        if m := re.match(r"### `([a-z_]+)`", line):
            section = m.group(1)
            out[section] = {}
        elif line.startswith("### Emulation keys of `summary.json`"):
            section = "summary"
            out[section] = {}
        elif line.startswith("#"):
            section = None
        elif section and (m := re.match(r"\| `([a-z0-9_]+)` \| ([a-z0-9 ]+?) \|", line)):
            out[section][m.group(1)] = m.group(2)
    return out


def _type_name(t) -> str:
    return str(t)


def test_emulation_tables_and_summary_keys_are_documented(tmp_path):
    sc = Scenario.from_dict(SCENARIO)
    a_host, a_dev = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    b_host, b_dev = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (a_dev, b_dev):
        s.setblocking(False)
    a_host.send(_echo("10.0.0.1", "10.0.0.2"))
    a_host.send(b"\x60" + bytes(47))  # IPv6: refused, counted in real_rejects
    tables = _native.emulate(sc.to_toml(), [("A", a_dev.fileno()), ("B", b_dev.fileno())])
    res = Results(tables, sc)
    res.tables["commands"] = _commands_table([], tmp_path)
    assert b_host.recv(100)[8] == 63, "the echo request crossed the router"
    doc = _doc_sections()
    for name in ("real_flows", "real_rejects", "lag", "commands"):
        t = res.tables[name]
        assert t.num_rows >= (0 if name == "commands" else 1), name
        got = {f.name: _type_name(f.type) for f in t.schema}
        assert got == doc[name], f"docs/outputs.md: table {name}: documented {doc[name]}, produced {got}"
    res.write(tmp_path / "o", plot=False)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    sim_keys = {k for k in summary if not k.startswith(("real_", "emu_", "lag_"))}
    emu_keys = set(summary) - sim_keys
    # emu_host_tx_dropped_pkts is added by qoelab.emulate from the hosts' devices.
    assert emu_keys | {"emu_host_tx_dropped_pkts"} == set(doc["summary"]), emu_keys ^ set(doc["summary"])
    for k in emu_keys:
        allowed = {"int": (int,), "float": (float,)}[doc["summary"][k]]
        assert type(summary[k]) in allowed, (k, summary[k], doc["summary"][k])
