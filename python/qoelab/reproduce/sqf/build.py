"""The SQF reproduction's grids: the plan of each mode, a repetition's random draws, the
builders of each grid's cells (the testbed under a setting of the choices) and the experiments."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from qoelab import paths
from qoelab.experiment.core import Experiment
from qoelab.reproduce.sqf import mechanism
from qoelab.reproduce.sqf.measure import MODEL_METRICS, _jitter_metrics, _loss_metrics, _model_metrics, _testbed_metrics
from qoelab.reproduce.sqf.paper import (AUDIO_TRACE, BUFFER, DISCIPLINES, JITTER_N, MODES, SENS_BUFFER, SENS_SOURCES,
                                        SENS_TCP, START_SPREAD_S, TCP, TRACE_S, VIDEO_TRACE)
from qoelab.scenario import Scenario

__all__ = ["MODEL_METRICS", "Draws", "Plan", "draws", "experiments", "plan", "video_app"]


@dataclass(frozen=True)
class Plan:
    """What one reproduction runs."""

    quick: bool
    reps: int
    duration: str
    n_values: tuple[int, ...]
    disciplines: tuple[str, ...]
    jitter_ms: tuple[float, ...]
    jitter_rates: tuple[str, ...]
    jitter_duration: str
    model_rates_mbps: tuple[float, ...]
    model_n: tuple[int, ...]
    model_duration: str
    sens_n: tuple[int, ...]


def plan(quick: bool, reps: int | None = None) -> Plan:
    """The grids of ``reproduce sqf`` (``--quick``: CI's); ``reps`` (``--reps``) overrides the
    repetitions of every grid, the paper's regime included."""
    p = _plan(quick)
    return p if reps is None else replace(p, reps=reps)


def _plan(quick: bool) -> Plan:
    if quick:
        # Two repetitions (the fewest that give an interval), short runs, a coarse grid: CI.
        return Plan(
            quick=True,
            reps=2,
            duration="30s",
            n_values=(1, 5, 20),
            disciplines=DISCIPLINES,
            jitter_ms=(0, 5, 20),
            jitter_rates=("10Mbps", "100Mbps"),
            jitter_duration="30s",
            model_rates_mbps=(3.0, 8.0),
            model_n=(5, 20),
            model_duration="60s",
            sens_n=(1, 20),
        )
    # Ten repetitions: the evidence the layer's verdict rules ask of a committed full run
    # (issue 36); the paper ran each testbed point once.
    return Plan(
        quick=False,
        reps=10,
        duration="600s",
        n_values=(1, 2, 5, 10, 15, 20),
        disciplines=DISCIPLINES,
        jitter_ms=(0, 1, 2, 3, 5, 7, 10, 15, 20, 30),
        jitter_rates=("10Mbps", "100Mbps"),
        jitter_duration="600s",
        model_rates_mbps=(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
        model_n=(5, 10, 20),
        model_duration="600s",
        sens_n=(1, 5, 10, 15, 20),
    )


#: The disciplines with per-flow queues, which take a tie rule (``ties``).
TIED = ("drr", "sqf", "pfq", "fq_codel")
DEFAULTS = {"ties": "neutral", "delayed_ack": True, "nic_ring": "none", "router_gro": False}


def _queue(kind: str, setting: dict[str, Any] | None = None) -> dict[str, Any]:
    """The bottleneck's discipline ``kind`` with the 50-packet buffer and, for a per-flow
    discipline, the tie rule of ``setting`` (``ties``: ``neutral`` or by key)."""
    q: dict[str, Any] = {"kind": kind, "limit": BUFFER}
    if kind in TIED:
        q["ties"] = "neutral" if (setting or DEFAULTS)["ties"] == "neutral" else "key"
    return q


# --------------------------------------------------------------------------------------------
# Cells: the builders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draws:
    """One repetition's random choices (see :func:`draws`)."""

    video_offset_s: float
    audio_offset_s: float
    video_start_s: float
    data_start_s: float


def draws(rep: int) -> Draws:
    """Repetition ``rep``'s clip offsets (video and audio independently, uniform over the trace)
    and start times (video with its audio, and the first download, uniform in
    [0, START_SPREAD_S)), from a generator seeded by ``rep`` alone: deterministic, and the same
    for every cell of the repetition. Values are rounded to the millisecond, as written into
    the scenario. (The simulator's seed is the layer's, shared by the repetition's cells.)"""
    rng = np.random.default_rng([0x5CF, rep])
    v, a = rng.uniform(0, TRACE_S, 2)
    vs, ds = rng.uniform(0, START_SPREAD_S, 2)
    r3 = lambda x: round(float(x), 3)  # noqa: E731
    return Draws(video_offset_s=r3(v) % TRACE_S, audio_offset_s=r3(a) % TRACE_S, video_start_s=r3(vs),
                 data_start_s=r3(ds))


def video_app(mode: str, d: Draws) -> dict[str, Any]:
    return {"kind": "video", "trace": VIDEO_TRACE, "loop": True, "offset": f"{d.video_offset_s:g}s", **MODES[mode][1]}


def _base(d: Draws, duration: str, setting: dict[str, Any] | None = None) -> Scenario:
    """The testbed with repetition ``d``'s draws: MPEG-2 video and Layer II audio, Linux TCP,
    under ``setting`` (the choices: ``ties = "key_video_first"`` declares the video server's
    link first, which gives it the lower node id and address, so the lower flow key, and breaks
    ties by key; ``delayed_ack``; ``nic_ring``, the access card's transmit ring in descriptors;
    ``router_gro``, GRO on the router's three receiving interfaces)."""
    s = setting or DEFAULTS
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("links[2].queue_ab", _queue("sqf", s))
    if s["ties"] == "key_video_first":
        links = sc.get("links")
        sc.set("links", [links[1], links[0], *links[2:]])
    sc.set("sim.duration", duration)
    sc.set("flows[0].app", video_app("es", d))
    sc.set("flows[0].start", f"{d.video_start_s:g}s")
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame",
                            "offset": f"{d.audio_offset_s:g}s"})
    sc.set("flows[1].start", f"{d.video_start_s:g}s")
    sc.set("flows[2].start", f"{d.data_start_s:g}s")
    sc.set("flows[2].transport", {**TCP, "delayed_ack": s["delayed_ack"]})
    ring = s.get("nic_ring", "none")
    if isinstance(ring, int):
        sc.set("links[2].tx_ring", ring)  # the access line's card, both directions
    if s.get("router_gro", False):
        for key in ("links[0].b_gro", "links[1].b_gro", "links[2].a_gro"):  # the router's cards
            sc.set(key, {})
    return sc


