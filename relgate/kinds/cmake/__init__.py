"""The cmake kind: a CMake project; its tests are CTest's, each placed in a lane by its labels.

What ``init`` and ``init --check`` read runs nothing (configuring a CMake project runs the
repository's CMake code): the ``CMakeLists.txt`` tree (:mod:`.lang`) for the project's name,
version and languages and each ``add_test`` with its ``LABELS``; ``CMakePresets.json``
(:mod:`.presets`) for the release builds and the test build; an existing build tree's
``CMakeCache.txt`` (:mod:`.ctest`) for the CUDA compiler it found. A test whose name or labels
only a configure could tell is said, never guessed.

What CTest itself lists is asked by the census, in a session that builds anyway: a fresh
configure of the test build in a scratch folder, then ``ctest --show-only=json-v1``; each
test it lists that no target declares is named.

A target runs one CTest test in the test build's tree (``ctest --test-dir DIR -R '^NAME$'
--no-tests=error``): ``nox -s host`` makes that tree first (its ``build-tests`` check, held
warning-free like the release builds), and the count CTest prints is judged (0 tests: not
run). A test labelled ``cuda`` or ``gpu``, or registered only under an ``if`` about CUDA,
requires a host that offers ``cuda``; a release build whose preset switches CUDA on, or of a
project that requires the CUDA language, requires ``nvcc``.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Iterable
from pathlib import Path

from relgate.kinds.base import ProjectKind, RunListing
from relgate.kinds.cmake.ctest import cuda_compiler, parse_ctest_json, read_cache
from relgate.kinds.cmake.lang import CMakeRead, CMakeTest, read_cmakelists
from relgate.kinds.cmake.presets import CMakePresets, ConfigurePreset, ReleaseBuild, read_presets, release_builds
from relgate.kinds.found import Found, FoundBuild, FoundTarget

__all__ = ["CMAKE"]

#: where the test build goes when the project has no preset for it
_TEST_DIR = "build/relgate"
_GPU_WORDS = ("cuda", "gpu")
_LISTED = "ctest --show-only=json-v1"
#: package_verify: the extracted source tree configured and built in a folder of its own
_PACKAGE_BUILD = "cmake -S . -B build/relgate-package && cmake --build build/relgate-package"


class CMake(ProjectKind):
    name = "cmake"
    marker_files = ("CMakeLists.txt",)
    needs_lanes = True
    needs_builds = True
    package_keys = ("dist", "dist_glob", "build_command", "test_command")
    dist_needs_glob = True
    gitignore = ("build/",)
    package_build = ("sh", "-c", _PACKAGE_BUILD)
    package_test = ("ctest", "--test-dir", "build/relgate-package", "--output-on-failure", "--no-tests=error")
    test_runner = "CTest"

    def discover(self, root: Path) -> Found:
        read = read_cmakelists(root)
        presets = read_presets(root)
        configure, build, tree = _test_build(presets)
        cache = _cached_cuda(root, presets)
        targets = tuple(FoundTarget(name=t.name, labels=t.labels, what=_what(t), command=_ctest_command(tree, t.name),
                                    path=t.where.rsplit(":", 1)[0], requires=("cuda",) if _on_gpu(t) else ())
                        for t in read.tests)
        return Found(name=read.project or root.name, version=read.version,
                     source="CMakeLists.txt" + (" and CMakePresets.json" if presets else "")
                     + (f"; {cache}" if cache else ""),
                     targets=targets, releases=_releases(read, presets),
                     checks=(FoundBuild(name="build-tests", run=f"{configure} && {build}",
                                        why="the tree the targets' ctest runs in"),),
                     notes=read.unread, package_build=_PACKAGE_BUILD,
                     package_test=_package_test(t.name for t in targets if t.requires))

    def listed_tests(self, root: Path, run: RunListing) -> tuple[tuple[str, str], ...]:
        test = _test_preset(read_presets(root))
        with tempfile.TemporaryDirectory(prefix="relgate-ctest-") as scratch:
            run(["cmake", *(("--preset", test.name) if test is not None else ("-S", ".")), "-B", scratch])
            text = run(["ctest", "--test-dir", scratch, "--show-only=json-v1"])
        return tuple((t.name, _LISTED) for t in parse_ctest_json(text, _LISTED))


def _package_test(gpu: Iterable[str]) -> str:
    """CTest in the extracted tree, offline; the tests that need a GPU are left to their lanes."""
    names = "|".join(re.escape(n) for n in gpu)
    return shlex.join(CMake.package_test) + (f" -E {shlex.quote(f'^({names})$')}" if names else "")


def _releases(read: CMakeRead, presets: CMakePresets | None) -> tuple[FoundBuild, ...]:
    """The presets' release builds, else one Release configure of the whole tree."""
    configure = {c.name: c for c in presets.configure} if presets else {}
    found = tuple(FoundBuild(name=r.name, run=r.command, clean=_clean(r), why=f"CMakePresets.json: {r.name}",
                             requires=("nvcc",) if _cuda_on(configure.get(r.configure_preset), read) else ())
                  for r in (release_builds(presets) if presets else ()))
    return found or (FoundBuild(name="release", run="cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release && "
                                                    "cmake --build build/release",
                                clean="cmake -E rm -rf build/release", why="a Release configure of the tree",
                                requires=("nvcc",) if read.cuda == "required" else ()),)


