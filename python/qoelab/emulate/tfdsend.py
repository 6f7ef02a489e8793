"""``qoelab tfd-send TRACE HOST:PORT``: a real sender of a video trace over UDP or RTP that
announces its traffic in the IP Traffic Flow Description option, so that the simulated TFD
routers of an emulation reserve for a real flow.

It sends what the simulator's trace-driven source (``kind = "video"``) sends: each NAL unit of
the trace at its time stamp, cut into datagrams of at most ``--payload`` bytes, back to back
(with ``--rtp`` behind an RTP header: payload type 96, 90 kHz timestamps, the marker on a
frame's last datagram; the payload bytes are zeros, a trace has no pictures). The option is the
simulator's ``encoder`` source with ``per_horizon`` attachment (``crates/core/src/app/tfd.rs``):
the first datagram at or after the end of the previous horizon carries an option announcing the
IP bytes (headers and options included) that the trace schedules within the next horizon
(``Next Data``) and the horizon (``Next Time``, ``--horizon``, default 300 ms).

The option is set per datagram with ``setsockopt(IP_OPTIONS)``: Linux accepts an option it does
not know (type 30 here) only from a process with ``CAP_NET_RAW``, so the tool runs as root (as
``qoelab emulate``'s commands do). Pacing follows ``CLOCK_MONOTONIC``; a datagram later than 1 ms
is counted and reported, never silently.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import time
from typing import Any

from qoelab.errors import QoelabError

#: IPv4 + UDP header bytes; RTP adds 12.
IP_UDP = 28
RTP = 12


def register(sub: Any) -> None:
    p = sub.add_parser("tfd-send", help="send a video trace over UDP/RTP announcing it in the TFD IP option (root; emulation)")
    p.add_argument("trace", help="NAL trace (CSV, as `qoelab video encode` writes)")
    p.add_argument("dest", metavar="HOST:PORT", help="receiver address and UDP port")
    p.add_argument("--horizon", default="300ms", help="Next Time: the horizon each option describes (default 300ms)")
    p.add_argument("--payload", type=int, default=1400, help="largest datagram payload, bytes (default 1400)")
    p.add_argument("--rtp", action="store_true", help="put an RTP header (RFC 3550) in front of each payload")
    p.add_argument("--no-option", action="store_true", help="send without the TFD option (the baseline)")
    p.add_argument("--loops", type=int, default=1, help="play the trace this many times (default 1)")
    p.set_defaults(func=cmd_tfd_send)


def schedule(ts_ms: Any, size_bytes: Any, frame: Any, payload: int, rtp: bool, loops: int, duration_ms: float):
    """The datagrams to send: ``(time_s, payload_bytes, rtp_timestamp, marker)`` in send order."""
    out = []
    n = len(ts_ms)
    for loop in range(loops):
        base = loop * duration_ms
        for i in range(n):
            t = (base + float(ts_ms[i])) / 1000.0
            size = int(size_bytes[i])
            last_of_frame = i + 1 == n or int(frame[i + 1]) != int(frame[i])
            chunks = max(1, -(-size // payload))
            for k in range(chunks):
                b = min(payload, size - k * payload) if size else 0
                out.append((t, b, int(round(t * 90_000)) & 0xFFFFFFFF, last_of_frame and k == chunks - 1))
    return out


def announcements(sched: list[tuple[float, int, int, bool]], horizon_s: float, rtp: bool, option_bytes: int):
    """Index of each datagram that carries an option → the IP bytes scheduled in its horizon
    (its own option's bytes included), per ``per_horizon`` attachment."""
    hdr = IP_UDP + (RTP if rtp else 0)
    out: dict[int, int] = {}
    next_at = -1.0
    j = 0
    for i, (t, _, _, _) in enumerate(sched):
        if t < next_at:
            continue
        end = t + horizon_s
        j = max(j, i)
        while j < len(sched) and sched[j][0] < end:
            j += 1
        out[i] = sum(b + hdr for _, b, _, _ in sched[i:j]) + option_bytes
        next_at = end
    return out


def cmd_tfd_send(a: argparse.Namespace) -> int:
    from qoelab import tfd
    from qoelab.units import quantity
    from qoelab.video.traces.trace import read_trace

    host, sep, port_s = a.dest.rpartition(":")
    if not sep or not host or not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise QoelabError(f"{a.dest!r}: expected HOST:PORT (port 1-65535)")
    h = quantity(a.horizon)
    if h is None or h[0] != "time_s" or not 0.001 <= h[1] <= 4_294_967.295:
        raise QoelabError(f"--horizon {a.horizon!r}: expected a time from 1ms to 4294967s, e.g. 300ms")
    if not 1 <= a.payload <= 65_507 - RTP:
        raise QoelabError(f"--payload {a.payload}: expected 1 to {65_507 - RTP} bytes")
    if not 1 <= a.loops <= 10_000:
        raise QoelabError(f"--loops {a.loops}: expected 1 to 10000")
    trace = read_trace(a.trace)
    try:
        addr = socket.getaddrinfo(host, int(port_s), socket.AF_INET, socket.SOCK_DGRAM)[0][4]
    except OSError as e:
        raise QoelabError(f"{host}: cannot resolve: {e.strerror or e}") from None
    duration_ms = float(trace.n_frames) * 1000.0 / trace.fps()
    sched = schedule(trace.ts_ms, trace.size_bytes, trace.frame, a.payload, a.rtp, a.loops, duration_ms)
    horizon_ms = int(round(h[1] * 1000))
    option_len = len(tfd.encode("", 0, horizon_ms))
    ann = {} if a.no_option else announcements(sched, horizon_ms / 1000.0, a.rtp, option_len)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ssrc = int.from_bytes(os.urandom(4), "big")
    late = 0
    t0 = time.monotonic()
    for i, (t, b, ts, marker) in enumerate(sched):
        wait = t0 + t - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        elif wait < -0.001:
            late += 1
        body = bytes(b)
        if a.rtp:
            body = struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | 96, i & 0xFFFF, ts, ssrc) + body
        if i in ann:
            opt = tfd.encode("", min(ann[i], 0xFFFFFFFF), horizon_ms)
            try:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, opt)
            except PermissionError:
                raise QoelabError("setting the TFD IP option needs CAP_NET_RAW (run as root)") from None
            s.sendto(body, addr)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, b"")
        else:
            s.sendto(body, addr)
    s.close()
    sys.stdout.write(f"sent {len(sched)} datagrams, {len(ann)} with the TFD option, "
                     f"{sum(b for _, b, _, _ in sched)} payload bytes in {time.monotonic() - t0:.2f} s; "
                     f"{late} more than 1 ms late\n")
    return 0
