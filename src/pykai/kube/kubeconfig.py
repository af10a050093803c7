"""Where pykai finds the apiserver and its credentials, in the order of client-go's
controller-runtime (which KAI uses): ``--kubeconfig``; else the files ``KUBECONFIG`` lists,
merged as kubectl merges them; else the pod's service account; else ``~/.kube/config``.
``--context`` picks a context other than the current one.

The entries (clusters, users, contexts) are read as client-go's types, their fields' types
checked; the TLS context (certificate authority and client certificate, as files or inline
data) is trust.py's, kubectl's; the credentials are the httpx flows of auth.py."""

from __future__ import annotations

import binascii
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import yaml
from cryptography import x509

from pykai.kube.auth import (
    EXEC_API_VERSIONS,
    BearerToken,
    ExecCredentials,
    ExecPlugin,
    TokenFile,
    token_identity,
)
from pykai.kube.trust import server_trust, show_certificate
from pykai.model.errors import PykaiError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# kubeconfig fields that name files: relative paths are relative to the file that says so
_FILE_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
# fields kubectl knows that pykai does not act on: refused, never silently ignored
_UNSUPPORTED = {
    "clusters": ("proxy-url", "tls-server-name"),
    "users": ("auth-provider",),
}


class Cluster(msgspec.Struct, omit_defaults=True):
    """A kubeconfig's cluster: where the apiserver is and how to trust it."""

    server: str = "http://localhost:8080"
    certificate_auth: str | None = msgspec.field(name="certificate-authority", default=None)
    certificate_auth_data: str | None = msgspec.field(
        name="certificate-authority-data", default=None
    )
    insecure: bool = msgspec.field(name="insecure-skip-tls-verify", default=False)


class NameValue(msgspec.Struct):
    """An exec plugin's environment variable."""

    name: str
    value: str


class UserExec(msgspec.Struct, omit_defaults=True):
    """A user's exec plugin (its fields as client-go types them; auth.ExecPlugin runs it)."""

    apiVersion: str
    command: str
    env: list[NameValue] | None = None
    args: list[str] | None = None
    installHint: str | None = None


class User(msgspec.Struct, omit_defaults=True):
    """A kubeconfig's user: its credentials."""

    exec: UserExec | None = None
    username: str | None = None
    password: str | None = None
    token: str | None = None
    token_file: str | None = msgspec.field(name="tokenFile", default=None)
    auth_provider: dict[str, Any] | None = msgspec.field(name="auth-provider", default=None)
    client_cert: str | None = msgspec.field(name="client-certificate", default=None)
    client_cert_data: str | None = msgspec.field(name="client-certificate-data", default=None)
    client_key: str | None = msgspec.field(name="client-key", default=None)
    client_key_data: str | None = msgspec.field(name="client-key-data", default=None)


class Context(msgspec.Struct, omit_defaults=True):
    """A kubeconfig's context: a cluster, a user and a namespace."""

    cluster: str
    user: str | None = None
    namespace: str | None = None


@dataclass(frozen=True)
class _Chosen:
    """The chosen context's cluster and user."""

    context_name: str
    cluster: Cluster
    user: User | None


_SECTIONS: dict[str, tuple[str, type[msgspec.Struct]]] = {
    "clusters": ("cluster", Cluster),
    "users": ("user", User),
    "contexts": ("context", Context),
}


class KubeconfigError(PykaiError, ValueError):
    """A configuration pykai cannot use; the message names the file and the entry."""


@dataclass(frozen=True)
class Connection:
    """What a client needs: the apiserver, how to trust it, how to authenticate, and which
    credentials those are (named in the message when the apiserver refuses them)."""

    server: str
    tls: ssl.SSLContext
    auth: httpx.Auth | None
    headers: tuple[tuple[str, str], ...]
    credentials: str


