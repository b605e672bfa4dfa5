"""What an extracted package may not hold, and what it must hold. Each finding names the file.

Forbidden: nested archives and local tooling material (:data:`DEFAULT_FORBID`), plus the
project's own ``[package] forbid`` globs; ``[package] allow`` exempts paths from the
defaults (never from the project's own globs). Required: every declared target's path and
every declared fixture (and, where one is declared, the lock file).

Globs read like ``.gitignore`` lines, matched against "/"-separated paths from the
package root:

- no "/" in it: matches a file or folder name at any depth (``*.tar.gz``, ``.DS_Store``);
- a trailing "/": matches folders only (``.git/`` is a folder, ``.git`` a folder or file);
- any other "/": matches the whole path from the root (``docs/internal/*.md``, ``/target/``);
  ``*`` may cross folders there.

A forbidden folder is one finding (its files are listed, the first few by name); files
inside it are not reported again.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path

from relgate.core.record import record
from relgate.package.archive import ARCHIVE_SUFFIXES, printable

__all__ = ["Rule", "Required", "Finding", "DEFAULT_FORBID", "glob_matches", "find_forbidden", "find_missing",
           "inspect_tree"]


@record
class Rule:
    glob: str
    what: str


#: What no release package should carry. ``allow`` globs exempt paths from these.
DEFAULT_FORBID: tuple[Rule, ...] = (
    *(Rule(glob=f"*{suffix}", what="nested archive") for suffix in ARCHIVE_SUFFIXES),
    Rule(glob=".git", what="version-control data"),
    Rule(glob=".hg/", what="version-control data"),
    Rule(glob=".svn/", what="version-control data"),
    Rule(glob=".bzr/", what="version-control data"),
    Rule(glob=".vscode/", what="editor folder"),
    Rule(glob=".idea/", what="editor folder"),
    Rule(glob="*.swp", what="editor file"),
    Rule(glob="*.swo", what="editor file"),
    Rule(glob="*~", what="editor backup"),
    Rule(glob=".#*", what="editor lock file"),
    Rule(glob=".DS_Store", what="desktop metadata"),
    Rule(glob="*.rej", what="patch leftover"),
    Rule(glob=".relgate/", what="tool folder"),
    Rule(glob=".nox/", what="tool folder"),
    Rule(glob=".tox/", what="tool folder"),
    Rule(glob=".venv/", what="tool folder"),
    Rule(glob="__pycache__/", what="tool folder"),
    Rule(glob="*.pyc", what="compiled Python"),
    Rule(glob=".pytest_cache/", what="tool folder"),
    Rule(glob=".mypy_cache/", what="tool folder"),
    Rule(glob=".ruff_cache/", what="tool folder"),
    Rule(glob=".benchmarks/", what="tool folder"),
    Rule(glob=".cargo/", what="tool folder"),
    Rule(glob="node_modules/", what="tool folder"),
    Rule(glob="/target/", what="build output"),
    Rule(glob=".env", what="local environment file"),
    Rule(glob=".pypirc", what="credentials file"),
    Rule(glob=".netrc", what="credentials file"),
    Rule(glob="internal/", what="internal material"),
)

_SHOWN = 3  # files of a forbidden folder named in its finding


@record
class Required:
    path: str  # relative to the package root; may be a glob (then it must match a file)
    what: str  # "target scan_parity (Cargo.toml [[test]] #2)", "fixture (package.toml package.fixtures)"


@record
class Finding:
    path: str  # relative to the package root; a folder ends with "/"
    problem: str

    def describe(self) -> str:
        """One console line: a name with a newline or an escape sequence is shown escaped."""
        return printable(f"{self.path}: {self.problem}")


def glob_matches(glob: str, path: str, *, is_dir: bool) -> bool:
    """Whether ``glob`` (see the module docstring) matches ``path`` ("/"-separated, from the root)."""
    dir_only = glob.endswith("/")
    core = glob.strip("/")
    if not core or (dir_only and not is_dir):
        return False
    if glob.startswith("/") or "/" in core:
        return fnmatch.fnmatchcase(path, core)
    return fnmatch.fnmatchcase(posixpath.basename(path), core)


def _walk(root: Path) -> Iterable[tuple[str, bool, list[str]]]:
    """(path, is_dir, sub-folder names to visit) for every entry, sorted; symlinks are not followed."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        rel = os.path.relpath(folder, root)
        base = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(files):
            yield base + name, False, []
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in links:  # a symlink to a folder is an entry, not a folder to enter
            dirs.remove(name)
            yield base + name, False, []
        for name in list(dirs):
            yield base + name, True, dirs


def _files_under(root: Path, folder: str) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(root / folder, followlinks=False):
        dirs.sort()
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        out += [f"{rel}/{name}" for name in sorted(files)]
    return out


def find_forbidden(root: Path, *, forbid: Sequence[str] = (), allow: Sequence[str] = (),
                   defaults: bool = True) -> list[Finding]:
    """Every file or folder under ``root`` that a forbid glob matches (folders reported once)."""
    root = Path(root)
    rules = [*(DEFAULT_FORBID if defaults else ()),
             *(Rule(glob=g, what="forbidden by the project") for g in forbid)]
    own = len(rules) - len(forbid)
    findings: list[Finding] = []
    for path, is_dir, subdirs in _walk(root):
        allowed = any(glob_matches(g, path, is_dir=is_dir) for g in allow)
        for i, rule in enumerate(rules):
            if i < own and allowed:
                continue
            if not glob_matches(rule.glob, path, is_dir=is_dir):
                continue
            if is_dir:
                files = _files_under(root, path)
                shown = ", ".join(files[:_SHOWN]) + (f" and {len(files) - _SHOWN} more" if len(files) > _SHOWN else "")
                findings.append(Finding(path=path + "/", problem=f"{rule.what} (matches {rule.glob}): "
                                                                 + (shown or "an empty folder")))
                subdirs.remove(posixpath.basename(path))  # reported whole: do not descend
            else:
                findings.append(Finding(path=path, problem=f"{rule.what} (matches {rule.glob})"))
            break
    return findings


def find_missing(root: Path, required: Sequence[Required]) -> list[Finding]:
    """Every required path (or glob) that ``root`` does not hold."""
    root = Path(root)
    entries: list[str] | None = None
    findings: list[Finding] = []
    for req in required:
        norm = posixpath.normpath(req.path.replace("\\", "/"))
        if norm.startswith("../") or norm == ".." or norm.startswith("/"):
            findings.append(Finding(path=req.path, problem=f"missing: {req.what} lies outside the package"))
            continue
        if any(ch in norm for ch in "*?["):
            if entries is None:
                entries = [p for p, is_dir, _ in _walk(root) if not is_dir]
            if not any(fnmatch.fnmatchcase(p, norm) for p in entries):
                findings.append(Finding(path=req.path, problem=f"missing: no file matches this {req.what}"))
            continue
        if not (root / norm).exists() and not (root / norm).is_symlink():
            findings.append(Finding(path=norm, problem=f"missing: {req.what}"))
    return findings


def inspect_tree(root: Path, *, forbid: Sequence[str] = (), allow: Sequence[str] = (),
                 required: Sequence[Required] = (), defaults: bool = True) -> list[Finding]:
    """Forbidden material first, then missing paths."""
    return [*find_forbidden(root, forbid=forbid, allow=allow, defaults=defaults), *find_missing(root, required)]
