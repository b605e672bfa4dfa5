"""The package stages: ``package-verify`` (build the package from the commit, extract, inspect,
test it offline) and ``publish-dry-run`` (the publish, rehearsed)."""

from __future__ import annotations

import argparse
from typing import IO

from relgate.manifest.options import add_run_options, options_from
from relgate.stages.registry import Outcome, Workspace, stage

__all__: list[str] = []


def _run_options(p: argparse.ArgumentParser) -> None:
    add_run_options(p, names=False)


@stage("package-verify", "build the package from the commit, extract, inspect, test it offline (same as nox -s "
       "package_verify)", _run_options)
def package_verify(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.package.verify import run_package_verify

    options = options_from(args)
    return Outcome.of(run_package_verify(workspace(), argv=args.argv, options=options, out=out),
                      require_all=options.require_all)


@stage("publish-dry-run", "rehearse the publish: locked dry run, or upload to a local index, install, import "
       "(same as nox -s publish_dry_run)", _run_options)
def publish_dry_run(workspace: Workspace, args: argparse.Namespace, out: IO[str]) -> Outcome:
    from relgate.package.publish import run_publish_dry_run

    options = options_from(args)
    return Outcome.of(run_publish_dry_run(workspace(), argv=args.argv, options=options, out=out),
                      require_all=options.require_all)
