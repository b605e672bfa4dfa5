"""``nox -s tag``: the annotated release tag, only for a complete sign-off; and the signed
sign-off (``ssh-keygen -Y sign -n relgate-signoff``) that ``relgate verify-signoff`` checks
offline against an allowed-signers file.

The tag is refused unless the tree is clean, the sign-off is complete for HEAD (HEAD may
differ from the qualified commit only in the release-notes files) and the items the
release names in ``tag_requires`` (CI green, a maintainer's approval) are attested. Its
message carries the sha256 of ``signoff.json``. With a signing key (``--key`` or
``RELGATE_SIGNING_KEY``, an SSH private key) the tag is signed with ``gpg.format=ssh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from relgate.core.errors import InputError, RelgateError
from relgate.core.readers import read_user_file, regular_size
from relgate.core.record import record
from relgate.core.schema import display_path
from relgate.core.text import inert
from relgate.ledger.gitfacts import read_git_facts
from relgate.manifest.workspace import Workspace
from relgate.signoff.decisions import checklist_of
from relgate.signoff.stage import run_signoff

__all__ = ["NAMESPACE", "TagRefused", "TagResult", "run_tag", "sign_file", "verify_signoff", "signoff_document",
           "signoff_problems"]

NAMESPACE = "relgate-signoff"
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class TagRefused(RelgateError):
    """The tag was not created: the sign-off is not complete, or the tree is not clean (exit 1)."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(reasons))

    def lines(self) -> list[str]:
        return ["tag refused: " + r for r in self.reasons]


@record
class TagResult:
    tag: str
    commit: str
    digest: str
    signed: bool
    signature: Path | None


def _git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def sign_file(path: Path, key: Path) -> Path:
    """``ssh-keygen -Y sign``: the signature next to the file (``FILE.sig``)."""
    sig = path.with_name(path.name + ".sig")
    if sig.exists():
        sig.unlink()  # ssh-keygen asks before overwriting
    done = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(path)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not sig.exists():
        raise InputError(f"{key}: ssh-keygen -Y sign failed: {done.stderr.strip() or done.stdout.strip()}")
    return sig


def run_tag(ws: Workspace, *, out_dir: Path | None = None, key: Path | None = None,
            environ: Mapping[str, str] = os.environ, out: TextIO = sys.stdout) -> TagResult:
    checklist = checklist_of(ws)
    key = key or (Path(environ["RELGATE_SIGNING_KEY"]) if environ.get("RELGATE_SIGNING_KEY") else None)
    if key is not None and not key.is_file():
        raise InputError(f"{key}: no such signing key (--key or RELGATE_SIGNING_KEY: an SSH private key)")
    facts = read_git_facts(ws.project.root)
    top = Path(facts.toplevel)
    result = run_signoff(ws, out_dir=out_dir, out=out)
    doc_path = result.out / "signoff.json"
    data = doc_path.read_bytes()
    doc = json.loads(data)
    reasons = []
    if facts.dirty:
        reasons.append("the tree is dirty (commit or stash everything first)")
    if doc.get("commit") != facts.commit:
        reasons.append(f"{display_path(doc_path)} is for {str(doc.get('commit'))[:12]}, not HEAD {facts.short}")
    if not doc.get("complete"):
        reasons.append(f"the sign-off of {facts.short} is incomplete: "
                       + "; ".join(result.open_items or ("the tree is dirty",)))
    if not checklist.release.tag_requires:
        reasons.append(f"{display_path(checklist.source)}: release.tag_requires names no item "
                       "(the CI-green and maintainer-approval items)")
    status = {i["id"]: i["status"] for i in doc.get("items", [])}
    for item in checklist.release.tag_requires:
        if status.get(item) != "attested":
            reasons.append(f"{item} is {status.get(item, 'missing')}, it must be attested "
                           f"(relgate attest {item} --by NAME)")
    if not checklist.release.version:
        reasons.append(f"{display_path(checklist.source)}: no version to tag (set project.version, or "
                       "release.version in the checklist)")
    tag = f"v{checklist.release.version}"
    if _git(top, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}").returncode == 0:
        reasons.append(f"tag {tag} exists already")
    if reasons:
        raise TagRefused(reasons)
    digest = hashlib.sha256(data).hexdigest()
    signature = sign_file(doc_path, key) if key is not None else None
    message = (f"{ws.project.name} {checklist.release.version}\n\n"
               f"Signed off with relgate: every checklist item passed, was attested, or was skipped\n"
               f"or not validated with its text.\n\n"
               f"signoff.json sha256: {digest}\n"
               f"qualified commit(s): {', '.join(doc.get('same_tree', [facts.commit]))}\n")
    args = ["tag", "-a", "-m", message, tag, facts.commit]
    if key is not None:
        args = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key}", "tag", "-s", "-m", message, tag, facts.commit]
    done = _git(top, *args)
    if done.returncode != 0:
        raise InputError(f"git tag {tag} failed: {done.stderr.strip()}")
    print(f"tagged {tag} at {facts.short}{' (signed, gpg.format=ssh)' if key else ''}; "
          f"signoff.json sha256 {digest}", file=out)
    if signature is not None:
        print(f"signed sign-off: {display_path(signature)} (relgate verify-signoff "
              f"{display_path(doc_path)} --allowed-signers FILE)", file=out)
    return TagResult(tag=tag, commit=facts.commit, digest=digest, signed=key is not None, signature=signature)


