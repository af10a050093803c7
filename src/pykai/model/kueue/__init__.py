"""Kueue's API (``kueue.x-k8s.io``): its kinds' shapes and rules, their stored form, the jobs it
manages."""
