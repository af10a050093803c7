"""Benchmarks run by ``pykai bench``; results are recorded under bench/results/."""

# The rows of ``pykai bench kube`` (bench/kube.py), named here so the command line can list
# them without loading the bench.
KUBE_ROWS = ("ceiling", "cold-ceiling", "kube-scheduler", "pykai", "pykai+grouper")
