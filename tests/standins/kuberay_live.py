"""Record what the real KubeRay operator makes of the guides' manifests (``scripts/record-kuberay-
pods``, which runs ``python -m tests.standins.kuberay_live``; tests/kube/test_kuberay_record.py).

One local control plane (pykai.kube.localcluster: etcd, kube-apiserver, kube-controller-manager,
KWOK as every node's kubelet, the KubeRay operator built by scripts/peers), on loopback only. No
scheduler runs: the recorder binds each pending pod to a node itself (one ``pods/binding``, which
writes nothing else on the pod), so the pods are exactly the operator's and kube-controller-
manager's. The cases of tests/standins/kuberay_conformance.py run in turn, each in a namespace of
its own: first those for the operator as the LocalCluster starts it (``--batch-scheduler=
kai-scheduler``, as KAI's guide installs KubeRay), then, once their namespaces are deleted, the
operator is restarted without a batch scheduler (as the Ray + Kueue guides install it) for the
others. Every wait has a deadline; a case that does not get where it should fails the recording
with what it saw.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from pykai.kube import peers
from pykai.kube.api import ApiError, KubeApi, connect
from pykai.kube.localcluster import LocalCluster, alive, free_port
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.standins.kuberay_conformance import (
    CASES,
    COLLECTED,
    KAI,
    KUBERAY_MODULE,
    Case,
    Observed,
    observe,
    record_text,
    settled,
    suspended,
    suspended_object,
)

DEADLINE = 180.0  # seconds for one step of a case (a loaded machine is slow, never this slow)
NODES = [builders.node(f"node-{i}", gpus=8, cpu="64", memory="512Gi") for i in range(4)]
REFUSED = "currently only RayCluster is supported"


class RecordingError(RuntimeError):
    """A case did not get where it should within its deadline."""


def wait_until(condition: Callable[[], object], what: str, seen: Callable[[], object]) -> None:
    """Poll ``condition`` every 0.2 s until it holds; after DEADLINE, fail naming ``what`` and
    what ``seen`` shows."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise RecordingError(f"{what} not within {DEADLINE:.0f}s; saw:\n{seen()}")
        time.sleep(0.2)


class Binder:
    """Binds every pending pod of the recorded namespaces to a node, round robin (a scheduler
    that writes nothing but the binding)."""

    def __init__(self, api: KubeApi) -> None:
        self.api, self.stop = api, threading.Event()
        self.thread = threading.Thread(target=self._run, name="binder", daemon=True)
        self.nodes = itertools.cycle(n["metadata"]["name"] for n in NODES)

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                pods, _ = self.api.list(BY_KIND["Pod"])
                for pod in pods:
                    meta = pod["metadata"]
                    if (
                        meta["namespace"].startswith("kr-")
                        and not pod["spec"].get("nodeName")
                        and not meta.get("deletionTimestamp")
                    ):
                        self.api.bind(meta["namespace"], meta["name"], next(self.nodes))
            except ApiError:
                continue  # a pod deleted or bound meanwhile: the next pass sees it as it is

    def __enter__(self) -> Binder:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


class Watcher:
    """Every version of the RayJobs and RayClusters the API server sends, in order."""

    def __init__(self, api: KubeApi) -> None:
        self.api, self.stop = api, threading.Event()
        self.lock = threading.Lock()
        self.versions: list[Obj] = []
        self.threads = [
            threading.Thread(target=self._run, args=(kind,), name=f"watch {kind}", daemon=True)
            for kind in ("RayJob", "RayCluster")
        ]

    def _run(self, kind: str) -> None:
        _, version = self.api.list(BY_KIND[kind])
        while not self.stop.is_set():
            try:
                for event, obj in self.api.watch(BY_KIND[kind], version, timeout=5):
                    if event == "ERROR":  # 410 Gone: start again from now
                        _, version = self.api.list(BY_KIND[kind])
                        break
                    version = obj["metadata"].get("resourceVersion", version)
                    if event in ("ADDED", "MODIFIED"):
                        with self.lock:
                            self.versions.append(obj)
            except (ApiError, OSError, ValueError, httpx.HTTPError, httpx.StreamError):
                time.sleep(0.2)  # a dropped stream: watch again from the last version seen

    def mark(self) -> int:
        with self.lock:
            return len(self.versions)

    def since(self, mark: int, obj: Obj) -> list[Obj]:
        """The versions of ``obj`` seen since ``mark``."""
        meta = obj["metadata"]
        with self.lock:
            return [
                v
                for v in self.versions[mark:]
                if v["kind"] == obj["kind"]
                and v["metadata"]["namespace"] == meta["namespace"]
                and v["metadata"]["name"] == meta["name"]
            ]

    def has_seen(self, obj: Obj) -> bool:
        """True once the watch delivered ``obj``'s version (or a later one)."""
        wanted = int(obj["metadata"]["resourceVersion"])
        return any(int(v["metadata"]["resourceVersion"]) >= wanted for v in self.since(0, obj))

    def __enter__(self) -> Watcher:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)


