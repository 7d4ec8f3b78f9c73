"""Tests: unit/llamaindex."""
