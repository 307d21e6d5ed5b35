"""Operator tools run from a checkout (never shipped in a function's package)."""
