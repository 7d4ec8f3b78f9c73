"""Tests: unit/encoders."""
