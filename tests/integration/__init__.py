"""Integration tests: the commands and the build run as users run them, golden sites and
data-driven cases (tests/cases/)."""
