"""Slurm as data: the srun line a step gets, and what each job state means (no cluster needed)."""

from __future__ import annotations

import pytest

from relgate.manifest.host_extras import SlurmBoard, SlurmSpec
from relgate.remote.slurm_jobs import JobState, parse_scontrol, srun_argv

SPEC = SlurmSpec(partition="gpu", account="ml", time_limit="01:00:00", extra_args=("--qos=release",),
                 boards={"h100": SlurmBoard(gres="gpu:h100:1"), "a100": SlurmBoard(constraint="a100", gres="gpu:a100:1"),
                         "bigmem": SlurmBoard(partition="bigmem", constraint="bigmem")})


def _opts(requires: tuple[str, ...], gpus: int | str | None = None, gpu_step: bool = False) -> list[str]:
    argv = srun_argv(SPEC, name="relgate-x-1", requires=requires, gpus=gpus, gpu_step=gpu_step, script_args=["F"])
    return argv[:argv.index("/bin/sh")]


@pytest.mark.parametrize(("requires", "gpus", "gpu_step", "wanted", "unwanted"), [
    (("h100",), None, True, ["--gres=gpu:h100:1", "--partition=gpu"], ["--constraint"]),
    (("h100",), 2, True, ["--gres=gpu:h100:2"], []),
    (("a100",), None, True, ["--gres=gpu:a100:1", "--constraint=a100"], []),
    (("a100", "bigmem"), None, True, ["--partition=bigmem", "--constraint=a100&bigmem", "--gres=gpu:a100:1"],
     ["--partition=gpu"]),
    (("cuda",), None, True, ["--gres=gpu:1"], []),  # a GPU step without a board table: any GPU
    (("cuda",), 3, True, ["--gres=gpu:3"], []),
    (("h100",), "all", True, ["--exclusive", "--gres=gpu:h100:1"], []),
    (("cpu-only",), None, False, ["--partition=gpu"], ["--gres", "--exclusive"]),
])
def test_a_step_asks_slurm_for_its_board(requires, gpus, gpu_step, wanted, unwanted) -> None:  # type: ignore[no-untyped-def]
    opts = _opts(requires, gpus, gpu_step)
    assert opts[:2] == ["srun", "--job-name=relgate-x-1"]
    assert "--account=ml" in opts and "--time=01:00:00" in opts and "--qos=release" in opts
    for w in wanted:
        assert w in opts, opts
    for u in unwanted:
        assert not any(o.startswith(u) for o in opts), opts


@pytest.mark.parametrize(("state", "infra"), [
    ("COMPLETED", False), ("FAILED", False), ("CANCELLED by 0", True), ("CANCELLED", True), ("PREEMPTED", True),
    ("TIMEOUT", True), ("NODE_FAIL", True), ("OUT_OF_MEMORY", True), ("BOOT_FAIL", True), ("DEADLINE", True),
])
def test_the_cluster_ending_a_job_is_infrastructure_the_code_failing_is_not(state: str, infra: bool) -> None:
    assert JobState(state=state, exit_code="0:0", node="n1", source="sacct").infra is infra


def test_scontrol_one_line_records_are_read_as_key_value() -> None:
    text = ("JobId=17 JobName=relgate-a-3 UserId=root(0) JobState=CANCELLED Reason=None "
            "ExitCode=0:15 NodeList=gpu-a Features=a100&bigmem Command=/bin/sh -c x\n")
    fields = parse_scontrol(text)
    assert fields["JobState"] == "CANCELLED" and fields["ExitCode"] == "0:15" and fields["NodeList"] == "gpu-a"
    assert fields["Command"] == "/bin/sh -c x"


def test_gpus_all_asks_for_every_gpu_of_the_biggest_node() -> None:
    from relgate.remote.slurm_jobs import gres_gpu_type, most_gpus

    sinfo = "gpu:h100:2(S:0)\ngpu:a100:4\ngpu:h100:8(S:0-1)\n(null)\n"
    assert most_gpus(sinfo, "h100") == 8 and most_gpus(sinfo, "a100") == 4 and most_gpus(sinfo, None) == 8
    assert most_gpus("(null)\n", None) is None
    assert gres_gpu_type("gpu:h100:1") == "h100" and gres_gpu_type("gpu:1") is None and gres_gpu_type(None) is None
    opts = srun_argv(SPEC, name="n", requires=("h100",), gpus="all", gpu_step=True, script_args=[], all_gpus=8)
    assert "--exclusive" in opts and "--gres=gpu:h100:8" in opts
    opts = srun_argv(SPEC, name="n", requires=("cuda",), gpus="all", gpu_step=True, script_args=[], all_gpus=4)
    assert "--exclusive" in opts and "--gres=gpu:4" in opts
