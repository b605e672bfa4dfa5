"""The safety mutation check inside the suite: every one-line breakage of a safety decision
listed in ``tests/mutants.py`` is caught by the tests that pin it (see that file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mutants
import pytest
from mutants import MUTANTS, Mutant, Tree, copy_tree, outcome

FILE_SECONDS = 120  # about how long this file takes here: it starts early (tests/conftest.py)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    yield copy_tree(tmp_path_factory.mktemp("mutants") / "tree")


def test_every_mutant_names_a_distinct_decision() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) >= 20
    assert all(m.tests and m.why and m.old != m.new for m in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_mutant_is_killed(tree: Tree, mutant: Mutant) -> None:
    verdict, tail = outcome(tree, mutant)
    assert verdict == "killed", f"{mutant.name} ({mutant.why}): {verdict}\n{tail}"
    assert (tree.root / mutant.path).read_text() == (mutants.REPO / mutant.path).read_text()  # put back


def test_a_mutation_no_selected_test_sees_survives(tree: Tree) -> None:
    """The check can say "survived": a mutant whose tests do not look at its line."""
    harmless = Mutant(name="comment", path="relgate/core/verdict.py", old='"""Verdicts, with exactly',
                      new='"""Verdicts (mutated), with exactly', tests=("tests/test_checklist.py",), why="none")
    assert outcome(tree, harmless)[0] == "survived"


def test_a_mutant_whose_line_is_gone_is_an_error_not_a_survivor(tree: Tree) -> None:
    gone = Mutant(name="gone", path="relgate/core/verdict.py", old="no such line", new="x",
                  tests=("tests/test_checklist.py",), why="none")
    verdict, why = outcome(tree, gone)
    assert verdict == "error" and why == ("gone: relgate/core/verdict.py holds its line 0 times, not once; "
                                          "update the mutant to today's code")


def test_a_selection_that_selects_nothing_is_an_error(tree: Tree) -> None:
    empty = Mutant(name="empty", path="relgate/core/verdict.py", old='"""Verdicts, with exactly',
                   new='"""Verdicts (mutated), with exactly', tests=("tests/test_checklist.py", "-k", "no_such_test"),
                   why="none")
    verdict, why = outcome(tree, empty)
    assert verdict == "error" and why.startswith("pytest exit 5")


def test_the_copy_is_this_checkout_as_git_sees_it(tree: Tree) -> None:
    assert (tree.root / "relgate" / "cli.py").read_text() == (mutants.REPO / "relgate" / "cli.py").read_text()
    assert not (tree.root / ".git").exists()
    assert Path(mutants.__file__).resolve().parent.parent == mutants.REPO
