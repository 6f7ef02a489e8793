"""The MPTCP reproduction's report: Table 1 as applied, Figs. 4–7 and the QoE tables beside the
paper's values, the figures, the reading generated from the tables, and the setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qoelab.experiment import Estimate, Finding, Verdict
from qoelab.experiment import core
from qoelab.experiment.figures import bars, pyplot, save
from qoelab.experiment.tables import Column, Figure, PaperValues, Table, findings_md, interval_str
from qoelab.experiment.tables import mean_str as _m
from qoelab.reproduce.mptcp.build import METRICS, TREATMENTS, Grid, _cell_id, clip_s, segment_rates
from qoelab.reproduce.mptcp.paper import (ABRS, CONFIGS, FACTOR, PAPER_FIG4_MS, PAPER_FIG5, PAPER_FIG6_SOURCE,
                                          PAPER_REPS, READING_LABEL, TABLE1, TRANSPORT_LABEL)



def _main_rows(grid: Grid) -> list[dict[str, Any]]:
    """The (reading, config, transport) rows of the main tables, in display order."""
    return [{"reading": rd, "config": cf, "transport": tp}
            for rd in grid.readings for cf in CONFIGS
            for tp in (("mptcp", "sptcp", "sptcp_best") if rd == "control" else ("mptcp", "sptcp"))]
_IDX = [Column("reading", "loss reading"), Column("config", "configuration"), Column("transport", "transport")]


def tables(grid: Grid, rep_rows: list[dict[str, Any]], mptcp: bool, setting: dict[str, Any]) -> dict[str, Table]:
    """Table 1 as applied, Fig. 4 (start-up), Fig. 5 (retransmissions/s), Figs. 6/7 (download
    rate), the QoE table, the QoE per ABR policy and the subflow shares; ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}

    def est(rd: str, cf: str, tp: str, m: str, abr: str | None = None) -> Estimate | str | None:
        row = agg.get((rd, cf, tp, setting["coupled"] if tp == "mptcp" else "-", abr or setting["abr"]))
        return ("not run" if tp == "mptcp" and not mptcp else None) if row is None else row[m]

    def rows_of(ms: dict[str, str], base: list[dict[str, Any]] | None = None, **extra: Any) -> list[dict[str, Any]]:
        return [{"reading": READING_LABEL[r["reading"]], "config": r["config"], "transport": TRANSPORT_LABEL[r["transport"]],
                 **{k: est(r["reading"], r["config"], r["transport"], m) for k, m in ms.items()},
                 **{k: f(r) for k, f in extra.items()}} for r in (base or _main_rows(grid))]

    out: dict[str, Table] = {}
    rows = [{"config": cf, "path": name, "paper_loss": TABLE1[cf][p][0], "paper_latency": TABLE1[cf][p][1],
             "paper_rate": TABLE1[cf][p][2], "delay_each_way": TABLE1[cf][p][1] / 2,
             **{f"loss_{rd}": TABLE1[cf][p][0] * FACTOR[rd] for rd in grid.readings}}
            for cf in CONFIGS for p, name in (("path1", "MPTCP path 1"), ("path2", "MPTCP path 2"), ("sptcp", "SPTCP (path 1)"))]
    out["table1"] = Table("table1", "Table 1: path characteristics, the paper's and the loss applied in each reading",
                          [Column("config", "configuration"), Column("path", "path"),
                           Column("paper_loss", "paper: packet loss", "%", "paper"),
                           Column("paper_latency", "paper: latency", "ms", "paper"),
                           Column("paper_rate", "paper: bandwidth", "Mbit/s", "paper"),
                           Column("delay_each_way", "our delay each way", "ms")]
                          + [Column(f"loss_{rd}", f"loss applied, {READING_LABEL[rd]}", "%") for rd in grid.readings],
                          rows, source="paper Table 1",
                          note=f"Latency read as the RTT the path adds (half each way); loss {setting['loss_direction']} "
                               "(the `loss_direction` choice; scenarios/mptcp/README.md).")
    p4 = PaperValues("paper Fig. 4 (caption)", ("transport", "config"), PAPER_FIG4_MS)
    out["fig4"] = Table("fig4-startup", "Fig. 4: start-up delay, first request → first byte and → playback start",
                        _IDX + [Column("first_byte", "to first byte", "ms", "ours"),
                                Column("playback", "to playback start", "ms", "ours"),
                                p4.column("paper", "paper: buffering delay (mean)", "ms")],
                        rows_of({"first_byte": "startup_first_byte_ms", "playback": "startup_ms"},
                                paper=lambda r: p4.values.get((r["transport"], r["config"]))),
                        source="paper Fig. 4", note="The paper's values are its Fig. 4 caption's means (one SPTCP value "
                                                    "for both configurations); it does not say which of the two "
                                                    "definitions it measured.")
    p5 = PaperValues("paper Sec. 5.2 (Fig. 5)", ("transport", "config"), PAPER_FIG5)
    out["fig5"] = Table("fig5-retransmissions", "Fig. 5: retransmitted segments per second (the video's direction)",
                        _IDX + [Column("retx", "retransmissions", "1/s", "ours"),
                                p5.column("paper", "paper: retransmissions", "1/s")],
                        rows_of({"retx": "retx_per_s"}, paper=lambda r: p5.values.get((r["transport"], r["config"]))),
                        source="paper Fig. 5 and Sec. 5.2",
                        note=f"Ours: retransmitted data segments of the server's direction over the whole run "
                             f"({grid.duration_s:g} s); the paper's: packets per 1-s tick of its capture on both "
                             "interfaces (one SPTCP value, not per configuration).")
    out["fig6"] = Table("fig6-download", "Figs. 6/7: mean per-segment download rate and mean bitrate played",
                        _IDX + [Column("rate", "mean segment download rate", "Mbit/s", "ours"),
                                Column("bitrate", "mean bitrate played", "Mbit/s", "ours")],
                        rows_of({"rate": "rate_mbps", "bitrate": "bitrate_mbps"}), source=PAPER_FIG6_SOURCE,
                        note="Download rate of a segment: its bytes × 8 over request → last byte (the player's "
                             "own measure). The paper gives no value, only MPTCP > SPTCP and balanced > unbalanced.")
    qoe = ("startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches")
    out["qoe"] = Table("qoe", f"QoE per session, {setting['abr']} ABR (the `abr` choice)",
                       _IDX + [Column("startup_ms", "start-up to playback", "ms", "ours"),
                               Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                               Column("played_s", "media played", "s", "ours"),
                               Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                               Column("switches", "switches", "", "ours")],
                       rows_of({m: m for m in qoe}), source="ours (the paper reports no QoE table)",
                       note=f"{grid.loops * clip_s():g} s of media per session; a session that has not played it all by the "
                            f"end of the run ({grid.duration_s:g} s) stalled for the rest.")
    abr_m = ("startup_ms", "stalls", "stall_s", "bitrate_mbps", "switches", "rate_mbps")
    rows = [{"reading": READING_LABEL[rd], "config": cf, "transport": TRANSPORT_LABEL[tp], "abr": a,
             **{m: est(rd, cf, tp, m, a) for m in abr_m}}
            for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS]
    out["qoe_abr"] = Table("qoe-abr", "QoE per ABR policy (defaults of docs/models/dash.md)",
                           _IDX + [Column("abr", "ABR policy"), Column("startup_ms", "start-up to playback", "ms", "ours"),
                                   Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                                   Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                                   Column("switches", "switches", "", "ours"),
                                   Column("rate_mbps", "mean segment download rate", "Mbit/s", "ours")],
                           rows, source="ours (the paper uses VLC's rate-based adaptation only)",
                           note="BBA's reservoir and cushion are 90/240 and 126/240 of the 30-s buffer target; BOLA's "
                                "γp is 5 (docs/models/dash.md).")
    cap = {cf: TABLE1[cf]["path1"][2] / (TABLE1[cf]["path1"][2] + TABLE1[cf]["path2"][2]) * 100 for cf in CONFIGS}
    mp = [{**r, "transport": "mptcp"} for r in _main_rows(grid) if r["transport"] == "mptcp"]
    out["subflows"] = Table("subflows", "MPTCP subflows: path 1's share of the video bytes received",
                            _IDX + [Column("share", "path 1's share", "%", "ours"),
                                    Column("rate1", "path 1's share of the capacity", "%"),
                                    Column("reinjected", "reinjected", "kB", "ours"),
                                    Column("rcvbuf_drops", "receive-buffer drops", "segments", "ours"),
                                    Column("rcv_buf", "client's connection-level buffer at the end", "kB", "ours")],
                            rows_of({"share": "path1_share_pct", "reinjected": "reinjected_kb",
                                     "rcvbuf_drops": "rcvbuf_drops", "rcv_buf": "rcv_buf_kb"}, mp,
                                    rate1=lambda r: cap[r["config"]]),
                            source="ours (the paper gives no per-subflow numbers)")
    return out


