"""``qoelab demo``: the bundled demo scenario (one CIF video over RTP and four TCP CUBIC
downloads on a 10 Mbit/s access line) under each queue discipline side by side, the question a
user of this lab brings: which mechanism protects the video, and at what cost to the downloads?

Each mechanism replaces only the bottleneck's queue (and, for DiffServ, marks the video's
packets EF at its sender); everything else, the seed included, is the demo scenario with the user's ``--set``
overrides. Per mechanism: the video's loss, mean and 99th-percentile delay, RFC 3550 jitter,
its PSNR-Y against the source from a real decode of what arrived within a 500-ms playout delay
(ffmpeg's concealment; the bitstream is re-encoded once into ``DIR/video/``), and the downloads'
goodput and Jain index. Written into ``DIR``: one run folder per mechanism, ``comparison.csv``,
``comparison.json`` and ``comparison.png``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Callable

from qoelab.errors import QoelabError
from qoelab.mechanisms import Mechanism, select

__all__ = ["MECHANISMS", "Mechanism", "compare", "figure"]

#: The demo's bottleneck: ``links[BOTTLENECK]`` of ``scenarios/demo/scenario.toml``.
BOTTLENECK = 2
PLAYOUT_DELAY_S = 0.5


#: The mechanisms compared, in the table's order (:data:`qoelab.mechanisms.MECHANISMS` holds every
#: one the core has; ``qoelab reproduce qos`` compares them all on two testbeds). Buffers are the
#: demo's 50 packets wherever the discipline has a packet limit, so only the scheduling and
#: dropping rule differs.
MECHANISMS: tuple[Mechanism, ...] = select("fifo", "sqf", "fq_codel", "pie", "diffserv_ef")


def _metrics(res: Any, video: str, downloads: list[str]) -> dict[str, float]:
    v = res.flow(video)
    # The downloads' goodput together: every byte they delivered over the whole run (they start
    # one after another, so their own rates, each over its own lifetime, do not add up).
    delivered = sum(res.flow(d)["delivered_bytes"] for d in downloads)
    return {"video_loss_pct": 100.0 * v["loss_ratio"], "video_delay_ms": 1e3 * v["delay_mean_s"],
            "video_delay_p99_ms": 1e3 * v["delay_p99_s"], "video_jitter_ms": 1e3 * v["jitter_rfc3550_s"],
            "downloads_goodput_mbps": 8.0 * delivered / res.summary["duration_s"] / 1e6,
            "downloads_jain": res.jain(downloads)}


def compare(out: Path, load: Callable[[], Any], *, mechanisms: tuple[Mechanism, ...] = MECHANISMS,
            decode: bool = True, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Runs the scenario ``load()`` returns (a fresh :class:`qoelab.Scenario` each call: the
    demo with the user's overrides) under each of ``mechanisms`` into ``out/<name>/`` and returns
    one row per mechanism (module doc); ``decode`` false leaves the PSNR out (no encode, no
    decode)."""
    from qoelab import outdir
    from qoelab.paths import scenario_path

    base = scenario_path("demo").parent
    rows: list[dict[str, Any]] = []
    for m in mechanisms:
        sc = load()
        links = sc.data.get("links")
        if not (isinstance(links, list) and len(links) > BOTTLENECK and isinstance(links[BOTTLENECK], dict)):
            raise QoelabError(f"demo: links[{BOTTLENECK}] (the bottleneck) is missing after --set")
        links[BOTTLENECK]["queue"] = dict(m.queue)
        flows = [f for f in sc.data.get("flows", []) if isinstance(f, dict)]
        for f in flows:
            f.update(m.flow_sets.get(str(f.get("name")), {}))
        run_dir = outdir.check(out / m.name)
        with outdir.staged(run_dir) as tmp:
            res = sc.run(tmp)
            res.write_into(tmp, plot=False)
        names = [str(n) for n in res.flows.column("flow").to_pylist()]
        if "video" not in names:
            raise QoelabError("demo: no flow named 'video' (changed by --set?)")
        downloads = [n for n in names if n.startswith("download")]
        row: dict[str, Any] = {"mechanism": m.name, "label": m.label, **_metrics(res, "video", downloads)}
        video = next(f for f in flows if f.get("name") == "video")
        row["trace"] = str((base / video["app"]["trace"]).resolve())
        rows.append(row)
        log(f"  {m.label}: video loss {row['video_loss_pct']:.2f} %, delay {row['video_delay_ms']:.1f} ms")
    if decode:
        _decode(out, rows, log)
    return rows


