"""Where every step leaves data: the SQLite ledger (runs, steps, evidence index, baselines),
content-addressed logs and captures, and the git facts of the candidate."""
