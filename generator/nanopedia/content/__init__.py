"""Entries in: reading, validating and linking the YAML files of `entries/`. Pure: no
caches, git or processes."""
