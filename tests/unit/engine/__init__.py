"""Tests: unit, ragcore/engine."""
