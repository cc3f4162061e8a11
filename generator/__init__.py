"""Nanopedia: validate failure entries and publish them as a static, offline-first site."""

__version__ = "0.1.0"
