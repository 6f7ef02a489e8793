"""qoelab: measure how network QoS mechanisms change the quality of streamed video.

The public API:

- :class:`Scenario`: load (``Scenario.load(path)``), build (``Scenario.from_dict``), modify
  (``sc.set("links[0].rate", "20Mbps")``) and run (``sc.run()``) a scenario;
- :class:`Results`: the run's tables (``res.flows``, ``res.links``, ``res.throughput``,
  ``res.queues``, ``res.packets``) and ``res.summary``;
- :class:`ScenarioError`, :class:`QoelabError`: one-line, user-facing errors.
"""

from typing import TYPE_CHECKING, Any

from qoelab._native import __version__
from qoelab.errors import QoelabError, ScenarioError

if TYPE_CHECKING:
    from qoelab.results import Results
    from qoelab.scenario import Scenario

__all__ = ["Scenario", "Results", "ScenarioError", "QoelabError", "__version__"]


def __getattr__(name: str) -> Any:
    # Scenario and Results bring numpy and pyarrow; imported on first use (PEP 562), so that
    # `qoelab --help` and the light sub-commands start quickly.
    if name == "Scenario":
        from qoelab.scenario import Scenario

        return Scenario
    if name == "Results":
        from qoelab.results import Results

        return Results
    raise AttributeError(f"module 'qoelab' has no attribute {name!r}")
