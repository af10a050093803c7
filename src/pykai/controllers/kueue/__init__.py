"""Kueue's controllers over a host: the job reconciler, the scheduler's writes, admission checks."""
