"""The round: pykai's controllers and the stand-ins run in order over one host; above both."""
