"""Benchmarks run by ``pykai bench``; results are recorded under bench/results/."""

# The rows of ``pykai bench kube`` (bench/kube.py), named here so the command line can list
# them without loading the bench.
KUBE_ROWS = ("ceiling", "cold-ceiling", "kube-scheduler", "pykai", "pykai+grouper")
# The rows and shapes of ``pykai bench kube --shape`` (bench/side_by_side.py, bench/shapes.py;
# ``kueue``: bench/kueue_side_by_side.py, bench/kueue_shape.py).
PEER_ROWS = ("kai", "pykai", "kube-scheduler", "warm-ceiling", "kueue")
SHAPE_NAMES = ("fill", "reclaim", "distributed", "basic", "warm", "kueue", "kueue-backlog")
