"""Kubernetes resources generated from the models (the CRD)."""
