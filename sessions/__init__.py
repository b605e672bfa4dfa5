"""The nox session layer: one module per stage, each session a few lines into the engine."""
