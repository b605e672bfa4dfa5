"""The sign-off's HTML page in a real headless browser (Debian's chromium, ``--dump-dom``):
the bundled C example's runbook run for real (make, gcc, git, the ledger), the page that
``nox -s signoff`` writes and the one ``relgate report`` writes, read back from the DOM the
browser built; and hostile strings (a ``<script>`` note, ``</td>`` in a step name and a
command, ANSI escapes, a 10 MB line in a note and in a log) that must stay text.

Only the browser may be missing (the tests then skip, naming the install line); nothing is
faked: each page is the one the tool writes from a ledger real sessions filled."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from browser_support import INSTALL, Node, dump_dom, needs_chromium, parse

from conftest import Project, copy_example, git, ledger_of

FILE_SECONDS = 70  # about how long this file takes here: it starts early (tests/conftest.py)

HOSTILE_SCRIPT = "<script>document.documentElement.setAttribute('data-pwned', 'note')</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned', 'img')\">"


def _ok(done: subprocess.CompletedProcess[str], *codes: int) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode in (codes or (0,)), f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The C example's release runbook, for real: the previous release's lanes and accepted
    evidence, its tag; a candidate commit, its lanes, the speed and quality comparison against
    the tag (both built, interleaved), the evidence check, one attestation, the sign-off."""
    p = copy_example(tmp_path_factory.mktemp("page"), "tinyinfer")
    _ok(p.nox("host", "gate", "contract"))
    _ok(p.relgate("evidence", "accept", "--release", "0.2.0"))
    git(p.root, "tag", "v0.2.0")
    # The candidate bumps the version its CLI reports: one evidence cell moves, on purpose.
    for rel in ("include/tinyinfer.h", "tests/cli_contract.sh"):
        (p.root / rel).write_text((p.root / rel).read_text().replace("0.3.0", "0.3.1"))
    (p.manifests / "intentional.toml").write_text("".join(
        f'[[change]]\nsuite = "{suite}"\narm = "cpu"\nkey = "version"\nreason = "the candidate is 0.3.1"\n'
        for suite in ("cli", "kernels")))
    p.commit("candidate")
    _ok(p.nox("host", "gate", "contract"))
    _ok(p.nox("compare", extra=("--", "matvec", "scorer", "--previous", "v0.2.0")), 0, 1, 3)  # timings: any verdict
    _ok(p.nox("evidence"))
    _ok(p.relgate("attest", "ci-green", "--by", "Release Engineer", "--note", "pipeline 1234 green"))
    _ok(p.nox("signoff"), 1)  # incomplete: the CUDA items and a maintainer's approval are open
    return p


def _text(node: Node) -> str:
    return " ".join(node.text().split())


def _steps_rows(dom: Node) -> list[Node]:
    """Every step the steps section lists (one element each, its id ``s`` + the step's id)."""
    return [n for n in dom.by_id("steps").walk() if re.fullmatch(r"s[0-9]+", n.attrs.get("id", ""))]


def _name(step: Node) -> str:
    return _text(step).split(" ")[1]  # "#12 kernels-cpu 0.0 s …"


def _log_links(dom: Node, page: Path) -> list[Path]:
    """Where every log link of the page leads (links to places in the page left out)."""
    return [(page.parent / unquote(a.attrs["href"])).resolve() for a in dom.find_all("a")
            if not a.attrs.get("href", "#").startswith("#")]


