"""Benchmark suite: this runtime side by side with the official SDK and fastmcp.

Run ``python -m benchmarks.run --quick`` (or without ``--quick`` for the full run). Nothing here
is imported by ``runtime`` or the test suite.
"""
