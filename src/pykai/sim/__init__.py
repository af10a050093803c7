"""Trace-driven simulation: trace readers and replays that measure placement quality."""
