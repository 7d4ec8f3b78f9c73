"""Tests: unit/abstain."""
