"""Executors: carry out one planned action against Kafka and Kubernetes, persisting every step."""
