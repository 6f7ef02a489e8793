"""docs/outputs.md documents every column of every result table, with its type.

A corpus of scenarios fills every table (flows of each transport, web and HTTP apps, a DASH player, subflows of MPTCP (one-way and request/response), the packet log,
a video over TCP with its per-frame messages, the symbiotic transcoder, an
SQF port with per-flow samples, an outage); each column must be in the page's table for it with the type
the run produced, and each column the page lists must exist. Probe tables are checked against
the column lists of docs/models/probes.md.
"""

from __future__ import annotations

import json
import re

import pytest

from qoelab.paths import root
from qoelab.scenario import Scenario

DOC = root() / "docs" / "outputs.md"
PROBES_DOC = root() / "docs" / "models" / "probes.md"


def _doc_tables() -> dict[str, dict[str, str]]:
    """`## \\`name\\`` sections → {column: type} from their markdown tables."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in DOC.read_text().splitlines():
        if m := re.match(r"## `([a-z_.]+)`", line):
            section = m.group(1)
            out[section] = {}
        elif line.startswith("## "):
            section = None
        elif section and (m := re.match(r"\| `([a-z0-9_]+)` \| ([a-z0-9 ]+?) \|", line)):
            out[section][m.group(1)] = m.group(2)
    return out


def _link(a, b, **k):
    return {"a": a, "b": b, "rate": "10Mbps", "delay": "5ms", **k}


CORPUS = {
    "sim": {"duration": "2s"},
    # GRO at R1's interface from A: the links table's `gro_*` columns.
    "links": [_link("A", "R1", a_addr="10.1.0.1", b_gro={}), _link("A", "R2", a_addr="10.1.1.1"),
              _link("R1", "B", b_addr="10.2.0.1", queue={"kind": "fifo", "limit": "20p"},
                    loss_ab={"kind": "bernoulli", "p": 0.01}),
              # An ECN-marking discipline: the links table's `ce_marks_pkts`.
              _link("R2", "B", b_addr="10.2.1.1", queue={"kind": "codel", "ecn": True})],
    "flows": [
        {"name": "mp", "src": "A", "dst": "B", "app": {"kind": "cbr", "rate": "1Mbps", "payload": "1000B"},
         "transport": {"kind": "udp"}, "packet_log": True},
        {"name": "tf", "src": "A", "dst": "B", "app": {"kind": "cbr", "rate": "1Mbps", "payload": "1000B"},
         "transport": {"kind": "tfrc"}},
        {"name": "tcp", "src": "A", "dst": "B", "app": {"kind": "bulk"}, "transport": {"kind": "tcp"}},
        {"name": "bbr", "src": "A", "dst": "B", "app": {"kind": "bulk"}, "transport": {"kind": "tcp", "cc": "bbr"}},
        {"name": "mptcp", "src": "A", "dst": "B", "app": {"kind": "bulk"}, "transport": {"kind": "mptcp"},
         "packet_log": True, "subflows": [{"src_addr": "10.1.0.1", "dst_addr": "10.2.0.1"}, {"src_addr": "10.1.1.1", "dst_addr": "10.2.1.1"}]},
        # Requests and responses over MPTCP: the reverse direction's MPTCP columns.
        {"name": "mphttp", "src": "A", "dst": "B", "transport": {"kind": "mptcp"}, "peer_app": {"kind": "http_server"},
         "app": {"kind": "http_client", "size": "20KB"},
         "subflows": [{"src_addr": "10.1.0.1", "dst_addr": "10.2.0.1"}, {"src_addr": "10.1.1.1", "dst_addr": "10.2.1.1"}]},
        {"name": "web", "src": "A", "dst": "B", "transport": {"kind": "tcp"},
         "app": {"kind": "web", "size": "20KB", "think": "10ms"}},
        {"name": "http", "src": "A", "dst": "B", "transport": {"kind": "tcp"}, "peer_app": {"kind": "http_server"},
         "app": {"kind": "http_client", "size": "20KB"}},
        {"name": "dash", "src": "A", "dst": "B", "transport": {"kind": "tcp"}, "peer_app": {"kind": "http_server"},
         "app": {"kind": "dash", "mpd": str(root() / "data/traces/dash_hevc_2s.mpd"),
                 "segments": str(root() / "data/traces/dash_hevc.segments.csv")}},
        # A video over TCP with its messages (one per frame) logged: the `messages` table.
        {"name": "tcpvideo", "src": "A", "dst": "B", "transport": {"kind": "tcp"}, "packet_log": True,
         "app": {"kind": "video", "trace": str(root() / "data/traces/cif_bbb_qp26.trace.csv")}},
        # The symbiotic transcoder over the outage (its summary counters).
        {"name": "transcoder", "src": "A", "dst": "B", "transport": {"kind": "tcp"},
         "app": {"kind": "transcoder", "ladder": str(root() / "data/traces/mpeg2_ladder.frames.csv.gz"),
                 "interactive": True}},
    ],
    "outages": [{"links": ["R1->B"], "at": "1s", "duration": "0.3s"}],
    "output": {"probes": ["queue", "drops", "cwnd", "rto", "retransmit", "tcp_state", "app", "tfrc", "subflow",
                          "tcp_events", "bbr"]},
}


def _type_name(t) -> str:
    """Arrow's type name, with a dictionary of strings called what pandas calls it."""
    import pyarrow as pa

    if pa.types.is_dictionary(t) and pa.types.is_string(t.value_type):
        return "category"
    return str(t)


