"""The QoS study's findings, tables, figures and reading, from the runs' rows.

Every finding compares a discipline with FIFO drop-tail on the same testbed, paired run by run
(the cells of a repetition share its seed and draws): the video's loss, its decoded PSNR (the
CIF video), and the downloads' goodput, whose cost is claimed to stay within
:data:`COST_SHARE` of the line rate (fixed before the study's first run, not read off its
data)."""

from __future__ import annotations

from typing import Any

from qoelab.experiment import Finding, Label, Premise, above, within
from qoelab.experiment import core
from qoelab.experiment.figures import panels
from qoelab.experiment.tables import Column, Figure, Table, findings_md, mean_str
from qoelab.reproduce.qos.build import LINE_BPS, RESERVATIONS, SQF_METRICS, TFD_METRICS, VIDEOS, Plan, label

#: The goodput difference with FIFO claimed negligible: this share of the bottleneck's rate.
COST_SHARE = 0.05
LINE_MBPS = {k: v / 1e6 for k, v in LINE_BPS.items()}
#: Disciplines that protect the video by how they are defined: strict priority for a flow below
#: the line rate, with a band of its own; a class of its own whose guaranteed share of the line
#: (WDRR: three quarters; HTB: 60 %) exceeds the video's mean rate on both testbeds (at most 5.2
#: of 10 Mbit/s, 5 × 62 of 1000 Mbit/s). WRED shares one queue: whether it protects is measured.
BY_CONSTRUCTION = ("diffserv_ef", "wdrr_af41", "htb_af41")
#: The findings' groups: (testbed, video or None).
GROUPS = (("sqf", "cif"), ("sqf", "mpeg2"), ("tfd", None))


_WHY = {"diffserv_ef": "strict priority serves the video first and gives it its own band",
        "wdrr_af41": "the video has a class of its own guaranteed three quarters of the line, above its mean rate",
        "htb_af41": "the video has a class of its own guaranteed 60 % of the line, above its mean rate, served first"}


def group_name(testbed: str, video: str | None) -> str:
    return f"{testbed}-{video}" if video else testbed


def _label(q: str) -> Label:
    return Label.BY_CONSTRUCTION if q in BY_CONSTRUCTION else Label.SUBSTANTIVE


def findings(rows: dict[str, list[dict[str, Any]]]) -> list[Finding]:
    """Each discipline against FIFO on each testbed (and video), as findings of the layer."""
    out: list[Finding] = []
    for testbed, video in GROUPS:
        rs = [r for r in rows[testbed] if video is None or r["video"] == video]
        if not rs:
            continue
        g = group_name(testbed, video)
        where = f"the {'SQF testbed' if testbed == 'sqf' else 'TFD dumbbell'}" + (f", {video} video" if video else "")
        fifo = [r["video_loss_pct"] for r in rs if r["discipline"] == "fifo"]
        fifo_loses = Premise("FIFO loses some of the video", bool(fifo) and sum(fifo) > 0,
                             f"FIFO's mean video loss {sum(fifo) / len(fifo):.3g} %" if fifo else "FIFO did not run")
        tol = COST_SHARE * LINE_MBPS[testbed]
        for q in dict.fromkeys(r["discipline"] for r in rs):
            if q == "fifo":
                continue
            lab = label(q)
            out.append(Finding(f"{q}-loss", f"{lab} loses less of the video than FIFO on {where}", _label(q), above(),
                               "paired difference FIFO − discipline of the video's loss",
                               core.paired(rs, "discipline", "fifo", q, "video_loss_pct").get(()), group=g,
                               premises=(fifo_loses,), unit=" pp",
                               why=_WHY.get(q, "")))
            if video == "cif":
                out.append(Finding(f"{q}-psnr", f"{lab} gives the decoded video a higher PSNR than FIFO on {where}",
                                   _label(q), above(), "paired difference discipline − FIFO of the mean PSNR-Y",
                                   core.paired_where(rs, {}, "discipline", q, "fifo", "video_psnr_db"), group=g,
                                   premises=(fifo_loses,), unit=" dB"))
            out.append(Finding(f"{q}-cost", f"{lab} leaves the downloads' goodput within {COST_SHARE:.0%} of the line "
                                            f"rate of FIFO's on {where}", Label.SUBSTANTIVE, within(tol),
                               "paired difference discipline − FIFO of the downloads' goodput",
                               core.paired(rs, "discipline", q, "fifo", "downloads_mbps").get(()), group=g,
                               unit=" Mbit/s"))
    return out


