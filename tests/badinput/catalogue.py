"""Bad input as a careless (or hostile) user writes it, and what must become of it.

Each case is applied onto BASELINE (a small valid cluster). ``pykai apply`` must refuse every
case with a message naming the object and the field (file and line for YAML-level faults) and
change nothing; pykai's webhook must refuse the ``webhook_refuses`` ones; a kube-apiserver
v1.34 with pykai's CRDs and no webhook stores exactly the ``stored_by_apiserver`` ones (a test
checks each flag against a real apiserver, so the flags are facts). Cases are applied one at a
time, as the file ``bad.yaml``, in the namespace ``default``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class BadInput:
    id: str  # unique slug, e.g. "pod-gpu-overflow"
    manifest: str  # YAML as a user writes it (one or more documents)
    must_name: tuple[str, ...]  # substrings the error must contain: the object's name and the
    # field path (and "bad.yaml:LINE" for YAML-level faults)
    stored_by_apiserver: bool  # a real kube-apiserver v1.34 with pykai's CRDs and no webhook
    # stores it (checked by a test)
    webhook_refuses: bool  # pykai's webhook must refuse it: given the case's objects of the kinds
    # it is registered for, as the apiserver sends them, it refuses one


BASELINE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-node
  labels: {nvidia.com/gpu.memory: "81920", kubernetes.io/hostname: gpu-node}
status:
  allocatable: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8", pods: "110"}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: dept}
spec:
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: 8, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team}
spec:
  parentQueue: dept
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: 4, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: everyday}
value: 10
globalDefault: true
description: the class of pods that name none
"""

VALID_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: still-schedules
  labels: {kai.scheduler/queue: team}
spec:
  schedulerName: kai-scheduler
  containers:
  - name: main
    image: busybox
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {nvidia.com/gpu: "1"}
"""


def _yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _pod(
    name: str,
    resources: str = "{requests: {cpu: 100m}}",
    *,
    container: str = "",
    spec: str = "",
    meta: str = "",
    image: str = "image: busybox",
) -> str:
    """A one-container pod with the given (flow-style) resources and extra lines: ``meta``
    under metadata, ``spec`` under spec, ``container`` in the container (each line indented
    by the caller's text being two-space YAML at that level)."""
    lines = [
        "apiVersion: v1",
        "kind: Pod",
        "metadata:",
        f"  name: {name}",
        *_indent(meta, 2),
        "spec:",
        "  schedulerName: kai-scheduler",
        *_indent(spec, 2),
        "  containers:",
        "  - name: main",
        *_indent(image, 4),
        f"    resources: {resources}",
        *_indent(container, 4),
    ]
    return "\n".join(line for line in lines if line) + "\n"


def _indent(text: str, spaces: int) -> list[str]:
    return [" " * spaces + line for line in _yaml(text).splitlines()] if text else []


_TEMPLATE = """\
metadata:
  labels: {app: web}
spec:
  containers:
  - name: main
    image: busybox
    resources: RESOURCES
"""


def _template(resources: str = "{requests: {cpu: 100m}}", extra: str = "") -> str:
    """A pod template (labels app: web); ``extra`` lines go under its spec, indented by two."""
    return _TEMPLATE.replace("RESOURCES", resources) + (extra + "\n" if extra else "")


def _deployment(name: str, spec: str = "", template: str = "", replicas: str = "1") -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n"
        f"  replicas: {replicas}\n"
        "  selector: {matchLabels: {app: web}}\n"
        + "\n".join(_indent(spec, 2))
        + ("\n" if spec else "")
        + "  template:\n"
        + "\n".join(_indent(template or _template(), 4))
        + "\n"
    )


def _job(name: str, template_extra: str = "", spec: str = "", resources: str = "") -> str:
    template = resources or "{requests: {cpu: 100m}}"
    restart = template_extra or "  restartPolicy: Never"
    return (
        "apiVersion: batch/v1\nkind: Job\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n"
        + "\n".join(_indent(spec, 2))
        + ("\n" if spec else "")
        + "  template:\n"
        + "\n".join(_indent(_template(template, restart if restart != "-" else ""), 4))
        + "\n"
    )


def _cronjob(
    name: str,
    schedule: str = "'0 3 * * *'",
    spec: str = "",
    template: str = "",
    api_version: str = "batch/v1",
) -> str:
    """A CronJob (batch/v1, as Kubernetes v1.34 serves it) whose jobTemplate runs ``template``
    (a pod template of ``_template``'s, restartPolicy Never, by default); ``spec``: more lines
    of its spec."""
    return (
        f"apiVersion: {api_version}\nkind: CronJob\nmetadata: {{name: {name}}}\nspec:\n"
        f"  schedule: {schedule}\n"
        + "".join(f"{line}\n" for line in _indent(spec, 2))
        + "  jobTemplate:\n    spec:\n      template:\n"
        + "\n".join(_indent(template or _template(extra="  restartPolicy: Never"), 8))
        + "\n"
    )


def _shard(spec: str) -> str:
    """The SchedulingShard ``default`` with ``spec`` (flow-style YAML)."""
    return (
        "apiVersion: kai.scheduler/v1\nkind: SchedulingShard\nmetadata: {name: default}\n"
        f"spec: {spec}\n"
    )


def _raycluster(
    name: str,
    worker: str = "replicas: 1",
    worker_resources: str = "{requests: {cpu: 100m}}",
    *,
    kind: str = "RayCluster",
    nest: str = "",
) -> str:
    """A RayCluster (or the spec nested in a RayJob / RayService under ``nest``) with one
    head and two worker groups; ``worker`` lines go into the second group."""
    spec = _yaml(
        f"""
        headGroupSpec:
          rayStartParams: {{dashboard-host: "0.0.0.0"}}
          template:
            spec:
              containers:
              - {{name: ray-head, image: rayproject/ray, resources: {{requests: {{cpu: 100m}}}}}}
        workerGroupSpecs:
        - groupName: small
          replicas: 1
          template:
            spec:
              containers:
              - {{name: ray-worker, image: rayproject/ray, resources: {{requests: {{cpu: 100m}}}}}}
        - groupName: gpu
          template:
            spec:
              containers:
              - name: ray-worker
                image: rayproject/ray
                resources: {worker_resources}
        """
    )
    spec += "\n".join(_indent(worker, 2)) + "\n"
    body = "\n".join(_indent(spec, 4 if nest else 2))
    head = f"apiVersion: ray.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n"
    head += "  labels: {kai.scheduler/queue: team}\nspec:\n"
    if nest:
        head += nest + f"  {'rayClusterSpec' if kind == 'RayJob' else 'rayClusterConfig'}:\n"
    return head + body + "\n"


