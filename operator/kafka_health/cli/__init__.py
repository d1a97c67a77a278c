"""The `kafka-health` command line."""
