"""The safety mutation check: one-line breakages of relgate's safety decisions, each of which
the tests must catch.

    python tests/mutants.py [NAME ...] [--list]

Each mutant changes one line (an exact text that must occur exactly once in its file, so a
mutant whose line has moved on is an error here, never a silent survivor) in a copy of this
checkout, then runs the tests that pin that decision, in one process. A mutant is *killed*
when those tests fail (pytest exit 1); it *survives* when they pass; anything else (the copy
would not import, pytest found no test) is an error of the check. Before any mutant, every
selection runs once on the unchanged copy and must pass, so that a kill means the mutation and
nothing else. Exit 0: every mutant killed; 1: one survived (or a selection fails unchanged);
2: the check itself is broken (a mutant's line is gone, a selection selects nothing).

``tests/test_mutants.py`` runs the same list inside the suite (one test per mutant), so CI and
the README's test command run it too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

__all__ = ["MUTANTS", "Mutant", "Tree", "copy_tree", "main"]


@dataclass(frozen=True, kw_only=True)
class Mutant:
    name: str
    path: str  # relative to the checkout
    old: str  # occurs exactly once in ``path``
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, ``-k`` expressions
    why: str  # the false green (or leak) this mutant would ship


def _k(file: str, expr: str) -> tuple[str, ...]:
    return (file, "-k", expr)


MUTANTS: tuple[Mutant, ...] = (
    # --- the tag ---------------------------------------------------------------------------------
    Mutant(name="tag-on-incomplete-signoff", path="relgate/signoff/tag.py",
           old='    if not doc.get("complete"):\n        reasons.append(f"the sign-off of',
           new='    if False:\n        reasons.append(f"the sign-off of',
           tests=_k("tests/test_signoff.py", "failed_gate_for_that_reason_alone"),
           why="the release tag is created on a failed gate"),
    Mutant(name="tag-on-dirty-tree", path="relgate/signoff/tag.py",
           old="    if facts.dirty:\n        reasons.append(", new="    if False:\n        reasons.append(",
           tests=_k("tests/test_signoff.py", "tag_is_created_on_a_complete_signoff"),
           why="a tag over uncommitted changes"),
    Mutant(name="tag-without-attestation", path="relgate/signoff/tag.py",
           old='        if status.get(item) != "attested":',
           new='        if status.get(item) not in ("attested", "missing"):',
           tests=_k("tests/test_signoff.py", "tag_is_refused_on_an_incomplete_signoff"),
           why="a tag that no maintainer approved"),
    Mutant(name="tag-twice", path="relgate/signoff/tag.py",
           old='"--verify", "--quiet", f"refs/tags/{tag}").returncode == 0:',
           new='"--verify", "--quiet", f"refs/tags/{tag}").returncode == 99:',
           tests=_k("tests/test_signoff.py", "tag_is_created_on_a_complete_signoff"),
           why="an existing release tag moved or re-created"),
    # --- checklist statuses ----------------------------------------------------------------------
    Mutant(name="checklist-error-or-skip-passes", path="relgate/signoff/checklist.py",
           old="            elif row.verdict is not Verdict.PASS:\n                failed.append(_why(row))",
           new="            elif row.verdict is Verdict.FAIL:\n                failed.append(_why(row))",
           tests=("tests/test_checklist.py",),
           why="an item passed on a step that errored or was skipped"),
    Mutant(name="checklist-not-run-passes", path="relgate/signoff/checklist.py",
           old='                missing.append(f"{_label(row)} on {board}: not run ({row.reason})")',
           new="                pass",
           tests=("tests/test_checklist.py",),
           why="an item passed on a step nothing could run"),
    Mutant(name="checklist-dirty-counts", path="relgate/measure/candidate.py",
           old="        return commit in self.same_tree and not dirty",
           new="        return commit in self.same_tree",
           tests=("tests/test_checklist.py",),
           why="a pass from a dirty tree backs the sign-off"),
    Mutant(name="checklist-missing-is-done", path="relgate/signoff/checklist.py",
           old='DONE = frozenset({"passed", "attested", "skipped", "not-validated", "not-applicable"})',
           new='DONE = frozenset({"passed", "attested", "skipped", "not-validated", "not-applicable", "missing"})',
           tests=("tests/test_checklist.py",),
           why="a sign-off complete with items missing"),
    Mutant(name="checklist-auto-item-attested", path="relgate/signoff/checklist.py",
           old='    if decision is not None and decision.kind == "attest" and item.manual:',
           new='    if decision is not None and decision.kind == "attest":',
           tests=("tests/test_checklist.py",),
           why="a failed automatic item covered by a person's word"),
    Mutant(name="checklist-not-validated-covers-failure", path="relgate/signoff/checklist.py",
           old='    if decision is not None and decision.kind == "not-validated" and status == "failed":',
           new='    if decision is not None and decision.kind == "not-validated" and status == "never":',
           tests=("tests/test_checklist.py",),
           why="a failure shipped as 'not validated'"),
    # --- step verdicts ---------------------------------------------------------------------------
    Mutant(name="verdict-exit-code-ignored", path="relgate/run/runner.py",
           old="    if last.exit_code != 0:\n        more =", new="    if last.exit_code is None:\n        more =",
           tests=_k("tests/test_host_session.py", "a_failing_test_fails"),
           why="a command that exits non-zero passes"),
    Mutant(name="verdict-warnings-ignored", path="relgate/run/runner.py",
           old="    if warnings:\n        first = warnings[0]", new="    if False:\n        first = warnings[0]",
           tests=_k("tests/test_host_session.py", "planted_gcc_warning"),
           why="a build with a compiler warning passes"),
    Mutant(name="verdict-timeout-passes", path="relgate/run/runner.py",
           old='        return Verdict.FAIL, f"timed out after {step.timeout:g} s: {last.command}"',
           new='        return Verdict.PASS, f"timed out after {step.timeout:g} s: {last.command}"',
           tests=_k("tests/test_host_session.py", "past_its_timeout"),
           why="a step killed at its timeout passes"),
    Mutant(name="verdict-missing-evidence-passes", path="relgate/run/runner.py",
           old="    elif step.evidence_required and verdict is Verdict.PASS:\n        verdict = Verdict.ERROR",
           new="    elif step.evidence_required and verdict is Verdict.PASS:\n        verdict = Verdict.PASS",
           tests=_k("tests/test_lanes.py", "brings_none_is_an_error"),
           why="a target that should have recorded evidence and brought none back passes"),
    Mutant(name="verdict-error-does-not-block", path="relgate/core/verdict.py",
           old="        return self in (Verdict.FAIL, Verdict.ERROR)", new="        return self is Verdict.FAIL",
           tests=_k("tests/test_lanes.py", "brings_none_is_an_error"),
           why="a session whose harness broke exits 0"),
    Mutant(name="require-all-ignored", path="relgate/run/runner.py",
           old="        return not any(o.verdict.blocks or (require_all and o.verdict is Verdict.NOT_RUN) for o in",
           new="        return not any(o.verdict.blocks or (False and o.verdict is Verdict.NOT_RUN) for o in",
           tests=_k("tests/test_lanes.py", "require_all"),
           why="--require-all passes a lane whose CUDA arms never ran"),
    # --- a step that did nothing ------------------------------------------------------------------
    Mutant(name="zero-tests-pass", path="relgate/run/testcounts.py",
           old="    if counts.ran == 0 and counts.skipped == 0:\n        docs =",
           new="    if counts.ran == 0 and counts.skipped == -1:\n        docs =",
           tests=("tests/test_testcounts.py",),
           why="a gate file cfg'd out by a feature runs 0 tests and passes"),
    Mutant(name="all-skipped-pass", path="relgate/run/testcounts.py",
           old="    if counts.ran == 0:\n        return Verdict.NOT_RUN, f\"all {counts.skipped} tests skipped",
           new="    if counts.ran == -1:\n        return Verdict.NOT_RUN, f\"all {counts.skipped} tests skipped",
           tests=("tests/test_testcounts.py",),
           why="a target whose every test was skipped passes"),
    Mutant(name="max-skipped-ignored", path="relgate/run/testcounts.py",
           old="        if over:\n            return Verdict.FAIL, (f\"{counts.skipped} of",
           new="        if False:\n            return Verdict.FAIL, (f\"{counts.skipped} of",
           tests=("tests/test_testcounts.py",),
           why="41 of 80 tests skipped (the pure-Python fallback) passes"),
    Mutant(name="built-nothing-passes", path="relgate/run/runner.py",
           old="    if wrote_nothing(step.cwd, since_ns=started_ns, exclude=(home,)):",
           new="    if False:",
           tests=_k("tests/test_no_vacuous_pass.py", "prints_help_built_nothing"),
           why="a release build whose make target prints help passes in 0.0 s"),
    Mutant(name="repository-text-breaks-a-comment", path="relgate/manifest/init_files.py",
           old="        what = inert(what)  # read from the repository: one comment line, whatever it holds",
           new="        what = what",
           tests=_k("tests/test_cmake_kind.py", "stays_one_line"),
           why="a CTest label with line breaks wrote TOML tables into the lanes.toml init generated"),
    Mutant(name="repository-text-breaks-a-drift-line", path="relgate/stages/tools.py",
           old="            print(inert(line))  # names and labels read from the repository",
           new="            print(line)  # names and labels read from the repository",
           tests=_k("tests/test_cmake_kind.py", "one_line_per_drift"),
           why="a CTest label with line breaks printed lines of its own under relgate init --check"),
    Mutant(name="built-nothing-elsewhere-passes", path="relgate/run/runner.py",
           old="    if done.tail.strip():",
           new="    if True:",
           tests=_k("tests/test_remote_ssh.py", "wrote_nothing_there_fails_built_nothing"),
           why="a release build on an SSH host that wrote nothing there passed (judged by produces only)"),
    Mutant(name="backend-item-on-any-board", path="relgate/signoff/checklist.py",
           old="        kept = tuple(b for b in boards if offers(b))",
           new="        kept = tuple(boards)",
           tests=_k("tests/test_no_vacuous_pass.py", "host_cuda_item_is_not_passed"),
           why="the CUDA item passed on a GPU-less host because nvcc compiled there"),
    # --- the census ------------------------------------------------------------------------------
    Mutant(name="census-folder-is-a-file", path="relgate/lanes/census.py",
           old="        if target.path is not None and not (root / target.path).is_file():",
           new="        if target.path is not None and not (root / target.path).exists():",
           tests=_k("tests/test_census.py", "missing-file"),
           why="a target whose path is a folder passes the census"),
    Mutant(name="census-make-needs-lanes", path="relgate/kinds/make/__init__.py",
           old="    needs_lanes = True", new="    needs_lanes = False",
           tests=_k("tests/test_manifest_secrets_and_ledger_paths.py", "make_project_with_no_lanes_file_says_so"),
           why="a make project without a lanes file: its census silently absent from nox -s host"),
    Mutant(name="host-make-needs-builds", path="relgate/kinds/make/__init__.py",
           old="    needs_builds = True", new="    needs_builds = False",
           tests=_k("tests/test_manifests.py", "make_project_without_builds_toml_says_what_it_skipped"),
           why="a make project without builds.toml: no release build ran and nothing said so"),
    # --- redaction -------------------------------------------------------------------------------
    Mutant(name="redact-short-url-password", path="relgate/core/redact.py",
           old='    return not m["name"].endswith(":") and len(m["value"]) < _URL_USER_ONLY',
           new='    return len(m["value"]) < _URL_USER_ONLY',
           tests=("tests/test_redact.py",),
           why="postgres://u:pw@h/db written out with its password"),
    Mutant(name="redact-secret-env-names", path="relgate/core/redact.py",
           old="    return bool(_SECRET_NAME.search(name))", new="    return False",
           tests=("tests/test_redact.py",),
           why="HF_TOKEN's value in the ledger"),
    # --- the reuse key ---------------------------------------------------------------------------
    Mutant(name="reuse-ignores-env", path="relgate/ledger/steps.py",
           old=" AND command = ? AND env = ?\"", new=" AND command = ? AND (env = ? OR 1)\"",
           tests=_k("tests/test_ledger.py", "reuse"),
           why="a pass reused after the step's env changed"),
    Mutant(name="reuse-of-a-dirty-pass", path="relgate/ledger/steps.py",
           old=' AND board IS ?{nodes} AND dirty = 0 AND verdict = ?"',
           new=' AND board IS ?{nodes} AND dirty >= 0 AND verdict = ?"',
           tests=_k("tests/test_ledger.py", "reuse"),
           why="a pass from a dirty tree reused for the clean commit"),
    # --- archive safety --------------------------------------------------------------------------
    Mutant(name="archive-dotdot-member", path="relgate/package/archive.py",
           old='    if ".." in parts:\n        raise ArchiveError(archive, "\'..\' in the path',
           new='    if "..." in parts:\n        raise ArchiveError(archive, "\'..\' in the path',
           tests=("tests/test_archive.py",),
           why="a package member written outside the extraction folder"),
    Mutant(name="archive-symlink-escape", path="relgate/package/archive.py",
           old='    if resolved == ".." or resolved.startswith("../"):',
           new='    if resolved == "..":',
           tests=("tests/test_archive.py",),
           why="a symlink in the package pointing outside the extraction folder"),
    # --- host keys -------------------------------------------------------------------------------
    Mutant(name="ssh-unknown-host-key-accepted", path="relgate/remote/ssh.py",
           old="    client.set_missing_host_key_policy(_Refuse(spec))",
           new="    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())",
           tests=_k("tests/test_remote_ssh.py", "unknown_host_key"),
           why="an unknown SSH host trusted blindly"),
    # --- Python packages with native code ----------------------------------------------------------
    Mutant(name="extension-not-built-passes", path="relgate/package/wheelcheck.py",
           old="        if extension_files(members, module):\n            continue",
           new="        if True:\n            continue",
           tests=_k("tests/test_python_package.py", "does_not_compile_is_red_naming_its_source"),
           why="a wheel whose C extension did not build (the pure-Python fallback) passes"),
    Mutant(name="tests-run-against-an-installed-release", path="relgate/run/testenv.py",
           old='if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}',
           new='if k not in ("PYTHONHOME", "PYTHONSTARTUP")}',
           tests=_k("tests/test_python_package.py", "breaks_behaviour_is_red_with_a_release_installed"),
           why="the host tests pass against a released copy instead of the commit's build"),
    Mutant(name="diff-check-against-head", path="relgate/run/diffcheck.py",
           old='        return f"refs/tags/{tag}", f"the previous release tag {tag}"',
           new='        return "HEAD", f"the previous release tag {tag}"',
           tests=_k("tests/test_python_package.py", "diff_check_base_is_the_previous_release_tag"),
           why="whitespace errors committed since the last release pass git-diff-check"),
    # --- user strings, user files, signed sign-offs ------------------------------------------------
    Mutant(name="control-characters-accepted", path="relgate/core/text.py",
           old="    found = UNSAFE.search(text)\n    if found is None:",
           new="    found = None\n    if found is None:",
           tests=_k("tests/test_user_strings_and_readers.py", "line_break_or_an_escape_is_refused_naming"),
           why="a --note with a newline plants '**Verdict: complete.**' in signoff.md"),
    Mutant(name="fifo-read-as-a-file", path="relgate/core/readers.py",
           old="        if not stat.S_ISREG(st.st_mode):\n            raise InputError(f\"{path}: {kind_of(st.st_mode)}, not",
           new="        if False:\n            raise InputError(f\"{path}: {kind_of(st.st_mode)}, not",
           tests=_k("tests/test_user_strings_and_readers.py", "not_a_bounded_regular_file or fifo_manifest"),
           why="measure add or a manifest read from a FIFO or /dev/zero hangs"),
    Mutant(name="verify-signoff-accepts-incomplete", path="relgate/signoff/tag.py",
           old='    if doc["complete"] is not True:', new='    if doc["complete"] is None:',
           tests=_k("tests/test_user_strings_and_readers.py", "verify_signoff_checks_the_content"),
           why="a signed sign-off that says complete: false verifies"),
    # --- clusters and GPU slots --------------------------------------------------------------------
    Mutant(name="slurm-preemption-is-a-fail", path="relgate/remote/slurm_jobs.py",
           old='INFRA_STATES = frozenset({"PREEMPTED", "TIMEOUT",', new='INFRA_STATES = frozenset({"TIMEOUT",',
           tests=("tests/test_slurm_jobs.py",),
           why="a preempted job is a product failure instead of an infrastructure error"),
    Mutant(name="gpu-slot-shared", path="relgate/run/slots.py",
           old="                    free.difference_update(taken)", new="                    pass",
           tests=_k("tests/test_gpu_slots.py", "never_sharing_a_gpu"),
           why="two steps running at once on one GPU"),
    # --- the sign-off page -------------------------------------------------------------------------
    Mutant(name="page-not-escaped", path="relgate/signoff/page.py",
           old="autoescape=True,", new="autoescape=False,",
           tests=_k("tests/test_signoff_page.py", "hostile"),
           why="a note with <script> runs in the sign-off page"),
    # --- speed verdicts ---------------------------------------------------------------------------
    Mutant(name="speed-never-blocks", path="relgate/measure/stats.py",
           old='    if total - above_b <= c:\n        return "block"', new='    if total - above_b < 0:\n        return "block"',
           tests=_k("tests/test_speed_bound.py", "row_is_called or suite_calls"),
           why="a confirmed 12 % regression passes the speed item"),
    Mutant(name="speed-bound-per-row-only", path="relgate/measure/bound.py",
           old="        return self.false_alarm * self.share / max(self.tests, 1) * (2 * k - 1) / self.looks ** 2",
           new="        return self.false_alarm * self.share / 1 * (2 * k - 1) / self.looks ** 2",
           tests=_k("tests/test_speed_bound.py", "spends_the_budget or false_alarm"),
           why="false alarms add up over a board's rows: identical code blocked"),
    Mutant(name="speed-block-exit-code", path="relgate/measure/results.py",
           old="    if not comparisons or not words or BLOCK in words or not all(compared(w) for w in words):\n"
               "        return EXIT_BLOCK",
           new="    if not comparisons or not words or not all(compared(w) for w in words):\n"
               "        return EXIT_BLOCK",
           tests=_k("tests/test_signoff.py", "asks_for_a_rerun_and_blocks"),
           why="measure compare exits 0 on a blocked release"),
    Mutant(name="speed-undecided-exit-code", path="relgate/measure/results.py",
           old="    return EXIT_UNDECIDED if any(w.startswith(UNDECIDED) for w in words) else EXIT_PASS",
           new="    return EXIT_PASS if any(w.startswith(UNDECIDED) for w in words) else EXIT_PASS",
           tests=_k("tests/test_signoff.py", "undecided_after_max_batches"),
           why="a board too noisy to decide exits 0 as if it passed"),
)


@dataclass
class Tree:
    """A copy of the checkout that mutants are applied to, one at a time."""

    root: Path
    _stamp: int = 0

    def write(self, rel: str, text: str) -> None:
        """Write a file with a modification time no earlier write had: a cached bytecode file
        (keyed by mtime and size) is never taken for the new text."""
        path = self.root / rel
        path.write_text(text)
        self._stamp += 1
        stamp = 2_000_000_000 + self._stamp * 7
        os.utime(path, (stamp, stamp))

    @contextmanager
    def mutated(self, mutant: Mutant) -> Iterator[None]:
        path = self.root / mutant.path
        text = path.read_text()
        found = text.count(mutant.old)
        if found != 1:
            raise LookupError(f"{mutant.name}: {mutant.path} holds its line {found} times, not once; "
                              "update the mutant to today's code")
        self.write(mutant.path, text.replace(mutant.old, mutant.new))
        try:
            yield
        finally:
            self.write(mutant.path, text)

    def pytest(self, args: Sequence[str], *, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
                "--no-header", *args]
        return subprocess.run(argv, cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)


def copy_tree(dest: Path) -> Tree:
    """The checkout's files as git sees them (tracked, and untracked not ignored), under ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if not src.is_file():  # deleted in the work tree, not yet in the index
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    return Tree(root=dest)