def verify_signoff(path: Path, *, allowed_signers: Path, signature: Path | None = None,
                   commit: str | None = None, out: TextIO = sys.stdout) -> int:
    """0: the signature is good, made by an allowed signer, over a relgate sign-off that is
    complete (for ``commit``, when given); 1: it is not (a tampered file, an unknown key, another
    namespace, an incomplete or dirty sign-off, another commit); bad input (a file that is not a
    regular file, not JSON, not a sign-off's shape) raises :class:`InputError`."""
    sig = signature or path.with_name(path.name + ".sig")
    data = read_user_file(path, what="a sign-off", limit=64 << 20, line_limit=None)
    for f, what in ((sig, "signature"), (allowed_signers, "allowed-signers file")):
        regular_size(Path(f), what=f"the {what}", limit=16 << 20)
    doc = signoff_document(data, path)
    found = subprocess.run(["ssh-keygen", "-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    principals = [p for p in found.stdout.split() if p]
    if found.returncode != 0 or not principals:
        print(f"{display_path(path)}: BAD: the signature's key is not in {display_path(allowed_signers)}", file=out)
        return 1
    done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed_signers), "-I", principals[0],
                           "-n", NAMESPACE, "-s", str(sig)], input=data, capture_output=True, timeout=60)
    if done.returncode != 0:  # the bytes checked are the bytes parsed above
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        print(f"{display_path(path)}: BAD: {inert(said) or 'signature does not match'}", file=out)
        return 1
    digest = hashlib.sha256(data).hexdigest()
    what = (f"{inert(doc['project'])} {inert(doc['version'])} at {doc['commit'][:12]}, "
            f"complete: {str(doc['complete']).lower()}")
    print(f"{display_path(path)}: good signature by {inert(principals[0])} (namespace {NAMESPACE}); {what}; "
          f"sha256 {digest}", file=out)
    problems = signoff_problems(doc, commit)
    for problem in problems:
        print(f"{display_path(path)}: BAD: {problem}", file=out)
    return 1 if problems else 0


_DONE = ("passed", "attested", "skipped", "not-validated", "not-applicable")


def signoff_document(data: bytes, path: Path) -> dict[str, Any]:
    """``signoff.json`` as relgate writes it (:func:`relgate.signoff.report.render_json`), or an
    :class:`InputError`: not UTF-8 JSON, not an object, a key missing or of the wrong type."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a relgate sign-off: not JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise InputError(f"{path}: not a relgate sign-off: a value nested too deeply to read") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a relgate sign-off: a JSON {type(doc).__name__}, not an object")
    shape = {"project": str, "version": str, "commit": str, "complete": bool, "dirty": bool, "items": list,
             "same_tree": list}
    for key, kind in shape.items():
        if not isinstance(doc.get(key), kind):
            raise InputError(f"{path}: not a relgate sign-off: \"{key}\" is "
                             + ("missing" if key not in doc else f"a {type(doc[key]).__name__}, not {kind.__name__}"))
    if not _SHA.match(doc["commit"]):
        raise InputError(f"{path}: not a relgate sign-off: \"commit\" is no full commit sha")
    for i, item in enumerate(doc["items"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("status"), str):
            raise InputError(f"{path}: not a relgate sign-off: items[{i}] has no id and status")
    return doc


def signoff_problems(doc: Mapping[str, Any], commit: str | None) -> list[str]:
    """Why a well-formed sign-off does not stand for a release (empty: it does)."""
    problems = []
    if doc["complete"] is not True:
        problems.append('the sign-off says "complete": false')
    if doc["dirty"]:
        problems.append("the sign-off was made from a dirty tree")
    open_items = [f"{inert(i['id'])} ({inert(i['status'])})" for i in doc["items"] if i["status"] not in _DONE]
    if open_items:
        problems.append(f"open items: {', '.join(open_items)}")
    if commit is not None:
        tree = [c for c in doc["same_tree"] if isinstance(c, str)] or [doc["commit"]]
        if not any(c == commit or (len(commit) >= 7 and c.startswith(commit)) for c in [doc["commit"], *tree]):
            problems.append(f"it signs off commit {doc['commit'][:12]}, not {inert(commit)}")
    return problems
