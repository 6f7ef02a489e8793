"""One run of the TCP Interactive reproduction as the client sees it: each frame's rung, timing
and delivery (:func:`load_run`), the timeouts per burst, the player's screen (:func:`play`,
:func:`slot_plan`: a slot whose frame is not shown shows the last picture shown) and its SNR
*as shown*, frozen slots measured on real decoded pictures (:func:`add_shown`).

The player (:data:`RECEIVERS`, the ``receiver`` choice) shows frame f at ``ideal_f + o``, o its
playout offset, first the discard threshold D:

- ``resync`` (default): a frame that arrives after its time is dropped (its slot frozen) and the
  player re-synchronises on it: o becomes that frame's lag (arrival − ideal), so playback
  resumes at the live position, the newest frame to arrive, and later frames that keep up are
  shown. The offset only grows (a player that skipped ahead to lower its latency would drop
  frames that arrived in time: not modelled); the growth is a stall, counted (``stall_s_D``).
- ``rebuffer``: a late frame is waited for (the player stalls until it arrives, o becomes its
  lag) and shown: no frame that arrives is dropped; the stalls are counted.
- ``freeze``: the receiver before issue 38: o stays D, so once the stream falls more than D
  behind every later frame is frozen for the rest of the run.

With ``resync`` and ``rebuffer`` the frames shown at a threshold D are a superset of those at
any smaller D (by induction: the offset at D is never below the offset at a smaller D), so the
screen, and with it the SNR as shown, can only improve with D (``tests/reproduce``)."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from qoelab import paths
from qoelab.errors import QoelabError

LADDER = "data/traces/mpeg2_ladder.frames.csv.gz"
#: Each source picture's variance per plane (``mpeg2_ladder.py``): the SNR that MPEG-2's reference
#: encoder prints, 10 log10(variance / MSE), beside the PSNR (issue 38 item 6).
SOURCE = "data/traces/mpeg2_ladder.source.csv.gz"
FPS = 30
#: Discard thresholds (s) of the receiver whose screen is measured; the default is 1 s (the
#: ``deadline`` choice).
THRESHOLDS = (0.5, 1.0, 2.0, 4.0, 8.0)
MAIN_D = 1.0
#: The players whose screen can be measured (module doc); the first is the default.
RECEIVERS = ("resync", "rebuffer", "freeze")


@cache
def ladder() -> dict[str, np.ndarray]:
    """The bundled ladder's columns, reshaped (rung, decode-order frame)."""
    from qoelab.video.sources.mpeg2_ladder import read_ladder

    t = read_ladder(paths.root() / LADDER)
    n = int(t["frame"].max()) + 1
    return {k: (v.reshape(-1, n) if k != "type" else v) for k, v in t.items()}


@cache
def snr_offsets() -> np.ndarray:
    """(pictures, 3): per display index and plane Y/U/V, what turns the ladder's PSNR into the
    variance-normalised SNR (:func:`qoelab.video.sources.mpeg2_ladder.snr_offset_db`)."""
    from qoelab.video.sources.mpeg2_ladder import read_source_variance, snr_offset_db

    return snr_offset_db(read_source_variance(paths.root() / SOURCE, ladder()["frame"].shape[1]))


@dataclass
class Run:
    """One run's frames (decode order): the rung each was sent from, its timing, and the
    timeouts and outages."""

    rung: np.ndarray
    size: np.ndarray
    target: np.ndarray
    written_ns: np.ndarray
    delivered_ns: np.ndarray  # -1: not delivered by the end of the run
    ideal_ns: np.ndarray
    rto_ns: np.ndarray
    outages_ns: list[tuple[int, int]]

    def late(self, d_s: float) -> np.ndarray:
        """Per frame: not shown in its slot at threshold ``d_s`` (late or never delivered)."""
        return (self.delivered_ns < 0) | (self.delivered_ns > self.ideal_ns + int(round(d_s * 1e9)))


