"""The Kopf operator: thin handlers wiring collect → diagnose → plan → remediate → report per policy."""
