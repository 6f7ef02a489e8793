"""Errors the front end reports as one line and exit code 2."""

from __future__ import annotations

from qoelab._native import InternalError as _NativeInternalError
from qoelab._native import ScenarioError as _NativeScenarioError


class QoelabError(Exception):
    """A user-facing error: `str(e)` is one line naming the file, key path and reason."""


class ScenarioError(QoelabError, ValueError):
    """A mistake in a scenario: ``file: key.path: reason``."""

    def __init__(self, source: str, message: str):
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}" if source else message)

    def __reduce__(self):
        # Pickled by its two fields (the default would call __init__ with the joined text
        # alone), so it crosses process boundaries, e.g. from a sweep worker.
        return (type(self), (self.source, self.message))


#: The native exception type raised by the core (re-exported for ``except`` clauses).
NativeScenarioError = _NativeScenarioError

#: A bug in the simulator core: a Rust panic, turned by the binding into this ``Exception``
#: subclass (PyO3's own ``PanicException`` derives from ``BaseException`` and would escape
#: ``except Exception``). The CLI reports it as an internal error, exit code 3.
InternalError = _NativeInternalError
