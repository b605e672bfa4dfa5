"""The schemas and the reference page are generated from the validator's own declarations
(relgate/manifest/keys.py); the checked-in copies match, every bundled manifest validates, and
a broken manifest fails both the schema and `relgate check`."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from jsonschema import Draft202012Validator

from relgate.core.errors import ManifestError
from relgate.manifest import reference
from relgate.manifest.checklist import parse_checklist
from relgate.manifest.fields import FileSpec, Key, Rule, key
from relgate.manifest.intentional import parse_intentional
from relgate.manifest.keys import FILES, file_spec
from relgate.manifest.measures import parse_measurements
from relgate.manifest.package_spec import parse_package
from relgate.manifest.specs import parse_builds, parse_host, parse_project

REPO = Path(__file__).resolve().parent.parent


def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((REPO / "schemas" / f"{name}.schema.json").read_text()))


def test_checked_in_schemas_and_reference_are_the_generated_ones():
    stale = [rel for rel, text in reference.generated_files().items()
             if not (REPO / rel).is_file() or (REPO / rel).read_text(encoding="utf-8") != text]
    assert not stale, (f"{', '.join(stale)} differ from what relgate/manifest/keys.py generates; "
                       f"regenerate with `{reference.REGENERATE}` and commit the result")


def test_every_schema_is_a_valid_draft_2020_12_schema_with_every_file():
    assert {p.name for p in (REPO / "schemas").glob("*.json")} == {f"{s.name}.schema.json" for s in FILES}
    for spec in FILES:
        schema = json.loads((REPO / "schemas" / f"{spec.name}.schema.json").read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)
    page = (REPO / "docs" / "manifests.md").read_text()
    for spec in FILES:  # every file and every key of it is on the page
        assert f"## {spec.name}" in page
        stack = list(spec.fields)
        while stack:
            k = stack.pop()
            assert f"| `{k.name}` |" in page or f"### `[{k.name}" in page or f"### `[[{k.name}" in page, \
                f"{spec.name}: {k.name} is not on the reference page"
            stack += list(k.fields) + (list(k.values.fields) if k.values is not None else [])


def _bundled() -> list[tuple[str, Path]]:
    found = []
    for folder in [REPO / "manifests", REPO / "self", *sorted((REPO / "examples").glob("*/manifests"))]:
        found += [(p.stem, p) for p in sorted(folder.glob("*.toml"))]
    found += [("lanes", p) for p in sorted((REPO / "examples").glob("*/qual/lanes.toml"))]
    found += [("host", p) for p in sorted((REPO / "hosts").glob("*.toml"))]
    found += [("host", p) for p in sorted((REPO / "examples").glob("*/hosts/*.toml"))]
    return found


def test_every_bundled_manifest_validates_against_its_schema():
    bundled = _bundled()
    assert {name for name, _ in bundled} >= {"project", "builds", "lanes", "package", "measurements", "checklist",
                                             "host"}
    for name, path in bundled:
        errors = [f"{'.'.join(map(str, e.path))}: {e.message}"
                  for e in _schema(name).iter_errors(tomllib.loads(path.read_text()))]
        assert not errors, f"{path.relative_to(REPO)}: {errors}"


def _parse(spec: FileSpec, data: dict, tmp_path: Path) -> None:
    """The validator of ``spec``'s file on ``data`` (raises ManifestError)."""
    path = tmp_path / "m" / f"{spec.name}.toml"
    path.parent.mkdir(exist_ok=True)
    parsers = {
        "project": lambda: parse_project(data, path=path),
        "builds": lambda: parse_builds(data, path=path),
        "host": lambda: parse_host(data, path=path),
        "measurements": lambda: parse_measurements(data, path=path),
        "checklist": lambda: parse_checklist(data, path=path),
        "intentional": lambda: parse_intentional(data, path=path),
        "package": lambda: parse_package(data, path=path, kind="cargo"),
        "lanes": lambda: _lanes(data, path),
    }
    parsers[spec.name]()


def _lanes(data: dict, path: Path) -> None:
    """load_lanes on ``data`` written as the lanes file of a make project rooted at ``path``'s folder."""
    from relgate.manifest.lanes import load_lanes
    from relgate.manifest.specs import ProjectSpec

    path.write_text(_toml_text(data))
    project = ProjectSpec(name="x", root=path.parent, kind="make", version=None, changelog=None,
                          evidence_env="X_EVIDENCE", source=path.parent / "project.toml", lanes=path)
    load_lanes(project, path.parent / "elsewhere")


def _toml_text(data: dict) -> str:
    """A small TOML writer for the test's mappings (tables of scalars, arrays and inline tables)."""
    def value(v):  # noqa: ANN001, ANN202
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"

    out: list[str] = []

    def table(name: str, t: dict) -> None:
        scalars = {k: v for k, v in t.items() if not isinstance(v, dict)}
        out.append(f"[{name}]")
        out.extend(f"{json.dumps(k)} = {value(v)}" for k, v in scalars.items())
        for k, v in t.items():
            if isinstance(v, dict):
                table(f"{name}.{json.dumps(k)}", v)

    for name, t in data.items():
        if isinstance(t, dict):
            table(json.dumps(name), t)
        else:
            out.insert(0, f"{json.dumps(name)} = {value(t)}")
    return "\n".join(out) + "\n"