def _clean(release: ReleaseBuild) -> str | None:
    return f"cmake -E rm -rf {shlex.quote(release.binary_dir)}" if release.binary_dir else None


def _cuda_on(preset: ConfigurePreset | None, read: CMakeRead) -> bool:
    """A build needs nvcc when the project requires CUDA, or its preset switches a CUDA option on
    (``VECOPS_CUDA=ON``) or names the CUDA compiler."""
    if read.cuda == "required":
        return True
    variables = preset.cache_variables if preset is not None else {}
    return any("CUDA" in key.upper() and (value.upper() in ("ON", "TRUE", "YES", "1") or key == "CMAKE_CUDA_COMPILER")
               for key, value in variables.items())


def _test_preset(presets: CMakePresets | None) -> ConfigurePreset | None:
    """The configure preset the tests are built with: the first visible one that is no release build's."""
    if presets is None:
        return None
    released = {r.configure_preset for r in release_builds(presets)}
    return next((p for p in presets.configure if not p.hidden and p.applies is not False
                 and p.name not in released and p.binary_dir), None)


def _test_build(presets: CMakePresets | None) -> tuple[str, str, str]:
    """(configure, build, tree) of the test build."""
    test = _test_preset(presets)
    if presets is None or test is None or test.binary_dir is None:
        return f"cmake -S . -B {_TEST_DIR}", f"cmake --build {_TEST_DIR}", _TEST_DIR
    built = next((b for b in presets.build if b.configure_preset == test.name and not b.hidden), None)
    build = f"cmake --build --preset {shlex.quote(built.name)}" if built else \
        f"cmake --build {shlex.quote(test.binary_dir)}"
    return f"cmake --preset {shlex.quote(test.name)}", build, test.binary_dir


def _ctest_command(tree: str, name: str) -> str:
    """ctest running exactly the test ``name`` (its name as a regular expression, anchored)."""
    return (f"ctest --test-dir {shlex.quote(tree)} -R {shlex.quote('^' + re.escape(name) + '$')} "
            "--output-on-failure --no-tests=error")


def _on_gpu(test: CMakeTest) -> bool:
    """Labelled cuda or gpu, or registered only under an ``if`` about CUDA."""
    return any(x.lower() in _GPU_WORDS for x in test.labels) or \
        any(word in c.lower() for c in test.conditions for word in _GPU_WORDS)


def _what(test: CMakeTest) -> str:
    labels = f"labels {';'.join(test.labels)}" if test.labels else "no labels"
    return f"ctest test, {labels} ({test.where})"


def _cached_cuda(root: Path, presets: CMakePresets | None) -> str | None:
    """What an existing build tree's cache says of CUDA (None: no cache to read; reading it runs nothing)."""
    trees = [p.binary_dir for p in presets.configure if p.binary_dir] if presets else []
    for tree in dict.fromkeys([*trees, _TEST_DIR, "build"]):
        cache = root / tree / "CMakeCache.txt"
        if cache.is_file():
            compiler = cuda_compiler(read_cache(cache))
            return f"{tree}/CMakeCache.txt: " + (f"CUDA compiler {compiler}" if compiler else "no CUDA compiler")
    return None


CMAKE = CMake()
