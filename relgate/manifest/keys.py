"""Every manifest file's keys, declared once: type, default, required, meaning, example.

The validators (``parse_project``, ``parse_builds``, ``load_lanes`` …) take their key lists
from here; ``relgate schema`` turns the same declarations into ``schemas/*.schema.json``
and ``docs/manifests.md``. Add a key here and in its validator; add a constraint as a
:class:`~relgate.manifest.fields.Rule` beside the key (``relgate schema --write`` then
regenerates both).
"""

from __future__ import annotations

import shlex

from relgate.core.schema import MAX_SECONDS, NAME
from relgate.core.text import words
from relgate.kinds.found import BUILTIN_LANES
from relgate.kinds.registry import kind_choices, kinds
from relgate.manifest.fields import FileSpec, Key, Rule, above, at_least, key, nonblank, one_of_keys, pattern, text_rule

__all__ = ["PROJECT_KINDS", "HOST_KINDS", "CHECK_BUILTINS", "WARNING_POLICIES", "BUILTIN_LANES", "LANE_MODES",
           "FORMATS", "DIRECTIONS", "AUTO_KINDS", "KNOWN_BACKENDS", "CPU_BACKENDS", "TRANSFERS", "SLURM_KEYS",
           "ENV_NAME", "FILES", "file_spec", "OPTION_KEYS", "OUTPUT_KEYS",
           "PROJECT", "BUILDS", "LANES", "PACKAGE", "INTENTIONAL", "MEASUREMENTS", "CHECKLIST", "HOST"]

PROJECT_KINDS = kind_choices()
# the kinds whose package is a source tarball, extracted, built and tested offline (each adapter says)
_SOURCE_KINDS = words([k.name for k in kinds().values() if k.package_flow == "source"])
# the kinds whose targets a lanes file declares, each with its command (cargo's come from Cargo.toml)
_DECLARING_KINDS = words([k.name for k in kinds().values() if not k.targets_from_project])
HOST_KINDS = ("local", "ssh", "slurm")
# host keys only a kind = "slurm" host takes
SLURM_KEYS = ("partition", "account", "time_limit", "resubmit", "board", "srun_args", "max_jobs")
CHECK_BUILTINS = ("git-diff-check", "python-tests")
WARNING_POLICIES = ("deny", "ignore")
LANE_MODES = ("all", "ignored", "named", "timing", "per-board")
FORMATS = ("csv", "tsv", "jsonl", "kv")
DIRECTIONS = ("higher", "lower", "equal")
# kind → whether it takes an argument after the colon
AUTO_KINDS = {"session": True, "lane": True, "evidence": False, "package": False, "publish": False,
              "measure": True, "quality": True, "warnings": False}
# The backends a checklist may name without declaring them (``known_backends`` adds others).
KNOWN_BACKENDS = ("cpu", "cuda", "rocm", "hip", "metal", "mps", "vulkan", "opencl", "sycl", "oneapi", "directml",
                  "webgpu", "wasm", "tpu", "xla", "npu", "coreml", "tensorrt", "openmp", "mpi", "avx2", "avx512",
                  "neon", "sve")
# Backends every board offers (a CPU's): an item of any other backend passes only on a board that offers it.
CPU_BACKENDS = ("cpu", "openmp", "mpi", "avx2", "avx512", "neon", "sve", "wasm")
TRANSFERS = ("sftp", "exec")  # host.transfer: how files reach and leave an ssh host
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

_ENV_RULE = pattern(ENV_NAME, "an environment variable name")
_SECONDS = (above(0), Rule(kind="maximum", value=MAX_SECONDS, text="at most 30 days"),
            text_rule("finite (nan and inf are refused)"))
_NAME_TEXT = f"at most {NAME.max_length} characters, no control or bidi characters, no / and no .."
#: every name a manifest declares (Checker.name_ok, the keys of Checker.tables): one rule
_NAME = pattern(NAME.pattern, "a name: " + _NAME_TEXT)
_NAMES = Rule(kind="propertyNames", value=NAME.pattern, text="names: " + _NAME_TEXT)


