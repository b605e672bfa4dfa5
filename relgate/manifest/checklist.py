"""``checklist.toml``: what the sign-off of a release must show, item by item.

    [release]
    version = "0.4.0"                  # default: project.version
    boards = ["host:local"]            # the boards in scope (a host without a board: host:NAME)
    backend_boards = { cuda = ["NVIDIA H200"] }   # optional: a backend's items are checked there
    backends = ["cpu"]                 # the backends in scope
    known_backends = ["hexagon"]       # optional: backends of this project beyond KNOWN_BACKENDS
    notes = ["CHANGELOG.md"]           # release-notes files (default: project.changelog)
    tag_requires = ["ci-green", "maintainer-approval"]   # attested before `nox -s tag`

    [[item]]
    id = "gate"
    title = "Every gate target passed on every board"
    auto = "lane:gate"                 # a predicate over the ledger (see AUTO_KINDS)
    targets = ["kernels-cpu"]          # optional: only these steps of the lane
    boards = []                        # optional: these boards instead of the release's; [] = wherever it ran

    [[item]]
    id = "cuda"
    title = "CUDA backend tested"
    auto = "lane:gate"
    targets = ["kernels-cuda"]
    applies = ["cuda"]                 # not applicable outside these backends
    not_validated = "CUDA was not validated for this release."

    [[item]]
    id = "ci-green"
    title = "CI is green on the release commit"
    manual = true

Every name that refers to something is checked at load (exit 2, with a did-you-mean): a
backend (``release.backends``, ``backend_boards``' keys, ``applies``) must be one of
:data:`KNOWN_BACKENDS` or ``known_backends`` (a typo such as ``applies = ["cdua"]`` would
otherwise make the item not-applicable: a green nobody earned); an item's ``boards`` must be
boards of the release; a ``host:NAME`` board must name a declared host; ``tag_requires``
must name manual items.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from relgate.core.record import record
from relgate.core.schema import Checker, did_you_mean
from relgate.manifest.keys import AUTO_KINDS, CHECKLIST, CPU_BACKENDS, KNOWN_BACKENDS

__all__ = ["AUTO_KINDS", "KNOWN_BACKENDS", "ChecklistItem", "ReleaseSpec", "ChecklistSpec", "parse_checklist"]

_RELEASE, _ITEM = CHECKLIST.top("release"), CHECKLIST.top("item")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@record
class ChecklistItem:
    id: str
    title: str
    auto: str | None  # "lane:gate" …; None for a manual item
    targets: tuple[str, ...] = ()
    applies: tuple[str, ...] = ()  # backends; empty: always
    not_validated: str | None = None
    boards: tuple[str, ...] | None = None  # None: the release's boards; (): wherever it ran

    @property
    def manual(self) -> bool:
        return self.auto is None

    @property
    def auto_kind(self) -> tuple[str, str | None]:
        assert self.auto is not None
        kind, _, arg = self.auto.partition(":")
        return kind, arg or None


@record
class ReleaseSpec:
    version: str
    boards: tuple[str, ...]
    backends: tuple[str, ...]
    notes: tuple[str, ...]  # paths relative to the project root
    tag_requires: tuple[str, ...]
    # [release.backend_boards]: where a backend's items are checked (cuda = ["NVIDIA H200"]);
    # a backend without an entry is checked on ``boards``.
    backend_boards: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def all_boards(self) -> tuple[str, ...]:
        """Every board of the release: ``boards`` and each backend's."""
        return tuple(dict.fromkeys([*self.boards, *(b for _, bs in self.backend_boards for b in bs)]))

    def boards_for(self, applies: tuple[str, ...]) -> tuple[str, ...]:
        """Where an item that applies to ``applies`` is checked: those backends' boards (the
        release's ``boards`` for a backend without its own), or ``boards`` for an item of no backend."""
        own = dict(self.backend_boards)
        wanted = [b for a in applies if a in self.backends or not self.backends for b in own.get(a, self.boards)]
        return tuple(dict.fromkeys(wanted)) if applies else self.boards

    def offers(self, board: str, backend: str) -> bool:
        """Whether ``board`` offers ``backend``: a CPU backend runs on every board; another one
        on a board declared for it in ``backend_boards``, or on a detected board (a GPU's name),
        never on a ``host:NAME`` board (a host with no accelerator board) not declared for it."""
        if backend in CPU_BACKENDS or board in dict(self.backend_boards).get(backend, ()):
            return True
        return not board.startswith("host:")


