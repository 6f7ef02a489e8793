"""The concealment registry (issue 38): EvalVid's previous-frame replacement feeds the decoder
only frames that arrived whole; FFmpeg's feeds every slice that arrived."""

import numpy as np
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.quality.concealment import CONCEALMENTS
from qoelab.video.quality.estimate import FrameDelivery


def test_pfr_drops_every_frame_with_a_lost_slice_or_parameter_set():
    # Four frames: whole; one of two slices lost; whole but its parameter set lost; nothing arrived.
    fd = FrameDelivery(slices=np.array([2, 2, 1, 1]), slices_received=np.array([2, 1, 1, 0]),
                       nonvcl_lost=np.array([0, 0, 1, 0]))
    packets = [b"a", b"b", b"c", None]
    assert CONCEALMENTS["evalvid_pfr"](packets, fd) == [b"a", None, None, None]
    assert CONCEALMENTS["ffmpeg"](packets, fd) == packets


def test_an_unknown_concealment_is_an_input_error(tmp_path):
    from qoelab.video.quality.evaluate import evaluate_delivery

    with pytest.raises(VideoInputError, match="concealment"):
        evaluate_delivery(None, tmp_path / "x.h264", None, concealment="pfr")
