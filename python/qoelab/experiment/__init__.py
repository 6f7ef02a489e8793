"""The shared layer the reproductions stand on (issue 17 grows it into the full experiment layer).

Today it holds what every ``reproduce`` needs to state a result honestly:

- :mod:`qoelab.experiment.stats`: means with Student-t 95 % intervals over repetitions, and
  paired differences (the same seed runs every variant, so differences are paired).
- :mod:`qoelab.experiment.findings`: a paper's finding as data: the claim, its label
  (*substantive*, *trivial* or *by construction*), the statistic that tests it with its interval,
  and the verdict (*holds*, *does not hold*, *within noise*, *undecided*).
- :mod:`qoelab.experiment.core`: an experiment as a declaration (cells through a builder,
  metrics, treatments); repetitions with derived seeds, runs through
  :func:`qoelab.sweep.run_cells`, aggregation and paired differences.
- :mod:`qoelab.experiment.tables`: tables rendered to Markdown, CSV and ``report.json`` from one
  object, the paper's values as data, the findings list of a reading, and the report.

``docs/experiments.md`` shows a toy experiment end to end.
"""

from qoelab.experiment.findings import (Finding, Label, Verdict, judge_all, judge_below, judge_positive, judge_within,
                                        summary_count)
from qoelab.experiment.stats import Estimate, mean_ci, paired_ci

__all__ = ["Estimate", "Finding", "Label", "Verdict", "judge_all", "judge_below", "judge_positive", "judge_within",
           "mean_ci", "paired_ci",
           "summary_count"]
