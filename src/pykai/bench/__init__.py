"""Benchmarks run by ``pykai bench``; results are recorded under bench/results/."""
