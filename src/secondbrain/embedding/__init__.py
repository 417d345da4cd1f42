"""Embedders: text to vectors, behind one interface, chosen by configuration."""
