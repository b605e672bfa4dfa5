"""The CLI builds only the parser of the command it runs; it must read argv exactly as the
whole parser does."""

from __future__ import annotations

import pytest

from relgate import cli


def _choices() -> set[str]:
    sub = next(a for a in cli._parser()._actions if a.dest == "command")
    return set(sub.choices)


def test_the_command_names_are_the_parsers_commands() -> None:
    assert cli._COMMAND_NAMES == _choices()


@pytest.mark.parametrize(("argv", "command"), [
    (["host"], "host"),
    (["--workspace", "/w", "signoff", "--out", "x"], "signoff"),
    (["--workspace=/w", "--home", "h", "lane", "gate"], "lane"),
    (["--work", "/w", "status"], "status"),  # a unique abbreviation, as argparse takes it
    (["--workspace", "status", "host"], "host"),  # a value that happens to be a command's name
    (["--ho", "x", "host"], None),  # ambiguous (--home, --hosts): the whole parser says so
    (["--help"], None),
    (["-h"], None),
    (["--version"], None),
    (["--bogus", "host"], None),
    (["--", "host"], None),
    (["hots"], None),  # a typo: the whole parser lists every command
    ([], None),
])
def test_the_command_is_read_as_argparse_reads_it(argv: list[str], command: str | None) -> None:
    assert cli._command_of(argv) == command


@pytest.mark.parametrize("argv", [
    ["host", "--reuse", "--report", "r.json", "a", "b"],
    ["--workspace", "/w", "--manifests", "m", "lane", "gate", "--list"],
    ["evidence", "diff", "a", "b", "--json"],
    ["evidence", "accept", "--release", "1.0"],
    ["measure", "add", "speed", "f.csv", "--board", "b", "--candidate", "--meta", "k=v"],
    ["attest", "ci-green", "--by", "me"],
    ["skip", "x", "--reason", "why"],
    ["run", "--item", "x", "--", "echo", "hi"],
    ["--home", "h", "signoff", "--out", "o", "--changelog"],
    ["tag", "--key", "k"],
    ["verify-signoff", "f", "--allowed-signers", "a"],
    ["status", "--json", "--commit", "HEAD"],
])
def test_the_partial_parser_reads_what_the_whole_one_reads(argv: list[str]) -> None:
    only = cli._command_of(argv)
    assert only is not None
    assert vars(cli._parser(only).parse_args(argv)) == vars(cli._parser().parse_args(argv))