def _read_signoff_page(project: Project) -> tuple[Node, dict]:
    """The page ``nox -s signoff`` wrote, as the browser rendered it, checked against the
    sign-off's own data (``signoff.json``) and the ledger: the verdict and what blocks it,
    every item × every board with the rows behind each cell, what did not run and why, and
    every log link resolving to a stored log."""
    page = project.home / "signoff" / "signoff.html"
    doc = json.loads((project.home / "signoff" / "signoff.json").read_text())
    dom = parse(dump_dom(page))
    html = dom.find_all("html")[0]
    assert html.attrs.get("data-page-script") == "ran"  # the browser ran the page's own script: scripts were on

    # The verdict and what blocks it.
    open_items = [i for i in doc["items"] if i["status"] not in ("passed", "attested", "skipped", "not-validated",
                                                                  "not-applicable")]
    assert doc["complete"] is False and open_items
    verdict = f"Verdict: incomplete: {len(open_items)} of {len(doc['items'])} items are open"
    assert _text(dom.by_id("verdict")) == verdict
    assert [_text(li).split(" ")[0] for li in dom.by_id("blocks").find_all("li")] == [i["id"] for i in open_items]

    # Every checklist item × every board, each status as the sign-off evaluated it.
    matrix = dom.by_id("matrix")
    boards = doc["boards"] + [b for bs in doc.get("backend_boards", {}).values() for b in bs if b not in doc["boards"]]
    assert [_text(th) for th in matrix.find_all("th", cls="board")] == boards
    rows = [tr for tr in matrix.find_all("tr") if "data-item" in tr.attrs]
    assert [tr.attrs["data-item"] for tr in rows] == [i["id"] for i in doc["items"]]
    for tr, item in zip(rows, doc["items"]):
        cells = tr.find_all("td")
        assert _text(cells[2]) == item["status"], item
        assert sum(int(td.attrs.get("colspan", "1")) for td in cells) == 3 + len(boards) + 1
        if len(cells) == 5:  # one cell for every board: the item's own status
            assert item["status"] in cells[3].attrs["class"].split(), (item, cells[3].attrs)
        for link in item["links"]:  # the rows behind the item: a cell link to each, landing on that step
            assert f"#s{link['step']}" in [a.attrs["href"] for a in tr.find_all("a")], (item["id"], link)
            dom.by_id(f"s{link['step']}")

    # What did not run, and why: every not-run step of the candidate, every item out of scope.
    not_run = [_text(li) for li in dom.by_id("not-run").find_all("li")]
    head = git(project.root, "rev-parse", "HEAD").strip()
    with ledger_of(project) as ledger:
        skipped = [s for s in ledger.steps(commit=head) if s.verdict.value == "not-run"]
    assert all(any(f"{s.session}/{s.step}" in t and s.reason in t for t in not_run) for s in skipped), not_run
    for item in doc["items"]:
        if item["status"] == "not-applicable":
            assert any(t.startswith(f"not-applicable item {item['id']}: {item['reason']}") for t in not_run)

    # Each step: in a group that names its host, board, driver, toolkit and GPU, with its log link,
    # and every log link resolves to a log the ledger stored.
    steps = _steps_rows(dom)
    links = _log_links(dom, page)
    ran = [li for li in steps if "not-run" not in li.attrs.get("class", "")]
    assert steps and len(links) == len(ran)
    assert all(p.is_file() and p.is_relative_to(project.home / "logs") for p in links)
    for group in dom.by_id("steps").find_all("div", cls="group"):
        assert re.match(r"\S+ on \S+ · board \S+ · driver .+ · toolkit .+ · GPU .+ · commit [0-9a-f]{12}",
                        _text(group.find_all("h3")[0])), _text(group)
    return dom, doc


@needs_chromium
def test_the_c_examples_signoff_page_in_a_browser(example: Project) -> None:
    dom, doc = _read_signoff_page(example)
    assert doc["boards"] == ["host:local"]
    status = {i["id"]: i["status"] for i in doc["items"]}
    assert status["cpu"] == "passed" and status["metal"] == "not-applicable" and status["evidence"] == "passed"
    assert status["ci-green"] == "attested" and status["maintainer-approval"] == "missing"
    assert "ci-green attested by Release Engineer" in _text(dom.by_id("decisions"))

    # Measurements: the suite verdict per board, every row with its ratio, interval and bar.
    measured = [(m, b) for m in doc["measurements"] for b in m["boards"] if b["rows"]]
    assert measured, doc["measurements"]
    section = dom.by_id("measurements")
    for m, b in measured:
        heading = next(h for h in section.find_all("h3", cls="measure") if _text(h).startswith(f"{m['measure']} on "))
        assert _text(heading) == f"{m['measure']} on {b['board']}: {b['verdict']}"
    mrows = section.find_all("tr", cls="mrow")
    expected = [r for _, b in measured for r in b["rows"]]
    assert len(mrows) == len(expected) == 4
    for tr, row in zip(mrows, expected):
        cells = [_text(td) for td in tr.find_all("td")]
        assert cells[0] == row["row"] and cells[1] == row["metric"] and cells[5] == f"{row['ratio']:.3f}×"
        if row["interval"] is None:  # too few runs for an interval at the bound's confidence: none is drawn
            assert cells[6] in ("point estimate", "no interval at this confidence"), cells
        else:
            low, high = row["interval"]
            assert cells[6].startswith(f"{low:.3f}–{high:.3f}×"), cells
        assert cells[9] == row["verdict"] and len(tr.find_all("svg", cls="bar")) == 1
    scorer = dom.by_id("quality")
    assert "first_match >= 19" in _text(scorer) and "previous release" in _text(scorer)
    evidence = _text(dom.by_id("evidence"))  # the diff summary, the moved cell, its intentional re-record
    assert "9 identical, 2 moved, 0 only in base, 0 only in candidate; 2 intentional, 0 unexpected" in evidence
    assert ("MOVED cli / cpu / version | tinyinfer 0.3.0 -> tinyinfer 0.3.1  [intentional: the candidate is 0.3.1]"
            in dom.by_id("evidence").find_all("pre")[0].text())

    steps = _steps_rows(dom)
    kernels = next(li for li in steps if _name(li) == "kernels-cpu")
    log = (example.home / "signoff" / unquote(kernels.find_all("a")[0].attrs["href"])).read_text()
    assert "$ make test" in log and "test_kernels: 17 passed, 0 failed" in log
    cuda = next(li for li in steps if _name(li) == "kernels-cuda")
    assert "not-run no host offers cuda make test-cuda" in _text(cuda)


