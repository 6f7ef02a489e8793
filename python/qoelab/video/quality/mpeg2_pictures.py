"""Pictures of the MPEG-2 ladder, decoded: the quality of a *frozen* display slot.

The ladder (:mod:`qoelab.video.sources.mpeg2_ladder`) holds every rung's per-frame PSNR against the
source picture the frame shows. A player with a deadline shows a frame that arrives late as the
previous picture it showed (:mod:`qoelab.video.receiver.messages`): display slot ``i`` then shows the
decoded picture ``j < i`` of the rung ``r`` it was sent from, and its quality is the PSNR of that
picture against source picture ``i``, which no table of per-frame numbers holds. This module
computes it from real pictures: it re-encodes the rungs asked for with the ladder's own recipe
(the same ffmpeg command, checked frame by frame against the bundled sizes, so the bitstreams
are the ladder's), decodes them, renders the source, and measures each ``(r, j, i)`` pair.

PSNR per plane as ffmpeg's ``psnr`` filter (the ladder's numbers): ``10·log10(255² / MSE)`` over
the plane's samples, 100 dB for identical planes. Every re-decoded picture that is asked for is
checked against the ladder's own PSNR of it (to the table's 0.01 dB), so a decode that is not the
ladder's fails loudly instead of producing numbers.

Cost (2 cores): the source is rendered once (about 15 s), each rung that has a frozen picture is
encoded and decoded once (about 10 s each), and a pair costs about 2 ms of CPU (two threads
measure). The work folder (raw source: 1800 pictures × 506,880 bytes = 0.9 GB, plus the frozen
pictures) is the caller's, and is removed with it.
"""

from __future__ import annotations

import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..errors import VideoInputError
from ..pictures.decode import read_source_frames
from ..pictures.metrics import psnr
from ..sources.mpeg2_ladder import FPS, HEIGHT, WIDTH, _pictures, _source, encode_args, read_ladder
from ..tools import ffmpeg_version, run_ffmpeg

__all__ = ["FRAME_BYTES", "plane_psnr", "frozen_psnr"]

Y_BYTES = WIDTH * HEIGHT
C_BYTES = Y_BYTES // 4
FRAME_BYTES = Y_BYTES + 2 * C_BYTES  # yuv420p
_PLANES = ((0, Y_BYTES), (Y_BYTES, Y_BYTES + C_BYTES), (Y_BYTES + C_BYTES, FRAME_BYTES))


def plane_psnr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """PSNR-Y/U/V (dB) of yuv420p pictures ``a`` against ``b`` (uint8, the last axis one
    picture of :data:`FRAME_BYTES`; leading axes broadcast), ffmpeg's definition: 100 dB where a
    plane is identical. Shape: the broadcast leading shape + (3,)."""
    out = []
    for lo, hi in _PLANES:
        # Differences are exact in int16, their squares (<= 255²) in float32, and the sums (< 2^53)
        # in the float64 accumulator: the MSE is exact.
        d = np.subtract(a[..., lo:hi], b[..., lo:hi], dtype=np.int16).astype(np.float32)
        mse = np.einsum("...k,...k->...", d, d, dtype=np.float64) / (hi - lo)
        out.append(psnr(mse))
    return np.stack(out, axis=-1)