@pytest.fixture(scope="module")
def produced() -> dict[str, dict[str, str]]:
    runs = [Scenario.from_dict(CORPUS).run()]
    for p in ("scenarios/demo/scenario.toml", "scenarios/sqf/model-check.toml"):
        sc = Scenario.load(root() / p)
        sc.data["sim"]["duration"] = "3s"
        runs.append(sc.run())
    cols: dict[str, dict[str, str]] = {}
    for res in runs:
        for name, t in res.tables.items():
            for f in t.schema:
                cols.setdefault(name, {}).setdefault(f.name, _type_name(f.type))
    return cols


def test_every_table_and_column_is_documented_with_its_type(produced) -> None:
    doc = _doc_tables()
    for name, cols in produced.items():
        if name.startswith("probe_"):
            continue
        assert name in doc, f"docs/outputs.md has no section for table {name!r}"
        for col, typ in cols.items():
            assert col in doc[name], f"docs/outputs.md: table {name}: column {col!r} ({typ}) is not documented"
            assert doc[name][col] == typ, f"docs/outputs.md: {name}.{col} says {doc[name][col]}, the run has {typ}"


def test_every_documented_column_exists(produced) -> None:
    for name, cols in _doc_tables().items():
        if name == "summary.json":
            continue
        assert name in produced, f"docs/outputs.md documents table {name!r}, which no run produced"
        stale = set(cols) - set(produced[name])
        assert not stale, f"docs/outputs.md: table {name}: documented but not produced: {sorted(stale)}"


def test_summary_keys_are_documented_with_their_json_type(tmp_path) -> None:
    res = Scenario.from_dict(CORPUS).run()
    res.write(tmp_path / "o", plot=False)
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    doc = _doc_tables()["summary.json"]
    assert set(s) == set(doc), set(s) ^ set(doc)
    for k, v in s.items():
        allowed = {"int": (int,), "float": (float,), "float or null": (float, type(None))}[doc[k]]
        assert type(v) in allowed, (k, v, doc[k])


def test_probe_tables_match_the_probe_page(produced) -> None:
    rows = {}
    for line in PROBES_DOC.read_text().splitlines():
        if m := re.match(r"\| `([a-z_]+)` \| [^|]* \| ([^|]*) \|", line):
            rows[m.group(1)] = {c.strip() for g in re.findall(r"`([^`]+)`", m.group(2)) for c in g.split(",")}
    probe_tables = {n[len("probe_"):]: c for n, c in produced.items() if n.startswith("probe_")}
    assert probe_tables, "the corpus enabled probes but produced no probe table"
    for kind, cols in probe_tables.items():
        assert kind in rows, f"docs/models/probes.md has no row for probe {kind!r}"
        own = set(cols) - {"t_ns", "flow", "end"}
        missing = own - rows[kind]
        assert not missing, f"docs/models/probes.md: probe {kind}: columns not listed: {sorted(missing)}"


