"""The stages: every command of ``relgate`` and every session of the noxfile, each registered
once in :mod:`relgate.stages.registry` (name, description, options, ``run``)."""