def resolve(
    kubeconfig: Path | None = None,
    context: str | None = None,
    service_account: Path = SERVICE_ACCOUNT_DIR,
) -> Connection:
    """The connection of ``kubeconfig`` (one file), else of ``KUBECONFIG`` (a list, merged),
    else of the pod's service account, else of ``~/.kube/config``; ``context`` picks another
    context than the current one."""
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            raise KubeconfigError(f"kubeconfig {kubeconfig} does not exist")
        return _from_files([kubeconfig], context)
    listed = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        existing = [p for p in listed if p.is_file()]  # kubectl skips the missing ones
        if not existing:
            names = os.pathsep.join(map(str, listed))
            raise KubeconfigError(f"none of the files KUBECONFIG lists exists: {names}")
        return _from_files(existing, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and (service_account / "token").is_file():
        if context is not None:
            raise KubeconfigError("--context needs a kubeconfig; in a pod there is one context")
        return _in_cluster(service_account)
    default = Path.home() / ".kube" / "config"
    if default.is_file():
        return _from_files([default], context)
    raise KubeconfigError(
        "no kubeconfig: pass --kubeconfig PATH, set KUBECONFIG, create ~/.kube/config, "
        "or run in a pod with a service account"
    )


@dataclass
class _Merged:
    """The entries of several kubeconfig files: for each name the first file's, as kubectl
    merges KUBECONFIG; the first current-context set."""

    entries: dict[str, dict[str, tuple[dict[str, Any], Path]]]
    current: str | None


def _read(path: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig {path} is not YAML: {exc}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    return document


def _resolved(section: str, entry: dict[str, Any], path: Path) -> dict[str, Any]:
    """``entry`` with its relative file names made absolute against ``path``'s folder (an
    exec command only when it names a path, as client-go does)."""
    entry = dict(entry)
    for key in _FILE_FIELDS.get(section, ()):
        if isinstance(entry.get(key), str) and entry[key]:
            entry[key] = str(path.parent / Path(entry[key]).expanduser())
    plugin = entry.get("exec")
    if section == "users" and isinstance(plugin, dict):
        command = plugin.get("command")
        if isinstance(command, str) and os.sep in command:
            entry["exec"] = {**plugin, "command": str(path.parent / Path(command).expanduser())}
    return entry


def _merge(paths: list[Path]) -> _Merged:
    merged = _Merged({section: {} for section in _SECTIONS}, None)
    for path in paths:
        document = _read(path)
        for section, (key, _) in _SECTIONS.items():
            for item in document.get(section) or []:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise KubeconfigError(f"kubeconfig {path}: {section}: an entry has no name")
                body = item.get(key) or {}
                if not isinstance(body, dict):
                    raise KubeconfigError(
                        f'kubeconfig {path}: {section} "{item["name"]}": {key} is not a mapping'
                    )
                merged.entries[section].setdefault(
                    item["name"], (_resolved(section, body, path), path)
                )
        if merged.current is None and document.get("current-context"):
            merged.current = str(document["current-context"])
    return merged


def _typed(merged: _Merged) -> dict[str, dict[str, Any]]:
    """The merged entries of each section as client-go's types (every entry's types checked,
    as kubectl reads the whole file)."""
    typed: dict[str, dict[str, Any]] = {}
    for section, (_, model) in _SECTIONS.items():
        typed[section] = {}
        for name, (body, path) in merged.entries[section].items():
            try:
                typed[section][name] = msgspec.convert(body, model)
            except msgspec.ValidationError as exc:
                raise KubeconfigError(f'kubeconfig {path}: {section} "{name}": {exc}') from exc
    return typed


def _from_files(paths: list[Path], context: str | None) -> Connection:
    merged = _merge(paths)
    files = os.pathsep.join(map(str, paths))
    name = context or merged.current
    contexts = merged.entries["contexts"]
    if not name:
        raise KubeconfigError(
            f"kubeconfig {files} sets no current-context: pass --context "
            f"(one of: {', '.join(sorted(contexts)) or 'none defined'})"
        )
    if name not in contexts:
        raise KubeconfigError(
            f'context "{name}" is not in kubeconfig {files} '
            f"(contexts: {', '.join(sorted(contexts)) or 'none'})"
        )
    chosen, where = contexts[name]
    cluster_name, user_name = chosen.get("cluster"), chosen.get("user")
    if cluster_name not in merged.entries["clusters"]:
        raise KubeconfigError(f'context "{name}" of {where} names no known cluster')
    if user_name and user_name not in merged.entries["users"]:
        raise KubeconfigError(f'context "{name}" of {where}: user "{user_name}" is not defined')
    _refuse_unsupported(merged, cluster_name, user_name)
    typed = _typed(merged)
    single = _Chosen(name, typed["clusters"][cluster_name], typed["users"].get(user_name or ""))
    if not user_name:
        return _connection(single, {}, f'context "{name}" of kubeconfig {where} (no user)')
    user_body, user_path = merged.entries["users"][user_name]
    described = f'context "{name}", user "{user_name}" of kubeconfig {user_path}'
    return _connection(single, user_body, described)


def _refuse_unsupported(merged: _Merged, cluster: str, user: str | None) -> None:
    """Fields of the chosen cluster and user that kubectl knows and pykai does not act on."""
    for section, name in (("clusters", cluster), ("users", user)):
        if name:
            body, path = merged.entries[section][name]
            for key in _UNSUPPORTED[section]:
                if key in body:
                    advice = "; use an exec plugin" if key == "auth-provider" else ""
                    raise KubeconfigError(
                        f'kubeconfig {path}: {section[:-1]} "{name}": pykai does not '
                        f"support {key}{advice}"
                    )


def _in_cluster(directory: Path) -> Connection:
    """The pod's service account, as client-go's InClusterConfig: the apiserver's Service
    from the environment, the mounted CA, and the token file (read again for each request)."""
    try:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ["KUBERNETES_SERVICE_PORT"]
        for mounted in ("token", "namespace"):
            (directory / mounted).read_text()
    except (KeyError, OSError) as exc:
        raise KubeconfigError(f"the pod's service account is incomplete: {exc!r}") from exc
    host = f"[{host}]" if ":" in host else host  # IPv6
    cluster = Cluster(server=f"https://{host}:{port}", certificate_auth=str(directory / "ca.crt"))
    user = User(token_file=str(directory / "token"))
    return _connection(_Chosen("in-cluster", cluster, user), {}, "the pod's service account")


def _tls(single: _Chosen, user: User) -> ssl.SSLContext:
    """The TLS context of the chosen cluster and user (trust.py's, kubectl's: any certificate
    the kubeconfig gives is an anchor)."""
    cluster = single.cluster
    if cluster.insecure and (cluster.certificate_auth or cluster.certificate_auth_data):
        raise KubeconfigError(
            f'cluster of context "{single.context_name}": certificate-authority and '
            "insecure-skip-tls-verify are both set; keep one (kubectl refuses both too)"
        )
    try:
        data = cluster.certificate_auth_data  # inline data wins over a file, as in client-go
        authority = binascii.a2b_base64(data).decode() if data else None
        tls = server_trust(None if data else cluster.certificate_auth, authority, cluster.insecure)
        if user.client_cert_data or user.client_cert:
            cert = _pem(user.client_cert_data, user.client_cert)
            show_certificate(tls, cert, _pem(user.client_key_data, user.client_key))
        return tls
    except (OSError, ssl.SSLError, binascii.Error, ValueError) as exc:
        raise KubeconfigError(
            f'context "{single.context_name}": cannot load its certificates: {exc}'
        ) from exc


def _pem(data: str | None, file: str | None) -> bytes:
    """A certificate or key given inline (base64; it wins, as in client-go) or as a file."""
    if data:
        return binascii.a2b_base64(data)
    if file:
        return Path(file).read_bytes()
    raise ValueError("a client certificate needs both client-certificate and client-key")


def _connection(single: _Chosen, raw_user: dict[str, Any], described: str) -> Connection:
    """A connection for a chosen context; ``raw_user`` holds the user's fields the typed
    entries leave out (exec's cluster info and interactive mode, impersonation)."""
    user = single.user or User()
    if not single.cluster.server:
        raise KubeconfigError(f"{described}: the cluster has no server")
    methods = [
        m
        for m, used in (
            ("token", user.token or user.token_file),
            ("basic auth", user.username or user.password),
            ("exec", user.exec),
        )
        if used
    ]
    if len(methods) > 1:
        raise KubeconfigError(
            f"{described}: more than one way to authenticate ({', '.join(methods)}); "
            "kubectl allows one"
        )
    tls = _tls(single, user)
    auth: httpx.Auth | None = None
    if user.token_file:
        auth, kind = TokenFile(Path(user.token_file)), f"token file {user.token_file}"
        identity = token_identity(user.token or _first_line(Path(user.token_file)))
        kind += f" of {identity}" if identity else ""
    elif user.token:
        identity = token_identity(user.token)
        auth, kind = (
            BearerToken(user.token),
            "bearer token" + (f" of {identity}" if identity else ""),
        )
    elif user.exec:
        plugin = _plugin(raw_user.get("exec") or {}, single, described)
        auth, kind = ExecCredentials(plugin, tls), f"exec plugin {plugin.command}"
    elif user.username and user.password:
        auth, kind = httpx.BasicAuth(user.username, user.password), f"basic auth as {user.username}"
    else:
        kind = ""
    certificate = _certificate_subject(user)
    kinds = [k for k in (kind, certificate and f"client certificate {certificate}") if k]
    credentials = f"{described} ({' and '.join(kinds) or 'no token or client certificate'})"
    return Connection(single.cluster.server, tls, auth, _impersonation(raw_user), credentials)


def _first_line(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _certificate_subject(user: User) -> str:
    """The subject of the user's client certificate, or "" without one."""
    try:
        if user.client_cert_data:
            pem = binascii.a2b_base64(user.client_cert_data)
        elif user.client_cert:
            pem = Path(user.client_cert).read_bytes()
        else:
            return ""
        return x509.load_pem_x509_certificate(pem).subject.rfc4514_string()
    except (OSError, ValueError):
        return "(unreadable)"


def _plugin(raw: dict[str, Any], single: _Chosen, described: str) -> ExecPlugin:
    """The user's exec plugin, checked as client-go checks it."""
    version = str(raw.get("apiVersion", ""))
    if version not in EXEC_API_VERSIONS:
        raise KubeconfigError(
            f"{described}: exec apiVersion {version!r} is not one of {', '.join(EXEC_API_VERSIONS)}"
        )
    if raw.get("interactiveMode") == "Always":
        raise KubeconfigError(
            f"{described}: the exec plugin needs a terminal (interactiveMode: Always); "
            "pykai runs without one"
        )
    env = tuple((str(e.get("name")), str(e.get("value", ""))) for e in raw.get("env") or [])
    cluster = None
    if raw.get("provideClusterInfo"):
        info = single.cluster
        cluster = {
            "server": info.server,
            "insecure-skip-tls-verify": info.insecure,
            **(
                {"certificate-authority-data": info.certificate_auth_data}
                if info.certificate_auth_data
                else {}
            ),
        }
    return ExecPlugin(
        api_version=version,
        command=str(raw.get("command", "")),
        args=tuple(str(a) for a in raw.get("args") or []),
        env=env,
        install_hint=str(raw.get("installHint") or ""),
        cluster=cluster,
    )


def _impersonation(raw_user: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Impersonate-* headers of a user's ``as``, ``as-groups`` and ``as-user-extra``."""
    headers: list[tuple[str, str]] = []
    if raw_user.get("as"):
        headers.append(("Impersonate-User", str(raw_user["as"])))
    headers += [("Impersonate-Group", str(g)) for g in raw_user.get("as-groups") or []]
    for key, values in (raw_user.get("as-user-extra") or {}).items():
        headers += [(f"Impersonate-Extra-{key}", str(v)) for v in values or []]
    return tuple(headers)