def consistent_readings(found: list[Finding]) -> list[str]:
    """The loss readings whose SPTCP retransmission rate is consistent with Fig. 5."""
    return [f.key.removeprefix("fig5-sptcp-rate-") for f in found
            if f.key.startswith("fig5-sptcp-rate-") and f.verdict is Verdict.HOLDS]


def _segments_fig(series: dict[tuple[str, str, str], list[tuple[int, float, float]]], readings: tuple[str, ...]):
    """Figs. 6/7 (ours): each segment's download rate against its index, repetition 0 of each
    cell, one panel per loss reading."""

    def draw(path: Path) -> None:
        fig, axes = pyplot().subplots(1, len(readings), figsize=(4.0 * len(readings), 3.8), sharey=True, squeeze=False)
        style = {"mptcp": "-", "sptcp": "--", "sptcp_best": ":"}
        for ax, rd in zip(axes[0], readings):
            for (r, cf, tp), pts in series.items():
                if r == rd and pts:
                    ax.plot([p[0] for p in pts], [p[2] for p in pts], style[tp], marker=".", ms=3,
                            color="C0" if cf == "balanced" else "C1", label=f"{cf[:3]}. {TRANSPORT_LABEL[tp]}")
            ax.set_title(READING_LABEL[rd], fontsize=9)
            ax.set_xlabel("segment")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
        axes[0][0].set_ylabel("download rate (Mbit/s)")
        fig.suptitle("Figs. 6/7 (ours): per-segment download rate, repetition 0 of each cell", fontsize=9)
        save(fig, path)

    return draw


