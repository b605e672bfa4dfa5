"""What every stage shares: the error types (rendered once, in the CLI), the five verdicts,
and the redaction of secrets. Imports nothing else of relgate."""
