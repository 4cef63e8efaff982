"""Stage: evaluation and metrics."""
