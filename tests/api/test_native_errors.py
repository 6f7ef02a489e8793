"""The binding's error classes: a Rust panic reaches Python as `InternalError` (an `Exception`),
one line with the core's message and location; never as PyO3's `PanicException`."""

from __future__ import annotations

import pytest

from qoelab import _native
from qoelab.errors import InternalError


def test_a_core_panic_is_an_internal_error_caught_by_except_exception():
    caught = None
    try:
        _native._panic_for_test("invariant broken at 1.5 s\nsecond line")
    except Exception as e:  # noqa: BLE001 - the point: `except Exception` sees it
        caught = e
    assert isinstance(caught, InternalError)
    assert not isinstance(caught, ValueError)  # not a user mistake
    msg = str(caught)
    assert "\n" not in msg
    assert msg.startswith("qoelab-core bug: invariant broken at 1.5 s second line at crates/py/src/lib.rs:")


def test_the_binding_keeps_working_after_a_panic():
    with pytest.raises(InternalError):
        _native._panic_for_test("x")
    # The next call is unaffected (no poisoned state): a scenario error is still a ScenarioError.
    with pytest.raises(_native.ScenarioError, match="sim.duration"):
        _native.validate('links = []\nflows = []\n[sim]\nduration = "0s"\n')
