"""Remote hosts: SSH boxes (Fabric/paramiko: executor, delivery, facts, locks, the pool) and Slurm clusters
(each step a job). Strict host keys on every connection; output streams into the local log as it arrives."""