def _env(doc: str = "environment variables for the command (table of strings)") -> Key:
    return key("env", "map", doc, values=key("NAME", "string", "the variable's value"),
               rules=(Rule(kind="propertyNames", value=ENV_NAME, text="names are environment variable names"),),
               example={"RUST_LOG": "info"})


def _seconds(name: str, doc: str, *, finite: bool = False, **kw: object) -> Key:
    """Seconds, more than 0; ``finite``: the validator also refuses nan and inf (Checker.seconds)."""
    return key(name, "number", doc, rules=_SECONDS if finite else _SECONDS[:2], **kw)


def _max_skipped() -> Key:
    return key("max_skipped", "count-or-share", "the most skipped tests a run may report (a count, or a share "
               "of its tests: \"10%\"); more is a fail", example=2)


def _reason(name: str, doc: str, **kw: object) -> Key:
    return key(name, "string", doc, rules=(nonblank(),), **kw)


# --- project.toml -------------------------------------------------------------------------

PROJECT = FileSpec(
    name="project", path="manifests/project.toml",
    doc="The project under qualification. Paths are relative to this file's folder.",
    fields=(key("project", "table", "the project", required=True, fields=(
        key("name", "string", "the project's name; every ledger row carries it", required=True,
            rules=(nonblank(), _NAME), example="myengine"),
        key("root", "string", "the project root, relative to this file's folder", required=True,
            rules=(nonblank(), text_rule("an existing folder")), example="../../myengine"),
        key("kind", "string", "how the project builds", required=True, choices=PROJECT_KINDS, example="make"),
        key("version", "string", "the default release of `evidence accept`, the version package_verify "
            "checks, publish's pinned install (leave it out when the project has none)",
            rules=(nonblank(),), example="1.4.0"),
        key("changelog", "string", "the changelog, relative to root", default_text="CHANGELOG.md when it exists",
            rules=(text_rule("an existing file"),), example="CHANGELOG.md"),
        key("evidence_env", "string", "the env var through which the project's tests record evidence cells",
            default="RELGATE_EVIDENCE", rules=(_ENV_RULE,), example="MYENGINE_EVIDENCE"),
        key("lanes", "string", "the project's own lanes file (a `[lanes]` table), relative to root; "
            "default: lanes.toml in the manifest folder", rules=(text_rule("an existing file"),),
            example="qual/lanes.toml"),
    )),),
    example='''[project]
name = "myengine"
root = ".."
kind = "make"
version = "1.4.0"
evidence_env = "MYENGINE_EVIDENCE"
''')

# --- builds.toml --------------------------------------------------------------------------


def _options(warnings_default: str) -> tuple[Key, ...]:
    return (
        key("cwd", "string", "where the command runs, relative to the project root", default="."),
        _env(),
        _seconds("timeout", "seconds; the whole process group is killed after it", finite=True, example=600),
        key("requires", "strings", "capabilities or boards a host must offer", default=[], example=["nvcc"]),
        key("warnings", "string", "whether a compiler warning fails the step", choices=WARNING_POLICIES,
            default=warnings_default),
        key("allow", "array", "narrow rules that accept a warning, each with a reason; a rule that matched "
            "no warning in a run is stale and fails", fields=(
                key("pattern", "string", "a regex searched in `file:line: message`", required=True,
                    rules=(Rule(kind="minLength", value=1, text="not empty (it would allow every warning)"),
                           text_rule("a valid regular expression"))),
                key("reason", "string", "why this warning is acceptable", required=True, rules=(nonblank(),)),
            )),
        _reason("skip", "recorded as skip, with this reason", example="nightly only"),
        key("host", "string", "run only on this host (hosts/NAME.toml)",
            rules=(nonblank(), text_rule("a host some hosts/*.toml declares")), example="spark"),
        key("max_log_bytes", "integer", "keep this much output in the log, then one marker line",
            rules=(at_least(4096),)),
    )


def _outputs() -> tuple[Key, ...]:
    return (
        key("expect_output", "string", "a regular expression the output must match",
            rules=(text_rule("a valid regular expression"),), example="^Usage:"),
        key("produces", "strings", "globs (relative to cwd, inside the project) that must exist, newer than "
            "the step's start", default=[], example=["build/lib*.so"]),
    )


