"""Moved to simulators/logging_query.py (the local stack's sink applies the filter at run time); kept for imports."""

from simulators.logging_query import QueryError, compile_query, matches

__all__ = ["QueryError", "compile_query", "matches"]