def load_run(run_dir: Path) -> Run:
    """Reads one run's ``messages``, ``probe_app``, ``probe_rto`` and ``outages`` tables."""
    import pyarrow.parquet as pq

    from qoelab.video.receiver.messages import frame_times_at, read_messages

    app = pq.read_table(run_dir / "probe_app.parquet").to_pydict()
    names = np.asarray(app["name"], dtype=object)
    val = np.asarray(app["value"])
    frame = val[names == "tc_frame"].astype(np.int64)
    n = ladder()["frame"].shape[1]
    if not np.array_equal(frame, np.arange(n)):
        raise QoelabError(f"{run_dir}: the app probe's tc_frame rows are not the ladder's frames 0 … {n - 1} "
                          f"({frame.size} rows): not a run of this reproduction")
    rung = val[names == "tc_rung"].astype(np.int64)
    size = val[names == "tc_bytes"].astype(np.int64)
    target = val[names == "tc_target_bps"]
    ts_ns = np.round(np.arange(frame.size) * 1e9 / FPS).astype(np.int64)
    ft = frame_times_at(ts_ns, read_messages(run_dir / "messages.parquet", "video"), 0.0,
                        frame_bytes=size, path=str(run_dir / "messages.parquet"))
    rto = pq.read_table(run_dir / "probe_rto.parquet").to_pydict()
    out = pq.read_table(run_dir / "outages.parquet").to_pydict()
    bursts = sorted({(s, e) for l, s, e in zip(out["link"], out["start_ns"], out["end_ns"]) if l == "R->C"})
    delivered = np.where(ft.delivered, ft.delivered_ns, -1)
    return Run(rung, size, target, ft.written_ns, delivered, ft.ideal_ns, np.asarray(rto["t_ns"], np.int64), bursts)


def timeouts_per_burst(run: Run) -> list[int]:
    """Timeouts counted to the burst that caused them: from its start to the next burst's."""
    starts = [s for s, _ in run.outages_ns]
    counts = [0] * len(starts)
    for t in run.rto_ns:
        k = int(np.searchsorted(starts, t, side="right")) - 1
        if k >= 0:
            counts[k] += 1
    return counts


METRICS = ("delay_s", "delay_p95_s", "transfer_s", "undelivered", "timeouts", "timeouts_per_burst", "rate_mbps",
           "snr_y", "snr_u", "snr_v", "vsnr_y", "vsnr_u", "vsnr_v", *(f"late_pct_{d:g}" for d in THRESHOLDS),
           *(f"behind_pct_{d:g}" for d in THRESHOLDS))
SHOWN = ("shown_y", "shown_u", "shown_v", *(f"shown_y_{d:g}" for d in THRESHOLDS),
         *(f"frozen_pct_{d:g}" for d in THRESHOLDS), *(f"stall_s_{d:g}" for d in THRESHOLDS))


def run_metrics(run_dir: Path, p: dict[str, Any]) -> dict[str, float]:
    """One run's numbers (module doc); the SNR as shown is added by :func:`add_shown`."""
    run = load_run(run_dir)
    lad = ladder()
    got = run.delivered_ns >= 0
    delay = (run.delivered_ns[got] - run.ideal_ns[got]) / 1e9
    f = np.arange(run.rung.size)
    psnr = {c: lad[f"psnr_{c}"][run.rung, f] for c in "yuv"}
    off = snr_offsets()[lad["display"][run.rung, f]]
    nan = float("nan")
    out = {"delay_s": float(delay.mean()) if delay.size else nan,
           "delay_p95_s": float(np.percentile(delay, 95)) if delay.size else nan,
           "transfer_s": float(run.delivered_ns.max() - run.written_ns.min()) / 1e9 if got.all() else nan,
           "undelivered": float((~got).sum()),
           "timeouts": float(run.rto_ns.size),
           "timeouts_per_burst": float(np.mean(timeouts_per_burst(run))) if run.outages_ns else nan,
           "rate_mbps": float(run.size.sum()) * 8 * FPS / run.size.size / 1e6,
           **{f"snr_{c}": float(psnr[c].mean()) for c in "yuv"},
           **{f"vsnr_{c}": float((psnr[c] + off[:, k]).mean()) for k, c in enumerate("yuv")}}
    for d in THRESHOLDS:
        late = run.late(d)
        out[f"late_pct_{d:g}"] = 100.0 * float(late.mean())
        out[f"behind_pct_{d:g}"] = 100.0 * float(never_catches_up(late))
    return out


