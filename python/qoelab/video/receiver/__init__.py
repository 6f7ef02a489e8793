"""Receiver models: which packets and frames arrived in time, from the simulator's per-packet log
(`recvlog`), a video's messages over a stream transport (`messages`), and the reorder buffer of
a video split over several connections (`reorder`).

Builds on `traces` only.
"""
