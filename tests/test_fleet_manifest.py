"""The manifest keys of many hosts: ``[fleet]``, ``[multihost.*]`` and ``host =`` (pure parsing,
plus the lanes loader and placement on a real copy of the example)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from conftest import copy_example
from relgate.core.errors import ManifestError
from relgate.core.schema import Checker
from relgate.manifest.lanes import BUILTIN_LANE_DEFS, load_lanes, parse_many_hosts
from relgate.manifest.specs import parse_builds

WORKER = '[multihost.tp.role.worker]\ncommand = "w"\nready_line = "up"\n'
LEADER = '[multihost.tp.role.leader]\ncommand = "l"\n'


@pytest.mark.parametrize("text, expected", [
    ('[fleet]\nevery_host = ["gtae"]\n', 'fleet.every_host[0]: no lane "gtae" — did you mean "gate"?'),
    ('[fleet]\nevery_host = ["qualification"]\n',
     'fleet.every_host[0]: "qualification" already runs once per board and toolkit'),
    ('[fleet]\nworkers = 0\n', "fleet.workers: must be at least 1"),
    ('[fleet]\nworker = 2\n', 'fleet.worker: unknown key — did you mean "workers"?'),
    ('[multihost.tp]\nlane = "gate"\n' + WORKER, 'multihost.tp.role: needs a role named "leader"'),
    ('[multihost.tp]\nlane = "gate"\n' + LEADER, "multihost.tp.role: needs at least one worker role"),
    ('[multihost.tp]\nlane = "gates"\n' + WORKER + LEADER, 'multihost.tp.lane: no lane "gates"'),
    ('[multihost.tp]\nlane = "gate"\n[multihost.tp.role.worker]\ncommand = "w"\n' + LEADER,
     "multihost.tp.role.worker: a worker needs ready_line (a line it prints) or ready_port"),
    ('[multihost.tp]\nlane = "gate"\n' + WORKER + LEADER + 'ready_port = 7\n',
     "multihost.tp.role.leader.ready_port: only workers report ready"),
    ('[multihost.tp]\nlane = "gate"\n' + WORKER + 'ready_port = 70000\n' + LEADER,
     "multihost.tp.role.worker.ready_port: 70000 is not a TCP port"),
    ('[multihost.tp]\nlane = "gate"\n' + WORKER + 'count = 0\n' + LEADER,
     "multihost.tp.role.worker.count: must be at least 1"),
    ('[multihost.tp]\nlane = "gate"\n' + WORKER.replace('"up"', '"("') + LEADER,
     "multihost.tp.role.worker.ready_line: bad regular expression"),
    ('[multihost.tp]\nlane = "gate"\nworker_grace = -1\n' + WORKER + LEADER,
     "multihost.tp.worker_grace: must be a positive number of seconds"),
])
def test_many_hosts_keys_are_validated_naming_the_file_and_dotted_key(text: str, expected: str) -> None:
    c = Checker(Path("manifests/lanes.toml"))
    parse_many_hosts(c, tomllib.loads(text), BUILTIN_LANE_DEFS)
    assert any(p.startswith("manifests/lanes.toml: " + expected) for p in c.problems), c.problems


def test_a_valid_multihost_step_orders_workers_first_and_the_leader_last() -> None:
    text = ('[fleet]\nevery_host = ["gate"]\nworkers = 3\n[multihost.tp]\nlane = "gate"\n' + LEADER +
            '[multihost.tp.role.shard]\ncommand = "s"\nready_port = 7000\ncount = 2\n' + WORKER)
    c = Checker(Path("lanes.toml"))
    fleet, steps = parse_many_hosts(c, tomllib.loads(text), BUILTIN_LANE_DEFS)
    assert not c.problems
    assert fleet is not None and fleet.every_host == ("gate",) and fleet.workers == 3
    tp = steps["tp"]
    assert [r.name for r in tp.roles] == ["shard", "worker", "leader"] and tp.leader.is_leader
    assert tp.roles[0].port == 7000 and tp.roles[0].count == 2


def test_the_lanes_loader_reads_fleet_and_multihost_and_refuses_a_name_taken_by_a_target(tmp_path: Path) -> None:
    project = copy_example(tmp_path, "tinyinfer")
    lanes = project.manifests / "lanes.toml"
    base = lanes.read_text()
    lanes.write_text(base + '\n[fleet]\nevery_host = ["gate"]\n[multihost.tp]\nlane = "contract"\n' + WORKER + LEADER)
    from relgate.manifest.workspace import Workspace

    ws = Workspace.load(project.root, manifests=project.manifests, hosts=project.hosts, home=project.home)
    spec = load_lanes(ws.project, ws.manifests_dir)
    assert spec is not None and spec.fleet.every_host == ("gate",) and set(spec.multihost) == {"tp"}
    lanes.write_text(base + '\n[multihost.kernels-cpu]\nlane = "gate"\n'
                     + (WORKER + LEADER).replace("multihost.tp", "multihost.kernels-cpu"))
    with pytest.raises(ManifestError) as err:
        load_lanes(ws.project, ws.manifests_dir)
    assert any("multihost.kernels-cpu: the name is taken by a target" in p for p in err.value.problems)


def test_host_on_a_release_target_is_kept_and_an_empty_one_refused() -> None:
    builds = parse_builds(tomllib.loads('[release.spark]\nrun = "make"\nhost = "spark"\n'), path=Path("b.toml"))
    assert builds.releases["spark"].options.host == "spark"
    with pytest.raises(ManifestError) as err:
        parse_builds(tomllib.loads('[release.spark]\nrun = "make"\nhost = " "\n'), path=Path("b.toml"))
    assert err.value.problems == ["b.toml: release.spark.host: must name a host (hosts/NAME.toml)"]
