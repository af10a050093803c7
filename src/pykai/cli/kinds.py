"""Kind names as users type them (pods, po, queue, pg, pod/NAME, ...) and as kubectl prints them."""

from __future__ import annotations

from pykai.model.kinds import KINDS, KindSpec

KindInfo = KindSpec  # the CLI's view of a kind: the table of model/kinds.py

_BY_NAME = {
    alias: info for info in KINDS for alias in (info.kind.lower(), info.plural, *info.short)
}


class UnknownKindError(ValueError):
    """A kind name pykai does not know."""


def resolve(name: str) -> KindInfo:
    """The kind a user means by ``name``: case-insensitive, plural, singular or short, optionally
    qualified by its group (``queues.scheduling.run.ai``)."""
    info = _BY_NAME.get(name.lower().split(".", 1)[0])
    if info is None:
        raise UnknownKindError(f'the server doesn\'t have a resource type "{name}"')
    return info


def resolve_target(kind: str, name: str | None) -> tuple[KindInfo, str | None]:
    """``KIND NAME`` or kubectl's ``KIND/NAME`` form, as a kind and a name (or None)."""
    if name is None and "/" in kind:
        kind, name = kind.split("/", 1)
    return resolve(kind), name


def info_for(kind: str, api_version: str = "") -> KindInfo:
    """The KindInfo of a canonical kind; for a kind pykai does not list, one made from the
    object's apiVersion (``example.com/v1`` gives group ``example.com``)."""
    for info in KINDS:
        if info.kind == kind:
            return info
    group, _, version = api_version.rpartition("/")
    return KindInfo(kind, group, (version or "v1",), kind.lower() + "s", True)


def display_name(kind: str, api_version: str = "") -> str:
    """How kubectl names a kind in apply and delete output (see :attr:`KindInfo.display`)."""
    return info_for(kind, api_version).display
