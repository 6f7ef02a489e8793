"""Traces: the per-NAL-unit trace the simulator's video source streams (`trace`), the parsers of
coded streams it is made from (`bitstream` for H.264/H.265 Annex B, `mpeg2` with RFC 2250
packets), and traces derived from others (`rescale`).

The lowest stage: it imports only `qoelab.video.errors` (and, to check a trace, the native
module).
"""
