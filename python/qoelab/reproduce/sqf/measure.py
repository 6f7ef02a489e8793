"""A finished SQF run → one row of numbers: loss, jitter and rates of the testbed, and the
model check's events from SQF's per-flow backlog samples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq


# Metrics: a finished run → one row
# --------------------------------------------------------------------------------------------


def _flows(d: Path) -> dict[str, dict[str, Any]]:
    t = pq.read_table(d / "flows.parquet").to_pylist()
    return {r["flow"]: r for r in t}


def _duration(d: Path) -> float:
    return float(json.loads((d / "summary.json").read_text())["duration_s"])


def backlog_matrix(t_s: Any, flow: Any, nbytes: Any) -> tuple[np.ndarray, list[str], np.ndarray]:
    """SQF's per-flow backlog samples (``flow_queues`` rows ``t_s, flow, bytes``: one per active
    flow and instant, an empty flow name for an instant with nothing queued) as ``(instants,
    names, bytes)``: the sampling instants, the flows' names sorted, and ``bytes[k, j]`` flow
    ``names[k]``'s backlog at ``instants[j]`` (0 where it had nothing queued). Columnar: a 600-s
    run holds ~10^6 samples (a per-row loop took minutes)."""
    t = np.asarray(t_s, dtype=float)
    by = np.asarray(nbytes, dtype=float)
    instants, inv = np.unique(t, return_inverse=True)
    labels, code = np.unique(np.asarray(flow, dtype=object).astype(str), return_inverse=True)
    names = [str(f) for f in labels if f]
    m = np.zeros((len(names), instants.size))
    for k, f in enumerate(labels):
        if f:
            sel = code == k
            m[names.index(str(f)), inv[sel]] = by[sel]
    return instants, names, m


def read_backlogs(d: Path, link: str | None = None) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """A run folder's ``flow_queues.parquet`` (of ``link`` only, if given) as
    :func:`backlog_matrix` plus ``dt``: the time from each instant to the next (the last one to
    the run's end)."""
    fq = pq.read_table(d / "flow_queues.parquet", columns=["link", "t_s", "flow", "bytes"])
    if link is not None:
        fq = fq.filter(fq.column("link").to_numpy(zero_copy_only=False) == link)
    instants, names, m = backlog_matrix(fq.column("t_s").to_numpy(), fq.column("flow").to_pylist(),
                                        fq.column("bytes").to_numpy())
    return instants, names, m, np.diff(np.append(instants, max(_duration(d), instants[-1] if instants.size else 0.0)))


#: The per-repetition metrics of a testbed run, aggregated with 95 % intervals.
METRICS = ("video_loss", "audio_loss", "video_jitter_ms", "audio_jitter_ms", "video_mbps", "data_share_mbps", "jain")


def _testbed_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """Audio/video loss and jitter, the video's rate, the downloads' summed goodput and Jain's
    index (NaN with no download)."""
    fl = _flows(d)
    n = c.get("n", 0)
    return {
        "video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
        "video_jitter_ms": fl["video"]["ipdv_mean_abs_s"] * 1e3, "audio_jitter_ms": fl["audio"]["ipdv_mean_abs_s"] * 1e3,
        "video_mbps": fl["video"]["throughput_bps"] / 1e6,
        "data_share_mbps": sum(fl[f"data{i}"]["goodput_bps"] for i in range(n)) / 1e6,
        "jain": json.loads((d / "summary.json").read_text())["jain_index"] if n else float("nan"),
    }


def _loss_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    fl = _flows(d)
    n = c.get("n", 0)
    return {"video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
            "data_share_mbps": sum(fl[f"data{k}"]["goodput_bps"] for k in range(n)) / 1e6}


def _jitter_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    fl = _flows(d)
    return {"video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"]}


def _first(t: np.ndarray, mask: np.ndarray) -> float:
    k = np.flatnonzero(mask)
    return float(t[k[0]]) if k.size else float("nan")


def _model_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """A model-check run: the model's event and the scheduler's, from SQF's per-flow backlog
    samples (10 ms), after the last TCP flow has started.

    - ``first_x_ge_b_s``: first time the video's backlog reaches b = B/(n+1) packets (the
      violation of eq. (1), the event whose probability by T is the model's p(T));
    - ``first_lost_priority_s``: first time some active TCP flow has a backlog no larger than
      the video's non-empty one (what SQF acts on; ``deprioritised_fraction``'s test);
    - ``deprioritised_time_fraction``: the time share with that test true (the number the
      earlier report compared with p(T));
    - ``deprioritised_after_first``: the same share counted from ``first_lost_priority_s`` on
      (how much of the rest of the run the video spends de-prioritised; the mechanism grid,
      :mod:`~qoelab.reproduce.sqf.mechanism`, measures the episodes themselves).
    """
    from qoelab.models import sqf_analytic as sa

    n = int(c["n"])
    lam_mbps = float(c["peak_rate_mbps"])
    instants, names, m, dt = read_backlogs(d)
    video = m[names.index("video")] if "video" in names else np.zeros(instants.size)
    others = m[[k for k, f in enumerate(names) if f != "video"]]
    duration = _duration(d)
    # The TCP flows start 50 ms apart (model-check.toml): count from the last start on.
    t_start = 0.05 * (n - 1)
    keep = instants >= t_start
    b_bytes = sa.BUFFER_PKTS * sa.PKT_BYTES / (n + 1)
    active = others > 0
    lost = (video > 0) & np.any(active & (others <= video[np.newaxis, :]), axis=0)
    first_lost = _first(instants[keep], lost[keep])
    after = keep & (instants >= first_lost) if not math.isnan(first_lost) else np.zeros_like(keep)
    return {
        "first_x_ge_b_s": _first(instants[keep], video[keep] >= b_bytes),
        "first_lost_priority_s": first_lost,
        "deprioritised_time_fraction": sa.deprioritised_fraction(video[keep], others[:, keep], dt[keep]),
        "deprioritised_after_first": float(np.sum(dt[after] * lost[after]) / np.sum(dt[after])) if after.any() else float("nan"),
        "video_loss": _flows(d)["video"]["loss_ratio"],
        "model_p_T": sa.p_deprioritised(duration - t_start, lam_mbps * 1e6, n),
        "model_T_bar_s": sa.mean_prioritised_time(lam_mbps * 1e6, n),
        "duration_s": duration,
    }


MODEL_METRICS = ("first_x_ge_b_s", "first_lost_priority_s", "deprioritised_time_fraction", "deprioritised_after_first",
                 "video_loss", "model_p_T", "model_T_bar_s")

