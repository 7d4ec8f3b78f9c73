"""Test and benchmark helpers that ship with the package (no pytest needed)."""
