"""Benchmarks run by ``pykai bench``; results are recorded under bench/results/."""

# The rows of ``pykai bench kube`` (bench/kube.py), named here so the command line can list
# them without loading the bench.
KUBE_ROWS = ("ceiling", "cold-ceiling", "kube-scheduler", "pykai", "pykai+grouper")
# The rows and shapes of ``pykai bench kube --shape`` (bench/side_by_side.py, bench/shapes.py).
PEER_ROWS = ("kai", "pykai", "kube-scheduler", "warm-ceiling")
SHAPE_NAMES = ("fill", "reclaim", "distributed", "basic", "warm")
