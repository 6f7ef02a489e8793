"""The WiMAX reproduction's report: Tables 3–6, Fig. 2's start-up delay, Fig. 3's loss by frame
type and TFRC's view beside the paper's values; the figures (Fig. 2 from one run's packet log
and the receiver's reorder buffer); the reading generated from the tables; the setup."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from qoelab import paths
from qoelab.experiment import Estimate, Finding
from qoelab.experiment import core
from qoelab.experiment.figures import bars, lines, pyplot
from qoelab.experiment.stats import sd
from qoelab.experiment.tables import Column, Figure, PaperValues, Table, findings_md, series_str
from qoelab.reproduce.wimax.build import METRICS, TREATMENTS, Grid, Video, _cell_id, _packets, split_available
from qoelab.reproduce.wimax.paper import (CBR_RATES, GOP, OFFSET_S, PAPER_FIG2_FRAMES, PAPER_FIG2_STARTUP_S, PAPER_T3,
                                          PAPER_T4, PAPER_T5, PAPER_T6, START_S, TRACE)



def _est(agg: dict[tuple, dict[str, Any]], key: tuple, m: str) -> Estimate | None:
    row = agg.get(key)
    return None if row is None else row.get(m)


def _conn(n: int) -> str:
    return f"{n}-conn"


def tables(grid: Grid, rep_rows: list[dict[str, Any]]) -> dict[str, Table]:
    """Tables 3–6, Fig. 2's start-up delay, the loss by frame type (Fig. 3's numbers) and what the
    TFRC connections measured, ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}
    out: dict[str, Table] = {}

    # Table 3: WiMAX link only, 5 and 20 ms.
    p_per = PaperValues("Table 3", ("frame", "n"), {k: v[0] for k, v in PAPER_T3.items()})
    p_thr = PaperValues("Table 3", ("frame", "n"), {k: float(v[1]) for k, v in PAPER_T3.items()})
    rows = [{"frame": f, "n": n, "conn": _conn(n), "period": _est(agg, ("link", f, n), "period_s"),
             "thr": _est(agg, ("link", f, n), "throughput_kbps")} for f in grid.link_frames for n in grid.n]
    rows = p_thr.join(p_per.join(rows, "paper_period"), "paper_thr")
    out["table3"] = Table("table3", "Table 3: sending period and throughput, SS1 to the base station (WiMAX link only)",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("period", "sending period", "s", "ours"), p_per.column("paper_period", "paper: sending period", "s"),
                           Column("thr", "throughput", "kbit/s", "ours"), p_thr.column("paper_thr", "paper: throughput", "kbit/s")],
                          rows, source="paper Table 3")

    # Table 4: end to end at 20 ms.
    cols4 = [Column("conn", "connections"), Column("period", "sending period", "s", "ours"),
             Column("paper_period", "paper: sending period", "s", "paper"), Column("thr", "throughput", "kbit/s", "ours"),
             Column("paper_thr", "paper: throughput", "kbit/s", "paper"),
             Column("delay", "mean end-to-end delay", "s", "ours", scale=1e-3), Column("paper_delay", "paper: mean end-to-end delay", "s", "paper")]
    rows = []
    if 20.0 in grid.e2e_frames:
        for n in grid.n:
            k = ("e2e", 20.0, n)
            pv = PAPER_T4[n]
            rows.append({"conn": _conn(n), "period": _est(agg, k, "period_s"), "paper_period": pv[0],
                         "thr": _est(agg, k, "throughput_kbps"), "paper_thr": float(pv[1]),
                         "delay": _est(agg, k, "delay_ms"), "paper_delay": pv[2]})
    out["table4"] = Table("table4", "Table 4: sending period, throughput and mean delay, SS1 to node C (20 ms frames)",
                          cols4, rows, source="paper Table 4")

    # Table 5: PSNR by frame length and connections (decoded cells only).
    rows = []
    for f in grid.e2e_frames:
        for n in grid.n:
            if (f, n) not in grid.decode:
                continue
            k = ("e2e", f, n)
            pm, ps = PAPER_T5[(f, n)]
            rows.append({"frame": f, "conn": _conn(n), "psnr": _est(agg, k, "psnr_db"),
                         "sd": sd([r["psnr_db"] for r in core.select(rep_rows, **dict(zip(TREATMENTS, k))) if r["psnr_db"] == r["psnr_db"]]), "paper_psnr": pm, "paper_sd": ps})
    out["table5"] = Table("table5", "Table 5: mean PSNR-Y (dB) against the source, SS1 to node C, real decoding with concealment",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("psnr", "mean PSNR", "dB", "ours", digits=4), Column("sd", "stdv over runs", "dB", "ours"),
                           Column("paper_psnr", "paper: mean PSNR", "dB", "paper", digits=4), Column("paper_sd", "paper: stdv", "dB", "paper")],
                          rows, source="paper Table 5")

    # Table 6: mean delay by frame length and connections.
    rows = [{"frame": f, "conn": _conn(n), "delay": _est(agg, ("e2e", f, n), "delay_ms"),
             "paper_delay": PAPER_T6[(f, n)]} for f in grid.e2e_frames for n in grid.n]
    out["table6"] = Table("table6", "Table 6: mean packet end-to-end delay, SS1 to node C",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("delay", "mean delay", "s", "ours", scale=1e-3), Column("paper_delay", "paper: mean delay", "s", "paper")],
                          rows, source="paper Table 6")

    # Fig. 2's number: the start-up delay the reorder buffer needs.
    rows = [{"frame": f, "conn": _conn(n), "startup": _est(agg, ("e2e", f, n), "startup_s"),
             "paper_startup": PAPER_FIG2_STARTUP_S if (f, n) == (20.0, 4) else None}
            for f in grid.e2e_frames for n in grid.n]
    out["fig2"] = Table("fig2-startup", "Fig. 2 (ours): start-up delay for in-time playout of every slice that arrives, "
                        "SS1 to node C", [Column("frame", "frame", "ms"), Column("conn", "connections"),
                                          Column("startup", "start-up delay", "s", "ours"),
                                          Column("paper_startup", "paper: start-up delay", "s", "paper")],
                        rows, source="paper Fig. 2 and Sec. 4",
                        note=f"The paper reads {PAPER_FIG2_STARTUP_S:g} s ({PAPER_FIG2_FRAMES} frames, which at 30 "
                             "frame/s are 3 s) off its Fig. 2 for 4 connections; its frame length there is not "
                             "stated (Fig. 2 is discussed with Table 4, 20 ms).")

    # Fig. 3's numbers: packet loss by frame type (the paper gives these only as a bar chart).
    rows = [{"frame": f, "conn": _conn(n), **{t: _est(agg, ("e2e", f, n), f"loss_{t}_pct") for t in ("I", "P", "B")},
             "all": _est(agg, ("e2e", f, n), "loss_pct"), "unsent": _est(agg, ("e2e", f, n), "unsent_pct")}
            for f in grid.e2e_frames for n in grid.n]
    out["fig3"] = Table("fig3-loss-by-type", "Fig. 3 (ours): packet loss by frame type, SS1 to node C",
                        [Column("frame", "frame", "ms"), Column("conn", "connections")]
                        + [Column(t, f"{t}-frame packets lost", "%", "ours") for t in ("I", "P", "B")]
                        + [Column("all", "all packets lost", "%", "ours"), Column("unsent", "slices never sent", "%", "ours")],
                        rows, source="paper Fig. 3",
                        note="The paper gives Fig. 3 as a bar chart without numbers: no paper column. Loss counts "
                             "channel and queue drops of sent packets (SPS/PPS/SEI units are in `all` only).")

    # What the TFRC connections measured: the inputs of their throughput equation.
    rows = [{"path": "link only" if pth == "link" else "end to end", "frame": f, "conn": _conn(n),
             "p": _est(agg, (pth, f, n), "tfrc_p_pct"), "rtt": _est(agg, (pth, f, n), "tfrc_rtt_ms"),
             "thr": _est(agg, (pth, f, n), "throughput_kbps")}
            for pth, frames in (("link", grid.link_frames), ("e2e", grid.e2e_frames)) for f in frames for n in grid.n]
    out["tfrc"] = Table("tfrc-view", "What the TFRC connections measured (mean over the connections of a run)",
                        [Column("path", "path"), Column("frame", "frame", "ms"), Column("conn", "connections"),
                         Column("p", "loss-event rate p", "%", "ours"), Column("rtt", "RTT estimate R", "ms", "ours"),
                         Column("thr", "video throughput", "kbit/s", "ours")],
                        rows, source="ours (the paper gives no such table)",
                        note="p and R are each connection's last values; the equation gives a rate "
                             "falling with R and with the square root of p (RFC 5348 §3.1).")

    return out