_DIMENSIONAL = {"s", "ms", "ns", "bit/s", "bytes", "packets", "ratio"}


def _doc_units() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in DOC.read_text().splitlines():
        if m := re.match(r"## `([a-z_.]+)`", line):
            section = m.group(1)
            out[section] = {}
        elif line.startswith("## "):
            section = None
        elif section and (m := re.match(r"\| `([a-z0-9_]+)` \| [^|]+ \| ([^|]*) \|", line)):
            out[section][m.group(1)] = m.group(2).strip()
    return out


def test_parquet_files_carry_version_scenario_hash_and_the_documented_units(tmp_path) -> None:
    import hashlib

    import pyarrow.parquet as pq

    import qoelab

    res = Scenario.from_dict(CORPUS).run()
    res.write(tmp_path / "o", plot=False)
    scenario_sha = hashlib.sha256((tmp_path / "o" / "scenario.toml").read_bytes()).hexdigest()
    doc = _doc_units()
    checked = 0
    for f in sorted((tmp_path / "o").glob("*.parquet")):
        meta = {k.decode(): v.decode() for k, v in pq.read_schema(f).metadata.items()}
        assert meta["qoelab.version"] == qoelab.__version__ and meta["qoelab.table"] == f.stem
        assert meta["qoelab.scenario_sha256"] == scenario_sha
        units = json.loads(meta["qoelab.units"])
        if f.stem.startswith("probe_"):
            continue
        for col, doc_unit in doc[f.stem].items():
            if col not in pq.read_schema(f).names:
                continue
            if doc_unit in _DIMENSIONAL:
                assert units.get(col) == doc_unit, f"{f.name}: {col}: metadata {units.get(col)!r}, docs {doc_unit!r}"
                checked += 1
            else:
                assert col not in units, f"{f.name}: {col}: metadata unit {units[col]!r}, docs {doc_unit!r}"
    assert checked > 60


def test_summary_json_floats_carry_no_representation_noise_and_keep_real_precision(tmp_path) -> None:
    from qoelab.results import clean_float

    sc = Scenario.load("demo")
    sc.set("sim.duration", "30s")  # 30e9 ns × 1e-9 is 30.000000000000004 in binary
    res = sc.run()
    res.write(tmp_path / "o", plot=False)
    text = (tmp_path / "o" / "summary.json").read_text()
    assert '"duration_s": 30.0,' in text, text
    # Only noise goes: a value 1 ulp from a short decimal is cleaned, real digits are kept.
    assert clean_float(30.000000000000004) == 30.0 and clean_float(0.1 + 0.2) == 0.3
    for real in (1 / 3, 0.1234567890123456, 2.718281828459045, 1e-300, 123456789.12345679):
        assert clean_float(real) == real


def test_counter_columns_are_present_only_when_some_flow_has_them(produced) -> None:
    """As the page says: a transport's or application's counters are absent from a run none of
    whose flows has them (a UDP-only run has no `rto_count`) and null on the other rows of a run
    that has them."""
    import pyarrow.compute as pc

    from qoelab.outputs import FLOW_COUNTERS

    udp = Scenario.from_dict({**CORPUS, "flows": CORPUS["flows"][:1], "outages": []}).run().flows
    assert "rto_count" not in udp.column_names and "tfrc_feedbacks" not in udp.column_names
    assert "delivered_bytes" in udp.column_names  # in every run (null for datagrams)
    mixed = Scenario.from_dict(CORPUS).run().flows
    rows = dict(zip(mixed.column("flow").to_pylist(), mixed.column("rto_count").to_pylist()))
    assert rows["mp"] is None and rows["tf"] is None and rows["tcp"] is not None
    for run in (udp, mixed):
        for c in set(run.column_names) & FLOW_COUNTERS - {"delivered_bytes"}:
            assert pc.count(run.column(c)).as_py() > 0, f"counter column {c} present although no flow has it"
