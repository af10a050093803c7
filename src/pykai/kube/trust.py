"""TLS toward the apiserver, as kubectl's Go TLS does it: which certificates the client trusts,
and the client certificate it shows.

Go trusts every certificate in its pool as an anchor, so a kubeconfig whose
``certificate-authority`` holds the apiserver's own serving certificate (not the CA that signed
it) works with kubectl; OpenSSL anchors only self-signed certificates unless told to accept a
partial chain, which every context made here is (``VERIFY_X509_PARTIAL_CHAIN``, Python 3.13's
name for OpenSSL's flag; its value on older Pythons)."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

PARTIAL_CHAIN = getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0x80000)
"""OpenSSL's X509_V_FLAG_PARTIAL_CHAIN: any certificate of the trust store is an anchor."""


def server_trust(
    authority_file: str | None = None, authority_pem: str | None = None, insecure: bool = False
) -> ssl.SSLContext:
    """A client context that checks the apiserver's certificate against the certificates of
    ``authority_file`` or ``authority_pem`` (PEM text), else the system's roots, each of them an
    anchor; ``insecure``: no check at all (``insecure-skip-tls-verify``). Raises OSError,
    ssl.SSLError or ValueError for certificates that cannot be read."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context = ssl.create_default_context(cafile=authority_file, cadata=authority_pem)
    context.verify_flags |= PARTIAL_CHAIN
    return context


def show_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Make ``context`` show a client certificate given as PEM data (ssl loads only files: they
    are written to a directory of the caller's own, the key readable by it alone, and removed).
    Raises ssl.SSLError for a certificate or key that cannot be used."""
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert.write_bytes(cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        context.load_cert_chain(cert, key)
