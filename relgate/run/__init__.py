"""Running planned steps: the executor seam, hosts and their facts, probes, placement, GPU slots, warning
scanners, the runner that judges and records each step, the console table and the reports."""
