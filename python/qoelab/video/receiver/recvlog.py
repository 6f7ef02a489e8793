"""The simulator's per-packet receive log, and which NAL units made it in time.

Columns (Parquet, or CSV with a header for tests and hand-made logs):

| column       | type    | meaning                                         |
|--------------|---------|-------------------------------------------------|
| `flow`       | string  | flow name                                       |
| `seq`        | uint64  | packet index within the flow                    |
| `nal`        | int64   | trace row the packet carries part of            |
| `frame`      | int64   | decode-order frame of that NAL unit             |
| `size_bytes` | uint32  | packet size                                     |
| `sent_ns`    | int64   | send time                                       |
| `recv_ns`    | int64   | arrival time, null if the packet was lost       |

A NAL unit is *received* iff every packet carrying it arrived (a duplicate `(flow, seq)` counts
once, with its earliest arrival) no later than its playout deadline

    deadline = stream_start + ts_ms + playout_delay,

where `stream_start` defaults to `min(sent_ns - ts_ms)` over the log: no packet leaves before
its frame's timestamp, so the earliest packet fixes the sender's clock offset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import VideoInputError
from ..traces.trace import NalTrace

__all__ = ["LOG_COLUMNS", "ReceiveLog", "read_receive_log", "receive_log_from_table", "NalDelivery", "deliver", "synthetic_log",
           "write_receive_log"]

LOG_COLUMNS = ("flow", "seq", "nal", "frame", "size_bytes", "sent_ns", "recv_ns")
_NULL = np.iinfo(np.int64).max  # stands for a null recv_ns


@dataclass
class ReceiveLog:
    flow: np.ndarray  # object (str)
    seq: np.ndarray  # uint64
    nal: np.ndarray  # int64
    frame: np.ndarray  # int64
    size_bytes: np.ndarray  # int64
    sent_ns: np.ndarray  # int64
    recv_ns: np.ndarray  # int64, _NULL where lost
    path: str = "receive log"

    @property
    def lost(self) -> np.ndarray:
        return self.recv_ns == _NULL


def _read_table(p: Path) -> pa.Table:
    from qoelab.paths import arrow_source, open_regular

    if not os.path.lexists(p):
        raise VideoInputError(p, "no such receive log")
    # Opened by the one reader of input files: a FIFO or device is refused without blocking.
    with open_regular(p, "receive log", VideoInputError) as fh:
        try:
            if p.suffix.lower() in (".csv", ".gz") or p.name.lower().endswith(".csv.gz"):
                import pyarrow.csv as pcsv

                types = {c: pa.int64() for c in LOG_COLUMNS if c != "flow"}
                types["flow"] = pa.string()
                types["seq"] = pa.uint64()
                raw = arrow_source(fh)
                src = pa.CompressedInputStream(raw, "gzip") if p.name.lower().endswith(".gz") else raw
                return pcsv.read_csv(src, convert_options=pcsv.ConvertOptions(column_types=types,
                                                                              null_values=["", "null", "NULL", "NA"]))
            import pyarrow.parquet as pq

            return pq.read_table(arrow_source(fh))
        except (pa.ArrowException, OSError) as exc:
            raise VideoInputError(p, f"cannot read receive log: {exc}") from None


def read_receive_log(path: str | os.PathLike[str], flows: list[str] | None = None) -> ReceiveLog:
    """Read and type-check a receive log; keep only `flows` if given."""
    p = Path(path)
    return receive_log_from_table(_read_table(p), p, flows)


def receive_log_from_table(t: pa.Table, p: str | os.PathLike[str] = "receive log",
                           flows: list[str] | None = None) -> ReceiveLog:
    """Type-check a receive log already in memory (e.g. a run's ``packets`` table, whose extra
    columns are ignored); keep only `flows` if given. Errors name `p`."""
    missing = [c for c in LOG_COLUMNS if c not in t.column_names]
    if missing:
        raise VideoInputError(p, f"receive log lacks column(s) {', '.join(missing)}; expected {', '.join(LOG_COLUMNS)}")
    for c in LOG_COLUMNS:
        typ = t.schema.field(c).type
        ok = (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_dictionary(typ)) if c == "flow" else pa.types.is_integer(typ)
        if not ok:
            want = "string" if c == "flow" else "integer"
            raise VideoInputError(p, f"column {c} must be {want}, got {typ}")
        if c != "recv_ns" and t.column(c).null_count:
            raise VideoInputError(p, f"column {c} has {t.column(c).null_count} null value(s); only recv_ns may be null")
    flow = np.asarray(t.column("flow").cast(pa.string()).to_pylist(), dtype=object)
    if flows:
        unknown = sorted(set(flows) - set(flow.tolist()))
        if unknown:
            raise VideoInputError(p, f"no packets of flow(s) {', '.join(unknown)} in the receive log")
        keep = np.isin(flow, np.asarray(flows, dtype=object))
        t = t.filter(pa.array(keep))
        flow = flow[keep]
    recv = t.column("recv_ns").cast(pa.int64()).fill_null(_NULL).to_numpy()
    log = ReceiveLog(
        flow=flow,
        seq=t.column("seq").cast(pa.uint64()).to_numpy(),
        nal=t.column("nal").cast(pa.int64()).to_numpy(),
        frame=t.column("frame").cast(pa.int64()).to_numpy(),
        size_bytes=t.column("size_bytes").cast(pa.int64()).to_numpy(),
        sent_ns=t.column("sent_ns").cast(pa.int64()).to_numpy(),
        recv_ns=recv,
        path=str(p),
    )
    if log.nal.size == 0:
        raise VideoInputError(p, "receive log has no packets" + (" of the chosen flows" if flows else ""))
    early = np.flatnonzero(~log.lost & (log.recv_ns < log.sent_ns))
    if early.size:
        i = int(early[0])
        raise VideoInputError(p, f"row {i}: packet {log.flow[i]}#{log.seq[i]} received at {log.recv_ns[i]} ns before it was sent at {log.sent_ns[i]} ns")
    return log


@dataclass
class NalDelivery:
    """Per NAL unit (trace row): what happened to it."""

    received: np.ndarray  # bool: all packets arrived by the deadline
    arrived: np.ndarray  # bool: all packets arrived, in time or not
    sent: np.ndarray  # bool: at least one packet in the log
    arrival_ns: np.ndarray  # int64: last packet's arrival (_NULL if not arrived)
    deadline_ns: np.ndarray  # int64
    stream_start_ns: int
    playout_delay_ns: int
    # Late NAL units: thrown away like lost ones (False), or still decoded with their frame's
    # display slot frozen (True; see `qoelab.video.receiver.messages`).
    decode_late: bool = False

    @property
    def late(self) -> np.ndarray:
        return self.arrived & ~self.received


def check_log_matches_trace(trace: NalTrace, log: ReceiveLog) -> None:
    """Raises :class:`VideoInputError` naming the log's first row whose NAL unit the trace does
    not have, or whose frame disagrees with the trace's (a log of another trace)."""
    n = trace.n_nal
    bad = np.flatnonzero((log.nal < 0) | (log.nal >= n))
    if bad.size:
        i = int(bad[0])
        raise VideoInputError(log.path, f"row {i}: packet {log.flow[i]}#{log.seq[i]} names unknown NAL unit {log.nal[i]} (trace has {n}); {bad.size} such packet(s)")
    mismatch = np.flatnonzero(trace.frame[log.nal] != log.frame)
    if mismatch.size:
        i = int(mismatch[0])
        raise VideoInputError(log.path, f"row {i}: NAL unit {log.nal[i]} is in frame {trace.frame[log.nal[i]]} in the trace, the log says frame {log.frame[i]}; {mismatch.size} such packet(s)")


