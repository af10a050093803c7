"""The scheduling engine: snapshot, fair share, session and actions. No I/O; deterministic."""