def never_catches_up(late: np.ndarray) -> bool:
    """Whether a run, once one frame is late for the first schedule, has every later frame late too
    (its playout never catches up): then its late share is the share of frames from its first late
    frame on, which the burst schedule alone fixes, whatever the sender does afterwards."""
    if not late.any():
        return False
    return bool(late[int(np.argmax(late)):].all())


def _by_slot(n: int) -> np.ndarray:
    """The decode-order frame of each display slot."""
    disp = ladder()["display"][0]  # the same in every rung (closed, aligned GOPs; tests/video)
    by_slot = np.empty(n, np.int64)
    by_slot[disp[:n]] = np.arange(n)
    return by_slot


def play(run: Run, d_s: float, receiver: str = RECEIVERS[0]) -> tuple[np.ndarray, float]:
    """The player ``receiver`` (module doc) at threshold ``d_s``: per display slot, whether its
    own frame is shown, and the seconds it stalled (its playout offset's growth)."""
    if receiver not in RECEIVERS:
        raise QoelabError(f"receiver {receiver!r}: expected one of {', '.join(RECEIVERS)}")
    by_slot = _by_slot(run.rung.size)
    if receiver == "freeze":
        return ~run.late(d_s)[by_slot], 0.0
    lag = (run.delivered_ns - run.ideal_ns)[by_slot]
    arrived = run.delivered_ns[by_slot] >= 0
    o0 = o = int(round(d_s * 1e9))
    shown = np.zeros(by_slot.size, bool)
    for i in np.flatnonzero(arrived):
        if lag[i] <= o:
            shown[i] = True
        else:
            o = int(lag[i])  # re-synchronised on the newest arrival (resync) or waited for (rebuffer)
            shown[i] = receiver == "rebuffer"
    return shown, (o - o0) / 1e9


