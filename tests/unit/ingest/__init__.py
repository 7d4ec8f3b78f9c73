"""Tests: unit/ingest."""
