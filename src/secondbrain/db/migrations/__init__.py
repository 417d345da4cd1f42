"""Versioned SQL migrations, NNNN_description.sql, applied in order by secondbrain.db.migrate."""