def slot_plan(run: Run, d_s: float, receiver: str = RECEIVERS[0]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What each display slot shows at threshold ``d_s`` with player ``receiver``: per slot
    ``i``, the rung ``r`` and display index ``j`` of the picture on screen (``j == i``: its own;
    ``j < i``: frozen on the last picture shown; ``j == -1``: nothing shown yet). Slots of
    frames the transcoder did not send are left out."""
    n = run.rung.size
    by_slot = _by_slot(n)
    fresh = play(run, d_s, receiver)[0]  # slot i's own frame is on screen
    last = np.where(fresh, np.arange(n), -1)
    last = np.maximum.accumulate(last)
    rung_of_slot = run.rung[by_slot]
    r = np.where(last >= 0, rung_of_slot[np.maximum(last, 0)], -1)
    return r, last, np.arange(n)


def frozen_pairs(dirs: list[Path], receivers: tuple[str, ...] = RECEIVERS) -> set[tuple[int, int, int]]:
    """The (rung, picture, slot) of every frozen display slot of the runs in ``dirs`` at every
    threshold of :data:`THRESHOLDS` with every player of ``receivers``: the pictures
    :func:`add_shown` needs measured."""
    want: set[tuple[int, int, int]] = set()
    for d in dirs:
        run = load_run(d)
        for th in THRESHOLDS:
            for rc in receivers:
                rung, j, i = slot_plan(run, th, rc)
                frozen = (j >= 0) & (j != i)
                want.update(zip(rung[frozen].tolist(), j[frozen].tolist(), i[frozen].tolist()))
    return want


def measured(work: Path, want: set[tuple[int, int, int]] = frozenset(),  # type: ignore[assignment]
             log: Callable[[str], None] = print) -> dict[tuple[int, int, int], tuple[float, float, float]]:
    """PSNR-Y/U/V of each frozen slot ``(rung, picture, slot)``: those kept in
    ``work/frozen_psnr.npz`` (with the ladder's digest: dropped if it changed), plus the pairs of
    ``want`` not kept yet, measured on real decoded pictures
    (:func:`qoelab.video.quality.mpeg2_pictures.frozen_psnr`) and added to the file."""
    cache_path = work / "frozen_psnr.npz"
    ladder_sha = hashlib.sha256((paths.root() / LADDER).read_bytes()).hexdigest()
    known: dict[tuple[int, int, int], tuple[float, float, float]] = {}
    if cache_path.is_file():
        try:
            z = np.load(cache_path)
            if str(z["ladder_sha256"]) == ladder_sha:
                known = {(int(a), int(b), int(c)): (float(y), float(u), float(v))
                         for a, b, c, y, u, v in zip(z["r"], z["j"], z["i"], z["y"], z["u"], z["v"])}
        except (OSError, KeyError, ValueError):
            known = {}  # unreadable: measured again
    missing = sorted(set(want) - set(known))
    if missing:
        from qoelab.video.quality.mpeg2_pictures import frozen_psnr

        log(f"interactive: measuring {len(missing)} frozen display slot(s) on decoded pictures")
        with tempfile.TemporaryDirectory(prefix=".pictures-", dir=work) as tmp:
            known.update(frozen_psnr(paths.root() / LADDER, missing, Path(tmp), log=lambda m: log(f"  {m}")))
        keys = sorted(known)
        arr = np.asarray([known[k] for k in keys]).reshape(-1, 3)
        ka = np.asarray(keys, np.int64).reshape(-1, 3)
        tmp_path = cache_path.with_suffix(".tmp.npz")
        np.savez(tmp_path, r=ka[:, 0], j=ka[:, 1], i=ka[:, 2], y=arr[:, 0], u=arr[:, 1], v=arr[:, 2],
                 ladder_sha256=np.asarray(ladder_sha))
        tmp_path.replace(cache_path)
    return known


def add_shown(rep_rows: list[dict[str, Any]], dirs: list[Path], work: Path, log: Callable[[str], None] = print,
              receiver: str = RECEIVERS[0]) -> None:
    """Adds the SNR as shown by player ``receiver`` (:data:`SHOWN`, with the share of frozen
    slots and the stall per threshold) to each row of ``rep_rows`` (runs in ``dirs``), from real
    decoded pictures for the frozen slots (:func:`measured`: a resumed report measures only
    pictures it has not measured before)."""
    lad = ladder()
    rungs, n = lad["psnr_y"].shape
    by_display = np.empty((rungs, n, 3))
    for k in range(rungs):
        by_display[k, lad["display"][k]] = np.stack([lad[f"psnr_{c}"][k] for c in "yuv"], axis=-1)
    known = measured(work, frozen_pairs(dirs, (receiver,)), log)
    for row, d in zip(rep_rows, dirs):
        run = load_run(d)
        for th in THRESHOLDS:
            rung, j, i = slot_plan(run, th, receiver)
            row[f"frozen_pct_{th:g}"] = 100.0 * float(np.mean(j != i))
            row[f"stall_s_{th:g}"] = play(run, th, receiver)[1]
            ok = j >= 0
            q = np.empty((int(ok.sum()), 3))
            rr, jj, ii = rung[ok], j[ok], i[ok]
            own = jj == ii
            q[own] = by_display[rr[own], ii[own]]
            q[~own] = np.asarray([known[(a, b, c)] for a, b, c in zip(rr[~own].tolist(), jj[~own].tolist(),
                                                                       ii[~own].tolist())]).reshape(-1, 3)
            mean = q.mean(axis=0) if q.size else np.full(3, np.nan)
            row[f"shown_y_{th:g}"] = float(mean[0])
            if th == MAIN_D:
                row.update({"shown_y": float(mean[0]), "shown_u": float(mean[1]), "shown_v": float(mean[2])})
