"""Tests: unit/storage."""
