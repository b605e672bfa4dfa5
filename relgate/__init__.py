"""relgate: an executable release runbook.

The engine lives here and never imports nox; ``sessions/`` is the thin nox layer.
"""

__version__ = "0.1.0"
