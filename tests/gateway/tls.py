"""HTTPS for the gateway in tests: a certificate authority and a server certificate made in the test (the
`cryptography` package), and another Envoy (serving TLS with it, or not) in front of the `gateway` fixture's
services."""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from secondbrain.gateway.envoy import Envoy
from secondbrain.gateway.envoy_config import GatewayLayout, TlsFiles, Upstream
from tests.gateway.conftest import ALLOWED_ORIGIN, Gateway

# A name that is not this machine's (so not a secure context over plain HTTP), which Chromium is told to resolve to
# loopback: what a phone on the home network sees of the server.
PHONE_NAME = "secondbrain.home.test"


@dataclass(frozen=True)
class Certificates:
    """The test CA's certificate, and the server's certificate and key it signed, as PEM files."""

    ca: Path
    cert: Path
    key: Path
    # base64(SHA-256(the server key's SubjectPublicKeyInfo)): what Chromium's --ignore-certificate-errors-spki-list
    # takes to trust this one certificate.
    spki_sha256: str

    @property
    def tls(self) -> TlsFiles:
        return TlsFiles(cert=self.cert, key=self.key)


def make_certificates(directory: Path, names: tuple[str, ...] = ("localhost", PHONE_NAME)) -> Certificates:
    """A CA and a server certificate for `names` and 127.0.0.1, valid from an hour ago for a day."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secondbrain test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alternative_names: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alternative_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = Certificates(
        ca=directory / "ca.pem",
        cert=directory / "server.pem",
        key=directory / "server-key.pem",
        spki_sha256=base64.b64encode(
            hashlib.sha256(
                key.public_key().public_bytes(
                    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            ).digest()
        ).decode(),
    )
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths.key.chmod(0o600)
    return paths


async def start_envoy(gateway: Gateway, workdir: Path, *, tls: TlsFiles | None, loopback_names_only: bool) -> Envoy:
    """Another Envoy in front of the services `gateway` started (its ingest, retrieve, chat and shim), as the
    conftest's is laid out, serving HTTPS with `tls` (plain HTTP with None); the caller stops it."""
    assert gateway.shim is not None
    layout = GatewayLayout(
        listen_host="127.0.0.1",
        listen_port=0,
        admin_socket=workdir / "admin.sock",
        ingest=Upstream.parse(gateway.ingest_address),
        retrieve=Upstream.parse(gateway.chat.retrieve_address),
        chat=Upstream.parse(gateway.chat.chat_address),
        shim=Upstream("127.0.0.1", gateway.shim.port),
        cors_origins=(ALLOWED_ORIGIN,),
        loopback_names_only=loopback_names_only,
        tls=tls,
    )
    return await Envoy.start(layout, workdir)
