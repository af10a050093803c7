"""The admission webhook: a ValidatingAdmissionWebhook over HTTPS that refuses what ``pykai
apply`` refuses on the embedded cluster, with the same checks and messages
(controllers/validation.py), so a bad object is refused before anything is stored.

- CREATE/UPDATE of a Queue (its fields, and the tree it makes with the stored queues), a
  PodGroup, and the workloads pykai groups: Deployment, ReplicaSet, Job, CronJob, RayCluster,
  RayJob, RayService, PyTorchJob (fields, and every pod template as a pod); CREATE of a Pod.
  An UPDATE is refused only for problems the old object did not have, so an object stored
  before the webhook existed can still be changed (finalizers removed, labels fixed).
- CREATE/UPDATE of a SchedulingShard: what the scheduler's configuration takes (known actions
  and placement strategies, numbers and durations where KAI's schema takes any string), and
  none of the fields pykai does not act on yet (kValue, usageDBConfig, queueDepthPerAction).
- CREATE/UPDATE of Kueue's objects (kueue.x-k8s.io, any served version): Kueue's own rules
  (model/kueue/validation.py), with its immutable fields checked against the stored object.
- DELETE of a Queue still used by child queues or PodGroups (the PodGroups counted, the first
  three named, as kubectl prints a long list).

Every request gets an answer: a malformed or oversized request, or an error of the webhook
itself, is a refusal with a message, never a dropped connection. HTTP/1.1 with keep-alive and
TCP_NODELAY, since the apiserver reuses its connections.

TLS: certificate files, a ``kubernetes.io/tls`` Secret, or a self-signed CA and serving
certificate generated at start (local use; the CA goes into the webhook configuration).
Failure policy: ``Fail`` for queues, SchedulingShards and Kueue's configuration (written by
people: nothing invalid slips in while the webhook is down), ``Ignore`` for the rest (written
constantly by controllers and pykai itself: an outage of the webhook must never stall
workloads).

One job per module: ``validation.py`` (the validating review), ``mutation.py`` (the mutating
review), ``answer.py`` (the AdmissionReview answer), ``server.py`` (HTTPS serving),
``tls.py`` (the certificate), ``registration.py`` (the webhook configurations).
"""

from pykai.kube.webhook.mutation import mutate
from pykai.kube.webhook.registration import (
    CONFIGURATION_NAME,
    MUTATION_NAME,
    configuration,
    mutation,
    register,
    unregister,
)
from pykai.kube.webhook.server import MAX_BODY, MUTATE_PATH, PATH, serve
from pykai.kube.webhook.tls import Tls, generate_tls, tls_from_secret
from pykai.kube.webhook.validation import api_lister, review

__all__ = [
    "CONFIGURATION_NAME",
    "MAX_BODY",
    "MUTATE_PATH",
    "MUTATION_NAME",
    "PATH",
    "Tls",
    "api_lister",
    "configuration",
    "generate_tls",
    "mutate",
    "mutation",
    "register",
    "review",
    "serve",
    "tls_from_secret",
    "unregister",
]