def fig2(run_dir: Path, video: Video, path: Path, title: str) -> dict[str, Any]:
    """Fig. 2: for one run, each GOP's first and last slice arrival at node C against the GOP's
    index, coloured by connection (top), and the receiver's reorder buffer over time (bottom:
    packets held until every earlier frame has been released, ``qoelab.video.receiver.reorder``, at the
    smallest playout delay D at which every complete frame is in time). A frame is released
    when its last packet arrives, or, when one of its packets was lost, at its playout time:
    greedy senders run far ahead of playout, so one lost slice holds everything behind it until
    then, which is most of what the curve shows. Returns the numbers it drew."""
    import numpy as np

    from qoelab.video.receiver.recvlog import receive_log_from_table
    from qoelab.video.receiver.reorder import reorder
    from qoelab.video.traces.trace import read_trace

    plt = pyplot()
    t = _packets(run_dir)
    trace, log = read_trace(paths.root() / TRACE), receive_log_from_table(t, run_dir / "packets.parquet")
    d_s = reorder(trace, log, 0.0).min_deadline_ns / 1e9
    rb = reorder(trace, log, d_s)
    nal = t.column("nal").to_numpy()
    got = ~np.asarray(t.column("recv_ns").is_null())
    recv = t.column("recv_ns").fill_null(0).to_numpy()
    flows = np.asarray(t.column("flow").to_pylist(), dtype=object)
    t0 = t.column("sent_ns").to_numpy().min()
    gop = np.asarray(video.nal_frame)[nal] // GOP
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6.4), sharex=True, height_ratios=(3, 2))
    names = sorted(set(flows.tolist()))
    spans = []
    for g in np.unique(gop[got]):
        sel = got & (gop == g)
        a, b = (recv[sel].min() - t0) / 1e9, (recv[sel].max() - t0) / 1e9
        k = names.index(flows[sel][0])
        ax.plot([a, b], [g, g], color=f"C{k}", lw=2)
        spans.append((int(g), a, b))
    for k, nm in enumerate(names):
        ax.plot([], [], color=f"C{k}", lw=2, label=nm)
    ax.set_ylabel("GOP (15 frames)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    held_pkts, held_bytes = rb.max_occupancy()
    ax2.step((rb.occupancy_t_ns - rb.t0_ns) / 1e9, rb.occupancy_pkts, where="post", lw=1, color="k")
    ax2.set_xlabel("time since the first packet was sent (s)")
    ax2.set_ylabel("reorder buffer (packets)")
    ax2.set_title(f"packets held for reordering at D = {d_s:.2f} s (at most {held_pkts}, "
                  f"{held_bytes / 1e3:.0f} kB)", fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"gops": len(spans), "deadline_s": d_s, "max_held_pkts": held_pkts, "max_held_bytes": held_bytes}


def figures(grid: Grid, tabs: dict[str, Table], runs: Path, video: Video) -> list[Figure]:
    n4 = max(grid.n)
    f2 = 20.0 if 20.0 in grid.e2e_frames else grid.e2e_frames[-1]
    figs = []
    run0 = runs / "runs" / f"cell={_cell_id({'path': 'e2e', 'frame': f2, 'n': n4})}__rep=0"
    if (run0 / "packets.parquet").is_file():
        title = f"Fig. 2 (ours): GOP arrivals at node C, {n4} connection(s), {f2:g} ms frames, repetition 0"
        figs.append(Figure("fig2", f"Fig. 2 (ours): GOP arrival sequence and reorder-buffer occupancy, {n4} connection(s)",
                           "fig2_gop_arrivals.png", lambda p: fig2(run0, video, p, title), "paper Fig. 2"))
    figs.append(Figure("fig3", "Fig. 3 (ours): packet loss by frame type", "fig3_loss_by_type.png",
                       bars(tabs["fig3"].rows, [(t, f"{t} frames") for t in ("I", "P", "B")], None, "packets lost (%)",
                            "Fig. 3 (ours): loss by frame type, SS1 to node C (95 % intervals)",
                            lambda r: f"{r['frame']:g} ms\n{r['conn']}", rotate=False), "paper Fig. 3"))
    t5 = tabs["table5"].rows
    if t5:
        groups = {c: [r for r in t5 if r["conn"] == c] for c in sorted({r["conn"] for r in t5})}
        figs.append(Figure("table5", "Table 5: PSNR against frame length, ours and the paper's", "table5_psnr.png",
                           lines(groups, "frame", "psnr", "TDD frame length (ms)", "mean PSNR-Y (dB)",
                                 "Table 5: mean PSNR, ours (solid) and the paper's (dashed)", paper="paper_psnr"),
                           "paper Table 5"))
    return figs


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding]) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), then the
    findings with their intervals."""
    conns = ", ".join(str(n) for n in grid.n)
    md = []
    sel = lambda t, **kw: [r for r in tabs[t].rows if all(r[k] == v for k, v in kw.items())]  # noqa: E731
    for f in grid.link_frames:
        rs = sel("table3", frame=f)
        md.append(f"- **Table 3, {f:g} ms frames** (WiMAX link only), N = {conns}: throughput {series_str(rs, 'thr')} "
                  f"kbit/s (paper {series_str(rs, 'paper_thr')}); sending period {series_str(rs, 'period')} s (paper "
                  f"{series_str(rs, 'paper_period')}).")
    t4 = tabs["table4"].rows
    if t4:
        md.append(f"- **Table 4** (SS1 to node C, 20 ms), N = {conns}: throughput {series_str(t4, 'thr')} kbit/s "
                  f"(paper {series_str(t4, 'paper_thr')}); mean delay {series_str(t4, 'delay', scale=1e-3)} s "
                  f"(paper {series_str(t4, 'paper_delay')}).")
    t5 = [r for r in tabs["table5"].rows if r["psnr"] is not None and not math.isnan(r["psnr"].mean)]
    if t5:
        diffs = [r["psnr"].mean - r["paper_psnr"] for r in t5]
        md.append("- **Table 5** (PSNR-Y, dB, decoded cells): " + "; ".join(
            f"{r['frame']:g} ms {r['conn']}: {r['psnr'].mean:.2f} (paper {r['paper_psnr']:.2f})" for r in t5)
                  + f". Ours minus the paper's, mean over these cells: {sum(diffs) / len(diffs):+.2f} dB.")
    for f in grid.e2e_frames:
        rs = sel("table6", frame=f)
        md.append(f"- **Table 6, {f:g} ms**, N = {conns}: mean delay {series_str(rs, 'delay', scale=1e-3)} s "
                  f"(paper {series_str(rs, 'paper_delay')}).")
    r24 = next(iter(sel("fig2", frame=20.0, conn=_conn(max(grid.n)))), None)
    if r24 is not None and r24["startup"] is not None:
        md.append(f"- **Fig. 2**: with {r24['conn']} at 20 ms every arriving slice is in time after a start-up delay of "
                  f"{r24['startup'].mean:.3g} s (paper: about {PAPER_FIG2_STARTUP_S:g} s).")
    for pth, frames in (("link only", grid.link_frames), ("end to end", grid.e2e_frames)):
        for f in frames:
            rs = sel("tfrc", path=pth, frame=f)
            if rs:
                md.append(f"- **TFRC's view**, {pth}, {f:g} ms, N = {conns}: loss-event rate {series_str(rs, 'p')} %, "
                          f"RTT {series_str(rs, 'rtt')} ms.")
    md += ["", "Which of the paper's trends hold (95 % intervals over paired repetitions):", "", findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


def _setup(grid: Grid, quick: bool, setting: dict[str, Any]) -> str:
    lines_ = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell, {grid.duration_s:g} s each; the same "
        "seed for repetition r of every cell (all cells differ only in treatments), so differences are paired.",
        f"Link-only frames {', '.join(f'{f:g}' for f in grid.link_frames)} ms; end-to-end frames "
        f"{', '.join(f'{f:g}' for f in grid.e2e_frames)} ms; N = {', '.join(map(str, grid.n))} TFRC connections. "
        f"PSNR decoded on {len(grid.decode)} (frame, N) cells: " + ", ".join(f"{f:g} ms/N={n}" for f, n in grid.decode) + ".",
        "Video: bundled `cif_bbb_qp26` (Big Buck Bunny, CIF, 30 fps, H.264 QP 26, GOP 15, 1063 frames, 900-B slices), "
        "about 595 kbit/s against the paper's 437 kbit/s 'Paris': a third more data to send, so our sending periods "
        "are longer and our throughputs are not expected to match the paper's where TFRC, not the source, limits them.",
        f"PSNR: mean PSNR-Y against the source, real decoding with {setting['concealment']} error concealment of lost "
        "slices and frames (not the paper's EvalVid); no playout deadline (every slice that arrives counts; Fig. 2 gives "
        "the start-up delay that makes it so).",
        f"Grants: {setting['grant_scheduling'].replace('_', ' ')} (rtPS before nrtPS), where the paper says round robin. "
        f"rtPS CBR at {CBR_RATES[setting['cbr']]} of payload; {setting['overhead_symbols']} overhead symbols per subframe. "
        "Other choices where the paper contradicts itself (scenarios/wimax/README.md): CBR packets of 1000 B at IP level "
        "(972-B payload) so that they fit the 1024-B maximum; the uplink PHY rate the paper's 10.67 Mbit/s with our "
        "frame layout, which makes the downlink 1.7–2.5 Mbit/s, not the paper's 2.69 Mbit/s; the downlink FTP and CBR "
        "go from node B to SS3.",
    ]
    if not split_available():
        lines_.append("**This build lacks the multi-connection keys (`split`, `pacing = \"greedy\"`): only N = 1 ran, "
                      "paced by the trace's timestamps (datagrams the TFRC send buffer cannot hold are dropped at the "
                      "sender and count as never sent).**")
    else:
        lines_.append("Each connection i sends GOPs g with g mod N = i, greedily (its TFRC send buffer kept full), "
                      f"starting {START_S:g} + {OFFSET_S:g}·i s into the run.")
    return "\n\n".join(lines_)
