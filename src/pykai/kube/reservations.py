"""The one stand-in of a side-by-side run with the real KAI's shared GPUs: what KAI's
reservation pod program (cmd/resourcereservation) does on a real node, for every reservation
pod KAI's binder creates on a KWOK node, where no container runs.

On a real node the reservation pod holds one whole GPU from the device plugin; its program
asks NVML for the one device it sees and writes the device's UUID into its own pod as the
annotation ``run.ai/reserve_for_gpu_index`` (KAI v0.12.0 pkg/resourcereservation/discovery/
discovery.go:14-49, patcher/pod_patcher.go:95-114, cmd/resourcereservation/app/app.go:47-73).
KAI's binder waits for that annotation before it binds any pod of the GPU group
(pkg/binder/binding/resourcereservation/resource_reservation.go:432-462); only the binder
reads the value, to fill NVIDIA_VISIBLE_DEVICES (no KAI scheduler decision depends on it).

Contract of ``annotate_forever(api)`` (``python -m pykai.kube.reservations --kubeconfig=K``):
it watches the pods labelled ``app=kai-resource-reservation`` (the binder's
``--resource-reservation-app-label``) in every namespace, and gives each one that is bound to
a node, not terminating and not yet annotated the annotation ``device_id(node, index)``:
``index`` is the lowest device index of that node that no other live reservation pod on the
node holds (as a device plugin hands a free device to each). It writes nothing else, and
never touches a pod twice. It re-lists after a broken watch and runs until it is stopped.

Contract of ``reservation_pods(pods)``: a scenario that starts with shared-GPU pods already
bound (``spec.nodeName`` and a GPU group label) describes a cluster where KAI's binder bound
them, so each of their GPU groups has its reservation pod; without it KAI's binder deletes
the running pods at its next bind on that node (resource_reservation.go:185-192,350-366).
These are the reservation pods the binder would have created
(resource_reservation.go:381-531: namespace ``kai-resource-reservation``, labels
``app=kai-resource-reservation`` and ``runai-gpu-group=<group>``, bound to the node, one
``nvidia.com/gpu``), one per (node, group), for the harness to create with the pods; the
stand-in annotates them as any other. ``received_types(pods)``: the annotation KAI's binder
writes on every pod it binds, ``received-resource-type`` (``Fraction`` for a shared GPU, else
``Regular``: pkg/binder/binding/binder.go:136-149), for each pod bound already, by
``namespace/name``; KAI's podgroupcontroller counts a fraction's GPU in the PodGroup's and the
queue's ``allocated`` only with it (podgroupcontroller/controllers/resources/received.go:
22-34), and KAI's own integration tests give their running pods the same annotation
(pkg/scheduler/test_utils/jobs_fake/jobs.go:303-311).

pykai does not need it: ``pykai run``'s binder labels a shared-GPU pod with its GPU group
itself, without a reservation pod (pykai.kube.binder)."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from pykai.kube.api import ApiError, KubeApi, connect
from pykai.model import constants as c
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

ANNOTATION = "run.ai/reserve_for_gpu_index"  # resource_reservation.go:39, pod_patcher.go:65
APP_LABEL = "app=kai-resource-reservation"  # constants.AppLabelName = the binder's flag value
NAMESPACE = "kai-resource-reservation"  # the binder's --resource-reservation-namespace
GROUP_LABEL = c.GPU_GROUP_LABEL  # KAI's constants.GPUGroup
log = logging.getLogger("pykai.reservations")


def reservation_pods(pods: list[Obj]) -> list[Obj]:
    """The reservation pods of the bound shared-GPU pods (see the module's contract)."""
    wanted: dict[tuple[str, str], None] = {}
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        labels = pod["metadata"].get("labels") or {}
        prefix = GROUP_LABEL + "/"
        groups = {str(v) for k, v in labels.items() if k == GROUP_LABEL or k.startswith(prefix)}
        for group in sorted(groups - {""}) if node else ():
            wanted[(node, group)] = None
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"gpu-reservation-{node}-{group}".lower(),
                "namespace": NAMESPACE,
                "labels": {"app": APP_LABEL.partition("=")[2], GROUP_LABEL: group},
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "resource-reservation",
                        "image": "ubuntu",
                        "args": ["sleep", "infinity"],
                        "resources": {
                            "limits": {"nvidia.com/gpu": "1"},
                            "requests": {"nvidia.com/gpu": "1"},
                        },
                    }
                ],
            },
        }
        for node, group in wanted
    ]


