"""Browser tests: real Chromium from file:// and the W3C checker over every page type (required in
CI: a missing Chromium fails them, see tests/conftest.py)."""
