"""Project kinds as adapters: one module per kind behind one interface.
The rest of relgate asks the registry (``kind_of``), never compares a kind's name."""
