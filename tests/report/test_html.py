"""The static index page (qoelab.report.html) and `qoelab reproduce all` / `qoelab report html`."""

from __future__ import annotations

import base64
import re

import pytest

from qoelab.cli import main
from qoelab.report import html as H
from qoelab.reproduce.papers import PAPERS

from .reports import INJECT, make_all


@pytest.fixture
def built(tmp_path):
    out = make_all(tmp_path / "all")
    return out, H.render(H.entries_from(out))


def test_page_is_deterministic(tmp_path, built):
    out, page = built
    assert H.render(H.entries_from(out)) == page
    # same reports in another folder (figures drawn again): still the same page
    other = make_all(tmp_path / "again")
    assert H.render(H.entries_from(other)) == page


def test_report_strings_are_escaped(built):
    _, page = built
    assert "<script" not in page.lower()
    assert "onerror=" not in page.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert 'href="javascript:' not in page
    # Markdown is rendered, not shown raw
    assert "<strong>two</strong>" in page and "<em>0.12</em>" in page


def test_status_table(tmp_path, built):
    out, page = built
    status = page[page.index('<table id="status">'):page.index("</table>")]
    assert status.count("<tr id=\"status-") == len(PAPERS)
    assert re.search(r'id="status-sqf".*?class="s-reproduced">reproduced<', status)
    assert re.search(r'id="status-tfd".*?class="s-partly">partly<', status)
    # untestable: not tested; a finding that holds only under our default is not counted
    assert "substantive: 1/3 hold; by construction: 0/0 hold" in status
    for p in PAPERS:
        if p.module is None:
            assert f"not yet reproduced (issue {p.issue})" in status
        assert f'href="#paper-{p.key}"' in status and f'<section id="paper-{p.key}">' in page
    assert "120 runs, 14 min wall, 27 min CPU" in status


def test_a_paper_without_a_reproduction_is_marked_not_yet(tmp_path, monkeypatch):
    """Every bundled paper has a reproduction now; a new paper without one still shows its issue."""
    import dataclasses

    papers = tuple(dataclasses.replace(p, module=None, issue=99) if p.key == "wimax" else p for p in PAPERS)
    monkeypatch.setattr(H, "PAPERS", papers)
    out = make_all(tmp_path / "all")  # wimax's folder is there, but a paper without a module is not read
    page = H.render(H.entries_from(out))
    status = page[page.index('<table id="status">'):page.index("</table>")]
    assert re.search(r'id="status-wimax".*?not yet reproduced \(issue 99\)', status)
    assert status.count("not yet reproduced") == 1


def test_tables_estimates_and_paper_columns(built):
    _, page = built
    assert "9.1 ± 0.1 (n=5)" in page
    assert '<td class="paper num">9.3</td>' in page and '<th class="paper">data share (Mbit/s)</th>' in page
    assert "0.12 ± 0.04 (n=5), 95 % CI [0.08, 0.16] fraction" in page
    assert '<tr class="v-inconclusive">' in page and "<strong>inconclusive</strong>" in page


def test_figures_embedded_as_data_png(built):
    out, page = built
    srcs = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page)
    assert len(srcs) == 12  # two figures for each of tfd, sqf, wimax, interactive, mptcp and qos
    assert base64.b64decode(srcs[0]) == (out / "tfd" / "f1.png").read_bytes()
    assert not re.search(r'(src|href)="(https?:|//|file:)', page.replace('href="https://example.org"', ""))


def test_fmt_cell():
    assert H.fmt_cell(None) == "–"
    assert H.fmt_cell({"mean": 2.0, "lo": None, "hi": None, "n": 1}) == "2 (n=1)"
    assert H.fmt_cell({"mean": 0.5, "lo": 0.25, "hi": 0.75, "n": 3}) == "0.5 ± 0.25 (n=3)"
    assert H.fmt_cell(1234.6) == "1235" and H.fmt_cell(7) == "7"


def test_reproduce_all_reuses_finished_folders(tmp_path, monkeypatch, capsys):
    out = make_all(tmp_path / "o")
    import qoelab.reproduce.interactive as interactive
    import qoelab.reproduce.mptcp as mptcp
    import qoelab.reproduce.qos as qos
    import qoelab.reproduce.sqf as sqf
    import qoelab.reproduce.tfd as tfd
    import qoelab.reproduce.wimax as wimax

    def boom(*a, **k):
        raise AssertionError("a finished paper must not run again")

    for mod in (sqf, tfd, mptcp, wimax, interactive, qos):
        monkeypatch.setattr(mod, "run", boom)
    assert main(["reproduce", "all", "--quick", "-o", str(out)]) == 0
    assert (out / "index.html").read_text() == H.render(H.entries_from(out))


