"""Redaction: secrets never reach a log, the tail or the ledger; ordinary text is untouched."""

from __future__ import annotations

import pytest

from relgate.core.redact import MASK, Redactor, argv_secrets, is_secret_name, redact_argv, redact_env, shell_secrets


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["make", "cpu"], ["make", "cpu"]),
        (["tool", "--token=abc123456"], ["tool", f"--token={MASK}"]),
        (["tool", "--token", "abc123456", "-v"], ["tool", "--token", MASK, "-v"]),
        (["tool", "--api-key=k", "--password", "p"], ["tool", f"--api-key={MASK}", "--password", MASK]),
        (["env", "HF_TOKEN=hf_secretvalue123", "run"], ["env", f"HF_TOKEN={MASK}", "run"]),
        (["cc", "-DAPI_KEY=abcdef123", "-c", "x.c"], ["cc", f"-DAPI_KEY={MASK}", "-c", "x.c"]),
        # a secret-named flag as the last word: nothing to hide after it
        (["tool", "--token"], ["tool", "--token"]),
        # not secret-looking: names without a secret word, plain words that merely contain one
        (["cargo", "build", "--features=cuda", "--jobs", "8"], ["cargo", "build", "--features=cuda", "--jobs", "8"]),
        (["cat", "src/keys.c"], ["cat", "src/keys.c"]),
    ],
)
def test_redact_argv(argv: list[str], expected: list[str]) -> None:
    assert redact_argv(argv) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["tool", "--token=abc123456"], ["abc123456"]),
        (["tool", "--password", "hunter22", "x"], ["hunter22"]),
        (["make", "cpu"], []),
    ],
)
def test_argv_secrets_are_the_values_redact_argv_hides(argv: list[str], expected: list[str]) -> None:
    assert argv_secrets(argv) == expected


def test_shell_secrets_split_the_string_and_survive_bad_quoting() -> None:
    assert shell_secrets("curl --token abc123456 https://x") == ["abc123456"]
    assert shell_secrets("tool --password abc123456; tool --token=xyz987654|cat") == ["abc123456", "xyz987654"]
    assert shell_secrets("echo 'unterminated") == []


@pytest.mark.parametrize(
    ("name", "secret"),
    [("HF_TOKEN", True), ("github_token", True), ("DB_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True),
     ("NPM_AUTH", True), ("PATH", False), ("HOME", False), ("CUDA_VISIBLE_DEVICES", False)],
)
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redact_env_masks_secret_names_only_and_keeps_empty_values() -> None:
    env = {"HF_TOKEN": "hf_secretvalue123", "PATH": "/usr/bin", "API_KEY": "", "CC": "gcc"}
    assert redact_env(env) == {"HF_TOKEN": MASK, "PATH": "/usr/bin", "API_KEY": "", "CC": "gcc"}
    assert env["HF_TOKEN"] == "hf_secretvalue123"  # the input is not modified


@pytest.mark.parametrize(
    ("secrets", "text", "expected"),
    [
        # a known value is hidden wherever it shows up
        (["hf_secretvalue123"], "Authorization: Bearer hf_secretvalue123\n", f"Authorization: Bearer {MASK}\n"),
        (["hf_secretvalue123"], "a hf_secretvalue123 b hf_secretvalue123", f"a {MASK} b {MASK}"),
        # the longer of two overlapping values wins, so no tail of it is left behind
        (["abcdef", "abcdef123456"], "x abcdef123456 y", f"x {MASK} y"),
        # name=value secrets in free text, even when the value is unknown
        ([], "export HF_TOKEN=hf_unknown999\n", f"export HF_TOKEN={MASK}\n"),
        ([], "running tool --token=abc123456 now", f"running tool --token={MASK} now"),
        # compiler locations are not "name: value" secrets
        ([], "src/keys.c:12:3: warning: unused variable 'key' [-Wunused-variable]\n",
         "src/keys.c:12:3: warning: unused variable 'key' [-Wunused-variable]\n"),
        ([], "src/auth_token.rs:4:1: error: expected item\n", "src/auth_token.rs:4:1: error: expected item\n"),
        # short values would redact half of every log: they are not hidden as free text
        (["yes", "1"], "yes 1 yes\n", "yes 1 yes\n"),
        (["12345"], "build 12345 done", "build 12345 done"),
        ([], "plain text, nothing secret\n", "plain text, nothing secret\n"),
        # a secret word with neither separator is text; with only one, that one's pattern applies
        ([], "token auth secret key cookie\n", "token auth secret key cookie\n"),
        ([], "x-api-key: abcdef123456\n", f"x-api-key: {MASK}\n"),
        ([], "a line\nthen PASSWORD=hunter2222 later\n", f"a line\nthen PASSWORD={MASK} later\n"),
        ([], "Cookie: sid=abcdef123456\n", f"Cookie: {MASK}\n"),
        ([], "clone https://ghp_abcdefghijklmnop1234@github.com/o/r\n",
         f"clone https://{MASK}@github.com/o/r\n"),
    ],
)
def test_redactor(secrets: list[str], text: str, expected: str) -> None:
    assert Redactor(secrets)(text) == expected


def test_redactor_from_env_knows_secret_named_variables_only() -> None:
    redact = Redactor.from_env({"HF_TOKEN": "hf_secretvalue123"}, {"BUILD_DIR": "build/release-x"})
    assert redact("token hf_secretvalue123 in build/release-x") == f"token {MASK} in build/release-x"


def test_redactor_treats_values_literally_not_as_regex() -> None:
    redact = Redactor(["a.b*c+d?"])
    assert redact("x a.b*c+d? y") == f"x {MASK} y"
    assert redact("x aXbbbcd y") == "x aXbbbcd y"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # a short URL password is a password all the same (redact_env's own example)
        ("postgres://u:pw@h/db", f"postgres://u:{MASK}@h/db"),
        ("https://ci:x@mirror.invalid/simple", f"https://ci:{MASK}@mirror.invalid/simple"),
        # a user name alone is not a secret unless it is long enough to be a token
        ("ssh://git@host/repo", "ssh://git@host/repo"),
        ("https://ghp_abcdefghijklmnop1234@github.com/o/r", f"https://{MASK}@github.com/o/r"),
    ],
)
def test_url_credentials_in_env_values(value: str, expected: str) -> None:
    assert redact_env({"DB_URL": value}) == {"DB_URL": expected}
