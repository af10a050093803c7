"""Side by side with the real KAI: one scenario (a folder in the format of tests/scenarios) runs
on a fresh LocalCluster under the real peer and under ``pykai run``, each side's decisions are
recorded as fields once the cluster settles, and the two records are compared (``pykai
compare``). Modules: ``scenario`` (the folder format), ``expressible`` (what a real cluster can
replay), ``record`` (what a side decided), ``observe`` (reading it back from the apiserver),
``run`` (one side, start to tear-down), ``diff`` (the comparison), ``generator`` (seeded random
scenarios); ``kueue``: the same for the real Kueue (what a Kueue run decided, and the
differences)."""
