"""Measure: speed batches recorded or run, compared with their statistics (bound, power, runs
needed, until decided), quality bands, A/A noise, and the tables and plots that show them."""
