"""Retrieval evaluation: a vault's own questions and BEIR benchmarks, scored per arm with ir-measures."""