@record
class ChecklistSpec:
    release: ReleaseSpec
    items: tuple[ChecklistItem, ...]
    source: Path

    def item(self, item_id: str) -> ChecklistItem | None:
        return next((i for i in self.items if i.id == item_id), None)


def _check_names(c: Checker, key: str, names: Iterable[str], known: Iterable[str], what: str, fix: str) -> None:
    """Each of ``names`` (the list at ``key``) must be one of ``known``: else a problem, with a did-you-mean."""
    known = tuple(known)
    for j, name in enumerate(names):
        if name not in known:
            same = [k for k in known if k.lower() == name.lower()]  # "CUDA": difflib alone would not say
            hint = f' — did you mean "{same[0]}"?' if same else did_you_mean(name, known)
            c.problem(f"{key}[{j}]", f'unknown {what} "{name}"{hint} ({fix})')


def _check_hosts(c: Checker, key: str, boards: Iterable[str], hosts: tuple[str, ...] | None) -> None:
    """A ``host:NAME`` board names a declared host."""
    if hosts is None:
        return
    for j, board in enumerate(boards):
        if board.startswith("host:") and board[5:] not in hosts:
            name = board[5:]
            c.problem(f"{key}[{j}]", f'"{board}": no host "{name}" is declared'
                                     f"{did_you_mean(name, hosts)} (hosts: {', '.join(sorted(hosts))})")


