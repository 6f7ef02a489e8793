"""Decoding and per-picture metrics: decoding access units with concealment and realigning them
to display order (`decode`), and MSE/PSNR, SSIM, MOS and MIV per frame (`metrics`).

Used by the encoder (which measures its own output) and by the quality stage; imports nothing
from the other stages.
"""