#: what every release target, matrix and check takes (the validator's step options), and a build's outputs
OPTION_KEYS = tuple(k.name for k in _options("deny"))
OUTPUT_KEYS = tuple(k.name for k in _outputs())

_SHELL = key("shell", "boolean", "run the command string with /bin/sh (otherwise it is split into an argv)",
             default=False)
_RELEASE = key("NAME", "table", "a release target: it starts clean", fields=(
    key("run", "command", "the build command (a string split into arguments, or an argv array)", required=True,
        example="make cpu"),
    key("clean", "command", "runs first", example="make clean"),
    _SHELL, *_outputs(), *_options("deny")))
_MATRIX = key("NAME", "table", "features × (alone + with each of plus): one build step each", fields=(
    key("run", "string", "the command, with a {features} placeholder", required=True,
        rules=(pattern(r"\{features\}", 'holds "{features}"'),),
        example="cargo build --release --features {features}"),
    _SHELL,
    key("features", "strings", "feature sets, comma-separated", required=True,
        rules=(Rule(kind="minItems", value=1, text="at least one feature set"),), example=["", "cuda", "cuda,hf"]),
    key("plus", "strings", "features added to each set in turn", default=[], example=["qualification"]),
    *_options("deny")))
_CHECK = key("check", "array", "the host checks, in order", fields=(
    key("name", "string", "the check's name (unique)", required=True, rules=(nonblank(), _NAME), example="unit-tests"),
    key("run", "command", "a command", example="make test"),
    _SHELL,
    key("release", "string", "run this release target", rules=(text_rule("a declared release.NAME"),)),
    key("matrix", "string", "run this feature matrix", rules=(text_rule("a declared matrix.NAME"),)),
    key("builtin", "string", "a built-in check: git-diff-check, or python-tests (pytest in a fresh environment "
        "holding the wheel built from the tree and the test dependencies, never an installed copy)",
        choices=CHECK_BUILTINS),
    key("group", "string", "python-tests: the [dependency-groups] group (PEP 735) of the test dependencies",
        example="tests"),
    key("extras", "strings", "python-tests: extras installed with the wheel", default=[], example=["test"]),
    key("requirements", "string", "python-tests: a requirements file of the test dependencies, from the root",
        example="requirements/tests.txt"),
    key("args", "strings", "python-tests: pytest's arguments", default=["-q"], example=["-q", "tests"]),
    *_outputs(), *_options("ignore")),
    rules=(one_of_keys("run", "release", "matrix", "builtin"),
           text_rule("a release or matrix check takes only skip (and, for a release, expect_output/produces): "
                     "the rest is set on the target")))

BUILDS = FileSpec(
    name="builds", path="manifests/builds.toml",
    doc="Release targets, feature matrices and the host checks `nox -s host` runs, in order.",
    fields=(
        _CHECK,
        key("release", "map", "release targets by name", values=_RELEASE, rules=(_NAMES,)),
        key("matrix", "map", "feature matrices by name", values=_MATRIX, rules=(_NAMES,)),
        key("host", "table", "settings of nox -s host", fields=(
            key("diff_base", "string", "git diff --check against this ref", default="HEAD", example="v1.3.0"),)),
    ),
    example='''[release.cpu]
clean = "make clean"
run = "make cpu"

[[check]]
name = "release-cpu"
release = "cpu"

[[check]]
name = "unit-tests"
run = "make test"
''')

# --- lanes.toml / qual/lanes.toml ---------------------------------------------------------

