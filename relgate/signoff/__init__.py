"""Sign-off: the checklist, decisions, the sign-off report, page and changelog section, the
guarded tag and the signed sign-off (the measures it reads come from relgate.measure)."""
