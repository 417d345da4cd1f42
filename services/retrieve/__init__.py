"""The retrieve service: condense, hybrid lexical + vector search fused in SQL, rerank, expand, cite."""