def _pytorchjob(name: str, master: str = "replicas: 1", container: str = "pytorch") -> str:
    return _yaml(
        f"""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {{name: {name}}}
        spec:
          pytorchReplicaSpecs:
            Master:
              {master}
              template:
                spec:
                  containers:
                  - name: {container}
                    image: pytorch
                    resources: {{limits: {{nvidia.com/gpu: "1"}}}}
            Worker:
              replicas: 2
              template:
                spec:
                  containers:
                  - name: pytorch
                    image: pytorch
                    resources: {{limits: {{nvidia.com/gpu: "1"}}}}
        """
    )


def _cluster_queue(
    name: str, quota: str, *, cohort: str = "", spec: str = "", resource: str = "cpu"
) -> str:
    """A Kueue ClusterQueue (v1beta2) covering cpu with one flavor: ``quota`` is the inline
    fields of its one resource (named ``resource``)."""
    lines = [f"cohortName: {cohort}"] if cohort else []
    lines += [spec] if spec else []
    return _yaml(
        f"""
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {{name: {name}}}
        spec:
          namespaceSelector: {{}}
          resourceGroups:
          - coveredResources: [cpu]
            flavors:
            - name: default-flavor
              resources: [{{name: {resource}, {quota}}}]
        """
    ) + "".join(f"  {line}\n" for line in lines)


def _queue(name: str, resources: str = "", spec: str = "") -> str:
    body = resources or (
        "  resources:\n"
        "    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
        "    gpu: {quota: 1, limit: -1, overQuotaWeight: 1}\n"
        "    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
    )
    return (
        f"apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {{name: {name}}}\nspec:\n"
        + "\n".join(_indent(spec, 2))
        + ("\n" if spec else "")
        + body
    )


def _gpu_queue(name: str, gpu: str) -> str:
    return _queue(
        name,
        "  resources:\n"
        "    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
        f"    gpu: {gpu}\n"
        "    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n",
    )


def _node(name: str, allocatable: str, labels: str = "{}", spec: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {labels}\n"
        + (f"spec:\n{chr(10).join(_indent(spec, 2))}\n" if spec else "")
        + f"status:\n  allocatable: {allocatable}\n  capacity: {allocatable}\n"
    )


def _priority_class(name: str, value: str, extra: str = "") -> str:
    return (
        f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\n"
        f"value: {value}\n" + _yaml(extra)
    )


def _podgroup(name: str, spec: str) -> str:
    return (
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
        f"metadata: {{name: {name}}}\nspec:\n" + "\n".join(_indent(spec, 2)) + "\n"
    )


_BOMB = "\n".join(
    [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata: {name: lol}",
        "data:",
        '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"  {chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]"
            for i in range(8)
        ),
    ]
)
_MANY_ALIASES = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: echo}\ndata:\n  k0: &v hello\n"
    + "".join(f"  k{i}: *v\n" for i in range(1, 102))
)
_DEEP = (
    "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: deep}\nspec:\n  notes: "
    + "[" * 150
    + "]" * 150
    + "\n"
)
_LONG = "a" * 254


