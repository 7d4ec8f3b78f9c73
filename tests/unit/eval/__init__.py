"""Tests: unit/eval."""
