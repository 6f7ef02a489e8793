"""Errors that suggest the fix (issue 41): one test per class of mistake, each through the CLI
as a user meets it (one line, `qoelab: …`, exit 2, no traceback), plus help text on every option."""

from __future__ import annotations

import argparse

import pytest

from conftest import run_cli


def _fails_with(*args: str) -> str:
    code, out, err = run_cli(*args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.startswith("qoelab: ") and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_a_misspelled_key_suggests_the_closest_one() -> None:
    err = _fails_with("validate", "demo", "--set", "sim.durationn=10s")
    assert err.endswith("sim.durationn: unknown field `durationn`, expected `duration` or `seed`; did you mean `duration`?"), err


def test_a_misspelled_kind_suggests_the_closest_one() -> None:
    err = _fails_with("validate", "demo", "--set", 'links[2].queue.kind="fifp"')
    assert "links[2].queue.kind: unknown variant `fifp`" in err and err.endswith("did you mean `fifo`?"), err


def test_a_misspelled_table_in_set_suggests_the_existing_one() -> None:
    err = _fails_with("validate", "demo", "--set", "simm.seed.x=2")
    assert err.endswith("--set simm.seed.x: simm does not exist; did you mean sim?"), err


@pytest.mark.parametrize("key, value, expected", [
    ("sim.duration", "10", 'sim.duration: expected a time like "20ms", got the number 10 without a unit (write "10s")'),
    ("links[2].rate", "1.5", 'links[2].rate: expected a rate like "10Mbps", got the number 1.5 without a unit (write "1.5Mbps")'),
    ("links[2].queue.limit", "10", 'links[2].queue.limit: expected a limit like "50p" or "64KB", got the number 10 '
                                   'without a unit (write "10p")'),
    ("flows[1].app", '{kind = "web", size = 20, think = "10ms"}',
     'flows[1].app.size: expected a size like "64KB", got the number 20 without a unit (write "20KB")'),
])
def test_a_bare_number_for_a_unit_value_shows_the_form_an_example_and_the_fix(key, value, expected) -> None:
    err = _fails_with("validate", "demo", "--set", f"{key}={value}")
    assert err.endswith(expected), err


def test_set_on_a_table_the_scenario_lacks_says_how_to_create_it() -> None:
    err = _fails_with("validate", "demo", "--set", 'output.probes=["queue"]')
    assert err.endswith('--set output.probes: output does not exist; set the whole table instead: '
                        'output = {probes = ["queue"]}'), err
    # The suggestion works as printed.
    code, out, err = run_cli("validate", "demo", "--set", 'output={probes = ["queue"]}')
    assert code == 0, err


def _options_without_help(parser: argparse.ArgumentParser, prefix: str, out: set[str]) -> None:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sub in a.choices.items():
                if not helps.get(name):
                    out.add(f"{prefix} {name}")
                _options_without_help(sub, f"{prefix} {name}", out)
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)) and not a.help:
            out.add(f"{prefix} {'/'.join(a.option_strings) or a.dest}")


def test_every_command_and_option_has_help_text() -> None:
    from qoelab.cli import LAZY_GROUPS, build_parser

    missing: set[str] = set()
    for argv in [["run"]] + [[g] for g in LAZY_GROUPS]:  # each lazy group built for real once
        _options_without_help(build_parser(argv), "qoelab", missing)
    assert not missing, f"without help text: {sorted(missing)}"
    code, out, _ = run_cli("sweep", "--help")
    assert code == 0 and "resumes it" in out
