"""The object model: resources, Kubernetes quantities, typed views of objects, validation."""
