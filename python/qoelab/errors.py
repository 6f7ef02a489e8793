"""Errors the front end reports as one line and exit code 2."""

from __future__ import annotations

from qoelab._native import ScenarioError as _NativeScenarioError


class QoelabError(Exception):
    """A user-facing error: `str(e)` is one line naming the file, key path and reason."""


class ScenarioError(QoelabError, ValueError):
    """A mistake in a scenario: ``file: key.path: reason``."""

    def __init__(self, source: str, message: str):
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}" if source else message)


#: The native exception type raised by the core (re-exported for ``except`` clauses).
NativeScenarioError = _NativeScenarioError
