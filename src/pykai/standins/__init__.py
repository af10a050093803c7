"""Stand-ins for the parts of a real cluster that pykai does not provide: a kubelet, KubeRay,
kube-controller-manager's Deployment, ReplicaSet and Job controllers, and a cluster
autoscaler's check-capacity answer to ProvisioningRequests. Written once against
``controllers.host.Host``, they run where the real part is missing: on the embedded cluster.
On a real API server the real parts run (the local control plane starts kube-controller-manager,
KWOK and the KubeRay operator); only the ProvisioningRequest answer, whose real counterpart (the
cluster autoscaler) the Go module proxy does not serve, runs there too (``pykai run --components
provisioning``)."""