def figures(grid: Grid, tabs: dict[str, Table], exp: core.Experiment, runs: Path, setting: dict[str, Any]) -> list[Figure]:
    tick = lambda r: f"{r['reading']}\n{r['config'][:3]}. {r['transport']}"  # noqa: E731
    series = {}
    for p in exp.cells:
        d = core.run_dir(exp, runs, _cell_id(p), 0)
        if p["abr"] == setting["abr"] and (d / "probe_app.parquet").is_file():
            series[(p["reading"], p["config"], p["transport"])] = segment_rates(d)
    return [
        Figure("fig4", "Fig. 4 (ours): start-up delay, both definitions", "fig4_startup.png",
               bars(tabs["fig4"].rows, [("first_byte", "to first byte"), ("playback", "to playback")], "paper",
                    "start-up delay (ms)", "Fig. 4 (ours): start-up delay; × the paper's caption means", tick, log=True),
               "paper Fig. 4"),
        Figure("fig5", "Fig. 5 (ours): retransmissions per second", "fig5_retransmissions.png",
               bars(tabs["fig5"].rows, [("retx", "ours")], "paper", "retransmitted segments / s",
                    "Fig. 5 (ours): retransmissions per second; × the paper's", tick), "paper Fig. 5"),
        Figure("fig6", "Figs. 6/7 (ours): per-segment download rate, one run of each cell", "fig6_segment_rates.png",
               _segments_fig(series, grid.readings), "paper Figs. 6/7"),
    ]


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding], mptcp: bool) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), the loss
    reading consistent with Fig. 5, then the findings with their intervals."""
    md = []
    mp, sp = TRANSPORT_LABEL["mptcp"], TRANSPORT_LABEL["sptcp"]
    for rd in grid.readings:
        lab = READING_LABEL[rd]
        parts = []
        for cf in CONFIGS:
            r4, r5, r6 = ({r["transport"]: r for r in tabs[t].rows if r["reading"] == lab and r["config"] == cf}
                          for t in ("fig4", "fig5", "fig6"))
            parts.append(f"{cf}: segment download rate MPTCP {_m(r6[mp]['rate'])} vs SPTCP {_m(r6[sp]['rate'])} Mbit/s; "
                         f"retransmissions/s MPTCP {_m(r5[mp]['retx'])} (paper {_m(r5[mp]['paper'])}) vs SPTCP "
                         f"{_m(r5[sp]['retx'])} (paper {_m(r5[sp]['paper'])}); start-up to playback MPTCP "
                         f"{_m(r4[mp]['playback'])} vs SPTCP {_m(r4[sp]['playback'])} ms (to first byte "
                         f"{_m(r4[mp]['first_byte'])} vs {_m(r4[sp]['first_byte'])} ms; paper {_m(r4[mp]['paper'])} "
                         f"vs {_m(r4[sp]['paper'])} ms)")
            if rd == "control":
                parts[-1] += f"; {TRANSPORT_LABEL['sptcp_best']} {_m(r6[TRANSPORT_LABEL['sptcp_best']]['rate'])} Mbit/s"
        md.append(f"- **{lab}**: " + "; ".join(parts) + ".")
    stalled = [r for r in tabs["qoe"].rows if isinstance(r["stalls"], Estimate) and r["stalls"].mean > 0]
    md.append("- **Stalls**: " + ("; ".join(f"{r['reading']}, {r['config']}, {r['transport']}: {_m(r['stalls'])} stalls, "
                                            f"{_m(r['stall_s'])} s" for r in stalled) if stalled else "no session stalled")
              + ".")
    for r in tabs["qoe_abr"].rows:
        if isinstance(r["bitrate_mbps"], Estimate):
            md.append(f"- **ABR {r['abr']}**, {r['reading']}, {r['config']}, {r['transport']}: mean bitrate "
                      f"{_m(r['bitrate_mbps'])} Mbit/s, {_m(r['switches'])} switches, {_m(r['stalls'])} stalls, "
                      f"start-up {_m(r['startup_ms'])} ms.")
    for r in tabs["subflows"].rows:
        if isinstance(r["share"], Estimate):
            md.append(f"- **Subflows**, {r['reading']}, {r['config']}: path 1 carried {_m(r['share'])} % of the video "
                      f"bytes (its share of the capacity {_m(r['rate1'])} %); reinjected {interval_str(r['reinjected'])} kB; "
                      f"the client's connection-level buffer dropped {interval_str(r['rcvbuf_drops'])} segments and "
                      f"ended at {_m(r['rcv_buf'])} kB.")
    drops = [r["rcvbuf_drops"] for r in tabs["subflows"].rows if isinstance(r["rcvbuf_drops"], Estimate)]
    if drops:
        md.append("- **The paper's mechanism** (MPTCP's retransmissions blamed on the receive buffer overflowing): "
                  + ("the client's connection-level buffer never dropped a segment in any MPTCP cell: the sender keeps "
                     "to the window the buffer offers, so a full buffer blocks the sender (reinjection and penalisation "
                     "above) rather than losing data, and MPTCP's retransmissions here are the paths' losses"
                     if all(d.mean == 0 for d in drops) else
                     f"the client's connection-level buffer dropped segments in {sum(d.mean > 0 for d in drops)} of "
                     f"{len(drops)} MPTCP cells (table above)") + ".")
    ok = consistent_readings(found)
    ctl = [r for r in tabs["fig5"].rows if r["reading"] == READING_LABEL["control"] and r["transport"] == sp]
    md.append("- **Which loss reading fits Fig. 5** (SPTCP about one retransmission per second): "
              + (", ".join(READING_LABEL[x] for x in ok) if ok else "none of the readings run")
              + ("; but the loss-free control's SPTCP retransmits " + " and ".join(
                  f"{_m(r['retx'])}/s ({r['config']})" for r in ctl) + " (queue overflows at the shaped link), so "
                 "Fig. 5 alone does not tell a loss reading from no loss: the loss direction and reading rest on the "
                 "paper's text (the `loss_direction` choice)" if ctl else "") + ".")
    if not mptcp:
        md.append("- **MPTCP**: not run (see the setup); every finding that compares it is untestable.")
    md += ["", "The paper's claims, per loss reading (95 % intervals over paired repetitions):", "",
           findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


def _setup(grid: Grid, quick: bool, refusal: str | None, setting: dict[str, Any]) -> str:
    lines = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell (the paper: {PAPER_REPS}), the {clip_s():g}-s "
        f"HEVC ladder played {'once' if grid.loops == 1 else f'{grid.loops} times'} ({grid.loops * clip_s():g} s of media, "
        f"6-s segments), runs of {grid.duration_s:g} s; the same seed for repetition r of every cell, so differences are "
        "paired.",
        "Testbed (scenarios/mptcp/README.md): two disjoint paths C–R1–S and C–R2–S, each shaped on its access link "
        f"(rate, latency read as the RTT the path adds, half each way, Bernoulli loss {setting['loss_direction']}, "
        f"100-packet drop-tail queues); DASH player with {setting['abr']} ABR "
        f"comparing each representation's {setting['mpd_bandwidth']} rate, 30-s buffer target; TCP with Linux's "
        "profile (CUBIC).",
        f"Loss readings run: {', '.join(READING_LABEL[r] for r in grid.readings)}. Read downstream, the literal Table 1 "
        "loss (10–20 %) contradicts Fig. 5's one retransmission per second for SPTCP, so the table is also run with "
        "every loss ÷ 10 and ÷ 100; which reading fits Fig. 5 under the loss direction run is decided from the data "
        "below; the control has no loss and adds single-path TCP over MPTCP's path 1 (the better path).",
        f"MPTCP: {'a subflow per path' if setting['subflows'] == 'disjoint' else 'full mesh, 4 subflows'}, "
        f"{setting['scheduler']} scheduler, {setting['coupled']} coupling, reinjection and "
        "penalisation on. Every choice above that the paper leaves open is declared below with its alternatives.",
    ]
    if refusal is not None:
        lines.append(f"**The MPTCP cells did not run: this simulator refuses a DASH flow over MPTCP ({refusal}).** "
                     "Only the single-path cells ran; every finding that needs MPTCP is untestable.")
    return "\n\n".join(lines)
