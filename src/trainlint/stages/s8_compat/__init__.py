"""Stage: API compatibility."""
