"""Allow rules that matched nothing: a warning that was accepted and is gone leaves its rule
behind, and a stale rule would quietly accept the next warning it happens to match. Like a
stale ``intentional.toml`` entry, it is reported and fails the run ("drop it")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from relgate.manifest.specs import AllowRule
from relgate.run.plan import PlannedStep, StepFailed

__all__ = ["stale_allow_rules", "allow_rules_step", "ALLOW_RULES_STEP"]

ALLOW_RULES_STEP = "allow-rules"


class _Judged(Protocol):
    step: PlannedStep
    scanned: bool  # its build ran to a zero exit and its output was scanned for warnings
    matched_rules: tuple[AllowRule, ...]


def stale_allow_rules(outcomes: Sequence[_Judged]) -> tuple[list[AllowRule], list[AllowRule]]:
    """(every rule a scanned step carried, those that matched no warning in any of them)."""
    carried = list(dict.fromkeys(rule for o in outcomes if o.scanned for rule in o.step.allow))
    matched = {rule for o in outcomes for rule in o.matched_rules}
    return carried, [rule for rule in carried if rule not in matched]


def allow_rules_step(outcomes: Sequence[_Judged], cwd: Path) -> PlannedStep | None:
    """The run's last step, when any scanned build carried an allow rule: one line per rule,
    red when one of them matched nothing."""
    carried, stale = stale_allow_rules(outcomes)
    if not carried:
        return None

    def action(write: Callable[[str], None]) -> int:
        for rule in carried:
            state = "stale: matched no warning in this run; drop it" if rule in stale else "matched"
            write(f"{rule.where or 'allow rule'}: /{rule.pattern}/ ({rule.reason}): {state}")
        write(f"{len(carried)} allow rule(s) in this run, {len(stale)} stale")
        if stale:
            named = "; ".join(f"{rule.where or 'allow rule'} /{rule.pattern}/" for rule in stale[:3])
            more = f" and {len(stale) - 3} more" if len(stale) > 3 else ""
            raise StepFailed(f"{len(stale)} stale allow rule{'' if len(stale) == 1 else 's'} (matched no "
                             f"warning; drop {'it' if len(stale) == 1 else 'them'}): {named}{more}")
        return 0

    return PlannedStep(name=ALLOW_RULES_STEP, commands=(), cwd=cwd, lane="host", action=action,
                       action_name="check the allow rules")
