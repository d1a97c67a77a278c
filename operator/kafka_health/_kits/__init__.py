"""Small shared helpers with no project knowledge (paths, processes, waiting)."""