RECEIVED_TYPE = "received-resource-type"  # KAI's constants.ReceivedResourceType
SHARED_GPU = ("gpu-fraction", "gpu-memory")  # the annotations of a shared-GPU request


def received_types(pods: list[Obj]) -> dict[str, str]:
    """``received-resource-type`` of each pod bound already (see the module's contract)."""
    found = {}
    for pod in pods:
        meta = pod["metadata"]
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        shared = any(a in (meta.get("annotations") or {}) for a in SHARED_GPU)
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        found[key] = "Fraction" if shared else "Regular"
    return found


def device_id(node: str, index: int) -> str:
    """The fake GPU UUID of device ``index`` of ``node``: the same on every run."""
    return f"GPU-{node}-{index}"


class Devices:
    """Which device of each node each live reservation pod holds (from the annotations)."""

    def __init__(self) -> None:
        self.held: dict[str, dict[str, str]] = {}  # node -> pod key -> device id

    def seen(self, pod: Obj) -> str | None:
        """Record a pod as it is now; the device id to annotate it with, if it needs one."""
        meta, key = pod["metadata"], _key(pod)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if meta.get("deletionTimestamp") or not node:
            self.gone(pod)
            return None
        given = (meta.get("annotations") or {}).get(ANNOTATION)
        on_node = self.held.setdefault(node, {})
        if given:
            on_node[key] = given
            return None
        if key in on_node:
            return None  # annotated already; the watch has not shown it yet
        taken = set(on_node.values())
        index = next(i for i in range(len(taken) + 1) if device_id(node, i) not in taken)
        on_node[key] = device_id(node, index)
        return on_node[key]

    def gone(self, pod: Obj) -> None:
        """Forget a deleted or terminating pod: its device is free again."""
        for on_node in self.held.values():
            on_node.pop(_key(pod), None)


def _key(pod: Obj) -> str:
    return f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"


def _annotate(api: KubeApi, devices: Devices, pod: Obj) -> None:
    device = devices.seen(pod)
    if device is None:
        return
    meta = pod["metadata"]
    log.info("reservation pod %s on %s: %s", _key(pod), pod["spec"]["nodeName"], device)
    try:
        api.patch(
            BY_KIND["Pod"],
            meta["name"],
            {"metadata": {"annotations": {ANNOTATION: device}}},
            meta["namespace"],
        )
    except ApiError as exc:
        if exc.status != 404:
            raise
        devices.gone(pod)


def annotate_forever(api: KubeApi) -> None:
    """Annotate reservation pods until stopped (see the module's contract)."""
    kind = BY_KIND["Pod"]
    while True:
        devices = Devices()
        try:
            pods, version = api.list(kind, label_selector=APP_LABEL)
            for pod in pods:
                _annotate(api, devices, pod)
            while True:
                for event, pod in api.watch(kind, version, label_selector=APP_LABEL):
                    if event == "BOOKMARK":
                        version = pod["metadata"].get("resourceVersion", version)
                        continue
                    if event == "ERROR":
                        raise ApiError(410, "watch expired")
                    version = pod["metadata"].get("resourceVersion", version)
                    if event == "DELETED":
                        devices.gone(pod)
                    else:
                        _annotate(api, devices, pod)
        except Exception as exc:  # a broken watch or a restarting apiserver: list again
            log.warning("re-listing reservation pods after %s", exc)
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> None:
    """``python -m pykai.kube.reservations --kubeconfig=PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    annotate_forever(connect(args.kubeconfig))


if __name__ == "__main__":
    main()
