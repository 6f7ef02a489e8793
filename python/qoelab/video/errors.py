"""Errors raised by the video pipeline for bad input.

Anything that is the user's input being wrong (a malformed trace, a receive log naming packets the
trace does not have, an unreadable video, a missing ffmpeg) is a `VideoInputError`. Its message is
one line, `PATH: reason`, which the CLI prints after `qoelab: ` and maps to exit code 2. Everything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import os

__all__ = ["VideoInputError"]


class VideoInputError(Exception):
    """Bad input to the video pipeline: `str(err)` is the one line `PATH: reason`."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        # Keep the message on one line whatever the caller passed (e.g. a decoder's multi-line text).
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{self.path}: {self.reason}")
