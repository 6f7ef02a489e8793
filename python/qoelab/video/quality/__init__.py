"""Quality of a delivered video: EvalVid-style evaluation with real decoding (`evaluate`), the fast
estimate without decoding and its calibration (`estimate`, `calibrate`, `study`), frozen display
slots of the MPEG-2 ladder (`mpeg2_pictures`) and the QoE summary of DASH sessions (`dash_qoe`).

The top stage: it combines sources, traces, receiver models, decoding and metrics.
"""