def collect(api: KubeApi, namespace: str) -> list[Obj]:
    """The collected kinds' objects in ``namespace``."""
    return [
        obj
        for kind in COLLECTED
        for obj in api.list(BY_KIND[kind])[0]
        if obj["metadata"].get("namespace") == namespace
    ]


def _summary(objects: list[Obj]) -> str:
    rows = []
    for obj in objects:
        status = obj.get("status") or {}
        brief = {
            k: status.get(k)
            for k in ("phase", "state", "jobDeploymentStatus", "active")
            if k in status
        }
        deleting = " (deleting)" if obj["metadata"].get("deletionTimestamp") else ""
        rows.append(f"  {obj['kind']} {obj['metadata']['name']}{deleting} {json.dumps(brief)}")
    return "\n".join(rows) or "  nothing"


def _refusals(cluster: LocalCluster, name: str) -> int:
    """How often the operator's log says it refused the RayJob ``name``."""
    log = (cluster.directory / "kuberay-operator.log").read_text(errors="replace")
    return sum(1 for line in log.splitlines() if REFUSED in line and f'"{name}"' in line)


def run_case(cluster: LocalCluster, api: KubeApi, watcher: Watcher, case: Case) -> Observed:
    """Apply the case's manifests, wait until settled; suspend and resume if the case says so."""
    namespace = case.namespace
    api.create_if_absent(
        BY_KIND["Namespace"],
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    made = [api.create(BY_KIND[obj["kind"]], obj) for obj in case.objects()]
    objects = lambda: collect(api, namespace)  # noqa: E731
    seen = lambda: _summary(objects())  # noqa: E731
    wait_until(lambda: settled(case, objects()), f"{case.name}: settled", seen)
    if case.rayjob_refused():
        job = next(o for o in made if o["kind"] == "RayJob")["metadata"]["name"]
        # nothing happens, by design: wait until the operator has refused it a few times
        wait_until(lambda: _refusals(cluster, job) >= 3, f"{case.name}: refused", seen)
    observed = Observed(settled=objects())
    if not case.suspend:
        return observed
    top = suspended_object(case, observed.settled)
    assert top is not None
    kind, name = BY_KIND[top["kind"]], top["metadata"]["name"]
    for on in (True, False):
        mark = watcher.mark()
        api.patch(kind, name, {"spec": {"suspend": on}}, namespace)
        done = suspended if on else settled
        step = "suspended" if on else "resumed"
        wait_until(lambda done=done: done(case, objects()), f"{case.name}: {step}", seen)  # type: ignore[misc]
        now = objects()
        last = suspended_object(case, now)
        assert last is not None
        wait_until(lambda last=last: watcher.has_seen(last), f"{case.name}: watched", seen)  # type: ignore[misc]
        if on:
            observed.suspending, observed.suspended = watcher.since(mark, top), now
        else:
            observed.resuming, observed.resumed = watcher.since(mark, top), now
    return observed


def operator_version(observations: dict[str, Observed]) -> str:
    """The version the operator stamps on what it makes (every Ray container's usage tags)."""
    found = set()
    for observed in observations.values():
        for obj in observed.settled:
            for container in (obj.get("spec") or {}).get("containers") or []:
                for env in container.get("env") or []:
                    match = re.search(r"kuberay_version=(v[\w.-]+)", str(env.get("value", "")))
                    if match:
                        found.add(match.group(1))
    if len(found) != 1:
        raise RecordingError(f"the operator's version is not one: {sorted(found)}")
    return found.pop()


def _delete_namespaces(api: KubeApi, cases: list[Case]) -> None:
    """Delete the cases' namespaces; wait until their RayJobs are gone (KubeRay's finalizer
    needs the operator that put it there)."""
    for case in cases:
        api.delete(BY_KIND["Namespace"], case.namespace)
    names = {case.namespace for case in cases}

    def rayjobs() -> list[Obj]:
        return [j for j in api.list(BY_KIND["RayJob"])[0] if j["metadata"]["namespace"] in names]

    wait_until(lambda: not rayjobs(), "RayJobs deleted", lambda: _summary(rayjobs()))


@contextmanager
def without_batch_scheduler(cluster: LocalCluster) -> Iterator[None]:
    """The cluster's KubeRay operator stopped and another started without
    ``--batch-scheduler`` (the same binary and flags otherwise), until the block ends."""
    pid = int(cluster.status()["pids"]["kuberay-operator"])  # type: ignore[index]
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not alive(pid), "the operator stopped", lambda: f"pid {pid}")
    log = open(cluster.directory / "kuberay-operator-no-batch-scheduler.log", "ab")  # noqa: SIM115
    process = subprocess.Popen(
        [
            str(cluster.binary("kuberay-operator")),
            f"--kubeconfig={cluster.kubeconfig}",
            f"--metrics-addr=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            "--enable-leader-election=false",
            "--log-stdout-encoder=console",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
        log.close()


def record_on(
    cluster: LocalCluster, cases: tuple[Case, ...] = CASES, progress: Callable[[str], None] = print
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Run ``cases`` on a cluster that ``up`` started (its operator with
    ``--batch-scheduler=kai-scheduler``); the operator's version and each case's normal form."""
    if cluster.kuberay_scheduler != KAI:
        raise RecordingError("the cluster's KubeRay operator must start with kai-scheduler")
    api = connect(cluster.kubeconfig)
    create_ready_nodes(api, NODES, time.time())
    observations: dict[str, Observed] = {}
    kai = [c for c in cases if c.batch_scheduler == KAI]
    plain = [c for c in cases if not c.batch_scheduler]
    with Binder(api), Watcher(api) as watcher:
        for case in kai:
            progress(f"{case.name} ({case.batch_scheduler})")
            observations[case.name] = run_case(cluster, api, watcher, case)
        if plain:
            _delete_namespaces(api, kai)
            with without_batch_scheduler(cluster):
                for case in plain:
                    progress(f"{case.name} (no batch scheduler)")
                    observations[case.name] = run_case(cluster, api, watcher, case)
    found = {case.name: observe(case, observations[case.name]) for case in cases}
    return operator_version(observations), found


def record(
    directory: Path, cases: tuple[Case, ...] = CASES, progress: Callable[[str], None] = print
) -> tuple[str, dict[str, dict[str, Any]]]:
    """``record_on`` a local control plane of its own in ``directory``, stopped afterwards."""
    cluster = LocalCluster(directory)
    progress("starting a local control plane (etcd, kube-apiserver, KWOK, the KubeRay operator)")
    cluster.up()
    try:
        return record_on(cluster, cases, progress)
    finally:
        cluster.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/record-kuberay-pods",
        description="Record what the real KubeRay operator makes of the guides' manifests "
        "into tests/data/kuberay/ (after a KubeRay upgrade in tools/peers).",
    )
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    parser.add_argument(
        "--directory", type=Path, help="the control plane's folder (default: temporary)"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the files, write nothing"
    )
    args = parser.parse_args(argv)
    cases = tuple(c for c in CASES if not args.case or c.name in args.case)
    unknown = set(args.case) - {c.name for c in CASES}
    if unknown:
        parser.error(
            f"unknown case(s): {', '.join(sorted(unknown))}; "
            f"known: {', '.join(c.name for c in CASES)}"
        )
    pinned = peers.version(KUBERAY_MODULE)
    with tempfile.TemporaryDirectory(prefix="kuberay-record-") as temporary:
        version, found = record(args.directory or Path(temporary), cases)
    if version != pinned:
        print(f"the operator says {version}, tools/peers pins {pinned}", file=sys.stderr)
        return 1
    changed = []
    for case in cases:
        text = record_text(case, version, found[case.name])
        if not case.path.exists() or case.path.read_text() != text:
            changed.append(case.path.relative_to(case.path.parents[3]))
            if not args.check:
                case.path.parent.mkdir(parents=True, exist_ok=True)
                case.path.write_text(text)
    verb = "differ" if args.check else "written"
    print(f"{len(changed)} of {len(cases)} record(s) {verb}: " + ", ".join(map(str, changed)))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
