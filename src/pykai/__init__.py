"""pykai: a Python implementation of the NVIDIA KAI Scheduler."""

__version__ = "0.1.0"
