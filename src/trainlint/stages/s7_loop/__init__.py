"""Stage: the training loop."""
