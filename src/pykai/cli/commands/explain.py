"""``pykai explain``: why a pod or PodGroup waits and what would let it run, why a pod is on its
node or who evicted it, a queue's shares and pending jobs; on the embedded cluster or, with
``--kubeconfig``/``--context``, on a live one (read only: nothing is written)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from pykai.cli.clusterfile import reading
from pykai.cli.completers import complete_kind
from pykai.cli.errors import fail, not_found, refused, reported
from pykai.cli.options import (
    ClusterOption,
    ContextOption,
    KubeconfigOption,
    NameArgument,
    NamespaceOption,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pykai.cli.related import Reader

_KINDS = ("Pod", "PodGroup", "Queue", "Workload", "RayJob", "RayCluster", "Job")


def explain(
    ctx: typer.Context,
    kind: Annotated[
        str,
        typer.Argument(
            help="pod, podgroup, queue, workload, rayjob, raycluster or job (or their short "
            "names), or KIND/NAME",
            autocompletion=complete_kind,
        ),
    ],
    name: NameArgument = None,
    namespace: NamespaceOption = "default",
    output: Annotated[str, typer.Option("--output", "-o", help="json|yaml")] = "",
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Explain a pod, PodGroup or queue: for a pending job, whether it can ever run as asked,
    the rule that holds it, its position, and what would let it run now (tried by the engine on
    a copy of the cluster); for a placed pod, how its node was chosen; for an evicted one, by
    whom and why; for a queue, its shares and pending jobs in order. For a job Kueue manages
    (a workload, rayjob, raycluster or job, or their pods): its Workload's state in Kueue, the
    rule that holds it (ClusterQueue quota, flavors, admission checks) and its positions."""
    from pykai.cli.explain import (
        explain_managed,
        explain_pod,
        explain_podgroup,
        explain_queue,
        text,
    )
    from pykai.cli.kinds import resolve_target
    from pykai.cli.printers import OutputError

    with reported():
        info, name = resolve_target(kind, name)
        if output not in ("", "json", "yaml"):
            message = f'unable to match a printer suitable for the output format "{output}"'
            raise OutputError(message)
    if info.kind not in _KINDS:
        fail(
            "explain takes a pod, podgroup, queue, workload, rayjob, raycluster or job, "
            f"not {info.resource}"
        )
    if name is None:
        fail(f"explain needs the name of the {info.kind.lower()}")
    live = kubeconfig is not None or context is not None
    with _reader(ctx, cluster, kubeconfig, context, live) as reader:
        found = reader.get(info.kind, name, namespace)
        if found is None:
            fail(not_found(info.resource, name))
        explainer = {
            "Pod": explain_pod,
            "PodGroup": explain_podgroup,
            "Queue": explain_queue,
        }.get(info.kind, explain_managed)
        answer = explainer(reader, found)
    if output == "json":
        import json

        typer.echo(json.dumps(answer, indent=2))
    elif output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(answer, sort_keys=False).rstrip())
    else:
        typer.echo(text(answer))


@contextmanager
def _reader(
    ctx: typer.Context,
    cluster: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    live: bool,
) -> Iterator[Reader]:
    """The live cluster's reader (``--kubeconfig``/``--context``), else the cluster file's."""
    if not live:
        with reading(ctx, cluster) as reader:
            yield reader
        return
    from pykai.cli.kube_reader import KubeReader
    from pykai.kube.api import connect

    with reported(), refused():
        api = connect(kubeconfig, context)
        yield KubeReader(api)
