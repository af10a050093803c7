"""Stand-ins for the parts of a real cluster that pykai does not provide: a kubelet, KubeRay,
kube-controller-manager's Deployment, ReplicaSet and Job controllers, and a cluster
autoscaler's check-capacity answer to ProvisioningRequests. Written once against
``controllers.host.Host``, they run where the real part is missing: always on the embedded
cluster, and on a local API server when asked (``pykai run --components
kubelet,kuberay,provisioning``)."""
