"""The QoS mechanisms a user compares on one bottleneck, as data: one :class:`Mechanism` per
queue discipline the core has (and per way of using one, such as DiffServ EF through a
strict-priority discipline), each the bottleneck's ``queue`` table and the keys it needs on the
video's flows.

Both comparisons read this list: ``qoelab demo`` (:mod:`qoelab.demo`, a selection of it) and the
QoS study ``qoelab reproduce qos`` (:mod:`qoelab.reproduce.qos`, all of it, on two testbeds). A new
discipline (a token-bucket shaper, HTB, WRED) is one more entry here.

Buffers: every entry carries the demo's 50 packets as its ``limit``; a testbed with another
buffer replaces it (:func:`queue_with_limit`), so only the scheduling and dropping rule differs
between mechanisms on one testbed. A discipline's own parameters (RED's thresholds, PIE's and
CoDel's targets) are the core's defaults, which its ``docs/models/`` page sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BY_NAME", "MECHANISMS", "Mechanism", "flow_keys", "queue_with_limit", "select"]


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
)

BY_NAME = {m.name: m for m in MECHANISMS}


def select(*names: str) -> tuple[Mechanism, ...]:
    """The mechanisms named, in that order (a :class:`KeyError` names an unknown one)."""
    return tuple(BY_NAME[n] for n in names)


def queue_with_limit(m: Mechanism, limit: str) -> dict[str, Any]:
    """``m``'s queue table with the buffer ``limit`` (per band for ``prio``)."""
    return {**m.queue, "limit": limit}


def flow_keys(m: Mechanism, flow_name: str) -> dict[str, Any]:
    """The keys ``m`` sets on the flow ``flow_name`` (``"video"``'s on every ``video<i>``)."""
    if flow_name in m.flow_sets:
        return dict(m.flow_sets[flow_name])
    base = flow_name.rstrip("0123456789")
    return dict(m.flow_sets.get(base, {})) if base != flow_name else {}