def test_reproduce_all_failures_are_shown_and_exit_nonzero(tmp_path, monkeypatch, capsys):
    import qoelab.reproduce.mptcp as mptcp
    import qoelab.reproduce.sqf as sqf
    import qoelab.reproduce.tfd as tfd
    import qoelab.reproduce.wimax as wimax
    from qoelab.errors import QoelabError

    calls = []

    def tfd_run(out, **k):
        calls.append(("tfd", k["quick"], k["jobs"]))
        raise QoelabError("trace.bin: the trace is missing\nsecond line")

    def sqf_run(out, **k):  # runs, but writes no report.json (as before the reproduction layer)
        calls.append(("sqf", k["quick"], k["jobs"]))
        out.mkdir(parents=True, exist_ok=True)
        return {}

    def wimax_run(out, **k):  # a reproduction that works
        from .reports import make_folder

        calls.append(("wimax", k["quick"], k["jobs"]))
        make_folder(out, "wimax")
        return {}

    monkeypatch.setattr(tfd, "run", tfd_run)
    monkeypatch.setattr(sqf, "run", sqf_run)
    def mptcp_run(out, **k):  # another that works
        from .reports import make_folder

        calls.append(("mptcp", k["quick"], k["jobs"]))
        make_folder(out, "mptcp")
        return {}

    def interactive_run(out, **k):  # and a third
        from .reports import make_folder

        calls.append(("interactive", k["quick"], k["jobs"]))
        make_folder(out, "interactive")
        return {}

    def qos_run(out, **k):  # and the study of our own
        from .reports import make_folder

        calls.append(("qos", k["quick"], k["jobs"]))
        make_folder(out, "qos")
        return {}

    import qoelab.reproduce.interactive as interactive
    import qoelab.reproduce.qos as qos

    monkeypatch.setattr(wimax, "run", wimax_run)
    monkeypatch.setattr(mptcp, "run", mptcp_run)
    monkeypatch.setattr(interactive, "run", interactive_run)
    monkeypatch.setattr(qos, "run", qos_run)
    out = tmp_path / "o"
    assert main(["reproduce", "all", "--quick", "-o", str(out)]) == 1
    # sqf still ran after tfd failed; the papers in the report's order
    assert calls == [("tfd", True, 1), ("sqf", True, 1), ("wimax", True, 1), ("interactive", True, 1), ("mptcp", True, 1),
                     ("qos", True, 1)]
    page = (out / "index.html").read_text()
    assert "failed: trace.bin: the trace is missing<" in page and "second line" not in page
    assert f"failed: {out / 'sqf' / 'report.json'}: no such report" in page
    assert "2 of 6 reproductions failed: tfd, sqf" in capsys.readouterr().out


def test_report_html_rebuilds(tmp_path, capsys):
    out = make_all(tmp_path / "o")
    assert main(["report", "html", str(out)]) == 0
    assert (out / "index.html").read_text() == H.render(H.entries_from(out))
    (out / "sqf" / "report.json").write_text("{")
    assert main(["report", "html", str(out)]) == 1
    assert "not JSON" in (out / "index.html").read_text()


@pytest.mark.parametrize("args", [["reproduce", "all", "-o", "{f}"], ["report", "html", "{f}"],
                                  ["reproduce", "all", "--report-only", "-o", "{d}/missing"]])
def test_bad_output_is_one_line_exit_2(tmp_path, capsys, args):
    f = tmp_path / "file"
    f.write_text("x")
    assert main([a.format(f=f, d=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("not a directory" in err or "no such folder" in err)


def test_reproduce_all_progress_is_truthful_over_every_paper_and_stage(tmp_path, monkeypatch):
    """One total for the whole command, known before the first run: the sum of each paper's
    size (its runs and its post-run stages, e.g. decoding), never changing; it counts up to that
    total, a paper that fails included."""
    import importlib

    from qoelab.errors import QoelabError
    from qoelab.reproduce.all import run_all

    mods = {p.key: importlib.import_module(f"qoelab.reproduce.{p.module}") for p in PAPERS if p.module}
    sizes = {k: m.size(True) for k, m in mods.items()}
    assert all(n > 0 for n in sizes.values())

    def fake(key):
        def run(out, *, quick, jobs, progress, executor):
            from .reports import make_folder

            for d in range(sizes[key] + 1):
                progress(d, sizes[key])
            if key == "sqf":
                raise QoelabError("boom")
            make_folder(out, key)
        return run

    for k, m in mods.items():
        monkeypatch.setattr(m, "run", fake(k))
    calls = []
    errors = run_all(tmp_path / "o", quick=True, progress=lambda d, t, reused=0: calls.append((d, t)), log=lambda s: None)
    assert list(errors) == ["sqf"]
    total = sum(sizes.values())
    assert {t for _, t in calls} == {total} and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