@needs_chromium
def test_the_rust_examples_signoff_page_in_a_browser(scankern: Project) -> None:
    """About 25 s: the Rust example's host, gate and contract lanes with real cargo, then its page."""
    _ok(scankern.nox("host", "gate", "contract"))
    _ok(scankern.nox("signoff"), 1)
    dom, doc = _read_signoff_page(scankern)
    status = {i["id"]: i["status"] for i in doc["items"]}
    assert status["host"] == status["gate"] == status["contract"] == "passed"
    assert status["qualification"] == "not-applicable" and status["maintainer-approval"] == "missing"
    names = {_name(li) for li in _steps_rows(dom)}
    assert {"scan_parity", "lane-census"} <= names, names


SPEED = """
[measure.speed]
target = "matvec-bench"
file_env = "TINYINFER_MEASURE"
format = "csv"
key = ["ctx_tokens"]
metrics = { prefill_tps = "higher", gen_tps = "higher" }
metadata = ["board", "driver", "dtype"]
runs = 8
max_batches = 1
"""


def _runs(folder: Path, name: str, prefill: float, seed: int) -> list[Path]:
    """8 runs of the C engine's CSV, prefill_tps spread ±1 % around ``prefill``."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(8):
        path = folder / f"{name}{i}.csv"
        path.write_text("ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps,kvcache_bytes\n"
                        f"512,512,{prefill * rng.uniform(0.99, 1.01):.2f},128,{50 * rng.uniform(0.99, 1.01):.3f},1\n")
        out.append(path)
    return out


@needs_chromium
def test_an_undecided_row_shows_its_interval_bar_and_the_runs_it_needs(tinyinfer: Project, tmp_path: Path) -> None:
    """A slowdown whose interval straddles the 5 % threshold after the last batch allowed: the
    page draws it and says how many runs a side would decide it; the page also reads the same
    with scripts off."""
    with (tinyinfer.manifests / "measurements.toml").open("a") as fh:
        fh.write(SPEED)
    meta = ("--board", "host:local", "--meta", "driver=550.54", "--meta", "dtype=f16")
    prev, cand = _runs(tmp_path, "p", 1000, seed=1), _runs(tmp_path, "c", 945, seed=2)
    _ok(tinyinfer.relgate("measure", "add", "speed", *map(str, prev), "--release", "0.2.0", *meta))
    _ok(tinyinfer.relgate("measure", "add", "speed", *map(str, cand), "--candidate", *meta))
    page = tmp_path / "speed.html"
    _ok(tinyinfer.relgate("report", "--html", str(page)))
    for scripts in (True, False):
        dom = parse(dump_dom(page, scripts=scripts))
        assert (dom.find_all("html")[0].attrs.get("data-page-script") == "ran") is scripts
        section = dom.by_id("measurements")
        heading = next(h for h in section.find_all("h3", cls="measure") if _text(h).startswith("speed on "))
        assert _text(heading) == "speed on host:local: undecided: too noisy at 8 runs"
        row = next(tr for tr in section.find_all("tr", cls="mrow") if "prefill_tps" in _text(tr))
        cells = [_text(td) for td in row.find_all("td")]
        assert cells[9] == "undecided" and re.fullmatch(r"0\.9\d\d–0\.9\d\d× \(±\d\.\d%\)", cells[6]), cells
        bar = row.find_all("svg", cls="bar")[0]
        interval = bar.find_all("rect", cls="iv")[0]
        rerun, block = (float(bar.find_all("line", cls=c)[0].attrs["x1"]) for c in ("tr", "tb"))
        low, width = float(interval.attrs["x"]), float(interval.attrs["width"])
        assert block < rerun < 100 and low < rerun < low + width  # the bar straddles the 5 % line, below 1
        needed = [_text(li) for li in section.find_all("ul", cls="open-rows")[0].find_all("li")]
        assert len(needed) == 1 and re.fullmatch(r"undecided ctx_tokens=512 prefill_tps: about (\d+) runs a side "
                                                 r"\(±\d\.\d% now, ±\d\.\d% decides\)", needed[0]), needed
        assert int(re.search(r"about (\d+)", needed[0]).group(1)) > 8


@needs_chromium
def test_report_pages_for_a_run_and_a_commit(example: Project, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    with ledger_of(example) as ledger:
        runs = ledger.runs()
    compare = next(r for r in runs if r.session == "compare")
    _ok(example.relgate("report", compare.id, "--html", str(out / "run.html"), "--embed-logs"))
    first = (out / "run.html").read_bytes()
    _ok(example.relgate("report", compare.id, "--html", str(out / "run.html"), "--embed-logs"))
    assert (out / "run.html").read_bytes() == first  # the same ledger: the same bytes
    dom = parse(dump_dom(out / "run.html"))
    assert _text(dom.find_all("h1")[0]).startswith(f"Run {compare.id} (compare) of tinyinfer at ")
    names = [_name(li) for li in _steps_rows(dom)]
    assert {"matvec#1", "matvec#5", "scorer#1"} <= set(names)
    for li in _steps_rows(dom):  # --embed-logs: each step's log tail in the page
        name = _name(li)
        if name.startswith(("matvec#", "scorer#")):
            tail = _text(li.find_all("details", cls="tail")[0])
            assert tail.startswith(f"log tail of step #{li.attrs['id'][1:]}"), tail
            assert ("bench matvec device=cpu" if name.startswith("matvec") else "summary cases=") in tail, tail
    assert all(p.is_file() for p in _log_links(dom, out / "run.html"))

    previous = git(example.root, "rev-parse", "v0.2.0").strip()
    _ok(example.relgate("report", "--commit", "v0.2.0", "--html", str(out / "old.html")))
    dom = parse(dump_dom(out / "old.html"))
    assert _text(dom.find_all("code", cls="commit")[0]) == previous
    assert "lane-census" in [_name(li) for li in _steps_rows(dom)]

    for args, message in ((("--commit", "no-such-ref"), "--commit no-such-ref: names no commit"),
                          (("--html", str(out)), f"{out}"),  # a folder: refused, naming it
                          ((compare.id, "--commit", "HEAD"), "name a run or --commit, not both")):
        done = example.relgate("report", *args, *(("--html", str(out / "x.html")) if "--html" not in args else ()))
        assert done.returncode == 2 and "Traceback" not in done.stderr and message in done.stderr, done.stderr
        assert done.stderr.strip().count("\n") == 0 and not (out / "x.html").exists()
    bad = example.relgate("report", "no-such-run", "--html", str(out / "bad.html"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and not (out / "bad.html").exists()
    assert bad.stderr.strip().count("\n") == 0 and "report no-such-run: names no run" in bad.stderr


@needs_chromium
def test_a_hostile_note_step_name_and_log_render_as_text(tinyinfer: Project, tmp_path: Path) -> None:
    p = tinyinfer
    _ok(p.nox("gate", extra=("--", "kernels-cpu")))
    ansi = "\x1b[31mred\x1b[0m"
    refused = p.relgate("attest", "ci-green", "--by", "mallory", "--note", f"{HOSTILE_SCRIPT}</td>{ansi}")
    assert refused.returncode == 2 and "--note: holds an ANSI escape" in refused.stderr  # the input rule
    _ok(p.relgate("attest", "ci-green", "--by", "</td><b>mallory</b>", "--note", f"{HOSTILE_SCRIPT}</td>"))
    big = tmp_path / "big.py"
    big.write_text("import sys\nsys.stdout.write('x' * 10_000_000 + '\\n\\x1b[32m</td></tr></table>"
                   + HOSTILE_IMG.replace("'", "\\'") + "\\n')\n")  # a 10 MB line, then markup and ANSI
    _ok(p.relgate("run", "--item", "agent-checks", "--note", HOSTILE_IMG, "--", "python3", str(big), "</td>"))
    from relgate.core.verdict import Verdict
    from relgate.ledger.identity import ProjectIdentity

    head = git(p.root, "rev-parse", "HEAD").strip()
    with ledger_of(p) as ledger:
        key = ledger.steps()[-1].project_key
        run = ledger.begin_run(session="gate", argv=["nox", "-s", "gate"], project="tinyinfer", project_root=p.root,
                               commit=head, branch="main", dirty=False, identity=ProjectIdentity.from_key(key))
        ledger.record_step(run_id=run, session="gate", step="kernels</td><td>" + HOSTILE_SCRIPT, lane="gate",
                           target="kernels</td>", host="local", board=None, driver=None, toolkit=None, commit=head,
                           dirty=False, command="make test", cwd=str(p.root), env={}, verdict=Verdict.ERROR,
                           reason=f"{ansi} lost the connection</td>")
        ledger.finish_run(run, "ok")
        ledger.add_decision(project=key, commit=head, dirty=False, item="maintainer-approval", kind="attest",
                            by="bo", note=ansi + "y" * 10_000_000 + HOSTILE_SCRIPT)  # past the input rule
    page = tmp_path / "hostile.html"
    _ok(p.relgate("report", "--html", str(page), "--embed-logs"))
    assert page.stat().st_size < 1_000_000  # the 10 MB note and the 10 MB log line are capped
    raw = page.read_text()
    assert raw.count("<script") == 1 and "\x1b" not in raw and "<img" not in raw

    dom = parse(dump_dom(page))
    html = dom.find_all("html")[0]
    assert html.attrs.get("data-page-script") == "ran"  # scripts were on, and only the page's ran
    assert "data-pwned" not in html.attrs and not [n for n in dom.walk() if "data-pwned" in n.attrs]
    assert [n.tag for n in dom.walk() if n.tag in ("script", "img", "b")] == ["script"]
    text = _text(dom)
    assert HOSTILE_SCRIPT + "</td>" in text  # the note, as text
    assert "</td><b>mallory</b>" in text
    assert "kernels</td><td>" + HOSTILE_SCRIPT in text
    assert "␛[31mred␛[0m lost the connection</td>" in _text(dom.by_id("errors").find_all("ul")[0])
    decisions = _text(dom.by_id("decisions"))
    assert "maintainer-approval attested by bo" in decisions and "more characters on this line" in decisions
    assert "␛[31mred␛[0m" + "y" * 100 in decisions  # a ledger note's escapes, visible
    assert "y" * 1900 in text and "y" * 2001 not in text  # every line capped at 2,000 characters
    tail = next(t for t in dom.find_all("details", cls="tail") if "</table>" in _text(t))
    assert "␛[32m</td></tr></table>" + HOSTILE_IMG in _text(tail)
    assert "bytes of the log are not shown" in _text(tail) and "more characters on this line" in _text(tail)
    # Nothing made a table cell out of the steps' names, commands or logs; the matrix kept its shape.
    assert not dom.by_id("steps").find_all("td") and not dom.by_id("steps").find_all("table")
    matrix_rows = [tr for tr in dom.by_id("matrix").find_all("tr") if "data-item" in tr.attrs]
    assert all(sum(int(td.attrs.get("colspan", "1")) for td in tr.find_all("td")) == 5 for tr in matrix_rows)
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", dom.find_all("meta")[1].attrs["content"])


@pytest.mark.parametrize(("text", "shown"), [
    ("plain <b>&</b>", "plain <b>&</b>"),  # markup is the template's to escape, not this
    ("\x1b[31mred\x1b[0m", "␛[31mred␛[0m"),
    ("a\rb\x00c\x7fd\x9be", "a␍b␀c␡d⟨U+009B⟩e"),
    ("tab\tand\nnewline", "tab\tand\nnewline"),
    ("admin\u202e\u2066txt.exe", "admin⟨U+202E⟩⟨U+2066⟩txt.exe"),  # reordering controls shown, not obeyed
    ("x" * 2001, "x" * 2000 + " … (1 more characters on this line)"),
    ("", ""),
    (None, ""),
])
def test_inert_text_shows_controls_and_caps_lines(text: str | None, shown: str) -> None:
    from relgate.signoff.page_text import inert

    assert inert(text) == shown


def test_inert_text_caps_the_whole_and_says_so() -> None:
    from relgate.signoff.page_text import inert

    out = inert("line\n" * 10_000_000)
    assert len(out) < 21_000 and out.endswith(" … (49,980,000 more characters not shown)")


def test_chromium_install_line_is_the_ci_one() -> None:
    """The skip message names what .ci/run installs."""
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "apt-get install -y chromium" in ci and INSTALL.endswith("apt-get install -y chromium")
