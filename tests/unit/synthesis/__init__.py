"""Tests: unit/synthesis."""
