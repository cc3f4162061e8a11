"""Log diagnosis: scanning logs for fingerprints, ranking the entries they point at, and
the reports of `diagnose` and `triage`."""