CASES: tuple[BadInput, ...] = (
    # ---- YAML itself --------------------------------------------------------------------------
    BadInput("yaml-alias-bomb", _BOMB, ("bad.yaml:1", "alias"), False, False),
    BadInput("yaml-too-many-aliases", _MANY_ALIASES, ("bad.yaml:106", "aliases"), True, False),
    BadInput(
        "yaml-alias-refers-to-itself",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata: &d {again: *d}\n",
        ("bad.yaml:4", "itself"),
        False,
        False,
    ),
    BadInput(
        "yaml-duplicate-key",
        _pod("twice").replace("  name: twice\n", "  name: twice\n  name: again\n"),
        ("bad.yaml:5", 'duplicate key "name"'),
        True,
        False,
    ),
    BadInput(
        "yaml-syntax-error",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\n  labels: a: b\n",
        ("bad.yaml:5",),
        False,
        False,
    ),
    # a v1.34 apiserver with KubeRay's CRDs: "spec.headGroupSpec: Required value"
    BadInput("yaml-nested-too-deep", _DEEP, ("bad.yaml:5", "nested"), False, False),
    BadInput(
        "yaml-integer-too-long",
        _pod("long-number", "{requests: {cpu: " + "9" * 10_000 + "}}"),
        ("bad.yaml:10", "digits"),
        True,
        False,
    ),
    BadInput(
        "yaml-document-is-a-list", "- apiVersion: v1\n- kind: Pod\n", ("bad.yaml:1",), False, False
    ),
    BadInput("yaml-document-is-a-string", "just some words\n", ("bad.yaml:1",), False, False),
    BadInput(
        "yaml-only-empty-documents",
        "---\n---\n# nothing\n",
        ("bad.yaml", "no object"),
        False,
        False,
    ),
    BadInput(
        "yaml-list-items-not-objects",
        "apiVersion: v1\nkind: List\nitems: [1, 2]\n",
        ("bad.yaml:1", "List items"),
        False,
        False,
    ),
    BadInput(
        "yaml-tab-indentation",
        "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: tabbed\n",
        ("bad.yaml:4",),
        False,
        False,
    ),
    # ---- kinds and apiVersions ----------------------------------------------------------------
    BadInput(
        "kind-typo-queu",
        _queue("typo").replace("kind: Queue", "kind: Queu"),
        ("typo", "kind", '"Queue"'),
        False,
        False,
    ),
    BadInput(
        "kind-unknown",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: gadget}\n",
        ("gadget", "kind", "Widget"),
        False,
        False,
    ),
    BadInput(
        "kind-lower-case",
        _pod("lower").replace("kind: Pod", "kind: pod"),
        ("lower", "kind", '"Pod"'),
        False,
        False,
    ),
    BadInput(
        "queue-wrong-api-version",
        _queue("old").replace("scheduling.run.ai/v2", "scheduling.run.ai/v1"),
        ("old", "apiVersion", "scheduling.run.ai/v2"),
        False,
        True,
    ),
    BadInput(
        "deployment-removed-api-version",
        _deployment("ancient").replace("apps/v1", "extensions/v1beta1"),
        ("ancient", "apiVersion", "apps/v1"),
        False,
        True,
    ),
    BadInput(
        "pod-in-apps-group",
        _pod("misfiled").replace("apiVersion: v1", "apiVersion: apps/v1"),
        ("misfiled", "apiVersion"),
        False,
        True,
    ),
    # kubectl v1.34 against a v1.34 apiserver (scripts/peers) answers each of these three with
    #   error: resource mapping not found for name: "nightly" namespace: "default" from
    #   "cj.yaml": no matches for kind "CronJob" in version "batch/v1beta1"
    #   ensure CRDs are installed first
    # (and the same for PodDisruptionBudget in policy/v1beta1, PriorityClass in
    # scheduling.k8s.io/v1beta1); the apiserver itself answers 404 for the versions' paths
    BadInput(
        "cronjob-version-not-served",
        _cronjob("nightly", api_version="batch/v1beta1"),
        ("nightly", "apiVersion", 'no matches for kind "CronJob" in version "batch/v1beta1"'),
        False,
        True,
    ),
    BadInput(
        "pdb-version-not-served",
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: keep-one}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n",
        (
            "keep-one",
            "apiVersion",
            'no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"',
        ),
        False,
        False,
    ),
    BadInput(
        "priorityclass-version-not-served",
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata: {name: old-class}\n"
        "value: 10\n",
        (
            "old-class",
            "apiVersion",
            'no matches for kind "PriorityClass" in version "scheduling.k8s.io/v1beta1"',
        ),
        False,
        False,
    ),
    BadInput(
        "api-version-missing",
        "kind: Pod\nmetadata: {name: nameless-version}\n",
        ("nameless-version", "apiVersion"),
        False,
        True,
    ),
    BadInput(
        "kind-missing",
        "apiVersion: v1\nmetadata: {name: kindless}\n",
        ("kindless", "kind"),
        False,
        False,
    ),
    BadInput(
        "kind-not-a-string",
        "apiVersion: v1\nkind: [Pod]\nmetadata: {name: listed-kind}\n",
        ("listed-kind", "kind"),
        False,
        False,
    ),
    # ---- metadata ----------------------------------------------------------------------------
    BadInput("name-upper-case", _pod("GPU-Pod"), ("GPU-Pod", "metadata.name"), False, True),
    BadInput("name-underscore", _pod("my_pod"), ("my_pod", "metadata.name"), False, True),
    BadInput("name-too-long", _pod(_LONG), (_LONG[:50], "metadata.name", "253"), False, True),
    BadInput("name-unicode", _pod("pöd"), ("pöd", "metadata.name"), False, True),
    BadInput(
        "name-missing",
        "apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\nspec: {containers: []}\n",
        ("Pod", "metadata.name"),
        False,
        True,
    ),
    BadInput(
        "name-is-a-number",
        _pod("x").replace("name: x", "name: 123"),
        ("123", "metadata.name", "string"),
        False,
        True,
    ),
    BadInput(
        "namespace-name-too-long-for-a-label",
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {'n' * 64}}}\n",
        ("n" * 64, "metadata.name", "63"),
        False,
        False,
    ),
    BadInput(
        "namespace-name-with-dots",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team.a}\n",
        ("team.a", "metadata.name"),
        False,
        False,
    ),
    BadInput(
        "pod-namespace-invalid",
        _pod("elsewhere", meta="namespace: Team_A"),
        ("elsewhere", "metadata.namespace"),
        False,
        True,
    ),
    BadInput(
        "service-name-starts-with-digit",
        "apiVersion: v1\nkind: Service\nmetadata: {name: 1svc}\n"
        "spec: {ports: [{port: 80}], selector: {app: web}}\n",
        ("1svc", "metadata.name"),
        False,
        False,
    ),
    BadInput(
        "role-name-with-slash",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: a/b}\nrules: []\n",
        ("a/b", "metadata.name"),
        False,
        False,
    ),
    BadInput(
        "cronjob-name-too-long",
        _cronjob("c" * 53),
        ("c" * 53, "metadata.name", "52"),
        False,
        True,
    ),
    BadInput(
        "label-value-too-long",
        _pod("long-label", meta=f"labels: {{team: {'t' * 64}}}"),
        ("long-label", "metadata.labels[team]", "63"),
        False,
        True,
    ),
    BadInput(
        "label-value-boolean",
        _pod("bool-label", meta="labels: {enabled: true}"),
        ("bool-label", "metadata.labels[enabled]", "string"),
        False,
        True,
    ),
    BadInput(
        "label-value-number",
        _pod("number-label", meta="labels: {version: 1.0}"),
        ("number-label", "metadata.labels[version]", "string"),
        False,
        True,
    ),
    BadInput(
        "label-key-with-space",
        _pod("spaced-label", meta='labels: {"bad key": x}'),
        ("spaced-label", "metadata.labels[bad key]"),
        False,
        True,
    ),
    BadInput(
        "label-key-prefix-upper-case",
        _pod("prefixed-label", meta='labels: {"Example.com/team": a}'),
        ("prefixed-label", "metadata.labels[Example.com/team]", "prefix"),
        False,
        True,
    ),
    BadInput(
        "label-value-unicode",
        _pod("unicode-label", meta="labels: {city: zürich}"),
        ("unicode-label", "metadata.labels[city]"),
        False,
        True,
    ),
    BadInput(
        "label-key-prefix-too-long",
        _pod("long-prefix", meta=f'labels: {{"{"p" * 254}/x": a}}'),
        ("long-prefix", "metadata.labels[", "prefix"),
        False,
        True,
    ),
    BadInput(
        "annotation-key-with-space",
        _pod("spaced-note", meta='annotations: {"my note": x}'),
        ("spaced-note", "metadata.annotations[my note]"),
        False,
        True,
    ),
    BadInput(
        "annotation-gpu-fraction-unquoted",
        _pod("bare-fraction", meta="annotations: {gpu-fraction: 0.5}"),
        ("bare-fraction", "metadata.annotations[gpu-fraction]", "string"),
        False,
        True,
    ),
    BadInput(
        "annotations-too-large",
        _pod("chatty", meta=f"annotations: {{notes: {'x' * 300_000}}}"),
        ("chatty", "metadata.annotations", "262144"),
        False,
        True,
    ),
    BadInput(
        "metadata-is-a-list",
        "apiVersion: v1\nkind: Pod\nmetadata: [name, listy]\nspec: {}\n",
        ("Pod", "metadata"),
        False,
        True,
    ),
    BadInput(
        "labels-is-a-list",
        _pod("listed-labels", meta="labels: [a, b]"),
        ("listed-labels", "metadata.labels", "map"),
        False,
        True,
    ),
    BadInput(
        "owner-reference-without-uid",
        _pod(
            "orphan",
            meta="ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs}]",
        ),
        ("orphan", "metadata.ownerReferences[0].uid"),
        False,
        True,
    ),
    BadInput(
        "creation-timestamp-garbage",
        _pod("dated", meta="creationTimestamp: yesterday"),
        ("dated", "metadata.creationTimestamp"),
        False,
        True,
    ),
    # ---- quantities in pods -------------------------------------------------------------------
    BadInput(
        "pod-gpu-overflow",
        _pod("gpu-overflow", '{limits: {nvidia.com/gpu: "1e400"}}'),
        ("gpu-overflow", "spec.containers[0].resources.limits[nvidia.com/gpu]", "int64"),
        True,
        True,
    ),
    BadInput(
        "pod-cpu-overflow",
        _pod("cpu-overflow", '{requests: {cpu: "1e400"}}'),
        ("cpu-overflow", "spec.containers[0].resources.requests[cpu]", "int64"),
        True,
        True,
    ),
    BadInput(
        "pod-memory-beyond-int64",
        _pod("memory-overflow", '{requests: {memory: "9.3E"}}'),
        ("memory-overflow", "spec.containers[0].resources.requests[memory]", "int64"),
        True,
        True,
    ),
    BadInput(
        "pod-cpu-nan",
        _pod("cpu-nan", "{requests: {cpu: .nan}}"),
        ("cpu-nan", "spec.containers[0].resources.requests[cpu]", "finite"),
        False,
        True,
    ),
    BadInput(
        "pod-cpu-infinite",
        _pod("cpu-inf", "{requests: {cpu: .inf}}"),
        ("cpu-inf", "spec.containers[0].resources.requests[cpu]", "finite"),
        False,
        True,
    ),
    BadInput(
        "pod-cpu-negative",
        _pod("cpu-negative", '{requests: {cpu: "-1"}}'),
        ("cpu-negative", "spec.containers[0].resources.requests[cpu]", "at least 0"),
        False,
        True,
    ),
    BadInput(
        "pod-memory-negative",
        _pod("memory-negative", "{requests: {memory: -1Gi}}"),
        ("memory-negative", "spec.containers[0].resources.requests[memory]", "at least 0"),
        False,
        True,
    ),
    BadInput(
        "pod-cpu-words",
        _pod("cpu-words", "{requests: {cpu: two}}"),
        ("cpu-words", "spec.containers[0].resources.requests[cpu]", "quantity"),
        False,
        True,
    ),
    BadInput(
        "pod-cpu-is-a-list",
        _pod("cpu-list", "{requests: {cpu: [1]}}"),
        ("cpu-list", "spec.containers[0].resources.requests[cpu]"),
        False,
        True,
    ),
    BadInput(
        "pod-cpu-is-a-boolean",
        _pod("cpu-bool", "{requests: {cpu: true}}"),
        ("cpu-bool", "spec.containers[0].resources.requests[cpu]"),
        False,
        True,
    ),
    BadInput(
        "pod-quantity-huge-string",
        _pod("long-quantity", '{requests: {cpu: "' + "9" * 10_000 + '"}}'),
        ("long-quantity", "spec.containers[0].resources.requests[cpu]"),
        True,
        True,
    ),
    BadInput(
        "pod-gpu-half-as-limit",
        _pod("half-gpu", '{limits: {nvidia.com/gpu: "0.5"}}'),
        ("half-gpu", "spec.containers[0].resources.limits[nvidia.com/gpu]", "gpu-fraction"),
        False,
        True,
    ),
    BadInput(
        "pod-gpu-request-without-limit",
        _pod("gpu-no-limit", '{requests: {nvidia.com/gpu: "1"}}'),
        ("gpu-no-limit", "spec.containers[0].resources.limits[nvidia.com/gpu]"),
        False,
        True,
    ),
    BadInput(
        "pod-gpu-request-differs-from-limit",
        _pod("gpu-mismatch", '{requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "2"}}'),
        ("gpu-mismatch", "spec.containers[0].resources.requests[nvidia.com/gpu]"),
        False,
        True,
    ),
    BadInput(
        "pod-request-above-limit",
        _pod("greedy", '{requests: {cpu: "2"}, limits: {cpu: "1"}}'),
        ("greedy", "spec.containers[0].resources.requests[cpu]", "limit"),
        False,
        True,
    ),
    BadInput(
        "pod-resource-named-gpu",
        _pod("plain-gpu", '{limits: {gpu: "1"}}'),
        ("plain-gpu", "spec.containers[0].resources.limits[gpu]", "standard"),
        False,
        True,
    ),
    BadInput(
        "pod-init-container-gpu-overflow",
        _pod(
            "init-overflow",
            spec="initContainers:\n- name: init\n  image: busybox\n"
            '  resources: {limits: {nvidia.com/gpu: "1e30"}}',
        ),
        ("init-overflow", "spec.initContainers[0].resources.limits[nvidia.com/gpu]"),
        True,
        True,
    ),
    # ---- pod shapes ---------------------------------------------------------------------------
    BadInput(
        "pod-without-containers",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {containers: []}\n",
        ("empty", "spec.containers"),
        False,
        True,
    ),
    BadInput(
        "pod-without-spec",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: specless}\n",
        ("specless", "spec"),
        False,
        True,
    ),
    BadInput(
        "pod-containers-is-a-map",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: mapped}\n"
        "spec: {containers: {name: main, image: busybox}}\n",
        ("mapped", "spec.containers"),
        False,
        True,
    ),
    BadInput(
        "pod-container-without-image",
        _pod("imageless", image=""),
        ("imageless", "spec.containers[0].image"),
        False,
        True,
    ),
    BadInput(
        "pod-container-name-upper-case",
        _pod("caps").replace("- name: main", "- name: Main"),
        ("caps", "spec.containers[0].name"),
        False,
        True,
    ),
    BadInput(
        "pod-duplicate-container-names",
        _pod("twins", spec="initContainers:\n- {name: main, image: busybox}"),
        ("twins", "spec.initContainers[0].name", "duplicate"),
        False,
        True,
    ),
    BadInput(
        "pod-port-is-a-string",
        _pod("string-port", container='ports: [{containerPort: "8000"}]'),
        ("string-port", "spec.containers[0].ports[0].containerPort"),
        False,
        True,
    ),
    BadInput(
        "pod-port-out-of-range",
        _pod("big-port", container="ports: [{containerPort: 70000}]"),
        ("big-port", "spec.containers[0].ports[0].containerPort", "65535"),
        False,
        True,
    ),
    BadInput(
        "pod-env-value-is-a-number",
        _pod("env-number", container="env: [{name: PORT, value: 8080}]"),
        ("env-number", "spec.containers[0].env[0].value"),
        False,
        True,
    ),
    BadInput(
        "pod-command-is-a-string-list-of-numbers",
        _pod("numeric-args", container="args: [1, 2]"),
        ("numeric-args", "spec.containers[0].args[0]"),
        False,
        True,
    ),
    BadInput(
        "pod-node-selector-boolean",
        _pod("selector-bool", spec="nodeSelector: {gpu: true}"),
        ("selector-bool", "spec.nodeSelector.gpu"),
        False,
        True,
    ),
    BadInput(
        "pod-restart-policy-lower-case",
        _pod("restart-lower", spec="restartPolicy: always"),
        ("restart-lower", "spec.restartPolicy"),
        False,
        True,
    ),
    BadInput(
        "pod-toleration-operator-unknown",
        _pod("tolerant", spec="tolerations: [{key: gpu, operator: Exist}]"),
        ("tolerant", "spec.tolerations[0].operator"),
        False,
        True,
    ),
    BadInput(
        "pod-affinity-operator-unknown",
        _pod(
            "picky",
            spec=(
                "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
                "      nodeSelectorTerms:\n      - matchExpressions:\n"
                "        - {key: gpu, operator: Has, values: [a100]}"
            ),
        ),
        ("picky", "nodeSelectorTerms[0].matchExpressions[0].operator"),
        False,
        True,
    ),
    BadInput(
        "pod-resources-is-a-list",
        _pod("listed-resources", "[cpu]"),
        ("listed-resources", "spec.containers[0].resources"),
        False,
        True,
    ),
    # v1.34: "Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string
    # into Go struct field PodSpec.spec.schedulingGates of type []v1.PodSchedulingGate"
    BadInput(
        "pod-scheduling-gates-is-a-string",
        _pod("gated", spec="schedulingGates: soon"),
        ("gated", "spec.schedulingGates"),
        False,
        True,
    ),
    BadInput(
        "pod-nan-in-an-unread-field",
        _pod("odd-field", container="extraField: .nan"),
        ("odd-field", "spec.containers[0].extraField", "finite"),
        False,
        True,
    ),
    BadInput(
        "pod-priority-class-missing",
        _pod("unclassed", spec="priorityClassName: platinum"),
        ("unclassed", "spec.priorityClassName", "platinum"),
        False,
        True,
    ),
    # ---- GPU sharing (KAI) --------------------------------------------------------------------
    BadInput(
        "pod-gpu-fraction-above-one",
        _pod("too-much", meta='annotations: {gpu-fraction: "1.5"}'),
        ("too-much", "metadata.annotations[gpu-fraction]"),
        True,
        True,
    ),
    BadInput(
        "pod-gpu-fraction-with-whole-gpus",
        _pod("both", '{limits: {nvidia.com/gpu: "1"}}', meta='annotations: {gpu-fraction: "0.5"}'),
        ("both", "metadata.annotations[gpu-fraction]"),
        True,
        True,
    ),
    BadInput(
        "pod-gpu-memory-words",
        _pod("vague-memory", meta='annotations: {gpu-memory: "lots"}'),
        ("vague-memory", "metadata.annotations[gpu-memory]"),
        True,
        True,
    ),
    BadInput(
        "pod-gpu-fraction-num-devices-alone",
        _pod("devices-only", meta='annotations: {gpu-fraction-num-devices: "2"}'),
        ("devices-only", "metadata.annotations[gpu-fraction-num-devices]"),
        True,
        True,
    ),
    BadInput(
        "pod-gpu-fraction-nan",
        _pod("nan-fraction", meta='annotations: {gpu-fraction: "nan"}'),
        ("nan-fraction", "metadata.annotations[gpu-fraction]"),
        True,
        True,
    ),
    # ---- nodes --------------------------------------------------------------------------------
    BadInput(
        "node-cpu-negative",
        _node("minus-node", '{cpu: "-4", memory: 8Gi}'),
        ("minus-node", "status.capacity[cpu]", "at least 0"),
        False,
        False,
    ),
    BadInput(
        "node-gpu-fractional",
        _node("half-node", '{cpu: "4", nvidia.com/gpu: "1.5"}'),
        ("half-node", "status.capacity[nvidia.com/gpu]", "whole"),
        False,
        False,
    ),
    BadInput(
        "node-gpu-overflow",
        _node("huge-node", '{cpu: "4", nvidia.com/gpu: "1e400"}'),
        ("huge-node", "status.capacity[nvidia.com/gpu]", "int64"),
        True,
        False,
    ),
    BadInput(
        "node-memory-nan",
        _node("nan-node", "{cpu: '4', memory: .nan}"),
        ("nan-node", "status.capacity[memory]", "finite"),
        False,
        False,
    ),
    BadInput(
        "node-pods-fractional",
        _node("pods-node", '{cpu: "4", pods: "10.5"}'),
        ("pods-node", "status.capacity[pods]", "whole"),
        False,
        False,
    ),
    BadInput(
        "node-gpu-memory-label-words",
        _node("vague-node", '{cpu: "4", nvidia.com/gpu: "1"}', "{nvidia.com/gpu.memory: lots}"),
        ("vague-node", "metadata.labels[nvidia.com/gpu.memory]"),
        True,
        False,
    ),
    BadInput(
        "node-taint-effect-unknown",
        _node("tainted-node", '{cpu: "4"}', spec="taints: [{key: gpu, effect: NoScheduling}]"),
        ("tainted-node", "spec.taints[0].effect"),
        False,
        False,
    ),
    # ---- queues (KAI) -------------------------------------------------------------------------
    BadInput(
        "queue-quota-nan",
        _gpu_queue("nan-quota", "{quota: .nan, limit: -1, overQuotaWeight: 1}"),
        ("nan-quota", "spec.resources.gpu.quota", "finite"),
        False,
        True,
    ),
    BadInput(
        "queue-quota-infinite",
        _gpu_queue("inf-quota", "{quota: .inf, limit: -1, overQuotaWeight: 1}"),
        ("inf-quota", "spec.resources.gpu.quota", "finite"),
        False,
        True,
    ),
    BadInput(
        "queue-limit-nan",
        _gpu_queue("nan-limit", "{quota: 1, limit: .nan, overQuotaWeight: 1}"),
        ("nan-limit", "spec.resources.gpu.limit", "finite"),
        False,
        True,
    ),
    BadInput(
        "queue-weight-infinite",
        _gpu_queue("inf-weight", "{quota: 1, limit: -1, overQuotaWeight: .inf}"),
        ("inf-weight", "spec.resources.gpu.overQuotaWeight", "finite"),
        False,
        True,
    ),
    BadInput(
        "queue-quota-string",
        _gpu_queue("string-quota", '{quota: "5", limit: -1, overQuotaWeight: 1}'),
        ("string-quota", "spec.resources.gpu.quota"),
        False,  # pykai's Queue CRD: a number
        True,
    ),
    BadInput(
        "queue-quota-negative",
        _gpu_queue("negative-quota", "{quota: -2, limit: -1, overQuotaWeight: 1}"),
        ("negative-quota", "spec.resources.gpu.quota"),
        True,
        True,
    ),
    BadInput(
        "queue-unknown-resource",
        _queue(
            "tpu-queue",
            "  resources:\n    tpu: {quota: 1, limit: -1, overQuotaWeight: 1}\n",
        ),
        ("tpu-queue", "spec.resources.tpu"),
        True,
        True,
    ),
    BadInput(
        "queue-without-resources",
        _queue("bare-queue", "  displayName: nothing else\n"),
        ("bare-queue", "spec.resources"),
        False,  # pykai's Queue CRD requires it (as KAI's webhook does)
        True,
    ),
    BadInput(
        "queue-parent-missing",
        _queue("lost", spec="parentQueue: nowhere"),
        ("lost", "spec.parentQueue", "nowhere"),
        True,
        True,
    ),
    BadInput(
        "queue-parent-cycle",
        _queue("dept", spec="parentQueue: team"),
        ("dept", "spec.parentQueue", "cycle"),
        True,
        True,
    ),
    BadInput(
        "queue-priority-words",
        _queue("wordy", spec="priority: high"),
        ("wordy", "spec.priority"),
        False,
        True,
    ),
    BadInput(
        "queue-min-runtime-words",
        _queue("patient", spec="preemptMinRuntime: soon"),
        ("patient", "spec.preemptMinRuntime"),
        True,
        True,
    ),
    BadInput("queue-name-upper-case", _queue("Team-B"), ("Team-B", "metadata.name"), False, True),
    # ---- priority classes ---------------------------------------------------------------------
    BadInput(
        "priorityclass-value-too-high",
        _priority_class("vip", "2000000000"),
        ("vip", "value", "1000000000"),
        False,
        False,
    ),
    BadInput(
        "priorityclass-system-prefix",
        _priority_class("system-mine", "1000"),
        ("system-mine", "metadata.name", "system-"),
        False,
        False,
    ),
    BadInput(
        "priorityclass-second-global-default",
        _priority_class("also-default", "20", "globalDefault: true\n"),
        ("also-default", "globalDefault", "everyday"),
        False,
        False,
    ),
    BadInput(
        "priorityclass-value-string",
        _priority_class("quoted", '"1000"'),
        ("quoted", "value"),
        False,
        False,
    ),
    BadInput(
        "priorityclass-value-beyond-int32",
        _priority_class("enormous", "3000000000"),
        ("enormous", "value"),
        False,
        False,
    ),
    BadInput(
        "priorityclass-preemption-policy-unknown",
        _priority_class("sometimes", "10", "preemptionPolicy: Sometimes\n"),
        ("sometimes", "preemptionPolicy"),
        False,
        False,
    ),
    # ---- PodGroups (KAI) ----------------------------------------------------------------------
    BadInput(
        "podgroup-min-member-zero",
        _podgroup("nobody", "minMember: 0\nqueue: team"),
        ("nobody", "spec.minMember"),
        False,
        True,
    ),
    BadInput(
        "podgroup-min-member-string",
        _podgroup("quoted-gang", 'minMember: "3"\nqueue: team'),
        ("quoted-gang", "spec.minMember"),
        False,
        True,
    ),
    BadInput(
        "podgroup-without-queue",
        _podgroup("homeless", "minMember: 2"),
        ("homeless", "spec.queue"),
        True,
        True,
    ),
    BadInput(
        "podgroup-subgroup-cycle",
        _podgroup(
            "tangled",
            "minMember: 2\nqueue: team\nsubGroups:\n"
            "- {name: a, minMember: 1, parent: b}\n- {name: b, minMember: 1, parent: a}",
        ),
        ("tangled", "spec.subGroups", "cycle"),
        True,
        True,
    ),
    BadInput(
        "podgroup-preemptibility-unknown",
        _podgroup("maybe", "minMember: 1\nqueue: team\npreemptibility: sometimes"),
        ("maybe", "spec.preemptibility"),
        False,
        True,
    ),
    # ---- Deployments, ReplicaSets, Jobs, CronJobs ---------------------------------------------
    BadInput(
        "deployment-replicas-words",
        _deployment("abc-replicas", replicas="abc"),
        ("abc-replicas", "spec.replicas"),
        False,
        True,
    ),
    BadInput(
        "deployment-replicas-negative",
        _deployment("minus-replicas", replicas="-1"),
        ("minus-replicas", "spec.replicas"),
        False,
        True,
    ),
    BadInput(
        "deployment-replicas-ten-million",
        _deployment("enormous-deployment", replicas="10000000"),
        ("enormous-deployment", "spec.replicas", "5000"),
        True,
        False,
    ),
    BadInput(
        "deployment-replicas-beyond-int32",
        _deployment("int32-deployment", replicas="3000000000"),
        ("int32-deployment", "spec.replicas"),
        False,
        True,
    ),
    BadInput(
        "deployment-replicas-fractional",
        _deployment("half-deployment", replicas="1.5"),
        ("half-deployment", "spec.replicas"),
        False,
        True,
    ),
    BadInput(
        "deployment-without-selector",
        _deployment("unselective").replace("  selector: {matchLabels: {app: web}}\n", ""),
        ("unselective", "spec.selector"),
        False,
        True,
    ),
    BadInput(
        "deployment-selector-does-not-match",
        _deployment("mismatched").replace("matchLabels: {app: web}", "matchLabels: {app: api}"),
        ("mismatched", "spec.template.metadata.labels"),
        False,
        True,
    ),
    BadInput(
        "deployment-template-gpu-overflow",
        _deployment("deploy-overflow", template=_template('{limits: {nvidia.com/gpu: "1e400"}}')),
        ("deploy-overflow", "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"),
        True,
        True,
    ),
    BadInput(
        "deployment-template-gpu-fraction-above-one",
        _deployment(
            "deploy-fraction",
            template=_template().replace(
                "labels: {app: web}", 'labels: {app: web}\n  annotations: {gpu-fraction: "1.5"}'
            ),
        ),
        ("deploy-fraction", "spec.template.metadata.annotations[gpu-fraction]"),
        True,
        True,
    ),
    BadInput(
        "deployment-template-cpu-negative",
        _deployment("deploy-negative", template=_template('{requests: {cpu: "-1"}}')),
        ("deploy-negative", "spec.template.spec.containers[0].resources.requests[cpu]"),
        False,
        True,
    ),
    BadInput(
        "deployment-template-restart-never",
        _deployment("deploy-never", template=_template(extra="  restartPolicy: Never")),
        ("deploy-never", "spec.template.spec.restartPolicy"),
        False,
        True,
    ),
    BadInput(
        "deployment-template-missing",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: hollow}\n"
        "spec: {replicas: 1, selector: {matchLabels: {app: web}}}\n",
        ("hollow", "spec.template"),
        False,
        True,
    ),
    BadInput(
        "deployment-spec-null",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: null-spec}\nspec: null\n",
        ("null-spec", "spec"),
        False,
        True,
    ),
    BadInput(
        "deployment-template-priority-class-missing",
        _deployment("deploy-unclassed", template=_template(extra="  priorityClassName: platinum")),
        ("deploy-unclassed", "spec.template.spec.priorityClassName", "platinum"),
        True,
        True,
    ),
    BadInput(
        "replicaset-replicas-string",
        _deployment("rs-quoted", replicas='"2"').replace("kind: Deployment", "kind: ReplicaSet"),
        ("rs-quoted", "spec.replicas"),
        False,
        True,
    ),
    BadInput(
        "job-parallelism-words",
        _job("job-words", spec="parallelism: many"),
        ("job-words", "spec.parallelism"),
        False,
        True,
    ),
    BadInput(
        "job-completions-negative",
        _job("job-minus", spec="completions: -3"),
        ("job-minus", "spec.completions"),
        False,
        True,
    ),
    BadInput(
        "job-suspend-words",
        _job("job-suspend", spec="suspend: 'yes'"),
        ("job-suspend", "spec.suspend"),
        False,
        True,
    ),
    BadInput(
        "job-completion-mode-unknown",
        _job("job-mode", spec="completionMode: Sometimes"),
        ("job-mode", "spec.completionMode"),
        False,
        True,
    ),
    BadInput(
        "job-without-restart-policy",
        _job("job-restartless", template_extra="-"),
        ("job-restartless", "spec.template.spec.restartPolicy"),
        False,
        True,
    ),
    BadInput(
        "job-restart-always",
        _job("job-always", template_extra="  restartPolicy: Always"),
        ("job-always", "spec.template.spec.restartPolicy"),
        False,
        True,
    ),
    BadInput(
        "job-template-memory-negative",
        _job("job-negative", resources="{requests: {memory: -1Gi}}"),
        ("job-negative", "spec.template.spec.containers[0].resources.requests[memory]"),
        False,
        True,
    ),
    BadInput(
        "job-template-gpu-overflow",
        _job("job-overflow", resources='{limits: {nvidia.com/gpu: "1e400"}}'),
        ("job-overflow", "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"),
        True,
        True,
    ),
    BadInput(
        "replicaset-template-gpu-fraction-above-one",
        _deployment(
            "rs-fraction",
            template=_template().replace(
                "labels: {app: web}", 'labels: {app: web}\n  annotations: {gpu-fraction: "2"}'
            ),
        ).replace("kind: Deployment", "kind: ReplicaSet"),
        ("rs-fraction", "spec.template.metadata.annotations[gpu-fraction]"),
        True,
        True,
    ),
    BadInput(
        "cronjob-template-gpu-fraction-above-one",
        _cronjob(
            "nightly-fraction",
            template=_template(extra="  restartPolicy: Never").replace(
                "labels: {app: web}", 'labels: {app: web}\n  annotations: {gpu-fraction: "2"}'
            ),
        ),
        (
            "nightly-fraction",
            "spec.jobTemplate.spec.template.metadata.annotations[gpu-fraction]",
        ),
        True,
        True,
    ),
    BadInput(
        "cronjob-schedule-words",
        _cronjob("whenever", schedule="every day"),
        ("whenever", "spec.schedule"),
        False,
        True,
    ),
    BadInput(
        "cronjob-schedule-minute-60",
        _cronjob("sixty", schedule="'60 * * * *'"),
        ("sixty", "spec.schedule", "minute"),
        False,
        True,
    ),
    BadInput(
        "cronjob-without-job-template",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: jobless}\n"
        "spec: {schedule: '0 3 * * *'}\n",
        ("jobless", "spec.jobTemplate"),
        False,
        True,
    ),
    # the apiserver's words for timeZone (batch/v1) and a time zone in the schedule, as a v1.34
    # apiserver answered kubectl apply
    BadInput(
        "cronjob-time-zone-unknown",
        _cronjob("on-mars", spec="timeZone: Mars/Olympus"),
        ("on-mars", "spec.timeZone", "unknown time zone Mars/Olympus"),
        False,
        True,
    ),
    BadInput(
        "cronjob-time-zone-local",
        _cronjob("local-time", spec="timeZone: Local"),
        ("local-time", "spec.timeZone", "timeZone must be an explicit time zone"),
        False,
        True,
    ),
    BadInput(
        "cronjob-time-zone-empty",
        _cronjob("no-zone", spec="timeZone: ''"),
        ("no-zone", "spec.timeZone", "timeZone must be nil or non-empty string"),
        False,
        True,
    ),
    BadInput(
        "cronjob-time-zone-in-schedule",
        _cronjob("inline-zone", schedule="'CRON_TZ=UTC 0 3 * * *'"),
        ("inline-zone", "spec.schedule", "cannot use TZ or CRON_TZ in schedule"),
        False,
        True,
    ),
    BadInput(
        "cronjob-time-zone-number",
        _cronjob("numbered-zone", spec="timeZone: 5"),
        ("numbered-zone", "spec.timeZone"),
        False,
        True,
    ),
    # ---- KubeRay ------------------------------------------------------------------------------
    # KubeRay v1.5's CRDs on v1.34 refuse the wrong types: "spec.workerGroupSpecs[1].replicas in
    # body must be of type integer", "…rayStartParams.num-cpus in body must be of type string",
    # "spec.headGroupSpec: Required value", "…template in body must be of type object"
    BadInput(
        "raycluster-replicas-words",
        _raycluster("abc-ray", "replicas: abc"),
        ("abc-ray", "spec.workerGroupSpecs[1].replicas"),
        False,
        True,
    ),
    BadInput(
        "raycluster-worker-gpu-overflow",
        _raycluster("overflow-ray", "replicas: 1", '{limits: {nvidia.com/gpu: "1e400"}}'),
        (
            "overflow-ray",
            "spec.workerGroupSpecs[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]",
        ),
        True,
        True,
    ),
    BadInput(
        "raycluster-min-above-max",
        _raycluster("inverted-ray", "replicas: 2\nminReplicas: 3\nmaxReplicas: 1"),
        ("inverted-ray", "spec.workerGroupSpecs[1].minReplicas"),
        True,
        True,
    ),
    BadInput(
        "raycluster-num-of-hosts-zero",
        _raycluster("hostless-ray", "replicas: 1\nnumOfHosts: 0"),
        ("hostless-ray", "spec.workerGroupSpecs[1].numOfHosts"),
        True,
        True,
    ),
    BadInput(
        "raycluster-start-params-number",
        _raycluster("params-ray").replace('{dashboard-host: "0.0.0.0"}', "{num-cpus: 1}"),
        ("params-ray", "spec.headGroupSpec.rayStartParams.num-cpus"),
        False,
        True,
    ),
    BadInput(
        "raycluster-ten-million-workers",
        _raycluster("vast-ray", "replicas: 10000000"),
        ("vast-ray", "spec.workerGroupSpecs", "5000"),
        True,
        False,
    ),
    BadInput(
        "raycluster-duplicate-group-names",
        _raycluster("twin-ray").replace("groupName: gpu", "groupName: small"),
        ("twin-ray", "spec.workerGroupSpecs[1].groupName"),
        True,
        True,
    ),
    BadInput(
        "raycluster-without-head",
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: headless-ray}\n"
        "spec: {workerGroupSpecs: []}\n",
        ("headless-ray", "spec.headGroupSpec"),
        False,
        True,
    ),
    BadInput(
        "raycluster-worker-template-is-a-list",
        _yaml(
            """
            apiVersion: ray.io/v1
            kind: RayCluster
            metadata: {name: listed-ray}
            spec:
              headGroupSpec:
                template:
                  spec:
                    containers: [{name: ray-head, image: rayproject/ray}]
              workerGroupSpecs:
              - groupName: small
                replicas: 1
                template: [spec, containers]
            """
        ),
        ("listed-ray", "spec.workerGroupSpecs[0].template"),
        False,
        True,
    ),
    BadInput(
        "rayjob-cluster-replicas-words",
        _raycluster(
            "abc-rayjob",
            "replicas: abc",
            kind="RayJob",
            nest="  entrypoint: python train.py\n  submissionMode: HTTPMode\n",
        ),
        ("abc-rayjob", "spec.rayClusterSpec.workerGroupSpecs[1].replicas"),
        False,
        True,
    ),
    BadInput(
        "rayjob-submission-mode-unknown",
        _raycluster(
            "later-rayjob",
            kind="RayJob",
            nest="  entrypoint: python train.py\n  submissionMode: Later\n",
        ),
        ("later-rayjob", "spec.submissionMode"),
        True,
        True,
    ),
    BadInput(
        "rayjob-without-cluster-spec",
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: clusterless-rayjob}\n"
        "spec: {entrypoint: python train.py}\n",
        ("clusterless-rayjob", "spec.rayClusterSpec"),
        True,
        True,
    ),
    BadInput(
        "rayservice-worker-memory-negative",
        _raycluster(
            "minus-rayservice",
            "replicas: 1",
            "{requests: {memory: -1Gi}}",
            kind="RayService",
            nest="  serveConfigV2: 'applications: []'\n",
        ),
        (
            "minus-rayservice",
            "spec.rayClusterConfig.workerGroupSpecs[1].template.spec.containers[0].resources.requests[memory]",
        ),
        True,
        True,
    ),
    # ---- Kubeflow -----------------------------------------------------------------------------
    BadInput(
        "pytorchjob-replicas-words",
        _pytorchjob("abc-torch", "replicas: abc"),
        ("abc-torch", "spec.pytorchReplicaSpecs.Master.replicas"),
        False,
        True,
    ),
    BadInput(
        "pytorchjob-two-masters",
        _pytorchjob("two-masters", "replicas: 2"),
        ("two-masters", "spec.pytorchReplicaSpecs.Master.replicas"),
        False,
        True,
    ),
    BadInput(
        "pytorchjob-no-pytorch-container",
        _pytorchjob("nameless-torch", container="trainer"),
        ("nameless-torch", "spec.pytorchReplicaSpecs.Master.template.spec.containers", "pytorch"),
        False,
        True,
    ),
    # ---- Kueue (rules from kubernetes-sigs/kueue apis/kueue/v1beta2 and pkg/webhooks) ----------
    BadInput(
        "clusterqueue-negative-quota",
        _cluster_queue("minus-cq", "nominalQuota: -2"),
        ("minus-cq", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-borrowing-limit-without-cohort",
        _cluster_queue("lonely-cq", "nominalQuota: 2, borrowingLimit: 1"),
        ("lonely-cq", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", "cohort"),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-lending-above-nominal",
        _cluster_queue("lavish-cq", "nominalQuota: 2, lendingLimit: 3", cohort="team"),
        (
            "lavish-cq",
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
            "nominalQuota",
        ),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-flavor-resource-out-of-order",
        _cluster_queue("shuffled-cq", "nominalQuota: 2", resource="memory"),
        ("shuffled-cq", "spec.resourceGroups[0].flavors[0].resources[0].name", "coveredResources"),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-unknown-strategy",
        _cluster_queue("lifo-cq", "nominalQuota: 2", spec="queueingStrategy: LIFO"),
        ("lifo-cq", "spec.queueingStrategy"),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-borrow-without-reclaim",
        _cluster_queue(
            "greedy-cq",
            "nominalQuota: 2",
            cohort="team",
            spec="preemption: {borrowWithinCohort: {policy: LowerPriority}}",
        ),
        ("greedy-cq", "spec.preemption", "reclaimWithinCohort=Never"),
        True,
        True,
    ),
    BadInput(
        "clusterqueue-v1beta1-cohort-field-in-v1beta2",
        _cluster_queue("old-field-cq", "nominalQuota: 2", spec="cohort: team"),
        ("old-field-cq", "spec.cohort", "not a known field"),
        True,
        True,
    ),
    BadInput(
        "localqueue-without-clusterqueue",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
        "metadata: {name: adrift-lq, namespace: default}\nspec: {}\n",
        ("adrift-lq", "spec.clusterQueue"),
        True,
        True,
    ),
    BadInput(
        "workloadpriorityclass-value-words",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
        "metadata: {name: wordy-wpc}\nvalue: high\n",
        ("wordy-wpc", "value"),
        True,
        True,
    ),
    BadInput(
        "resourceflavor-taint-effect-unknown",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: odd-rf}\n"
        "spec: {nodeTaints: [{key: gpu, value: 'yes', effect: Sometimes}]}\n",
        ("odd-rf", "spec.nodeTaints[0].effect"),
        True,
        True,
    ),
    BadInput(
        "admissioncheck-without-controller",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: AdmissionCheck\nmetadata: {name: idle-ac}\n"
        "spec: {parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, "
        "name: cfg}}\n",
        ("idle-ac", "spec.controllerName"),
        True,
        True,
    ),
    BadInput(
        "workload-without-podsets",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
        "metadata: {name: empty-wl, namespace: default}\nspec: {podSets: [], queueName: lq}\n",
        ("empty-wl", "spec.podSets"),
        True,
        True,
    ),
    # ---- everything else ----------------------------------------------------------------------
    BadInput(
        "raycluster-larger-than-etcd-holds",
        _raycluster("huge-ray").replace("spec:\n", f"spec:\n  notes: {'x' * 2_000_000}\n", 1),
        ("huge-ray", "bytes"),
        False,
        True,
    ),
    # ---- SchedulingShard: KAI's schema takes any string where pykai knows a list (actions,
    # strategies, the scheduler's flags), and fields pykai does not act on yet ------------------
    BadInput(
        "schedulingshard-unknown-action",
        _shard("{actions: {teleport: {enabled: true}}}"),
        ("default", "spec.actions", "teleport"),
        True,  # KAI's schema takes any action name (new actions may be added)
        True,
    ),
    BadInput(
        "schedulingshard-unknown-placement-strategy",
        _shard("{placementStrategy: {gpu: teleport}}"),
        ("default", "spec.placementStrategy.gpu", "teleport", "binpack", "spread", "fgd"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-flag-words",
        _shard("{args: {max-consolidation-preemptees: lots}}"),
        ("default", "spec.args.max-consolidation-preemptees", "integer", "lots"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-plugin-argument-words",
        _shard("{plugins: {proportion: {arguments: {reclaimerSaturationMultiplier: lots}}}}"),
        ("default", "spec.plugins.proportion.arguments.reclaimerSaturationMultiplier", "number"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-min-runtime-words",
        _shard("{minRuntime: {reclaimMinRuntime: forever}}"),
        ("default", "spec.minRuntime.reclaimMinRuntime", "not a duration"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-k-value",
        _shard("{kValue: 2}"),
        ("default", "spec.kValue", "not supported yet"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-usage-db",
        _shard("{usageDBConfig: {clientType: prometheus, connectionString: 'http://p:9090'}}"),
        ("default", "spec.usageDBConfig", "not supported yet"),
        True,
        True,
    ),
    BadInput(
        "schedulingshard-queue-depth",
        _shard("{queueDepthPerAction: {allocate: 10}}"),
        ("default", "spec.queueDepthPerAction", "not supported yet"),
        True,
        True,
    ),
)