def _columns(testbed: str) -> list[Column]:
    idx = [Column("video", "video")] if testbed == "sqf" else []
    cols = idx + [Column("label", "discipline"), Column("discipline", "key"), Column("video_loss_pct", "video loss", "%", "ours"),
                  Column("video_delay_ms", "video delay", "ms", "ours"),
                  Column("video_delay_p99_ms", "p99 delay", "ms", "ours"),
                  Column("video_jitter_ms", "jitter (RFC 3550)", "ms", "ours")]
    if testbed == "sqf":
        cols += [Column("video_psnr_db", "video PSNR-Y", "dB", "ours"), Column("audio_loss_pct", "audio loss", "%", "ours")]
    else:
        cols += [Column("video_mbps", "videos' rate", "Mbit/s", "ours")]
    return cols + [Column("downloads_mbps", "downloads' goodput", "Mbit/s", "ours"),
                   Column("jain", "downloads' Jain", "", "ours")]


def tables(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Table]:
    """One table per testbed: per discipline (and video), every metric with its interval."""
    out = {}
    for testbed, keys, metrics in (("sqf", ("video", "discipline"), SQF_METRICS), ("tfd", ("discipline",), TFD_METRICS)):
        agg = [{**a, "label": label(a["discipline"])} for a in core.aggregate(rows[testbed], keys, metrics)]
        title = ("The SQF testbed: 10 Mbit/s access line, a video and its audio, n TCP downloads" if testbed == "sqf"
                 else "The TFD dumbbell: 1 Gbit/s, N HD videos and K TCP flows")
        out[testbed] = Table(f"qos-{testbed}", title, _columns(testbed), agg, source="qoelab QoS study (no paper)")
    return out


def figures(tabs: dict[str, Table]) -> list[Figure]:
    """One figure per testbed: a panel per measure, a bar per discipline (per video on the SQF
    testbed), with 95 % intervals."""
    keys = [("video_loss_pct", "video loss (%)"), ("video_delay_ms", "video mean delay (ms)"),
            ("video_jitter_ms", "video jitter (ms)"), ("video_psnr_db", "video PSNR-Y (dB)"),
            ("downloads_mbps", "downloads' goodput (Mbit/s)"), ("jain", "downloads' Jain index")]
    return [Figure("qos-sqf", "The SQF testbed per discipline", "qos_sqf.png",
                   panels(tabs["sqf"].rows, keys, lambda r: r["label"], "SQF testbed (10 Mbit/s): per discipline",
                          series="video", labels=VIDEOS)),
            Figure("qos-tfd", "The TFD dumbbell per discipline", "qos_tfd.png",
                   panels(tabs["tfd"].rows, keys, lambda r: r["label"], "TFD dumbbell (1 Gbit/s): per discipline"))]


def reading(tabs: dict[str, Table], found: list[Finding]) -> str:
    """The reading: per testbed, the disciplines from the least video loss to the most (means
    from the tables), then every finding with its interval."""
    lines = []
    for testbed, video in GROUPS:
        rs = [r for r in tabs[testbed].rows if video is None or r["video"] == video]
        ranked = sorted(rs, key=lambda r: r["video_loss_pct"].mean if r["video_loss_pct"] else float("inf"))
        where = f"On the SQF testbed with the {VIDEOS[video]} video" if video else "On the TFD dumbbell"
        lines.append(f"{where}, the video's loss by discipline, least first (%): "
                     + "; ".join(f"{r['label']} {mean_str(r['video_loss_pct'])}" for r in ranked)
                     + "; the downloads' goodput (Mbit/s): "
                     + "; ".join(f"{r['label']} {mean_str(r['downloads_mbps'])}" for r in ranked) + ".")
    lines += ["", "Each discipline against FIFO (paired by repetition):", "", findings_md(found)]
    return "\n".join(lines)


def setup(p: Plan, setting: dict[str, Any]) -> str:
    res = ", ".join(f"{label(k)} (the TFD paper's {v[1]})" for k, v in RESERVATIONS.items())
    return (f"{p.reps} repetitions per cell (independent seeds; every cell of a repetition shares its seed and random "
            f"draws, so comparisons are paired). SQF testbed: {p.sqf_duration} runs, n = {setting['n_downloads']} "
            f"downloads, buffer {setting['sqf_buffer']}, Linux TCP CUBIC; the CIF video decoded with a "
            f"{0.5 * 1e3:.0f}-ms playout deadline (PSNR-Y against the source). TFD dumbbell: {p.tfd_duration_s:g}-s runs, "
            f"N = {setting['tfd_videos']} videos of the 62 Mbit/s HD trace, K = {setting['tfd_tcp']} TCP CUBIC flows, "
            f"routers' buffer {setting['tfd_buffer']}, reservations {res}. AQM targets: PIE {setting['pie_target']}, "
            f"CoDel and FQ-CoDel {setting['codel_target']}; RED thresholds {setting['red_thresholds']}.")
