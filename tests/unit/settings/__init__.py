"""Tests: unit/settings."""
