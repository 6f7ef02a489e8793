"""``qoelab verify``: the model-validation suite (issue 16).

Each validation (``suite.py``) is data plus two small functions: it names the model and its
reference with the citation, lists a parameter grid (and the ``--quick`` subset CI runs), builds
and runs a scenario per point (``measure``), computes the closed form (``reference``,
``closed_forms.py``) and judges the row against a stated, justified :class:`Tolerance`
(``core.py``): ``pass``, ``FAIL`` or ``known limit`` (a documented limit, with its reason,
still checked against the weaker condition it implies). ``docs/validation.md`` explains each
validation and holds the full table.

>>> from qoelab.verify import SUITE, run_suite
>>> rows = run_suite([v for v in SUITE if v.name == "md1"], quick=True)
>>> [(r.label, r.verdict) for r in rows]
[('ρ=0.3', 'pass'), ('ρ=0.8', 'pass')]
"""

from __future__ import annotations

from qoelab.verify.core import FAIL, LIMIT, PASS, Limit, Row, Tolerance, Validation, judge, run_suite
from qoelab.verify.suite import SUITE

__all__ = ["SUITE", "run_suite", "judge", "Validation", "Tolerance", "Limit", "Row", "PASS", "FAIL", "LIMIT"]