_ROLE = key("NAME", "table", 'one role; every role but "leader" is a worker and starts first', fields=(
    key("command", "command", "the role's command", required=True, example="build/engine --serve 7000"),
    _SHELL,
    key("count", "integer", "distinct hosts this role runs on (the leader: 1)", default=1, rules=(at_least(1),)),
    key("requires", "strings", "capabilities or boards its hosts offer", default=[]),
    key("hosts", "strings", "only these hosts (by name)", default=[]),
    _env(),
    key("ready_line", "string", "a worker is ready when it prints a line this regex matches",
        rules=(text_rule("a valid regular expression"),)),
    key("ready_port", "integer", "a worker is ready when this port opens on its address",
        rules=(at_least(1), Rule(kind="maximum", value=65535, text="at most 65535"))),
    key("port", "integer", "the port the leader is told", default_text="ready_port",
        rules=(at_least(1), Rule(kind="maximum", value=65535, text="at most 65535"))),
    _seconds("ready_timeout", "seconds a worker has to become ready", default=120.0),
), rules=(text_rule("a worker needs ready_line or ready_port; the leader takes neither"),))

LANES = FileSpec(
    name="lanes", path="manifests/lanes.toml (or the project's own qual/lanes.toml)",
    doc="Which target runs in which lane, per-target options, project-defined lanes, fan-out and multi-host "
        "steps.",
    fields=(
        key("lanes", "map", "target name → lane (a built-in lane or a [lane.NAME])", rules=(_NAMES,),
            values=key("NAME", "string", f"the lane: {', '.join(BUILTIN_LANES)}, or a project-defined lane",
                       rules=(text_rule("a known lane"),)), example={"scan_parity": "gate"}),
        key("target", "map", f"per-target options; {_DECLARING_KINDS} projects declare their targets here",
            rules=(_NAMES,),
            values=key("NAME", "table", "one target", fields=(
                key("path", "string", "the target's source file, relative to the project root",
                    example="tests/test_kernels.c"),
                key("command", "command", f"the command that runs it (required for {_DECLARING_KINDS} targets)",
                    example="make test"),
                _SHELL,
                key("requires", "strings", "capabilities or boards a host must offer", default=[],
                    example=["cuda"]),
                key("features", "strings", "cargo features to add", default=[]),
                _seconds("timeout", "seconds", finite=True),
                key("args", "strings", "arguments after `--`", default=[]),
                _env(),
                key("evidence", "boolean", "a run that brings back no evidence is an error", default=False),
                key("gpus", "gpus", "GPUs it takes on a host with GPU slots", default_text="1 when it requires "
                    "a GPU capability (cuda, rocm, hip, metal, smNN or a board), else none"),
                _reason("skip", "recorded as skip, with this reason"),
                _max_skipped(),
            ))),
        key("lane", "map", "project-defined lanes, and settings for every target of a lane (a built-in lane "
            "takes only the settings)", rules=(_NAMES,), values=key("NAME", "table", "one lane", fields=(
            key("description", "string", "what the lane runs (required for a project-defined lane)"),
            key("mode", "string", "how its targets run (project-defined lanes)", choices=LANE_MODES, default="all"),
            key("features", "strings", "cargo features every target of the lane runs with", default=[],
                example=["cuda"]),
            key("requires", "strings", "capabilities a host must offer for every target of the lane", default=[],
                example=["cuda"]),
            _max_skipped(),
        ), rules=(text_rule("a project-defined lane needs description; a built-in lane takes only features, "
                            "requires and max_skipped"),))),
        key("fleet", "table", "lanes whose targets run on every matching host", fields=(
            key("every_host", "strings", "these lanes", default=[], example=["gate"]),
            key("workers", "integer", "hosts at once", default=8, rules=(at_least(1),)),
        )),
        key("multihost", "map", "steps whose roles run on distinct hosts", rules=(_NAMES,), values=key("NAME", "table",
            "one multi-host step", fields=(
                key("lane", "string", "runs with this lane", required=True),
                key("role", "map", "the roles (a leader and at least one worker)", rules=(_NAMES,), required=True, values=_ROLE),
                _seconds("timeout", "seconds, for the leader"),
                _seconds("worker_grace", "seconds the workers get to end after the leader", default=30.0),
            ))),
    ),
    example='''[lanes]
"kernels-cpu" = "gate"
"soak" = "soak"

[target.kernels-cpu]
path = "tests/test_kernels.c"
command = "make test"
evidence = true

[target.soak]
command = "make soak"

[lane.soak]
description = "long soak tests"
mode = "all"
''')

# --- package.toml -------------------------------------------------------------------------

