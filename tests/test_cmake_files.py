"""The CMake readers (relgate/kinds/cmake: the language read without configuring, the presets,
CTest's json-v1 and the cache) against real cmake and ctest on examples/vecops, and on hostile
or odd input. Real cmake, gcc and (where it is on PATH) nvcc; nothing faked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from relgate.core.errors import InputError
from relgate.kinds.cmake.ctest import cuda_compiler, parse_cache, parse_ctest_json, read_cache
from relgate.kinds.cmake.lang import read_cmakelists
from relgate.kinds.cmake.presets import parse_presets, read_presets, release_builds

REPO = Path(__file__).resolve().parent.parent
VECOPS = REPO / "examples" / "vecops"
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ctest") is None,
                                reason="cmake is not on PATH (apt-get install -y cmake)")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH (the CUDA toolkit)")


def _copy(tmp: Path) -> Path:
    root = tmp / "vecops"
    shutil.copytree(VECOPS, root, ignore=shutil.ignore_patterns("build"))
    return root


def _configure(src: Path, build: Path, *defs: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["cmake", "-S", str(src), "-B", str(build), *defs], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _ctest(build: Path) -> str:
    done = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """examples/vecops copied and configured once with its defaults (VECOPS_CUDA ON)."""
    tmp = tmp_path_factory.mktemp("vecops")
    root = _copy(tmp)
    _configure(root, tmp / "build")
    return root, tmp / "build"


# -- the example, statically and really ----------------------------------------------------------

def test_the_static_read_of_the_example_equals_what_a_real_configure_registers(configured):
    root, build = configured
    static = read_cmakelists(root)
    ctest = {t.name: t for t in parse_ctest_json(_ctest(build), "ctest --show-only=json-v1")}
    assert (static.project, static.version, static.cuda) == ("vecops", "0.3.0", "optional")
    assert static.languages == ("C", "CUDA") and static.unread == ()
    assert static.files == ("CMakeLists.txt", "tests/CMakeLists.txt")
    cpu = {t.name: t for t in static.tests if not t.conditions}
    cuda = {t.name: t for t in static.tests if t.conditions}
    assert set(cpu) == {"saxpy", "dot", "cli_contract", "version"}
    assert set(cuda) == {"cuda_kernels", "cli_contract_cuda"}
    assert all(t.conditions == ("if(TARGET vecops_cuda)",) for t in cuda.values())
    # the CUDA arms are registered exactly where a CUDA compiler was found
    assert set(ctest) == set(cpu) | (set(cuda) if NVCC else set())
    for name, real in ctest.items():
        mine = {**cpu, **cuda}[name]
        assert sorted(mine.labels) == sorted(real.labels), name
        # no WORKING_DIRECTORY: CTest runs it in the test's build directory
        assert (mine.working_directory or str(build / "tests")) == real.working_directory, name
        if real.command:  # ctest lists a command only once its program exists (nothing is built here)
            assert len(mine.command) == len(real.command), name
            assert Path(real.command[0]).name == mine.command[0], name  # a target / program stays its name
    assert any(t.command for t in ctest.values())
    assert {n: t.labels for n, t in {**cpu, **cuda}.items()} == {
        "saxpy": ("gate",), "dot": ("gate",), "cli_contract": ("contract",), "version": ("host",),
        "cuda_kernels": ("gate", "cuda"), "cli_contract_cuda": ("contract", "cuda")}
    assert cpu["saxpy"].where == "tests/CMakeLists.txt:7" and cpu["version"].command == ("test_version", "0.3.0")
    assert cpu["cli_contract"].command[:2] == ("sh", str(root / "tests" / "cli_contract.sh"))


@needs_nvcc
def test_the_cache_names_nvcc_where_it_is_on_path(configured):
    _, build = configured
    cache = read_cache(build / "CMakeCache.txt")
    assert cache["CMAKE_PROJECT_NAME"] == "vecops"
    assert os.path.realpath(cuda_compiler(cache) or "") == os.path.realpath(NVCC)


@pytest.mark.parametrize("defs", [("-DVECOPS_CUDA=OFF",), ("-DCMAKE_CUDA_COMPILER=",)])
def test_the_cache_names_no_cuda_compiler_when_cuda_is_off(tmp_path, defs):
    root = _copy(tmp_path)
    _configure(root, tmp_path / "build", *defs)
    cache = read_cache(tmp_path / "build" / "CMakeCache.txt")
    assert cuda_compiler(cache) is None
    names = {t.name for t in parse_ctest_json(_ctest(tmp_path / "build"), "ctest")}
    assert names == {"saxpy", "dot", "cli_contract", "version"}  # no CUDA arm registered


def test_cuda_compiler_reads_only_a_found_compiler():
    assert cuda_compiler({"CMAKE_CUDA_COMPILER": "/usr/local/cuda/bin/nvcc"}) == "/usr/local/cuda/bin/nvcc"
    for value in ("", "CMAKE_CUDA_COMPILER-NOTFOUND", "  "):
        assert cuda_compiler({"CMAKE_CUDA_COMPILER": value}) is None
    assert cuda_compiler({}) is None


def test_the_cache_parser_reads_entries_and_refuses_garbage(tmp_path):
    text = ('# comment\n// help text\nA:STRING=x=y\n"WITH SPACE":BOOL=ON\nB:INTERNAL=\n\n')
    assert parse_cache(text, "CMakeCache.txt") == {"A": "x=y", "WITH SPACE": "ON", "B": ""}
    with pytest.raises(InputError, match=r"^CMakeCache.txt:2: not a cache entry"):
        parse_cache("A:STRING=1\nnonsense\n", "CMakeCache.txt")
    fifo = tmp_path / "CMakeCache.txt"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_cache(fifo)


# -- presets --------------------------------------------------------------------------------------

def test_the_example_presets_resolve_inherits_and_macros():
    presets = read_presets(VECOPS)
    assert presets is not None and presets.version == 6
    by = {c.name: c for c in presets.configure}
    assert by["base"].hidden and not by["release"].hidden
    assert by["release"].binary_dir == "build/release" and by["dev"].binary_dir == "build/dev"
    assert by["release-cuda"].cache_variables == {"VECOPS_CUDA": "ON", "CMAKE_BUILD_TYPE": "Release",
                                                  "CMAKE_C_FLAGS": "-Wall -Wextra"}
    assert by["release"].cache_variables["VECOPS_CUDA"] == "OFF"  # from the hidden base
    assert "-Werror" not in by["release"].cache_variables["CMAKE_C_FLAGS"]
    builds = release_builds(presets)
    assert [(b.name, b.build_type, b.binary_dir, b.command) for b in builds] == [
        ("release", "Release", "build/release", "cmake --preset release && cmake --build --preset release"),
        ("release-cuda", "Release", "build/release-cuda",
         "cmake --preset release-cuda && cmake --build --preset release-cuda")]


def _build(root: Path, command: str) -> str:
    done = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("name", ["release", pytest.param("release-cuda", marks=needs_nvcc)])
def test_the_release_commands_really_build_warning_free(tmp_path, name):
    root = _copy(tmp_path)
    build = {b.name: b for b in release_builds(read_presets(root))}[name]
    log = _build(root, build.command)
    assert "warning" not in log.lower(), log
    out = root / build.binary_dir
    assert (out / "vecops").is_file() and (out / "tests" / "test_saxpy").is_file()
    if name == "release-cuda":
        assert (out / "vecops-cuda").is_file() and (out / "tests" / "test_cuda").is_file()
        assert cuda_compiler(read_cache(out / "CMakeCache.txt")) is not None
    else:  # the CPU build's tests really run and pass
        done = subprocess.run(["ctest", "--test-dir", str(out), "-L", "gate|contract|host"], capture_output=True,
                              text=True)
        assert done.returncode == 0 and "100% tests passed, 0 tests failed out of 4" in done.stdout, done.stdout


def _presets(configure: list, build: list | None = None, version: int = 6) -> dict:
    return {"version": version, "configurePresets": configure, "buildPresets": build or []}


def test_presets_inherit_in_order_and_expand_the_macros(tmp_path):
    src = tmp_path / "proj"
    doc = _presets([
        {"name": "a", "hidden": True, "generator": "Ninja", "binaryDir": "${sourceParentDir}/out/${presetName}",
         "cacheVariables": {"X": "a", "Y": {"type": "STRING", "value": "ya"}, "GONE": "1"}},
        {"name": "b", "hidden": True, "binaryDir": "${sourceDir}/b", "cacheVariables": {"X": "b", "Z": "zb"}},
        {"name": "c", "inherits": ["a", "b"], "cacheVariables": {"GONE": None, "W": "${sourceDirName}-${generator}"}},
        {"name": "d", "inherits": "c", "binaryDir": "$env{HOME}/d", "cacheVariables": {"CMAKE_BUILD_TYPE": "MinSizeRel"}},
    ])
    by = {c.name: c for c in parse_presets(doc, src).configure}
    assert by["c"].binary_dir == str(tmp_path / "out" / "c")  # the first parent wins, macros of c
    assert by["c"].cache_variables == {"X": "a", "Y": "ya", "Z": "zb", "W": "proj-Ninja"}
    assert by["c"].generator == "Ninja" and by["c"].inherits == ("a", "b")
    assert by["d"].binary_dir == "$env{HOME}/d" and by["d"].unresolved == ("$env{HOME}",)
    assert [b.name for b in release_builds(parse_presets(doc, src))] == ["d"]  # no build presets: configure ones
    assert release_builds(parse_presets(doc, src))[0].command == "cmake --preset d && cmake --build $env{HOME}/d"


def test_presets_conditions_are_kept_and_evaluated_where_plain(tmp_path):
    doc = _presets([
        {"name": "release-never", "condition": {"type": "const", "value": False}},
        {"name": "release-other-os", "condition": {"type": "equals", "lhs": "${hostSystemName}", "rhs": "Nowhere"}},
        {"name": "release-env", "condition": {"type": "equals", "lhs": "$env{CI}", "rhs": "1"}},
        {"name": "release-plain"},
    ])
    presets = parse_presets(doc, tmp_path)
    assert [c.applies for c in presets.configure] == [False, False, None, True]
    assert presets.configure[2].condition == {"type": "equals", "lhs": "$env{CI}", "rhs": "1"}
    assert [b.name for b in release_builds(presets)] == ["release-env", "release-plain"]


@pytest.mark.parametrize("doc, message", [
    ({"version": 6, "configurePresets": [{"name": "a", "inherits": "b"}, {"name": "b", "inherits": ["a"]}]},
     r"^CMakePresets.json: configurePresets\[\d\].inherits: a cycle: (a → b → a|b → a → b)$"),
    ({"version": 6, "configurePresets": [{"name": "a", "inherits": "nope"}]},
     r'^CMakePresets.json: configurePresets\[0\].inherits: "nope" is not a preset of configurePresets$'),
    ({"version": 6, "configurePresets": [{"name": "a"}, {"name": "b"}, {"name": "c", "binaryDir": 3}]},
     r"^CMakePresets.json: configurePresets\[2\].binaryDir: must be a string$"),
    ({"version": 6, "configurePresets": [{"name": "a", "cacheVariables": {"X": 1}}]},
     r"^CMakePresets.json: configurePresets\[0\].cacheVariables.X: must be"),
    ({"version": 6, "configurePresets": [{"name": "a"}, {"name": "a"}]},
     r'^CMakePresets.json: configurePresets\[1\].name: "a" is also configurePresets\[0\]'),
    ({"version": 6, "configurePresets": [{"name": "a"}], "buildPresets": [{"name": "b", "configurePreset": "x"}]},
     r'^CMakePresets.json: buildPresets\[0\].configurePreset: "x" is not a configure preset$'),
    ({"version": 1, "configurePresets": []}, r"^CMakePresets.json: version: 1 is not a presets version"),
    ({"version": 6, "configurePresets": {"name": "a"}}, r"^CMakePresets.json: configurePresets: must be a list$"),
    ([], r"^CMakePresets.json: must be a JSON object$"),
])
def test_bad_presets_are_one_line_naming_the_key(tmp_path, doc, message):
    with pytest.raises(InputError, match=message):
        parse_presets(doc, tmp_path)


def test_presets_files_bad_json_none_and_user_presets_ignored(tmp_path):
    assert read_presets(tmp_path) is None
    (tmp_path / "CMakeUserPresets.json").write_text('{"version": 6, "configurePresets": [{"name": "mine"}]}')
    assert read_presets(tmp_path) is None  # a person's own presets are never read
    (tmp_path / "CMakePresets.json").write_text('{"version": 6,, }')
    with pytest.raises(InputError, match=r"^CMakePresets.json: not JSON: line 1 column 15"):
        read_presets(tmp_path)


# -- the language: hostile and odd input ----------------------------------------------------------

def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("text, message", [
    ("project(x)\nadd_test(NAME a COMMAND [==[never\nclosed ]=]\n", r"^tests/CMakeLists.txt:2: bracket argument \[==\[ is not closed"),
    ('project(x)\n\nmessage("never closed)\n', r'^tests/CMakeLists.txt:3: quoted argument is not closed'),
    ("project(x)\nadd_test(NAME a COMMAND b\n", r"^tests/CMakeLists.txt:2: add_test\( is not closed"),
    ("project(x)\n#[[ never closed\n", r"^tests/CMakeLists.txt:2: bracket comment \[\[ is not closed"),
    ("if(A)\nadd_test(a b)\n", r"^tests/CMakeLists.txt:1: if\(\) has no endif\(\)"),
    ("endif()\n", r"^tests/CMakeLists.txt:1: endif\(\) without its opening command"),
    ("project(x) add_test(a b)\n", r"^tests/CMakeLists.txt:1: project\(…\) is followed by more text"),
    ("= 3\n", r"^tests/CMakeLists.txt:1: expected a command"),
])
def test_malformed_cmake_is_one_line_naming_file_and_line(tmp_path, text, message):
    _tree(tmp_path, {"CMakeLists.txt": "add_subdirectory(tests)\n", "tests/CMakeLists.txt": text})
    with pytest.raises(InputError, match=message):
        read_cmakelists(tmp_path)


def test_an_add_subdirectory_out_of_the_tree_or_through_a_symlink_is_refused(tmp_path):
    outside = _tree(tmp_path / "outside", {"CMakeLists.txt": "add_test(NAME stolen COMMAND x)\n"})
    root = _tree(tmp_path / "root", {"CMakeLists.txt": "add_subdirectory(../outside)\n"})
    with pytest.raises(InputError, match=r"^CMakeLists.txt:1: add_subdirectory .*outside is outside the source tree"):
        read_cmakelists(root)
    (root / "CMakeLists.txt").write_text("add_subdirectory(link)\n")
    (root / "link").symlink_to(outside)
    with pytest.raises(InputError, match=r"^CMakeLists.txt:1: add_subdirectory link is a symlink: refused"):
        read_cmakelists(root)
    (root / "link").unlink()
    (root / "real").mkdir()
    (root / "real" / "CMakeLists.txt").symlink_to(outside / "CMakeLists.txt")
    (root / "CMakeLists.txt").write_text("add_subdirectory(real)\n")
    with pytest.raises(InputError, match=r"^CMakeLists.txt:1: add_subdirectory real/CMakeLists.txt is a symlink"):
        read_cmakelists(root)


@pytest.mark.parametrize("where", ["CMakeLists.txt", "sub/CMakeLists.txt"])
def test_a_cmakelists_that_is_a_fifo_is_refused_without_hanging(tmp_path, where):
    if where != "CMakeLists.txt":
        _tree(tmp_path, {"CMakeLists.txt": "add_subdirectory(sub)\n"})
    (tmp_path / where).parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / where)
    with pytest.raises(InputError, match="FIFO"):
        read_cmakelists(tmp_path)


def test_odd_but_valid_cmake_is_read_as_cmake_reads_it(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": """\
#[==[ a bracket comment
add_test(NAME commented_out COMMAND x) ]==]
PROJECT(Odd VERSION 1.2.3 LANGUAGES C CUDA)  # CUDA unconditionally: required
set(PREFIX "odd")
Add_Test(NAME ${PROJECT_NAME}-${PREFIX}_new COMMAND prog --flag "two words" [[bracket ${NOT_EXPANDED}]])
ADD_TEST(old_style prog arg1 arg2)
add_test(NAME ${FROM_NOWHERE}_t COMMAND prog)
set_tests_properties(old_style PROPERTIES LABELS "gate;slow" WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/w)
set_property(TEST Odd-odd_new PROPERTY LABELS contract)
set_property(TEST Odd-odd_new APPEND PROPERTY LABELS cuda)
set_tests_properties(${FROM_NOWHERE}_t PROPERTIES LABELS gate)
foreach(k IN ITEMS a b)
  add_test(NAME loop_${k} COMMAND t_${k})
