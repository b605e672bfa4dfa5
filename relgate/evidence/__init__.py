"""Evidence cells and their diff, accepted baselines per board, and the check of a commit's
captures against them (intentional changes explained, stale entries caught)."""