PACKAGE = FileSpec(
    name="package", path="manifests/package.toml",
    doc="What the package must and must not hold, how it is built and tested (make, python), and how its "
        "publish is rehearsed. Credentials never go here: they come from the environment.",
    fields=(
        key("package", "table", "the package", fields=(
            key("forbid", "strings", "globs on top of the defaults", default=[], example=["*.bak"]),
            key("allow", "strings", "globs exempt from the defaults", default=[]),
            key("fixtures", "strings", "paths (or globs) every package must hold, from the project root",
                default=[], example=["tests/data/x.bin"]),
            key("dist", "command", f"{_SOURCE_KINDS}: builds the source tarball",
                default_text="git archive of the commit"),
            key("dist_glob", "string", f"{_SOURCE_KINDS}: where dist leaves it (only with dist)",
                example="dist/*.tar.gz"),
            key("build_command", "command", f"{_SOURCE_KINDS}: in the extracted tree",
                default_text=", ".join(f"{shlex.join(k.package_build)} ({k.name})" for k in kinds().values()
                                       if k.package_flow == "source")),
            key("test_command", "command", "the tests in the extracted tree",
                default_text=", ".join(f"{shlex.join(k.package_test)} ({k.name})" for k in kinds().values()
                                       if k.package_test)),
            key("shell", "boolean", "the three commands above as /bin/sh strings", default=False),
            key("extras", "strings", "python: extras installed with the wheel", default=[], example=["test"]),
            key("group", "string", "python: a [dependency-groups] group (PEP 735) installed with the wheel for the "
                "tests", example="tests"),
            key("extensions", "map", "python: compiled extension modules the wheel must hold (a platform wheel), "
                "each with its sources", values=key("MODULE", "strings", "the sources, from the project root"),
                example={"mypkg._speedups": ["src/mypkg/_speedups.c"]}),
            key("wheel_fixtures", "strings", "python: paths (or globs) the wheel must hold, from its root",
                default=[], example=["mypkg/py.typed", "mypkg/_speedups.*"]),
            key("warnings", "string", "compile steps: the package build (python) and the builds in the extracted "
                "tree", choices=WARNING_POLICIES, default="deny"),
            _seconds("timeout", "seconds, each step"),
            key("max_unpacked_bytes", "integer", "extraction: member bytes in all, counted as written",
                default=512 << 20, rules=(at_least(1), Rule(kind="maximum", value=1 << 50, text="at most 2**50"))),
            key("max_members", "integer", "extraction: members in one archive", default=100_000,
                rules=(at_least(1), Rule(kind="maximum", value=100_000_000, text="at most 100,000,000"))),
            key("max_ratio", "number", "extraction: unpacked bytes per archive byte (judged past 1 MiB unpacked)",
                default=100.0, rules=(above(1), Rule(kind="maximum", value=1_000_000, text="at most 1,000,000"))),
        ), rules=(text_rule(f"dist, dist_glob, build_command: {_SOURCE_KINDS} only; extras: python only"),)),
        key("publish", "table", "the publish rehearsal", fields=(
            key("registry", "string", "cargo: the registry of cargo publish --dry-run",
                rules=(pattern(r"^[A-Za-z0-9_-]+$", "a cargo registry name"),), example="local"),
            key("index_url", "string", "python: an existing index pip installs from",
                default_text="a local pypiserver", rules=(pattern(r"^https?://", "an http(s) URL without "
                                                                                  "credentials"),)),
            key("upload_url", "string", "python: where twine uploads (only with index_url)",
                default_text="index_url less simple/", rules=(pattern(r"^https?://", "an http(s) URL"),)),
            key("lock", "string", "python: lock or constraints file, from the project root",
                example="requirements.lock"),
            key("import", "string-or-strings", "python: modules imported after the install",
                default_text="the wheel's top-level modules (top_level.txt, else its RECORD)", example=["mypkg"]),
            _seconds("timeout", "seconds, each step"),
        )),
    ),
    example='''[package]
fixtures = ["tests/data/x.bin"]

[publish]
registry = "local"
''')

# --- intentional.toml ---------------------------------------------------------------------

