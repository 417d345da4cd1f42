"""Regenerate the Python code for every proto under protos/ into gen/python/.

The one place generated code comes from: `make generate` runs this, and `make check-generated` runs it and fails
on a diff. It works offline: protoc comes from grpcio-tools, the type stubs from mypy-protobuf.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"
OUT = ROOT / "gen" / "python"


def main() -> int:
    protos = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    well_known = resources.files("grpc_tools") / "_proto"
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "grpc_tools.protoc",
            f"--proto_path={PROTOS}",
            f"--proto_path={well_known}",
            f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
            f"--python_out={tmp}",
            f"--grpc_python_out={tmp}",
            f"--mypy_out={tmp}",
            f"--mypy_grpc_out={tmp}",
            *protos,
        ]
        if protoc.main(args) != 0:
            print("protoc failed", file=sys.stderr)
            return 1
        generated = Path(tmp)
        # Each proto package's directory becomes a regular Python package. Its parents (secondbrain,
        # secondbrain.ingest, ...) are the hand-written packages; pyproject.toml maps each onto its directory.
        for module in list(generated.rglob("*_pb2.py")):
            (module.parent / "__init__.py").touch()
        shutil.rmtree(OUT, ignore_errors=True)
        shutil.copytree(generated, OUT)
    print(f"generated {len(protos)} protos into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
