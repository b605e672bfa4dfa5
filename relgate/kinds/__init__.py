"""Project kinds as adapters: one package per kind (cargo, cmake, make, python) behind one interface.
The rest of relgate asks the registry (``kind_of``), never compares a kind's name nor imports a kind."""
