"""The shared layer the reproductions stand on (``docs/experiments.md``).

- :mod:`qoelab.experiment.stats`: means with Student-t 95 % intervals over repetitions, and
  paired differences (the same seed runs every variant, so differences are paired); estimates
  over repetitions that are not independent carry no interval.
- :mod:`qoelab.experiment.findings`: a paper's finding as data (the claim, its label, the
  statistic and its interval, the rule and premises), and the verdict rules in one place:
  *holds*, *does not hold*, *inconclusive*, *untestable*.
- :mod:`qoelab.experiment.choices`: the choices a paper leaves open, declared with our default,
  the alternatives and why.
- :mod:`qoelab.experiment.core`: an experiment as a declaration (cells through a builder,
  metrics, treatments); repetitions with derived seeds, runs through
  :func:`qoelab.sweep.run_cells`, aggregation and paired differences.
- :mod:`qoelab.experiment.tables`: tables rendered to Markdown, CSV and ``report.json`` from one
  object, the paper's values as data, the findings list of a reading, and the report.
"""

from qoelab.experiment.choices import Choice, Factorial
from qoelab.experiment.findings import (Finding, Label, Part, Premise, Rule, Verdict, above, below, judge,
                                        summary_count, summary_line, within)
from qoelab.experiment.stats import Estimate, mean_ci, paired_ci

__all__ = ["Choice", "Estimate", "Factorial", "Finding", "Label", "Part", "Premise", "Rule", "Verdict", "above", "below",
           "judge", "mean_ci", "paired_ci", "summary_count", "summary_line", "within"]
