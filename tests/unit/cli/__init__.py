"""Tests: unit/cli."""
