"""Tests: unit/citations."""