endforeach()
function(my_test name)
  cmake_parse_arguments(ARG "" "" "LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND ${name})
  set_property(TEST ${name} PROPERTY LABELS ${ARG_LABELS})
endfunction()
my_test(from_function LABELS host)
if(SOMETHING)
  set(SUFFIX one)
else()
  set(SUFFIX two)
endif()
add_test(NAME guessed_${SUFFIX} COMMAND x)
include(GoogleTest)
include(CTest)
gtest_discover_tests(some_target)
"""})
    read = read_cmakelists(tmp_path)
    assert (read.project, read.version, read.languages, read.cuda) == ("Odd", "1.2.3", ("C", "CUDA"), "required")
    by = {t.name: t for t in read.tests}
    assert set(by) == {"Odd-odd_new", "old_style", "loop_a", "loop_b", "from_function"}
    assert by["Odd-odd_new"].command == ("prog", "--flag", "two words", "bracket ${NOT_EXPANDED}")
    assert by["Odd-odd_new"].labels == ("contract", "cuda")
    assert by["old_style"].labels == ("gate", "slow") and by["old_style"].command == ("prog", "arg1", "arg2")
    assert by["old_style"].working_directory == f"{tmp_path}/w" and by["old_style"].where == "CMakeLists.txt:6"
    assert by["loop_b"].command == ("t_b",) and by["from_function"].labels == ("host",)
    unread = "\n".join(read.unread)
    assert "CMakeLists.txt:7: add_test(NAME ${FROM_NOWHERE}_t" in unread  # never guessed
    assert "CMakeLists.txt:11: set_tests_properties(${FROM_NOWHERE}_t" in unread
    assert "CMakeLists.txt:26: add_test(NAME guessed_${SUFFIX}" in unread  # two branches, not evaluated
    assert "CMakeLists.txt:29: gtest_discover_tests() names its tests only when the test program runs" in unread
    assert "commented_out" not in {t.name for t in read.tests}


def test_cuda_is_optional_under_an_if_and_none_without_it(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": "project(p LANGUAGES CXX)\nif(WITH_CUDA)\n  enable_language(CUDA)\nendif()\n"})
    assert read_cmakelists(tmp_path).cuda == "optional"
    _tree(tmp_path, {"CMakeLists.txt": "project(p)\nenable_language(CUDA)\n"})
    assert (read_cmakelists(tmp_path).cuda, read_cmakelists(tmp_path).languages) == ("required", ("C", "CXX", "CUDA"))
    _tree(tmp_path, {"CMakeLists.txt": "project(p C)\nadd_library(x x.c)\n"})
    assert read_cmakelists(tmp_path).cuda == "none"


def test_include_of_a_file_in_the_tree_is_followed(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": "list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_SOURCE_DIR}/cmake)\n"
                                       "include(Helpers)\ninclude(cmake/more.cmake)\nhelper_test(h)\n",
                     "cmake/Helpers.cmake": "macro(helper_test n)\n  add_test(NAME ${n} COMMAND ${n})\nendmacro()\n",
                     "cmake/more.cmake": "add_test(NAME more COMMAND m)\n"})
    read = read_cmakelists(tmp_path)
    assert [t.name for t in read.tests] == ["more", "h"]
    assert read.files == ("CMakeLists.txt", "cmake/Helpers.cmake", "cmake/more.cmake")


def test_an_include_it_cannot_find_is_said_and_a_function_body_names_its_own_file(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": "set(CMAKE_MODULE_PATH ${SOMEWHERE}/cmake ${CMAKE_MODULE_PATH})\n"
                                       "include(helpers)\ninclude(GNUInstallDirs)\ninclude(gen/made.cmake)\n"
                                       "include(cmake/fn.cmake)\nadd_one(${NOT_KNOWN})\n",
                     "cmake/fn.cmake": "function(add_one n)\n  add_test(NAME t_${n} COMMAND x)\nendfunction()\n"})
    read = read_cmakelists(tmp_path)
    assert read.tests == ()
    assert read.unread == (
        "CMakeLists.txt:2: include(helpers): not found in the tree without configuring; what it defines is not read",
        "CMakeLists.txt:3: include(GNUInstallDirs): not found in the tree without configuring; what it defines is "
        "not read",
        "CMakeLists.txt:4: include(gen/made.cmake): not found in the tree without configuring; what it defines is "
        "not read",
        "cmake/fn.cmake:2: add_test(NAME t_${n} COMMAND …): the test name is not known without configuring")
    _tree(tmp_path, {"CMakeLists.txt": "include(GNUInstallDirs)\ninclude(CTest)\n"})
    assert read_cmakelists(tmp_path).unread == ()  # CMake's own modules, with no module path of the project's


def test_a_recursive_include_is_refused(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": "include(loop.cmake)\n", "loop.cmake": "include(loop.cmake)\n"})
    with pytest.raises(InputError, match=r"loop.cmake:1: include nested deeper than 64"):
        read_cmakelists(tmp_path)


# -- ctest json-v1 ---------------------------------------------------------------------------------

def test_ctest_json_is_read_and_a_wrong_version_refused():
    doc = {"kind": "ctestInfo", "version": {"major": 1, "minor": 0},
           "tests": [{"name": "a", "command": ["/b/a", "x"],
                      "properties": [{"name": "LABELS", "value": ["gate", "cuda"]},
                                     {"name": "WORKING_DIRECTORY", "value": "/b"}]},
                     {"name": "no_command", "properties": []}]}
    a, b = parse_ctest_json(json.dumps(doc), "ctest")
    assert (a.name, a.labels, a.command, a.working_directory, a.where) == ("a", ("gate", "cuda"), ("/b/a", "x"), "/b",
                                                                          "ctest")
    assert (b.command, b.labels, b.working_directory) == ((), (), None)
    with pytest.raises(InputError, match=r"^ctest: version.major: 2; only json-v1"):
        parse_ctest_json(json.dumps({**doc, "version": {"major": 2, "minor": 0}}), "ctest")
    with pytest.raises(InputError, match=r'^ctest: kind: .x., not "ctestInfo"'):
        parse_ctest_json(json.dumps({**doc, "kind": "x"}), "ctest")
    with pytest.raises(InputError, match=r"^ctest: not JSON"):
        parse_ctest_json("{", "ctest")
    bad = {**doc, "tests": [{"name": "a", "properties": [{"name": "LABELS", "value": "gate"}]}]}
    with pytest.raises(InputError, match=r"^ctest: tests\[0\].properties\[0\].value: must be a list of strings"):
        parse_ctest_json(json.dumps(bad), "ctest")


@pytest.mark.parametrize("text, message", [
    ("foreach(a RANGE 199)\n  foreach(b RANGE 199)\n    foreach(c RANGE 199)\n      set(x y)\n"
     "    endforeach()\n  endforeach()\nendforeach()\n",
     r"^CMakeLists.txt:\d+: more than 2000000 commands to evaluate: refused$"),
    ("set(X " + "${" * 3000 + "A" + "}" * 3000 + ")\n", r"^CMakeLists.txt: nested too deeply to read"),
    ("if(A)\n" * 3000 + "endif()\n" * 3000, r"^CMakeLists.txt: nested too deeply to read"),
], ids=["8M-loop-steps", "3000-nested-references", "3000-nested-ifs"])
def test_a_tree_that_would_take_for_ever_or_blow_the_stack_is_refused(tmp_path, text, message):
    _tree(tmp_path, {"CMakeLists.txt": text})
    with pytest.raises(InputError, match=message):
        read_cmakelists(tmp_path)


def test_a_value_that_doubles_in_a_loop_stops_at_the_bound(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": "set(X ab)\nforeach(i RANGE 60)\n  set(X ${X}${X})\nendforeach()\n"
                                       "add_test(NAME t_${X} COMMAND x)\n"})
    read = read_cmakelists(tmp_path)
    assert read.tests == () and "the test name is not known" in read.unread[0]


def test_file_glob_and_name_functions_give_test_names_as_cmake_does(tmp_path):
    _tree(tmp_path, {"CMakeLists.txt": """\
cmake_minimum_required(VERSION 3.20)
project(globs NONE)
enable_testing()
file(GLOB files src/unit-*.cpp)
foreach(file ${files})
  get_filename_component(base ${file} NAME_WE)
  string(REGEX REPLACE "unit-([^$]+)" "test-\\\\1" name ${base})
  add_test(NAME ${name} COMMAND ${name})
endforeach()
file(GLOB_RECURSE deep RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} nested/*.sh)
foreach(script IN LISTS deep)
  add_test(NAME ${script} COMMAND sh ${script})
endforeach()
file(GLOB escaped ../*)
add_test(NAME "e_${escaped}" COMMAND x)
""", "src/unit-alpha.cpp": "", "src/unit-beta.cpp": "", "src/other.cpp": "", "nested/a/b/run.sh": "",
        "nested/top.sh": ""})
    (tmp_path / "src" / "unit-link.cpp").symlink_to(tmp_path / "src" / "other.cpp")
    (tmp_path / "nested" / "away").symlink_to(tmp_path.parent)  # a symlinked directory is not entered
    read = read_cmakelists(tmp_path)
    assert [t.name for t in read.tests] == ["test-alpha", "test-beta", "test-link", "nested/a/b/run.sh",
                                            "nested/top.sh"]
    assert read.unread == ("CMakeLists.txt:15: add_test(NAME e_${escaped} COMMAND …): the test name is not known "
                           "without configuring",)
    _configure(tmp_path, tmp_path / "build")  # what real cmake registers: the same, and the one it could not know
    real = [t.name for t in parse_ctest_json(_ctest(tmp_path / "build"), "ctest")]
    assert real[:-1] == [t.name for t in read.tests] and real[-1].startswith("e_")


def test_presets_included_files_are_read_and_cycles_refused(tmp_path):
    (tmp_path / "presets").mkdir()
    (tmp_path / "CMakePresets.json").write_text(json.dumps({
        "version": 6, "include": ["presets/base.json"],
        "configurePresets": [{"name": "release", "inherits": "base",
                              "cacheVariables": {"CMAKE_BUILD_TYPE": "Release"}}],
        "buildPresets": [{"name": "release", "configurePreset": "release"}]}))
    (tmp_path / "presets" / "base.json").write_text(json.dumps({
        "version": 6, "configurePresets": [{"name": "base", "hidden": True, "binaryDir": "${sourceDir}/out"}]}))
    presets = read_presets(tmp_path)
    assert [c.name for c in presets.configure] == ["release", "base"]
    assert [(b.name, b.binary_dir) for b in release_builds(presets)] == [("release", "out")]
    (tmp_path / "presets" / "base.json").write_text(json.dumps({"version": 6, "include": ["../CMakePresets.json"]}))
    with pytest.raises(InputError, match=r"^presets/base.json: include\[0\]: ../CMakePresets.json includes itself"):
        read_presets(tmp_path)
    (tmp_path / "presets" / "base.json").write_text(json.dumps({"version": 6, "include": ["../../elsewhere.json"]}))
    with pytest.raises(InputError, match=r"^presets/base.json: include\[0\]: ../../elsewhere.json is outside"):
        read_presets(tmp_path)