def _decode(out: Path, rows: list[dict[str, Any]], log: Callable[[str], None]) -> None:
    """Adds ``video_psnr_db`` (a real decode of each run's delivery) to every row."""
    from qoelab.video.quality.evaluate import evaluate
    from qoelab.video.sources.bundle import cif_bitstream

    traces = {r["trace"] for r in rows}
    if len(traces) != 1 or not next(iter(traces)).endswith("cif_bbb_qp26.trace.csv"):
        log("  PSNR: the video flow's trace is not the bundled CIF trace; not decoded")
        for r in rows:
            r["video_psnr_db"] = math.nan
        return
    log("  decoding each delivery (the CIF bitstream re-encoded once into video/)")
    bit, recipe = cif_bitstream(out / "video")
    for r in rows:
        e = evaluate(r["trace"], bit, out / r["mechanism"] / "packets.parquet", playout_delay_s=PLAYOUT_DELAY_S,
                     flows=["video"], recipe_path=recipe, stream_start_ns=0)
        r["video_psnr_db"] = float(e.summary["mean_psnr_y_vs_source_db"])


#: The comparison's columns: key, heading, unit, format.
COLUMNS = (("label", "mechanism", "", ""), ("video_loss_pct", "video loss", "%", ".2f"),
           ("video_delay_ms", "video delay", "ms", ".1f"), ("video_delay_p99_ms", "p99 delay", "ms", ",.0f"),
           ("video_jitter_ms", "jitter", "ms", ".2f"), ("video_psnr_db", "video PSNR-Y", "dB", ".1f"),
           ("downloads_goodput_mbps", "downloads", "Mbit/s", ".2f"), ("downloads_jain", "Jain", "", ".3f"))


def shown_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """The columns with a value in some row (no PSNR column without a decode)."""
    return [c for c in COLUMNS if any(c[0] in r for r in rows)]


def write(out: Path, rows: list[dict[str, Any]]) -> None:
    """``comparison.csv`` and ``comparison.json`` (atomic; the trace path is left out)."""
    from qoelab.outdir import write_atomic

    keys = [c[0] for c in shown_columns(rows)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["mechanism", *keys])
    for r in rows:
        w.writerow([r["mechanism"], *(r.get(k, "") if isinstance(r.get(k), str) else f"{r.get(k, math.nan):.6g}"
                                      for k in keys)])
    write_atomic(out / "comparison.csv", buf.getvalue())
    doc = [{k: v for k, v in r.items() if k != "trace"} for r in rows]
    write_atomic(out / "comparison.json", json.dumps(doc, indent=1, allow_nan=True) + "\n")


def figure(rows: list[dict[str, Any]], fh: Any) -> None:
    """One figure: per mechanism, the video's loss, delay and PSNR and the downloads' goodput."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("video_loss_pct", "video loss (%)"), ("video_delay_ms", "video mean delay (ms)"),
              ("video_psnr_db", "video PSNR-Y (dB)"), ("downloads_goodput_mbps", "downloads' goodput (Mbit/s)")]
    panels = [p for p in panels if any(math.isfinite(r.get(p[0], math.nan)) for r in rows)]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4), squeeze=False)
    labels = [r["label"] for r in rows]
    for ax, (k, title) in zip(axes[0], panels):
        vals = [r.get(k, math.nan) for r in rows]
        ax.bar(range(len(rows)), vals, color=[f"C{i}" for i in range(len(rows))])
        ax.set_xticks(range(len(rows)), labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        for i, v in enumerate(vals):
            if math.isfinite(v):
                ax.annotate(f"{v:.3g}", (i, v), ha="center", va="bottom", fontsize=7)
    fig.suptitle("qoelab demo: one video and four downloads on a 10 Mbit/s line, per queue discipline", fontsize=10)
    fig.tight_layout()
    fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
