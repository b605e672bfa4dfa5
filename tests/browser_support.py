"""A real headless browser for the page tests: Debian's ``chromium`` renders a file and
``--dump-dom`` gives the DOM after its scripts ran; a small parser turns that into a tree
the tests query (by id, tag, class, attribute, text)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

INSTALL = "apt-get update && apt-get install -y chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


needs_chromium = pytest.mark.skipif(chromium() is None, reason=f"chromium is not installed: {INSTALL}")


def dump_dom(page: Path, *, scripts: bool = True, timeout: float = 180) -> str:
    """The DOM of ``page`` (a local file) as the browser rendered it, with a fresh profile.
    ``scripts=False``: a copy of the page whose Content-Security-Policy allows no script at all
    (``--dump-dom`` itself needs JavaScript on, so the browser's switch cannot be used)."""
    browser = chromium()
    assert browser is not None, INSTALL
    with tempfile.TemporaryDirectory(prefix="relgate-chromium-") as profile:
        if not scripts:
            text = page.read_text()
            strict = re.sub(r"script-src (&#39;|')sha256-[A-Za-z0-9+/=]+(&#39;|')", "script-src &#39;none&#39;", text,
                            count=1)  # the attribute's quotes are escaped in the source
            assert strict != text, "the page names no script-src hash"
            page = page.with_name(f".{page.name}.no-scripts.html")
            page.write_text(strict)
        done = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-3000:]
    return done.stdout


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        out, todo = [], [self]  # without recursion: a deep DOM does not exhaust the stack
        while todo:
            item = todo.pop()
            if isinstance(item, str):
                out.append(item)
            else:
                todo.extend(reversed(item.children))
        return "".join(out)

    def walk(self) -> Iterator[Node]:
        todo: list[Node] = [self]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(reversed([c for c in node.children if isinstance(c, Node)]))

    def find_all(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> list[Node]:
        return [n for n in self.walk() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.attrs.get("class", "").split())
                and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def by_id(self, ident: str) -> Node:
        found = [n for n in self.walk() if n.attrs.get("id") == ident]
        assert len(found) == 1, f"#{ident}: {len(found)} elements"
        return found[0]


_VOID = {"meta", "link", "br", "hr", "img", "input", "col", "area", "base", "embed", "source", "track", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node(tag="#document", attrs={})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag=tag, attrs={k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag=tag, attrs={k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):  # the browser's DOM is well nested: close up to the match
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(dom: str) -> Node:
    b = _Builder()
    b.feed(dom)
    b.close()
    return b.root