INTENTIONAL = FileSpec(
    name="intentional", path="manifests/intentional.toml",
    doc="Evidence cells a release re-records on purpose, each with a reason.",
    fields=(key("change", "array", "one intended change", fields=(
        key("suite", "string", "the suite", required=True, example="scan"),
        key("arm", "string", "without it, the whole suite", example="parity"),
        key("key", "string", "one cell (needs arm)"),
        key("board", "string", "only on this board"),
        _reason("reason", "why this change is intended", required=True),
    )),),
    example='''[[change]]
suite = "scan"
arm = "parity"
reason = "the fast feature switches the kernels to the blocked variant"
''')

# --- measurements.toml --------------------------------------------------------------------


def _source() -> tuple[Key, ...]:
    return (
        key("target", "string", "the lane target that writes the rows", required=True, example="scan_bench"),
        key("file_env", "string", "relgate points this variable at a fresh file the target writes",
            rules=(_ENV_RULE,), example="SCANKERN_MEASURE"),
        key("output", "string", "or read the rows from the target's output", choices=("stdout",)),
        key("format", "string", "the rows' format", required=True, choices=FORMATS),
        key("key", "strings", "the columns that name a row", default=[], example=["kernel", "n"]),
        key("select", "strings", "kv: only the lines that start with these words", default=[]),
    )


MEASUREMENTS = FileSpec(
    name="measurements", path="manifests/measurements.toml",
    doc="What a bench target measures, the metadata every row carries, the policy that compares the previous "
        "release with the candidate, and quality bands.",
    fields=(
        key("measure", "map", "speed measures by name", rules=(_NAMES,), values=key("NAME", "table", "one measure", fields=(
            *_source(),
            key("metadata", "strings", "fields required in every row", required=True,
                example=["board", "commit", "source_hash"]),
            key("metrics", "map", "metric → which way is better", required=True,
                values=key("NAME", "string", "the direction", choices=DIRECTIONS), example={"ns_per_elem": "lower"}),
            key("vary", "strings", "metadata that may differ between the two sides",
                default=["commit", "dirty", "host", "source_hash", "release"]),
            key("runs", "integer", "runs per batch", default=1, rules=(at_least(1),)),
            key("warmup", "integer", "discarded warm-up runs", default=0,
                rules=(at_least(0), text_rule("below runs"))),
            key("rerun_above", "number", "a move the wrong way above this fraction asks for a rerun",
                default=0.05, rules=(at_least(0), Rule(kind="exclusiveMaximum", value=10, text="below 10"))),
            key("block_above", "number", "a confirmed move above this fraction blocks", default=0.10,
                rules=(at_least(0), Rule(kind="exclusiveMaximum", value=10, text="below 10"),
                       text_rule("not below rerun_above"))),
            key("args", "strings", "arguments after `--`", default=[]),
            key("confidence", "number", "the least confidence of the ratio's interval (the false-alarm bound asks for "
                "more; the A/A noise floor is stated at this)", default=0.95,
                rules=(at_least(0.5), Rule(kind="exclusiveMaximum", value=1, text="below 1"))),
            key("max_batches", "integer", "batches pooled before a row that still straddles a threshold is "
                "undecided", default=4, rules=(at_least(1),)),
            key("false_alarm", "number", "the chance that identical code gets any slower or block on a board "
                "(rows, suite and every pooled batch together)", default=0.01,
                rules=(Rule(kind="exclusiveMinimum", value=0, text="above 0"),
                       Rule(kind="exclusiveMaximum", value=0.5, text="below 0.5"))),
            key("power", "number", "the chance a change beyond a threshold is called, for the runs a decision "
                "needs", default=0.95, rules=(at_least(0.5), Rule(kind="exclusiveMaximum", value=1, text="below 1"))),
        ), rules=(one_of_keys("file_env", "output"),))),
        key("quality", "map", "quality bands by name", rules=(_NAMES,), values=key("NAME", "table", "one scorer", fields=(
            *_source(),
            key("metadata", "strings", "fields required in every row", default=[]),
            key("bands", "map", "metric → band", required=True, values=key(
                "NAME", "string", "a band", rules=(pattern(r"^\s*(>=|<=|==|>|<)\s*-?\d", '">= 95", "<= 2.5"'),)),
                example={"first_match": ">= 95"}),
        ), rules=(one_of_keys("file_env", "output"),))),
    ),
    example='''[measure.scan]
target = "scan_bench"
file_env = "SCANKERN_MEASURE"
format = "csv"
key = ["kernel", "n"]
metrics = { ns_per_elem = "lower" }
metadata = ["board", "commit", "source_hash"]
runs = 3
warmup = 1
''')

