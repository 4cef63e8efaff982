"""Stage: optimizer and hyperparameters."""
