"""The embedded cluster: a SQLite object store and the control loop that settles it."""
