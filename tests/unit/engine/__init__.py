"""Tests: unit/engine."""
