"""X.509 for local use: a certificate authority, and the server and client certificates it
signs (the local control plane's apiserver and users, the admission webhook)."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _alternative_names(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


@dataclass(frozen=True)
class Authority:
    """A CA: its certificate and the key it signs with."""

    cert: x509.Certificate
    key: rsa.RSAPrivateKey

    @classmethod
    def new(
        cls, name: str, days: int = 365, *, organization: str = "", dns_names: tuple[str, ...] = ()
    ) -> Authority:
        """A self-signed CA named ``name`` (in ``organization``, with ``dns_names`` as its
        subject alternative names, if given)."""
        key = _key()
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
        if organization:
            attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        subject = x509.Name(attributes)
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        )
        if dns_names:
            names = x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names])
            builder = builder.add_extension(names, critical=False)
        return cls(builder.sign(key, hashes.SHA256()), key)

    @classmethod
    def load(cls, cert_pem: bytes, key_pem: bytes) -> Authority:
        """A CA written earlier with ``cert_pem`` and ``key_pem``."""
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the CA key is not an RSA key")
        return cls(x509.load_pem_x509_certificate(cert_pem), key)

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate (PEM): what clients and servers trust."""
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        """The CA key (PEM)."""
        return _pem(self.key)

    def issue(
        self,
        common_name: str,
        *,
        hosts: Sequence[str] = (),
        organizations: Sequence[str] = (),
        days: int = 365,
    ) -> tuple[bytes, bytes]:
        """A certificate and its key (PEM), signed by this CA: a serving certificate for
        ``hosts`` (DNS names or IPs) when given, else a client certificate, whose common name
        and organizations Kubernetes reads as the user and its groups."""
        key = _key()
        subject = x509.Name(
            [
                *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if hosts else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(_alternative_names(hosts)), critical=False
            )
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem(key)