def _testbed(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    def build(c: dict[str, Any], rep: int) -> Scenario:
        d = draws(rep)
        sc = _base(d, p.duration, setting)
        sc.set("flows[0].app", video_app(c["mode"], d))
        sc.set("links[2].queue_ab", _queue(c["discipline"], setting))
        sc.set("flows[2].count", c["n"])
        return sc

    return build


def _alone(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    """The premise (Fig. 8 at δ = 0, Fig. 6's baseline): the video and audio on the line with
    no download (the one download is scheduled after the end of the run), FIFO."""

    def build(c: dict[str, Any], rep: int) -> Scenario:
        d = draws(rep)
        sc = _base(d, p.duration, setting)
        sc.set("flows[0].app", video_app(c["mode"], d))
        sc.set("links[2].queue_ab", _queue("fifo", setting))
        sc.set("flows[2].count", 1)
        sc.set("flows[2].start", "100000s")
        return sc

    return build


def _jitter(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    """Fig. 8 on Fig. 6's sender: the ES mode of the same MPEG-2 trace, no peak-rate limit."""

    def build(c: dict[str, Any], rep: int) -> Scenario:
        sc = _base(draws(rep), p.jitter_duration, setting)
        sc.set("links[2].queue_ab", _queue("sqf", setting))
        sc.set("flows[2].count", JITTER_N)
        sc.set("links[2].rate", c["access_rate"])
        sc.set("flows[0].app.source_jitter", f"{c['delta_ms']:g}ms")
        return sc

    return build


def _model(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    def build(c: dict[str, Any]) -> Scenario:
        sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "model-check.toml")
        sc.set("sim.duration", p.model_duration)
        sc.set("flows[1].transport", dict(TCP))
        # lambda counts 1250-byte packets; the Poisson app's rate is of 1222-byte payloads.
        sc.set("flows[0].app.rate", f"{c['peak_rate_mbps'] * 1222 / 1250:.6g}Mbps")
        sc.set("flows[1].count", c["n"])
        return sc

    return build


def _sens_base(p: Plan, c: dict[str, Any]) -> Scenario:
    """SQF only, repetition 0's draws. Every link carries up to 65 535-byte packets so that the
    GRO variant's TCP segments pass unfragmented; the MSS and the ACK policy are explicit in
    every variant, so only the listed factor changes between rows."""
    sc = _base(draws(0), p.duration)
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame"})
    for i in range(3):
        sc.set(f"links[{i}].mtu", 65535)
    sc.set("links[2].queue_ab", {**_queue("sqf"), "limit": SENS_BUFFER})
    sc.set("flows[0].app", dict(SENS_SOURCES[c["video_source"]][1]))
    return sc


def _sensitivity(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    def build(c: dict[str, Any]) -> Scenario:
        sc = _sens_base(p, c)
        sc.set("flows[2].transport", dict(SENS_TCP[c["tcp"]][1]))
        sc.set("flows[2].count", c["n"])
        return sc

    return build


def _sens_alone(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    """The sensitivity grid's video sources with no download at all."""

    def build(c: dict[str, Any]) -> Scenario:
        sc = _sens_base(p, c)
        sc.set("flows[2].count", 1)
        sc.set("flows[2].start", "100000s")
        return sc

    return build


# --------------------------------------------------------------------------------------------
def experiments(p: Plan, setting: dict[str, Any] | None = None, *, findings_only: bool = False,
                traces: Path | None = None) -> dict[str, Experiment]:
    """The grids of the reproduction under ``setting`` (the choices; default: their defaults),
    each an experiment of the layer (``findings_only``: the two the findings use, for the
    sensitivity's variants). Every parameter is a treatment (``paired``): all cells of a
    repetition share its seed (and its draws). ``traces``: the folder for the regime's scaled
    traces (the output folder's ``traces/``; needed once such a cell is built)."""
    s = setting or DEFAULTS

    def exp(name: str, cells: list[dict[str, Any]], build, metrics, reps: int, per_rep: bool,
            cell_id: Callable[[dict[str, Any]], str] | None = None) -> Experiment:
        return Experiment(f"sqf-{name}", cells, build, metrics, paired=tuple(cells[0]), reps=reps, per_rep=per_rep,
                          cell_id=cell_id)

    E = {"testbed": exp("testbed", [{"mode": m, "discipline": q, "n": n} for m in MODES for q in p.disciplines
                                    for n in p.n_values], _testbed(p, s), _testbed_metrics, p.reps, True),
         "jitter": exp("jitter", [{"access_rate": r, "delta_ms": float(x)} for r in p.jitter_rates for x in p.jitter_ms],
                       _jitter(p, s), _jitter_metrics, p.reps, True)}
    from qoelab.reproduce.sqf import regime  # the paper's regime (issue 36 item 2): its own grids

    E.update(regime.experiments(p.quick, s, regime.Testbed(_base, draws, _queue, traces), findings_only, reps=p.reps))
    if findings_only:
        return E
    sens_id = lambda c: f"src{c['video_source']}__tcp{c.get('tcp', 'none')}__n={c.get('n', 0)}"  # noqa: E731
    return {
        "testbed": E["testbed"],
        "alone": exp("alone", [{"mode": m} for m in MODES], _alone(p, s), _testbed_metrics, p.reps, True),
        "jitter": E["jitter"],
        "regime": E["regime"],
        "ivb": E["ivb"],
        "model": exp("model", [{"n": n, "peak_rate_mbps": r} for n in p.model_n for r in p.model_rates_mbps],
                     _model(p), _model_metrics, p.reps, False),
        "whatif": exp("whatif", [{"video_source": i, "tcp": j, "n": n} for i in range(len(SENS_SOURCES))
                                 for j in range(len(SENS_TCP)) for n in p.sens_n],
                      _sensitivity(p), _loss_metrics, 1, False, sens_id),
        "whatif_alone": exp("whatif_alone", [{"video_source": i} for i in range(len(SENS_SOURCES))], _sens_alone(p),
                            _loss_metrics, 1, False, sens_id),
        "mechanism": exp("mechanism", mechanism.cells(p.quick), mechanism.builder(_testbed(p, s), _model(p)),
                         mechanism.mechanism_metrics, p.reps, True),
    }

