"""Tests: unit/retrieval."""
