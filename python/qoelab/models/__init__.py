"""Analytical models that the simulator's measurements are checked against.

Each module is pure Python (numpy/scipy) and has a page under ``docs/models/``:

- :mod:`qoelab.models.sqf_analytic`: de-prioritisation of a Poisson video stream under
  Shortest Queue First (Bonald, Muscariello, Ostallo, ICC 2011, Sec. IV).
"""