_WRONG = {"string": 12345, "integer": "x", "number": "x", "boolean": "yes", "strings": "x", "command": 5,
          "string-or-strings": 5, "count-or-share": "many", "table": "x", "array": "x", "map": "x", "gpus": "x"}


def _tables(spec: FileSpec, data: dict) -> list[tuple[str, list, Key]]:
    """(dotted prefix, path into data, declaration) of every table the example holds."""
    out = []
    for top in spec.fields:
        if top.name not in data:
            continue
        if top.type == "table":
            out.append((top.name, [top.name], top))
        elif top.type == "array":
            out.append((f"{top.name}[0]", [top.name, 0], top))
        elif top.type == "map" and top.values is not None and top.values.type == "table":
            first = next(iter(data[top.name]))
            out.append((f"{top.name}.{first}", [top.name, first], top.values))
    return out


@pytest.mark.parametrize("name", ["project", "builds", "lanes", "host", "measurements", "checklist",
                                  "intentional", "package"])
def test_declared_types_agree_with_the_validator(name, tmp_path):
    """Each file's example passes both; a wrong-typed value of every declared key fails both,
    and the validator names that key."""
    spec = file_spec(name)
    base = tomllib.loads(spec.example)
    assert not list(_schema(name).iter_errors(base))
    _parse(spec, base, tmp_path)  # the example is a valid file
    checked = 0
    for prefix, where, decl in _tables(spec, base):
        for field in decl.fields:
            data = copy.deepcopy(base)
            table = data
            for step in where:
                table = table[step]
            table[field.name] = _WRONG[field.type]
            assert list(_schema(name).iter_errors(data)), f"schema accepts {prefix}.{field.name} = {table[field.name]!r}"
            with pytest.raises(ManifestError) as caught:
                _parse(spec, data, tmp_path)
            assert any(f"{prefix}.{field.name}" in p for p in caught.value.problems), (prefix, field.name,
                                                                                         caught.value.problems)
            checked += 1
    assert checked >= 3


def test_an_unknown_rule_kind_still_makes_a_valid_schema_and_is_documented():
    odd = FileSpec(name="odd", path="manifests/odd.toml", doc="a file", example="[t]\n", fields=(
        key("t", "table", "a table", fields=(
            key("version", "string", "a version", rules=(Rule(kind="semver", value="x", text="a semantic version"),)),
            key("timeout", "number", "seconds", rules=(Rule(kind="range", value=(1, 9), text="between 1 and 9"),)),
        )),))
    schema = reference.schema_of(odd)
    Draft202012Validator.check_schema(schema)
    props = schema["properties"]["t"]["properties"]
    assert "a semantic version" in props["version"]["description"]
    assert "between 1 and 9" in props["timeout"]["description"]


_BROKEN = [
    ("builds.toml", "[release.cpu]\nrn = \"make\"\n", "release.cpu.rn"),
    ("builds.toml", "[release.cpu]\nrun = \"make cpu\"\ntimeout = \"10\"\n", "release.cpu.timeout"),
    ("project.toml", None, "project.kind"),
    ("checklist.toml", None, "item[0].id"),
    ("lanes.toml", None, "target.kernels-cpu.timeout"),
    ("hosts/local.toml", "[host]\nname = \"local\"\nport = 70000\n", "host.port"),
]


@pytest.mark.parametrize("fname, text, dotted", _BROKEN)
def test_a_broken_manifest_fails_the_schema_and_relgate_check(fname, text, dotted, tmp_path, capsys):
    from conftest import bundled_manifests
    from relgate.cli import main

    manifests, hosts = bundled_manifests(tmp_path, REPO / "examples" / "tinyinfer")
    target = (tmp_path / fname) if fname.startswith("hosts/") else manifests / fname
    if text is not None:
        target.write_text(text)
    elif fname == "project.toml":
        target.write_text(target.read_text().replace('kind = "make"', 'kind = "mkae"'))
    elif fname == "lanes.toml":
        target.write_text(target.read_text().replace('command = "make test"\n', 'command = "make test"\ntimeout = "10"\n'))
    else:
        target.write_text(target.read_text().replace('id = "host"', 'id = "Host Checks"', 1))
    data = tomllib.loads(target.read_text())
    errors = list(_schema("host" if fname.startswith("hosts/") else fname.removesuffix(".toml")).iter_errors(data))
    assert errors, f"the schema accepts the broken {fname}"
    assert main(["--workspace", str(REPO), "--manifests", str(manifests), "--hosts", str(hosts),
                 "--home", str(tmp_path / "home"), "check"]) == 2
    err = capsys.readouterr().err
    assert f"{Path(fname).name}: {dotted}" in err, err
    assert "Traceback" not in err


def test_relgate_schema_prints_what_is_checked_in(tmp_path, capsys):
    from relgate.cli import main

    assert main(["schema", "builds"]) == 0
    assert capsys.readouterr().out == (REPO / "schemas" / "builds.schema.json").read_text()
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == (REPO / "docs" / "manifests.md").read_text()
    assert main(["schema", "bulids"]) == 2
    assert 'schema bulids: no such manifest file — did you mean "builds"?' in capsys.readouterr().err
    assert main(["schema", "--write", "--out", str(tmp_path)]) == 0  # one command regenerates all of it
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(reference.generated_files())
