"""Running planned steps: the executor seam, hosts and their facts, placement, warning scanners,
the runner that judges and records each step, the console table and the reports."""
