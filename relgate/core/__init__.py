"""What every stage shares: the error types (rendered once, in the CLI), the five verdicts,
the redaction of secrets, records (frozen dataclasses without generated code) and lazily
compiled patterns. Imports nothing else of relgate."""
