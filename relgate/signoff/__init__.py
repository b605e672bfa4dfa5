"""Sign-off: measurements and their comparison, quality bands, the checklist, decisions,
the sign-off report and changelog section, the guarded tag and the signed sign-off."""
