"""The gateway: Envoy (grpc-web for the browser) and the REST + SSE shim, both in front of the gRPC services."""