def deliver(trace: NalTrace, log: ReceiveLog, playout_delay_s: float, stream_start_ns: int | None = None) -> NalDelivery:
    """Match a receive log against the trace and apply the playout deadline."""
    n = trace.n_nal
    check_log_matches_trace(trace, log)
    if not (playout_delay_s >= 0 and np.isfinite(playout_delay_s)):
        raise VideoInputError("playout delay", f"must be a finite time >= 0 s, got {playout_delay_s}")
    ts_ns = np.round(trace.ts_ms * 1e6).astype(np.int64)
    start = int(np.min(log.sent_ns - ts_ns[log.nal])) if stream_start_ns is None else int(stream_start_ns)
    delay_ns = int(round(playout_delay_s * 1e9))
    deadline = start + ts_ns + delay_ns
    # Earliest arrival of each distinct packet (flow, seq): sort so that it comes first in its group.
    flow_codes = np.unique(log.flow, return_inverse=True)[1]
    order = np.lexsort((log.recv_ns, log.seq, flow_codes))
    fc, sq = flow_codes[order], log.seq[order]
    first = np.ones(order.size, bool)
    first[1:] = (fc[1:] != fc[:-1]) | (sq[1:] != sq[:-1])
    pkt = order[first]
    arrival = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(arrival, log.nal[pkt], log.recv_ns[pkt])
    sent = np.bincount(log.nal[pkt], minlength=n) > 0
    arrived = sent & (arrival != _NULL)
    arrival = np.where(arrived, arrival, _NULL)
    received = arrived & (arrival <= deadline)
    return NalDelivery(received, arrived, sent, arrival, deadline, start, delay_ns)


def synthetic_log(trace: NalTrace, lost_nal: np.ndarray, *, flow: str = "video", max_payload: int = 1400,
                  delay_ms: float = 20.0, late_nal: np.ndarray | None = None, late_by_ms: float = 10_000.0) -> pa.Table:
    """A receive log for `trace` in which the NAL units flagged in `lost_nal` lose their last
    packet and those in `late_nal` arrive `late_by_ms` late. For tests and what-if studies."""
    counts = -(-trace.size_bytes // max_payload)
    nal = np.repeat(np.arange(trace.n_nal), counts)
    first_of_nal = np.concatenate([[0], np.cumsum(counts)[:-1]])
    idx_in_nal = np.arange(nal.size) - first_of_nal[nal]
    last = idx_in_nal == counts[nal] - 1
    size = np.where(last, trace.size_bytes[nal] - (counts[nal] - 1) * max_payload, max_payload)
    sent = np.round(trace.ts_ms[nal] * 1e6).astype(np.int64)
    recv = sent + int(delay_ms * 1e6)
    if late_nal is not None:
        recv = recv + np.where(np.asarray(late_nal)[nal], int(late_by_ms * 1e6), 0)
    lost = np.asarray(lost_nal, bool)[nal] & last
    return pa.table({
        "flow": pa.array([flow] * nal.size, pa.string()),
        "seq": pa.array(np.arange(nal.size, dtype=np.uint64)),
        "nal": pa.array(nal.astype(np.int64)),
        "frame": pa.array(trace.frame[nal]),
        "size_bytes": pa.array(size.astype(np.uint32)),
        "sent_ns": pa.array(sent),
        "recv_ns": pa.array(recv, mask=lost),
    })


def write_receive_log(table: pa.Table, path: str | os.PathLike[str]) -> None:
    p = Path(path)
    if p.suffix.lower() == ".csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, p)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, p)
