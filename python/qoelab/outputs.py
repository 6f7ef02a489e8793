"""What the result files say about themselves: the unit of every column, and the key-value
metadata written into each Parquet file.

Units follow the column-name suffixes documented in `docs/outputs.md` (`_s`, `_ms`, `_ns`,
`_bps`, `_bytes`, `_pkts`, `_ratio`) plus a few exact names; `tests/docs/test_outputs.py` checks
that they agree with the page's unit column. Each Parquet file of a run carries:

- `qoelab.version`: the package version that wrote it;
- `qoelab.scenario_sha256`: SHA-256 of the normalised scenario (`scenario.toml` beside it);
- `qoelab.table`: the table's name;
- `qoelab.units`: a JSON object, column → unit, for the columns that have one.
"""

from __future__ import annotations

import hashlib
import json

_SUFFIXES = (("_ms", "ms"), ("_ns", "ns"), ("_s", "s"), ("_bps", "bit/s"), ("_bytes", "bytes"),
             ("_pkts", "packets"), ("_ratio", "ratio"))
_EXACT = {"bps": "bit/s", "bytes": "bytes", "packets": "packets", "utilisation": "ratio",
          "tfrc_p": "ratio", "tfrc_loss_event_rate": "ratio", "bytes_sent": "bytes", "rev_bytes_sent": "bytes",
          "tfrc_buffer_drops": "packets", "seq": None}


def column_unit(name: str) -> str | None:
    """The unit of a result column from its name, or None (names, codes, counts of things)."""
    if name in _EXACT:
        return _EXACT[name]
    for suffix, unit in _SUFFIXES:
        if name.endswith(suffix):
            return unit
    return None


def parquet_metadata(table: str, columns: list[str], scenario_toml: str | None) -> dict[bytes, bytes]:
    from qoelab import __version__

    units = {c: u for c in columns if (u := column_unit(c)) is not None}
    meta = {"qoelab.version": __version__, "qoelab.table": table, "qoelab.units": json.dumps(units, sort_keys=True)}
    if scenario_toml is not None:
        meta["qoelab.scenario_sha256"] = hashlib.sha256(scenario_toml.encode()).hexdigest()
    return {k.encode(): v.encode() for k, v in meta.items()}