class _Ladder:
    """The bundled ladder and its recipe: what is needed to rebuild its pictures."""

    def __init__(self, frames: Path):
        self.frames = Path(frames)
        self.table = read_ladder(self.frames)
        self.n = int(self.table["frame"].max()) + 1
        self.rungs = int(self.table["rung"].max()) + 1
        recipe_path = self.frames.with_name(self.frames.name.replace(".frames.csv.gz", ".recipe.toml"))
        try:
            self.recipe = tomllib.loads(recipe_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise VideoInputError(recipe_path, f"cannot read the ladder's recipe: {exc}") from None
        self.recipe_path = recipe_path
        try:
            self.rates = [int(r) for r in self.recipe["config"]["rates_bps"]]
            self.threads = int(self.recipe["config"].get("threads", 2))
            filters = str(self.recipe["source"]["filters"])
        except (KeyError, TypeError, ValueError) as exc:
            raise VideoInputError(recipe_path, f"not a ladder recipe: {exc!r} missing or malformed") from None
        if len(self.rates) != self.rungs:
            raise VideoInputError(recipe_path, f"{len(self.rates)} rates for a ladder of {self.rungs} rungs")
        from ..sources.source import CLIP

        self.src_in, graph = _source(CLIP, self.n / FPS)
        if graph != filters:
            raise VideoInputError(recipe_path, "source.filters is not the source this version renders: rebuild the "
                                               "ladder (python -m qoelab.video.sources.bundle mpeg2_ladder)")
        self.graph = graph
        shape = (self.rungs, self.n)
        self.display = self.table["display"].reshape(shape)
        self.size = self.table["size_bytes"].reshape(shape)
        self.psnr = np.stack([self.table[c].reshape(shape) for c in ("psnr_y", "psnr_u", "psnr_v")], axis=-1)
        # per rung: display index → the ladder's PSNR of that picture
        self.psnr_by_display = np.empty_like(self.psnr)
        for r in range(self.rungs):
            self.psnr_by_display[r, self.display[r]] = self.psnr[r]


def _render_source(lad: _Ladder, path: Path, say: Callable[[str], None]) -> np.ndarray:
    """The ladder's source pictures as a raw yuv420p file at ``path``, mapped read-only."""
    say(f"rendering the ladder's source ({lad.n} pictures {WIDTH}x{HEIGHT})")
    run_ffmpeg([*lad.src_in, "-vf", lad.graph, "-r", str(FPS), "-frames:v", str(lad.n), "-an", "-f", "rawvideo",
                "-pix_fmt", "yuv420p", str(path)], what="rendering the source", path=str(lad.frames))
    if path.stat().st_size != lad.n * FRAME_BYTES:
        raise VideoInputError(lad.frames, f"rendered source has {path.stat().st_size} bytes, expected "
                                          f"{lad.n} pictures of {FRAME_BYTES}")
    return np.memmap(path, np.uint8, "r", shape=(lad.n, FRAME_BYTES))


def frozen_psnr(ladder: str | Path, pairs: Iterable[tuple[int, int, int]], work: Path, *,
                log: Callable[[str], None] | None = None) -> dict[tuple[int, int, int], tuple[float, float, float]]:
    """PSNR-Y/U/V of the decoded picture of rung ``r`` with display index ``j`` against source
    picture ``i``, for every ``(r, j, i)`` of ``pairs`` (display indices of the ladder's video),
    computed from real pictures in the folder ``work`` (see the module doc). Errors name the
    ladder or the recipe."""
    lad = _Ladder(Path(ladder))
    want = sorted({(int(r), int(j), int(i)) for r, j, i in pairs})
    for r, j, i in want:
        if not (0 <= r < lad.rungs and 0 <= j < lad.n and 0 <= i < lad.n):
            raise VideoInputError(lad.frames, f"pair (rung {r}, picture {j}, slot {i}) outside the ladder "
                                              f"({lad.rungs} rungs, {lad.n} pictures)")
    if not want:
        return {}
    say = log or (lambda _m: None)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    anchors: dict[int, dict[int, list[int]]] = {}
    for r, j, i in want:
        anchors.setdefault(r, {}).setdefault(j, []).append(i)
    out: dict[tuple[int, int, int], tuple[float, float, float]] = {}
    src_path = work / "source.yuv"
    src: np.ndarray | None = None
    for r in sorted(anchors):
        rid = f"r{r}_{lad.rates[r] // 1000}k"
        m2v = work / f"{rid}.m2v"
        say(f"re-encoding rung {r} ({lad.rates[r] / 1e6:g} Mbit/s) and decoding {len(anchors[r])} frozen picture(s)")
        run_ffmpeg(encode_args(lad.src_in, lad.graph, lad.n, lad.rates[r], lad.threads, m2v),
                   what=f"re-encoding rung {rid}", path=str(lad.frames))
        sizes, display, _types = _pictures(m2v.read_bytes())
        if sizes.shape != lad.size[r].shape or not np.array_equal(sizes, lad.size[r]) \
                or not np.array_equal(display, lad.display[r]):
            if sizes.shape != lad.size[r].shape:
                what = f"{sizes.size} pictures, the ladder has {lad.n}"
            elif not np.array_equal(sizes, lad.size[r]):
                k = int(np.flatnonzero(sizes != lad.size[r])[0])
                what = f"frame {k} is {int(sizes[k])} bytes, the ladder says {int(lad.size[r][k])}"
            else:
                what = "the pictures' display order differs"
            built = lad.recipe.get("encoder", {}).get("ffmpeg", "an unrecorded ffmpeg")
            raise VideoInputError(lad.frames, f"re-encoding rung {r} with ffmpeg {ffmpeg_version()} does not give the "
                                              f"ladder's bitstream, built with {built} ({what}): rebuild the ladder "
                                              "with this ffmpeg (python -m qoelab.video.sources.bundle mpeg2_ladder)")
        if src is None:  # rendered once, after the first bitstream is known to be the ladder's
            src = _render_source(lad, src_path, say)
        need = anchors[r]
        kept: dict[int, np.ndarray] = {}
        got = 0
        for d, pic in enumerate(read_source_frames(["-i", str(m2v)], WIDTH, HEIGHT, path=str(lad.frames))):
            got += 1
            if d in need:
                kept[d] = pic.reshape(-1).copy()
        if got != lad.n:
            raise VideoInputError(lad.frames, f"decoding rung {rid}: {got} of {lad.n} pictures")
        m2v.unlink()
        assert src is not None
        for j in sorted(need):
            mine = plane_psnr(kept[j], src[j])
            if np.abs(mine - lad.psnr_by_display[r, j]).max() > 0.0051:
                raise VideoInputError(lad.frames, f"rung {r} picture {j}: PSNR-Y/U/V of the re-decode "
                                                  f"{np.round(mine, 3).tolist()} dB, the ladder says "
                                                  f"{lad.psnr_by_display[r, j].tolist()}: not the ladder's pictures")
        # Chunks of (anchor, up to 64 slots), measured on two threads (numpy's loops release the
        # GIL); each value depends only on its pair, so the order of completion changes nothing.
        tasks = [(j, slots[k:k + 64]) for j in sorted(need) for slots in [sorted(need[j])]
                 for k in range(0, len(slots), 64)]

        def measure(task: tuple[int, list[int]], src: np.ndarray = src) -> tuple[int, list[int], np.ndarray]:
            j, chunk = task
            return j, chunk, plane_psnr(kept[j][None, :], np.asarray(src[chunk]))

        todo = sum(len(c) for _, c in tasks)
        done, last = 0, time.monotonic()
        with ThreadPoolExecutor(max_workers=2) as pool:
            for j, chunk, vals in pool.map(measure, tasks):
                for i, v in zip(chunk, vals):
                    out[(r, j, i)] = (float(v[0]), float(v[1]), float(v[2]))
                done += len(chunk)
                if time.monotonic() - last > 30:  # a line for logs of long measurements
                    say(f"rung {r}: {done} of {todo} slots measured")
                    last = time.monotonic()
    del src
    src_path.unlink(missing_ok=True)
    return out
