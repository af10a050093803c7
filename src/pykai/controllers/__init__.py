"""Controller logic shared by both backends: pure functions from state to desired objects."""
