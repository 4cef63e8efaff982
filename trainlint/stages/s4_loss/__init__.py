"""Stage: loss and labels."""
