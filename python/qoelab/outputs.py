"""What the result files say about themselves: the unit of every column, and the key-value
metadata written into each Parquet file.

Units follow the column-name suffixes documented in `docs/outputs.md` (`_s`, `_ns`,
`_bps`, `_bytes`, `_pkts`, `_ratio`) plus a few exact names; `tests/docs/test_outputs.py` checks
that they agree with the page's unit column. Each Parquet file of a run carries:

- `qoelab.version`: the package version that wrote it;
- `qoelab.scenario_sha256`: SHA-256 of the normalised scenario (`scenario.toml` beside it);
- `qoelab.table`: the table's name;
- `qoelab.units`: a JSON object, column → unit, for the columns that have one.
"""

from __future__ import annotations

import hashlib
import json

_SUFFIXES = (("_ns", "ns"), ("_s", "s"), ("_bps", "bit/s"), ("_bytes", "bytes"),
             ("_pkts", "packets"), ("_ratio", "ratio"))
_EXACT = {"bps": "bit/s", "bytes": "bytes", "packets": "packets", "utilisation": "ratio",
          "tfrc_p": "ratio", "tfrc_loss_event_rate": "ratio", "bytes_sent": "bytes", "rev_bytes_sent": "bytes",
          "tfrc_buffer_drops": "packets", "seq": None}


#: Columns of the flows table that count something (events, segments, packets, bytes): unsigned
#: integers, null on the rows of flows whose transport or application has no such counter (a
#: UDP flow has no `rto_count`). The core reports them as floats with NaN for "none";
#: :func:`counter_column` turns them into nullable uint64. `rev_` names are the same TCP
#: counters for the reverse direction (TCP's, and MPTCP's connection-level ones).
_TCP_COUNTERS = ("segments_sent", "bytes_sent", "retransmitted_segments", "retransmitted_bytes", "rto_count",
                 "fast_retransmits", "acked_bytes", "cwnd_bytes", "acks_sent", "duplicate_segments",
                 "out_of_order_segments")
FLOW_COUNTERS = frozenset(_TCP_COUNTERS + tuple(f"rev_{n}" for n in _TCP_COUNTERS) + (
    "delivered_bytes", "reinjected_bytes", "penalisations", "duplicate_data_bytes", "rev_reinjected_bytes",
    "rev_penalisations", "rev_duplicate_data_bytes", "rcvbuf_drop_pkts", "rev_rcvbuf_drop_pkts", "rcv_buf_bytes",
    "rev_rcv_buf_bytes", "tfrc_sent_pkts",
    "tfrc_buffer_drops", "tfrc_no_feedback_expiries", "tfrc_lost_pkts", "tfrc_loss_events", "tfrc_feedbacks",
    "app_datagrams", "app_nals", "downloads_completed", "http_objects", "http_bytes", "http_served",
    "dash_segments", "dash_stalls", "dash_switches", "tc_frames", "tc_timeouts", "tc_cuts", "tc_switches",
    "tc_bytes"))

#: Per-path transport counters of the subflows table (MPTCP subflows), null on the rows of
#: flows whose transport has none (a UDP flow's paths) and, for `rev_` names, on connections
#: whose destination sent no data. The core reports them as the flows table's, float with NaN.
_SUBFLOW_COUNTERS = ("scheduled_bytes", "reinjected_bytes", "penalisations", "acked_bytes", "retransmitted_segments",
                     "rto_count", "fast_retransmits", "cwnd_bytes", "subflow_in_order_bytes")
SUBFLOW_COUNTERS = frozenset(_SUBFLOW_COUNTERS + tuple(f"rev_{n}" for n in _SUBFLOW_COUNTERS))

#: Table → its counter columns that :func:`counter_column` makes nullable uint64.
COUNTERS = {"flows": FLOW_COUNTERS, "subflows": SUBFLOW_COUNTERS}


#: numpy dtypes :func:`arrow_array` hands to Arrow as they are (same bytes, no copy).
_ARROW_PRIMITIVE = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
                    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "float32": "float32",
                    "float64": "float64"}


def arrow_array(values, mask=None, type=None):
    """One column from the core as an Arrow array: a 1-D numeric ndarray (wrapped over its own
    buffer) or a list of strings (``pa.string()``, or ``type``); ``mask`` marks nulls.

    ``pa.array`` gives the same arrays, but its first call imports pandas (pyarrow probes every
    input for pandas objects), about 0.15–0.2 s of a ``qoelab run`` that needs no pandas; the
    result tables are equal either way (``tests/api/test_results_types.py``). Anything else
    (object arrays, other dtypes, strings longer than int32 offsets) goes through ``pa.array``."""
    import numpy as np
    import pyarrow as pa

    validity = None
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.name in _ARROW_PRIMITIVE:
        t = getattr(pa, _ARROW_PRIMITIVE[values.dtype.name])()
        if type is None or type == t:
            v = np.ascontiguousarray(values)
            return pa.Array.from_buffers(t, len(v), [validity, pa.py_buffer(v)])
    elif isinstance(values, list) and (type is None or type == pa.string()) and all(isinstance(x, str) for x in values):
        data = [x.encode("utf-8") for x in values]
        ends = np.cumsum(np.fromiter((len(b) for b in data), dtype=np.int64, count=len(data)))
        if not len(ends) or ends[-1] < 2**31:
            offsets = np.zeros(len(data) + 1, dtype=np.int32)
            offsets[1:] = ends
            return pa.Array.from_buffers(pa.string(), len(data), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    return pa.array(values, type, mask=mask)


def counter_column(name: str, values, table: str = "flows"):
    """A counter the core reports as float64 (NaN: the row has no such counter) as a nullable
    uint64 Arrow array; a value that is not a non-negative integer is a bug, reported as such."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    none = np.isnan(v)
    ok = v[~none]
    wrong = ~((ok >= 0) & (ok == np.floor(ok)) & (ok < 2.0**63))
    if wrong.any():
        raise ValueError(f"{table}.{name}: counter value {ok[wrong][0]!r} is not a non-negative integer")
    return arrow_array(np.where(none, 0, v).astype(np.uint64), mask=none)


def column_unit(name: str) -> str | None:
    """The unit of a result column from its name, or None (names, codes, counts of things)."""
    if name in _EXACT:
        return _EXACT[name]
    for suffix, unit in _SUFFIXES:
        if name.endswith(suffix):
            return unit
    return None


def parquet_metadata(table: str, columns: list[str], scenario_toml: str | None) -> dict[bytes, bytes]:
    from qoelab._native import __version__

    units = {c: u for c in columns if (u := column_unit(c)) is not None}
    meta = {"qoelab.version": __version__, "qoelab.table": table, "qoelab.units": json.dumps(units, sort_keys=True)}
    if scenario_toml is not None:
        meta["qoelab.scenario_sha256"] = hashlib.sha256(scenario_toml.encode()).hexdigest()
    return {k.encode(): v.encode() for k, v in meta.items()}
