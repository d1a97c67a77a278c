"""Pydantic v2 models: the typed boundaries between stages (and the CRD / CLI JSON schemas)."""
