"""Kind names as users type them (pods, po, queue, pg, pod/NAME, ...) and as kubectl prints them."""

from __future__ import annotations

from pykai.model.errors import PykaiError
from pykai.model.kinds import KIND_SPECS, KindSpec, known

_BY_NAME = {
    alias: info for info in KIND_SPECS for alias in (info.kind.lower(), info.plural, *info.short)
}


class UnknownKindError(PykaiError, ValueError):
    """A kind name pykai does not know."""


def resolve(name: str) -> KindSpec:
    """The kind a user means by ``name``: case-insensitive, plural, singular or short, optionally
    qualified by its group (``queues.scheduling.run.ai``)."""
    info = _BY_NAME.get(name.lower().split(".", 1)[0])
    if info is None:
        raise UnknownKindError(f'the server doesn\'t have a resource type "{name}"')
    return info


def resolve_target(kind: str, name: str | None) -> tuple[KindSpec, str | None]:
    """``KIND NAME`` or kubectl's ``KIND/NAME`` form, as a kind and a name (or None)."""
    if name is None and "/" in kind:
        kind, name = kind.split("/", 1)
    return resolve(kind), name


def info_for(kind: str, api_version: str = "") -> KindSpec:
    """The KindSpec of a canonical kind; for a kind pykai does not list, one made from the
    object's apiVersion (``example.com/v1`` gives group ``example.com``)."""
    info = known(kind)
    if info is not None:
        return info
    group, _, version = api_version.rpartition("/")
    return KindSpec(kind, group, (version or "v1",), kind.lower() + "s", True)


def display_name(kind: str, api_version: str = "") -> str:
    """How kubectl names a kind in apply and delete output (see :attr:`KindSpec.display`)."""
    return info_for(kind, api_version).display


def resolve_targets(args: list[str]) -> list[tuple[KindSpec, list[str]]]:
    """What kubectl's get takes: ``KIND[,KIND...] [NAME...]`` or ``KIND/NAME [KIND/NAME...]``;
    each kind (in the order first named) with the names asked of it (none: all)."""
    if not args:
        raise UnknownKindError("you must specify the type of resource to get")
    targets: dict[str, tuple[KindSpec, list[str]]] = {}
    if any("/" in arg for arg in args):
        if not all("/" in arg for arg in args):
            raise UnknownKindError(
                "there is no need to specify a resource type as a separate argument when "
                "passing arguments in resource/name form (e.g. 'pykai get resource/<name>' "
                "instead of 'pykai get resource resource/<name>'"
            )
        for arg in args:
            kind, _, name = arg.partition("/")
            if not name:
                raise UnknownKindError(
                    f'arguments in resource/name form must have a single resource and name: "{arg}"'
                )
            info = resolve(kind)
            targets.setdefault(info.kind, (info, []))[1].append(name)
        return list(targets.values())
    kinds, *names = args
    for kind in kinds.split(","):
        if kind:
            info = resolve(kind)
            targets.setdefault(info.kind, (info, list(names)))
    return list(targets.values())