def outcome(tree: Tree, mutant: Mutant) -> tuple[str, str]:
    """``("killed" | "survived" | "error", the tail of pytest's output)``."""
    try:
        with tree.mutated(mutant):
            done = tree.pytest(mutant.tests)
    except LookupError as exc:
        return "error", str(exc)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    if done.returncode == 1:
        return "killed", tail
    if done.returncode == 0:
        return "survived", tail
    return "error", f"pytest exit {done.returncode}\n{tail}"


def baseline(tree: Tree, mutants: Sequence[Mutant]) -> list[str]:
    """The selections on the unchanged copy: each must pass (exit 0). Problems, one a line."""
    problems = []
    for tests in dict.fromkeys(m.tests for m in mutants):
        done = tree.pytest(tests)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
            problems.append(f"unchanged tree: pytest {' '.join(tests)} exit {done.returncode}\n{tail}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="only these mutants")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"mutants.py: no mutant {', '.join(unknown)} (--list shows them)", file=sys.stderr)
        return 2
    chosen = [known[n] for n in args.names] or list(MUTANTS)
    if args.list:
        for m in chosen:
            print(f"{m.name:40} {m.path}: {m.why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="relgate-mutants-") as tmp:
        tree = copy_tree(Path(tmp) / "tree")
        problems = baseline(tree, chosen)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        counts = {"killed": 0, "survived": 0, "error": 0}
        for m in chosen:
            verdict, tail = outcome(tree, m)
            counts[verdict] += 1
            print(f"{verdict:8} {m.name}: {m.why}", flush=True)
            if verdict != "killed":
                print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"mutants: {counts['killed']} killed, {counts['survived']} survived, {counts['error']} error(s) "
          f"of {len(chosen)}")
    if counts["error"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
