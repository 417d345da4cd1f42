"""The gRPC bootstrap every service shares: server, health, reflection, error mapping, graceful shutdown."""
