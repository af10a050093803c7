"""Side by side with the real peers: what a run decided, as fields, and the differences."""
