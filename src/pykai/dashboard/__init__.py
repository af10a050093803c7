"""The live, read-only dashboard: one page model for both backends, and its HTTP pages."""
