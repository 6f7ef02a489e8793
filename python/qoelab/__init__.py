"""qoelab: measure how network QoS mechanisms change the quality of streamed video.

The public API:

- :class:`Scenario`: load (``Scenario.load(path)``), build (``Scenario.from_dict``), modify
  (``sc.set("links[0].rate", "20Mbps")``) and run (``sc.run()``) a scenario;
- :class:`Results`: the run's tables (``res.flows``, ``res.links``, ``res.throughput``,
  ``res.queues``, ``res.packets``) and ``res.summary``;
- :class:`ScenarioError`, :class:`QoelabError`: one-line, user-facing errors.
"""

from qoelab._native import __version__
from qoelab.errors import QoelabError, ScenarioError
from qoelab.results import Results
from qoelab.scenario import Scenario

__all__ = ["Scenario", "Results", "ScenarioError", "QoelabError", "__version__"]