def parse_checklist(data: Mapping[str, Any], *, path: Path, version: str = "", changelog: str | None = "CHANGELOG.md",
                    measures: tuple[str, ...] | None = None, quality: tuple[str, ...] | None = None,
                    hosts: tuple[str, ...] | None = None) -> ChecklistSpec:
    """``measures``/``quality``: the names measurements.toml declares; ``hosts``: the declared
    hosts' names, for ``host:NAME`` boards (None: not checked)."""
    c = Checker(path)
    c.keys(data, "", CHECKLIST.names(), required=CHECKLIST.required_names())
    rel = c.get(data, "", "release", dict, {})
    c.keys(rel, "release", _RELEASE.names(), required=_RELEASE.required_names())
    boards = tuple(c.string_list(rel, "release", "boards"))
    if "boards" in rel and not boards:
        c.problem("release.boards", "name at least one board (a host without a board: \"host:NAME\")")
    _check_hosts(c, "release.boards", boards, hosts)
    known = tuple(dict.fromkeys([*KNOWN_BACKENDS, *c.string_list(rel, "release", "known_backends", blank=False)]))
    declare = "declare a backend of your own in release.known_backends"
    backends = tuple(c.string_list(rel, "release", "backends"))
    _check_names(c, "release.backends", backends, known, "backend", declare)
    backend_boards: list[tuple[str, tuple[str, ...]]] = []
    table = c.get(rel, "release", "backend_boards", dict, {})
    for backend, value in table.items():
        key = f"release.backend_boards.{backend}"
        if backend not in known:
            c.problem(key, f'unknown backend "{backend}"{did_you_mean(backend, known)} ({declare})')
        elif backends and backend not in backends:
            c.problem(key, f'"{backend}" is not one of the release\'s backends ({", ".join(backends)})'
                           f"{did_you_mean(backend, backends)}")
        listed = tuple(c.string_list(table, "release.backend_boards", backend, blank=False))
        if isinstance(value, list) and not value:
            c.problem(key, "name at least one board, or leave the backend out (it is then checked on release.boards)")
        _check_hosts(c, key, listed, hosts)
        backend_boards.append((backend, listed))
    release_boards = tuple(dict.fromkeys([*boards, *(b for _, bs in backend_boards for b in bs)]))
    items: list[ChecklistItem] = []
    seen: set[str] = set()
    for i, t in c.array_of_tables(data, "", "item").items():
        prefix = f"item[{i}]"
        c.keys(t, prefix, _ITEM.names(), required=_ITEM.required_names())
        item_id = c.get(t, prefix, "id", str, "")
        if item_id and not _ID.match(item_id):
            c.problem(f"{prefix}.id", f'"{item_id}" is not an id (lower case, digits, - _ .)')
        elif item_id:
            c.name_ok(f"{prefix}.id", item_id)  # the one name rule (length, "..")
        if item_id in seen:
            c.problem(f"{prefix}.id", f'duplicate id "{item_id}"')
        seen.add(item_id)
        auto, manual = c.get(t, prefix, "auto", str), c.get(t, prefix, "manual", bool, False)
        if (auto is None) == (not manual):
            c.problem(prefix, 'an item is either auto = "KIND[:NAME]" or manual = true')
        if auto is not None:
            kind, _, arg = auto.partition(":")
            if kind not in AUTO_KINDS:
                c.problem(f"{prefix}.auto", f'unknown predicate "{kind}"{did_you_mean(kind, AUTO_KINDS)} '
                                            f"(one of {', '.join(AUTO_KINDS)})")
            elif AUTO_KINDS[kind] and not arg:
                c.problem(f"{prefix}.auto", f'"{kind}" needs a name: "{kind}:NAME"')
            elif not AUTO_KINDS[kind] and arg:
                c.problem(f"{prefix}.auto", f'"{kind}" takes no name')
            elif kind == "measure" and measures is not None and arg not in measures:
                c.problem(f"{prefix}.auto", f"measurements.toml declares no measure.{arg}{did_you_mean(arg, measures)}")
            elif kind == "quality" and quality is not None and arg not in quality:
                c.problem(f"{prefix}.auto", f"measurements.toml declares no quality.{arg}{did_you_mean(arg, quality)}")
        applies = tuple(c.string_list(t, prefix, "applies"))
        _check_names(c, f"{prefix}.applies", applies, known, "backend", declare)
        item_boards = tuple(c.string_list(t, prefix, "boards")) if "boards" in t else None
        _check_names(c, f"{prefix}.boards", item_boards or (), release_boards, "board",
                     "an item's boards are boards of the release: release.boards or release.backend_boards")
        not_validated = c.line(t, prefix, "not_validated")
        if not_validated is not None and not not_validated.strip():
            c.problem(f"{prefix}.not_validated", "must hold the text the release notes carry")
        items.append(ChecklistItem(id=item_id, title=c.line(t, prefix, "title", ""), auto=auto,
                                   targets=tuple(c.string_list(t, prefix, "targets")), applies=applies,
                                   not_validated=not_validated,
                                   boards=item_boards))
    naming = next((i for i, item in enumerate(items) if item.applies), None)
    if naming is not None and not backends:
        # without them every such item would be not-applicable: a sign-off complete on nothing
        c.problem("release.backends", f"{'empty' if 'backends' in rel else 'missing'}: item[{naming}].applies names "
                                      'backends; list the ones this release covers (backends = ["cpu"])')
    default_tag = tuple(i for i in ("ci-green", "maintainer-approval") if i in seen)
    tag_requires = tuple(c.string_list(rel, "release", "tag_requires")) if "tag_requires" in rel else default_tag
    for j, item_id in enumerate(tag_requires):
        if item_id not in seen:
            c.problem(f"release.tag_requires[{j}]", f'no item "{item_id}"{did_you_mean(item_id, seen)}')
        elif not next(i for i in items if i.id == item_id).manual:
            c.problem(f"release.tag_requires[{j}]", f'"{item_id}" is not a manual item (a person attests it)')
    # no changelog, no default notes file: the sign-off never names one that does not exist
    notes = tuple(c.string_list(rel, "release", "notes")) if "notes" in rel else ((changelog,) if changelog else ())
    release_version = c.line(rel, "release", "version", version) or version  # checked before the raise
    c.raise_if_problems()
    return ChecklistSpec(release=ReleaseSpec(version=release_version,
                                             boards=boards, backends=backends, notes=notes,
                                             tag_requires=tag_requires, backend_boards=tuple(backend_boards)),
                         items=tuple(items), source=Path(path))
