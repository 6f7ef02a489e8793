"""Type stubs of the private native module (crates/py)."""

from typing import Any, Callable

__version__: str

class ScenarioError(ValueError):
    """A scenario mistake: ``path: reason``."""

def validate(text: str, base_dir: str | None = None) -> None: ...
def run(
    text: str,
    base_dir: str | None = None,
    out_dir: str | None = None,
    progress: Callable[[float, float], Any] | None = None,
) -> dict[str, dict[str, Any]]: ...
def bench(text: str, base_dir: str | None = None) -> tuple[int, float, dict[str, dict[str, Any]]]: ...
def normalize(text: str) -> str: ...
def scenario_schema() -> str: ...

class InternalError(Exception):
    """A bug in the simulator core: a Rust panic, caught at the binding."""

class TraceError(ValueError):
    """An invalid video trace: ``line N: reason`` (never quoting the file)."""

def read_trace(path: str) -> dict[str, Any]: ...

class TfdError(ValueError):
    """An invalid TFD option or option bytes."""

def tfd_encode(flags: str, next_data: int | float, next_time_ms: int, ipv6: bool = False) -> bytes: ...
def tfd_decode(data: bytes, ipv6: bool = False) -> dict[str, Any]: ...

class EmuError(Exception):
    """Emulation could not run: a device, namespace or the real-time loop failed (one line)."""

# Emulation (Linux only).
def emu_hosts(text: str, base_dir: str | None = None) -> list[dict[str, Any]]: ...
def open_tun(netns: str, name: str) -> int: ...
def numpy_api() -> None: ...
def emulate(
    text: str,
    taps: list[tuple[str, int]],
    base_dir: str | None = None,
    out_dir: str | None = None,
    stop_fd: int | None = None,
    spin_us: int = 0,
    lag_interval_s: float = 1.0,
    rt_priority: int = 0,
) -> dict[str, dict[str, Any]]: ...
