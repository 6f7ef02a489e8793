"""Fast quality estimate from the trace and the delivery pattern alone (no decoding).

For each frame it answers two questions.

1. *Decodable* (EvalVid's notion): all its slices arrived and so did its references, recursively.
   An I frame needs nothing else; a P frame needs the previous anchor (I/P) in decode order; a B
   frame needs the anchors before and after it in display order. This is exact for encodes with
   one reference frame and no B pyramid (our default); with more references it is optimistic.
   Parameter sets (type X rows) are not tracked: the trace does not say which X rows they are.

2. *Estimated distortion*, as mean squared error `E` against the undamaged decode, built up in
   the MSE domain with the per-frame numbers an encode stores in `*.frames.csv`:
   - a frame that lost a fraction `a` of its slices gets `KAPPA · a · C̄ · (C / C̄)^GAMMA`, where
     `C` is the MSE between its undamaged picture and the previous anchor's (what copy
     concealment would show) and `C̄` its mean over the clip; FFmpeg's motion-guessing
     concealment does better than copying, the more so the more the picture moved, hence
     `KAPPA`, and `GAMMA < 1` when large differences are mostly motion it follows. The first
     picture has no previous anchor: its `C` is the mean `C` of the other I frames;
   - a P frame inherits `LAMBDA · E` of its reference, a B frame `LAMBDA · mean(E)` of its two;
   - a frame lost whole is not shown: its slot repeats the previous one, adding the previous
     picture's MSE; as a reference it is replaced by the previous anchor (adding `C`), as
     FFmpeg's frame-number gap handling does.
   The estimated PSNR against the source is then `10 log10(255² / (D_ref + E))`, with `D_ref` the
   encode's own distortion (errors assumed uncorrelated with coding noise).

`LAMBDA` and `KAPPA` are defaults fitted against real decodes of the bundled CIF clip (see
docs/models/video.md, Validation); they are content dependent, so `calibrate.py` fits them per
trace and `video estimate` uses a trace's calibration when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pictures.metrics import psnr
from ..traces.trace import NalTrace

__all__ = ["LAMBDA", "KAPPA", "GAMMA", "FrameDelivery", "frame_delivery", "decodable", "Estimate", "estimate"]

LAMBDA = 0.9  # fraction of a reference's error carried into a frame predicted from it
KAPPA = 0.9  # residual error of FFmpeg's concealment relative to copying the previous anchor
GAMMA = 1.0  # concealment cost grows as C^GAMMA around the clip's mean C (1: proportional to C)


@dataclass
class FrameDelivery:
    """Per decode-order frame."""

    slices: np.ndarray  # int: VCL NAL units
    slices_received: np.ndarray  # int
    nonvcl_lost: np.ndarray  # int: X rows not received

    @property
    def intact(self) -> np.ndarray:
        return self.slices_received == self.slices

    @property
    def lost(self) -> np.ndarray:
        return self.slices_received == 0

    @property
    def lost_fraction(self) -> np.ndarray:
        return 1.0 - self.slices_received / self.slices


def frame_delivery(trace: NalTrace, received: np.ndarray) -> FrameDelivery:
    vcl = trace.vcl
    n = trace.n_frames
    slices = np.bincount(trace.frame[vcl], minlength=n)
    got = np.bincount(trace.frame[vcl & received], minlength=n)
    x_lost = np.bincount(trace.frame[~vcl & ~received], minlength=n)
    return FrameDelivery(slices, got, x_lost)


def _references(trace: NalTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per decode-order frame: type, display, and the decode indices of its L0/L1 anchors (-1: none)."""
    ftype = trace.frame_type()
    disp = trace.frame_display()
    n = ftype.size
    l0 = np.full(n, -1, np.int64)
    l1 = np.full(n, -1, np.int64)
    anchors = np.flatnonzero(ftype != 2)
    anchor_disp = disp[anchors]
    order = np.argsort(anchor_disp)
    a_sorted, ad_sorted = anchors[order], anchor_disp[order]
    for k in range(n):
        if ftype[k] == 0:
            continue
        pos = np.searchsorted(ad_sorted, disp[k])  # anchors strictly before this display slot
        if pos > 0:
            l0[k] = a_sorted[pos - 1]
        if ftype[k] == 2 and pos < ad_sorted.size and ad_sorted[pos] == disp[k]:
            pos += 1
        if ftype[k] == 2 and pos < ad_sorted.size:
            l1[k] = a_sorted[pos]
    return ftype, disp, l0, l1


def decodable(trace: NalTrace, fd: FrameDelivery) -> np.ndarray:
    """Per decode-order frame: all slices and (recursively) all references arrived."""
    ftype, _, l0, l1 = _references(trace)
    ok = fd.intact.copy()
    for k in range(ok.size):  # references precede their users in decode order
        if not ok[k]:
            continue
        if ftype[k] != 0 and (l0[k] < 0 or not ok[l0[k]]):
            ok[k] = False
        elif ftype[k] == 2 and l1[k] >= 0 and not ok[l1[k]]:
            ok[k] = False
    return ok