# --- checklist.toml -----------------------------------------------------------------------

_AUTO = "^(" + "|".join(k + (":.+" if arg else "") for k, arg in AUTO_KINDS.items()) + ")$"

CHECKLIST = FileSpec(
    name="checklist", path="manifests/checklist.toml",
    doc="What the sign-off of a release must show, item by item.",
    fields=(
        key("release", "table", "the release", required=True, fields=(
            key("version", "string", "the release's version", default_text="project.version"),
            key("boards", "strings", 'boards in scope (a host without a board: "host:NAME")', required=True,
                rules=(Rule(kind="minItems", value=1, text="at least one board"),), example=["host:local"]),
            key("backends", "strings", "backends in scope (each known, or declared in known_backends)", default=[],
                example=["cpu", "cuda"]),
            key("known_backends", "strings", "backends of this project's own, beyond the built-in list "
                "(" + ", ".join(KNOWN_BACKENDS) + ")", default=[], example=["hexagon"]),
            key("backend_boards", "map", "where a backend's items are checked",
                values=key("NAME", "strings", "the backend's boards",
                           rules=(Rule(kind="minItems", value=1, text="at least one board"),)),
                example={"cuda": ["NVIDIA H200"]}),
            key("notes", "strings", "release-notes files", default_text="[project.changelog]"),
            key("tag_requires", "strings", "manual items attested before `nox -s tag`",
                default_text="ci-green and maintainer-approval, where declared"),
        )),
        key("item", "array", "the checklist items", required=True, fields=(
            key("id", "string", "the item's id (unique)", required=True,
                rules=(pattern(r"^[a-z0-9][a-z0-9_.-]*$", "lower case, digits, - _ ."),), example="gate"),
            key("title", "string", "what the item says", required=True),
            key("auto", "string", "a ledger predicate: " + ", ".join(k + (":NAME" if a else "")
                                                                   for k, a in AUTO_KINDS.items()),
                rules=(pattern(_AUTO, "KIND or KIND:NAME"),), example="lane:gate"),
            key("manual", "boolean", "attested by a named person", default=False),
            key("targets", "strings", "only these steps", default=[]),
            key("applies", "strings", "not applicable outside these backends", default=[]),
            _reason("not_validated", "the text the release notes carry when it is not validated"),
            key("boards", "strings", "these boards instead of the release's ([]: wherever it ran)"),
        ), rules=(text_rule('either auto = "KIND[:NAME]" or manual = true', kind="exclusive"),)),
    ),
    example='''[release]
boards = ["host:local"]

[[item]]
id = "gate"
title = "Every gate target passed"
auto = "lane:gate"

[[item]]
id = "ci-green"
title = "CI is green"
manual = true
''')

# --- hosts/*.toml -------------------------------------------------------------------------

_PORT_RULES = (at_least(1), Rule(kind="maximum", value=65535, text="at most 65535"))

