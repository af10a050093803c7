"""The webhook's serving certificate: from files, a ``kubernetes.io/tls`` Secret, or
generated (a self-signed CA, for local use)."""

from __future__ import annotations

import base64
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pykai.kube.api import KubeApi
from pykai.kube.certs import Authority
from pykai.model.kinds import BY_KIND


@dataclass(frozen=True)
class Tls:
    """A serving certificate and key (PEM), and the CA that signed it."""

    cert: bytes
    key: bytes
    ca: bytes

    def context(self) -> ssl.SSLContext:
        """A server-side SSL context (the files live only as long as loading takes)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as directory:
            cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
            cert.write_bytes(self.cert)
            key.write_bytes(self.key)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


def generate_tls(hosts: list[str], days: int = 365) -> Tls:
    """A self-signed CA and a serving certificate for ``hosts`` (DNS names or IPs)."""
    authority = Authority.new("pykai-webhook-ca", days)
    cert, key = authority.issue(hosts[0], hosts=hosts, days=days)
    return Tls(cert=cert, key=key, ca=authority.cert_pem)


def tls_from_secret(api: KubeApi, reference: str) -> Tls:
    """TLS from a ``kubernetes.io/tls`` Secret ``NAMESPACE/NAME`` (``ca.crt`` if present)."""
    namespace, _, name = reference.partition("/")
    if not namespace or not name:
        raise ValueError(f"--tls-secret {reference!r}: write it as NAMESPACE/NAME")
    secret = api.get(BY_KIND["Secret"], name, namespace)
    if secret is None:
        raise ValueError(f"Secret {reference} does not exist: create it, or omit --tls-secret")
    data = secret.get("data") or {}
    missing = [k for k in ("tls.crt", "tls.key") if k not in data]
    if missing:
        raise ValueError(
            f"Secret {reference} lacks {', '.join(missing)}: use a kubernetes.io/tls Secret"
        )
    cert = base64.b64decode(data["tls.crt"])
    return Tls(
        cert, base64.b64decode(data["tls.key"]), base64.b64decode(data.get("ca.crt", "")) or cert
    )
