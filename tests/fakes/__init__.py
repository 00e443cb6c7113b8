"""Typed stand-ins for tests (checked by mypy with the package): a runtime that starts nothing."""