HOST = FileSpec(
    name="host", path="hosts/NAME.toml",
    doc="One machine (the local host or an SSH host) or a Slurm cluster. Paths are relative to this file's folder.",
    fields=(key("host", "table", "the host", required=True, fields=(
        key("name", "string", "the host's name (unique)", default_text="the file's name",
            rules=(nonblank(), _NAME)),
        key("kind", "string", "where commands run (slurm: each step is a job on the cluster)", choices=HOST_KINDS,
            default="local"),
        key("address", "string", "ssh: the address (required); slurm: the login node jobs are submitted from "
            "(default: this machine)", example="10.0.0.7"),
        key("port", "integer", "ssh: the port", default=22, rules=_PORT_RULES),
        key("user", "string", "ssh: the user"),
        key("identity", "string", "ssh: the client key", default_text="ssh-agent and ~/.ssh keys"),
        key("known_hosts", "string", "ssh: the known_hosts file (required: host keys are never accepted blindly)",
            example="known_hosts"),
        key("workdir", "string", "ssh: checkouts live here (absolute or ~); slurm: a folder every node shares "
            "(absolute, required)", default_text="~/.relgate-work"),
        key("boards", "strings", "boards, added to what is detected", default=[]),
        key("driver", "string", "the driver, added to what is detected"),
        key("toolkit", "string", "the toolkit (a declared one is not asked of nvcc)"),
        key("capabilities", "strings", "added to what is detected", default=[], example=["cuda-spark"]),
        key("detect", "boolean", "detect board, driver, toolkit and capabilities", default=True),
        key("exclusive", "boolean", "one lane at a time: the host is locked for the lane", default=False),
        _reason("permission", "used only with --allow-host NAME"),
        _seconds("connect_timeout", "seconds; also the SSH handshake's limit", default=10.0),
        _seconds("command_timeout", "seconds per command, when the step sets none"),
        _seconds("keepalive", "seconds between SSH keepalives", default=15.0),
        _env("for every command and probe there"),
        key("lock_wait", "number", "wait this long for another run's lock, then refuse", default=0.0,
            rules=(at_least(0), Rule(kind="maximum", value=MAX_SECONDS, text="at most 30 days"))),
        _reason("allow_busy_gpu", "start although another user's process holds GPU memory"),
        key("transfer", "string", "ssh: how files reach and leave the host (exec: over the exec channel, "
            "for an sshd without the sftp subsystem)", choices=TRANSFERS, default="sftp"),
        key("gpus", "integer", "GPU slots: steps needing a GPU run side by side, each on its own GPUs",
            default_text="the GPUs nvidia-smi lists", rules=(at_least(0),), example=8),
        key("partition", "string", "slurm: the partition (--partition)", example="gpu"),
        key("account", "string", "slurm: the account (--account)"),
        key("time_limit", "string", "slurm: each job's time limit (--time)", example="01:00:00",
            rules=(text_rule("a Slurm time: MM, HH:MM:SS or D-HH:MM:SS"),)),
        key("resubmit", "integer", "slurm: a preempted, timed-out, node-lost or OOM-killed job is submitted "
            "again this many times (then error)", default=1, rules=(at_least(0),)),
        key("max_jobs", "integer", "slurm: jobs of one run in the queue at once", default=64, rules=(at_least(1),)),
        key("srun_args", "strings", "slurm: more srun arguments", default=[]),
        key("board", "map", "slurm: how a required board or capability is asked for", rules=(_NAMES,),
            values=key("NAME", "table", "one board", fields=(
                key("gres", "string", "--gres", example="gpu:h100:1"),
                key("constraint", "string", "--constraint (node features)", example="h100"),
                key("partition", "string", "--partition, instead of the host's"),
            ))),
    ), rules=(text_rule("an ssh host needs address and known_hosts; a slurm host a shared workdir"),)),
        key("probe", "array", "checks that gate a capability: offered only while its probe passes", fields=(
            key("name", "string", "the capability this probe gates", required=True, rules=(_NAME,),
                example="rdma"),
            key("run", "string", "the shell command (exit 0 to pass)", required=True, example="rdma_ctl status"),
            key("expect", "string", "a regex its output must match", rules=(text_rule("a valid regular expression"),),
                example="enabled"),
            _seconds("timeout", "seconds", default=30.0),
        )),
    ),
    example='''[host]
name = "local"
kind = "local"
detect = true
''')

FILES: tuple[FileSpec, ...] = (PROJECT, BUILDS, LANES, PACKAGE, MEASUREMENTS, CHECKLIST, INTENTIONAL, HOST)


def file_spec(name: str) -> FileSpec:
    """The declaration of ``name`` (``project``, ``builds`` … ``host``)."""
    for spec in FILES:
        if spec.name == name:
            return spec
    raise KeyError(name)
