"""Tests: unit, ragcore/storage."""
