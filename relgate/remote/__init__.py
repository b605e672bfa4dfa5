"""Remote hosts over SSH (Fabric/paramiko): the executor, commit delivery, host facts, locks, the pool.
Strict host keys on every connection; output streams into the local log as it arrives."""
