"""The one place for each Kubernetes API call the operator makes (besides what Kopf does itself)."""
