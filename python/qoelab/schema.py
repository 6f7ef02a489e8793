"""The scenario file's JSON Schema and the reference page generated from it.

The schema comes from the simulator's own config types (``crates/core/src/schema.rs``): every
key the parser accepts, its type, default and doc comment. ``qoelab schema`` prints it (for an
editor: taplo / Even Better TOML read a ``#:schema`` comment or a ``[[schema.associations]]``
entry); ``qoelab schema --markdown`` prints ``docs/scenarios.md``, the key-by-key reference, from
the same schema, so the page cannot drift from the parser (a test compares them).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["scenario_schema", "scenario_schema_text", "reference_markdown", "UNIT_TYPES"]

# Quantities with units: the schema's definitions of the unit strings (crates/core/src/units.rs).
UNIT_TYPES = {"rate": "rate", "time": "time", "bytes": "size", "limit": "limit"}


def scenario_schema_text() -> str:
    """The schema as the simulator prints it (pretty JSON, keys sorted)."""
    from qoelab import _native

    return _native.scenario_schema()


def scenario_schema() -> dict[str, Any]:
    """The schema as a dict."""
    return json.loads(scenario_schema_text())


_LINK = re.compile(r"\[`?([^\]`]+)`?\]\((?:[^)]*)\)|\[`([^`\]]+)`\]")


def _prose(text: str | None) -> str:
    """A doc comment as one Markdown table cell: rustdoc links reduced to their text."""
    if not text:
        return ""
    t = _LINK.sub(lambda m: f"`{m.group(1) or m.group(2)}`", text)
    t = " ".join(t.split())
    return t.replace("|", "\\|")


_NS = re.compile(r"^(\d+)ns$")
_BPS = re.compile(r"^(\d+)bps$")


def _readable(v: Any) -> Any:
    """A default as the simulator serialises it ("10000000ns", "5000000bps") in the unit a
    scenario would write ("10ms", "5Mbps"), when that is exact."""
    if isinstance(v, dict):
        return {k: _readable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_readable(x) for x in v]
    if isinstance(v, str):
        for pat, units in ((_NS, (("h", 3_600_000_000_000), ("min", 60_000_000_000), ("s", 1_000_000_000),
                                   ("ms", 1_000_000), ("us", 1_000), ("ns", 1))),
                           (_BPS, (("Gbps", 1_000_000_000), ("Mbps", 1_000_000), ("kbps", 1_000), ("bps", 1)))):
            m = pat.match(v)
            if m:
                n = int(m.group(1))
                if n == 0:
                    return "0s" if pat is _NS else "0bps"
                for name, f in units:
                    if n % f == 0:
                        return f"{n // f}{name}"
    return v


def _ref_name(s: dict[str, Any]) -> str | None:
    if "$ref" in s:
        return str(s["$ref"]).rsplit("/", 1)[-1]
    for k in ("allOf", "anyOf"):
        parts = [p for p in s.get(k, []) if p.get("type") != "null"]
        if len(parts) == 1:
            return _ref_name(parts[0])
    return None


class _Doc:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema.get("definitions", {})
        self.root = schema
        self.order: list[str] = []  # definitions in the order the page meets them

    def anchor(self, name: str) -> str:
        return name.lower()

    def type_of(self, s: dict[str, Any]) -> str:
        name = _ref_name(s)
        if name is not None:
            if name in UNIT_TYPES:
                ex = self.defs[name].get("examples", [])
                return f"{UNIT_TYPES[name]} (e.g. `{ex[0]}`)" if ex else UNIT_TYPES[name]
            if name not in self.order:
                self.order.append(name)
            d = self.defs.get(name, {})
            if "enum" in d:
                return " \\| ".join(f'`"{v}"`' for v in d["enum"])
            if "oneOf" in d and all("enum" in v or "const" in v for v in d["oneOf"]):
                vals = [v for alt in d["oneOf"] for v in (alt.get("enum") or [alt.get("const")])]
                return " \\| ".join(f'`"{v}"`' for v in vals)
            return f"[{name}](#{self.anchor(name)})"
        if "oneOf" in s:
            return " or ".join(self.type_of(alt) for alt in s["oneOf"])
        if "enum" in s:
            return " \\| ".join(f'`"{v}"`' for v in s["enum"])
        if "const" in s:
            return f'`"{s["const"]}"`'
        t = s.get("type")
        if isinstance(t, list):
            t = [x for x in t if x != "null"]
            t = t[0] if len(t) == 1 else " or ".join(t)
        if t == "array":
            return f"array of {self.type_of(s.get('items', {}))}"
        if t == "integer":
            rng = [f"≥ {s['minimum']}" if "minimum" in s else "", f"≤ {s['maximum']}" if "maximum" in s else ""]
            return " ".join(["integer", *[r for r in rng if r]])
        if t == "object" and "additionalProperties" in s and isinstance(s["additionalProperties"], dict):
            return f"table of {self.type_of(s['additionalProperties'])}"
        return str(t or "any")

    def table(self, s: dict[str, Any], skip: tuple[str, ...] = ()) -> list[str]:
        props = s.get("properties", {})
        req = set(s.get("required", []))
        rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key, p in props.items():
            if key in skip:
                continue
            default = "required" if key in req else (f"`{json.dumps(_readable(p['default']), ensure_ascii=False)}`"
                                                      if "default" in p else "")
            rows.append(f"| `{key}` | {self.type_of(p)} | {default} | {_prose(p.get('description'))} |")
        if len(rows) == 2:
            rows.append("| | | | no keys |")
        return rows

    def section(self, name: str) -> list[str]:
        d = self.defs[name]
        out = [f"### {name}", ""]
        if d.get("description"):
            out += [_prose(d["description"]), ""]
        if name in UNIT_TYPES:
            out += [f"A string: the number and its unit, matching `{d.get('pattern', '')}`.", ""]
            return out
        if "oneOf" in d and all(alt.get("type") == "object" and "kind" in alt.get("properties", {})
                                for alt in d["oneOf"]):
            kinds = [alt["properties"]["kind"].get("const") for alt in d["oneOf"]]
            out += ["Selected by `kind`: " + ", ".join(f'`"{k}"`' for k in kinds) + ".", ""]
            for alt in d["oneOf"]:
                k = alt["properties"]["kind"].get("const")
                out += [f"#### `kind = \"{k}\"`", ""]
                about = _prose(alt.get("description"))
                if about and about.rstrip(".") != f'`kind = "{k}"`':  # more than the tag itself
                    out += [about, ""]
                out += self.table(alt, skip=("kind",)) + [""]
            return out
        if "oneOf" in d or "enum" in d:
            out += [f"Type: {self.type_of(d)}.", ""]
            return out
        out += self.table(d) + [""]
        return out


def reference_markdown(schema: dict[str, Any] | None = None) -> str:
    """``docs/scenarios.md``: every key of a scenario file, its type, default and meaning."""
    s = schema if schema is not None else scenario_schema()
    doc = _Doc(s)
    top = doc.table(s)
    body: list[str] = []
    done: set[str] = set()
    while len(done) < len(doc.order):
        for name in list(doc.order):
            if name not in done:
                done.add(name)
                body += doc.section(name)
    units = []
    for name, label in UNIT_TYPES.items():
        if name in doc.defs:
            d = doc.defs[name]
            units.append(f"| {label} | {_prose(d.get('description'))} | `{', '.join(d.get('examples', []))}` |")
    head = [
        "# Scenario reference",
        "",
        "<!-- Generated by `qoelab schema --markdown` from the simulator's config types; do not edit. -->",
        "",
        "A scenario is a TOML file. This page lists every key the simulator accepts, generated from the",
        "same types that parse the file, so it is complete by construction; the build checks what a schema",
        "cannot (a flow's `src` names a node, an MSS fits the MTU, a trace file exists). The machine-readable",
        "form is `qoelab schema` (JSON Schema draft-07): point your editor at it to complete and check",
        "scenarios, e.g. with taplo / Even Better TOML, a first line `#:schema ./scenario.schema.json`",
        "after `qoelab schema -o scenario.schema.json`. Model pages in `docs/models/` explain what",
        "the keys do.",
        "",
        "Quantities with units are strings:",
        "",
        "| quantity | form | examples |",
        "|---|---|---|",
        *units,
        "",
        "## Top level",
        "",
        *top,
        "",
        "## Tables",
        "",
    ]
    return "\n".join(head + body).rstrip() + "\n"