@dataclass
class Estimate:
    """Per display-order frame estimates."""

    decodable: np.ndarray  # bool
    shown: np.ndarray  # bool: the decoder outputs a picture for this slot (some slice arrived)
    err_mse_y: np.ndarray  # estimated MSE against the undamaged decode
    err_mse_yuv: np.ndarray
    psnr_y: np.ndarray | None  # against the source (needs frames file with ref_mse)
    psnr_yuv: np.ndarray | None

    def summary(self) -> dict:
        out = {
            "frames": int(self.decodable.size),
            "decodable_frame_rate": float(self.decodable.mean()),
            "shown_frames": int(self.shown.sum()),
            "mean_psnr_y_vs_decode_db": float(np.mean(psnr(self.err_mse_y))),
        }
        if self.psnr_y is not None:
            out["mean_psnr_y_vs_source_db"] = float(np.mean(self.psnr_y))
        if self.psnr_yuv is not None:
            out["mean_psnr_yuv_vs_source_db"] = float(np.mean(self.psnr_yuv))
        return out


def estimate(trace: NalTrace, received: np.ndarray, frames: dict[str, np.ndarray] | None = None, *,
             lam: float = LAMBDA, kappa: float = KAPPA, gamma: float = GAMMA,
             planes: tuple[str, ...] = ("y", "yuv")) -> Estimate:
    """Estimate per-frame decodability and distortion. Without `frames` only decodability and
    whether a picture is shown are meaningful (the error columns are NaN). `lam`, `kappa`: the
    constants (a trace's calibration, `calibrate.py`, or the defaults); `planes`: which error
    columns to compute (`("y",)` leaves the YUV ones NaN/None)."""
    fd = frame_delivery(trace, received)
    ok = decodable(trace, fd)
    ftype, disp, l0, l1 = _references(trace)
    n = ftype.size
    by_disp_ok = np.empty(n, bool)
    by_disp_ok[disp] = ok
    shown = np.empty(n, bool)
    shown[disp] = ~fd.lost
    if frames is None:
        nan = np.full(n, np.nan)
        return Estimate(by_disp_ok, shown, nan, nan.copy(), None, None)
    if frames["display"].size != n:
        raise ValueError(f"frames file has {frames['display'].size} frames, trace has {n}")
    a = fd.lost_fraction
    out = {"yuv": np.full(n, np.nan)}
    for plane in planes:
        c_anchor = frames[f"anchor_mse_{plane}"][disp]  # per decode-order frame
        c_prev = frames[f"prev_mse_{plane}"]  # per display slot
        # What concealing a slice costs. The first picture has no previous anchor (its
        # anchor_mse is against mid-grey, what a wholly lost first frame shows); FFmpeg conceals
        # its missing slices spatially, so take the typical cost of the other I frames instead.
        c_conceal = c_anchor.copy()
        first, others = disp == 0, (ftype == 0) & (disp != 0)
        if others.any():
            c_conceal[first] = float(np.mean(c_anchor[others]))
        if gamma != 1.0:  # compress large copy differences (motion the decoder's MV guessing follows)
            c_mean = float(np.mean(c_conceal))
            if c_mean > 0:
                c_conceal = c_mean * (c_conceal / c_mean) ** gamma
        e_ref = np.zeros(n)  # error of each anchor as a reference
        e_disp = np.full(n, np.nan)  # error of what each display slot shows
        for k in np.flatnonzero(ftype != 2):  # anchors, in decode order
            inherited = lam * e_ref[l0[k]] if ftype[k] == 1 and l0[k] >= 0 else 0.0
            if fd.lost[k]:
                e_ref[k] = (e_ref[l0[k]] if l0[k] >= 0 else 0.0) + c_anchor[k]
            else:
                e_ref[k] = inherited + kappa * a[k] * c_conceal[k]
                e_disp[disp[k]] = e_ref[k]
        for k in np.flatnonzero(ftype == 2):
            if not fd.lost[k]:
                refs = [e_ref[r] for r in (l0[k], l1[k]) if r >= 0]
                e_disp[disp[k]] = lam * (np.mean(refs) if refs else 0.0) + kappa * a[k] * c_conceal[k]
        for d in range(n):  # slots of wholly lost frames repeat the previous slot
            if np.isnan(e_disp[d]):
                e_disp[d] = (e_disp[d - 1] if d > 0 else 0.0) + c_prev[d]
        out[plane] = e_disp
    ref_y, ref_yuv = frames["ref_mse_y"], frames["ref_mse_yuv"]
    have_src = bool(np.isfinite(ref_y).all())
    p_y = psnr(ref_y + out["y"]) if have_src else None
    p_yuv = psnr(ref_yuv + out["yuv"]) if have_src and "yuv" in planes else None
    return Estimate(by_disp_ok, shown, out["y"], out["yuv"], p_y, p_yuv)


