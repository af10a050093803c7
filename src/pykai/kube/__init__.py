"""pykai on a real Kubernetes API server: the local control plane for development and tests."""
