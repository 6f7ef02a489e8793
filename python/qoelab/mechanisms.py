"""The QoS mechanisms a user compares on one bottleneck, as data: one :class:`Mechanism` per
queue discipline the core has (and per way of using one, such as DiffServ EF through a
strict-priority discipline), each the bottleneck's ``queue`` table and the keys it needs on the
video's flows.

Both comparisons read this list: ``qoelab demo`` (:mod:`qoelab.demo`, a selection of it) and the
QoS study ``qoelab reproduce qos`` (:mod:`qoelab.reproduce.qos`, all of it, on two testbeds). A new
discipline is one more entry here.

Buffers: every entry carries the demo's 50 packets as its ``limit``; a testbed with another
buffer replaces it (:func:`queue_with_limit`), so only the scheduling and dropping rule differs
between mechanisms on one testbed. A discipline's own parameters (RED's thresholds, PIE's and
CoDel's targets) are the core's defaults, which its ``docs/models/`` page sources.

Class-based entries (WDRR, WRED, HTB) put the video in AF41 (RFC 2597's highest AF class, lowest
drop precedence; RFC 4594 recommends AF4x for multimedia conferencing and streaming) and leave
the downloads in the default class. HTB's class rates depend on the line: they are written as
shares of the bottleneck's rate and resolved by :func:`queue_with_limit` (``rate_bps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BY_NAME", "MECHANISMS", "Mechanism", "flow_keys", "queue_with_limit", "select"]

#: HTB's share of the line guaranteed to the video's class (the rest to the downloads' class;
#: both may borrow up to the line rate, the video's class first).
HTB_VIDEO_SHARE = 0.6


@dataclass(frozen=True)
class Mechanism:
    """A queue discipline on a bottleneck (``queue``: its scenario table), and the keys it needs
    on the flows (``flow_sets``: per flow name, ``{key: value}``; ``"video"`` also names every
    video flow of a testbed with several, ``video0``, ``video1``, …)."""

    name: str
    label: str
    queue: dict[str, Any]
    flow_sets: dict[str, Any] = field(default_factory=dict)


#: Every mechanism, in the comparison tables' order.
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("fifo", "FIFO drop-tail", {"kind": "fifo", "limit": "50p"}),
    Mechanism("drr", "DRR + LQD", {"kind": "drr", "limit": "50p"}),
    Mechanism("sqf", "SQF + LQD", {"kind": "sqf", "limit": "50p", "ties": "neutral"}),
    Mechanism("fq_codel", "FQ-CoDel", {"kind": "fq_codel", "limit": "50p"}),
    Mechanism("pie", "PIE (15 ms)", {"kind": "pie", "limit": "50p"}),
    Mechanism("red", "RED (gentle)", {"kind": "red", "limit": "50p"}),
    Mechanism("codel", "CoDel (5 ms)", {"kind": "codel", "limit": "50p"}),
    # The video marked EF (RFC 3246) at its sender, served first by a strict-priority
    # discipline of two bands (EF, best effort), each with the buffer's limit: the downloads
    # keep the buffer they have under FIFO.
    Mechanism("diffserv_ef", "DiffServ EF (prio)", {"kind": "prio", "bands": 2, "limit": "50p"},
              {"video": {"dscp": "EF"}}),
    # AF41 in a class of its own with three times the downloads' quantum: three quarters of the
    # line whenever both classes are backlogged (docs/models/wdrr.md).
    Mechanism("wdrr_af41", "WDRR, video AF41 (3:1)",
              {"kind": "wdrr", "limit": "50p", "classes": [{"quantum": "4500B", "dscp": ["AF41"]}, {"quantum": "1500B"}]},
              {"video": {"dscp": "AF41"}}),
    # One shared queue whose RED average drops AF41 later and less than the default class
    # (ns-2's RED defaults on the top level, min_th 5, max_th 15 packets; AF41's profile starts at
    # the default's max_th and ends at three times it, with a fifth of its max_p: Cisco's
    # pattern of a higher minimum threshold and a lower mark probability for the protected class).
    Mechanism("wred_af41", "WRED, video AF41",
              {"kind": "red", "limit": "50p",
               "profiles": [{"dscp": ["AF41"], "min_th": "15p", "max_th": "45p", "max_p": 0.02}]},
              {"video": {"dscp": "AF41"}}),
    # A guaranteed rate for AF41 (HTB_VIDEO_SHARE of the line, served first when both are under
    # their rate), the rest for the downloads, each borrowing up to the line rate.
    Mechanism("htb_af41", f"HTB, video AF41 ({HTB_VIDEO_SHARE:.0%} guaranteed)",
              {"kind": "htb", "limit": "50p", "default": "bulk", "classes": [
                  {"name": "root", "rate": 1.0},
                  {"name": "video", "parent": "root", "rate": HTB_VIDEO_SHARE, "ceil": 1.0, "prio": 0, "dscp": ["AF41"]},
                  {"name": "bulk", "parent": "root", "rate": 1.0 - HTB_VIDEO_SHARE, "ceil": 1.0, "prio": 1}]},
              {"video": {"dscp": "AF41"}}),
)

BY_NAME = {m.name: m for m in MECHANISMS}


def select(*names: str) -> tuple[Mechanism, ...]:
    """The mechanisms named, in that order (a :class:`KeyError` names an unknown one)."""
    return tuple(BY_NAME[n] for n in names)


def queue_with_limit(m: Mechanism, limit: str, rate_bps: int | None = None) -> dict[str, Any]:
    """``m``'s queue table with the buffer ``limit`` (per band for ``prio``, per class for the
    class-based ones) and, for HTB, its classes' shares of the line resolved against the
    bottleneck's ``rate_bps`` (a :class:`ValueError` without it)."""
    q = {**m.queue, "limit": limit}
    if q["kind"] == "htb":
        if rate_bps is None:
            raise ValueError(f"mechanism {m.name}: HTB's class rates need the bottleneck's rate")
        q["classes"] = [{**c, **{k: f"{round(c[k] * rate_bps)}bps" for k in ("rate", "ceil") if k in c}}
                        for c in q["classes"]]
    return q


def flow_keys(m: Mechanism, flow_name: str) -> dict[str, Any]:
    """The keys ``m`` sets on the flow ``flow_name`` (``"video"``'s on every ``video<i>``)."""
    if flow_name in m.flow_sets:
        return dict(m.flow_sets[flow_name])
    base = flow_name.rstrip("0123456789")
    return dict(m.flow_sets.get(base, {})) if base != flow_name else {}
