"""Stage 6 of the flow: diagnoses and actions for people and machines (CLI text, HTML, metrics, status)."""
