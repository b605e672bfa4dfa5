"""The one error of remote work, importable without paramiko (a local-only run never loads it)."""

from __future__ import annotations

__all__ = ["SshError"]


class SshError(Exception):
    """A connection could not be made, or was lost; the message names the host and what to do."""
