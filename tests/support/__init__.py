"""Test servers and helpers shared by the tests and the benchmarks."""
