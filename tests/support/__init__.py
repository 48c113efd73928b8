"""Helpers for tests and benchmarks (servers started on 127.0.0.1, dashboard URLs): not part of the package."""
