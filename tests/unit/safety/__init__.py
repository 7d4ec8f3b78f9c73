"""Tests: unit/safety."""
