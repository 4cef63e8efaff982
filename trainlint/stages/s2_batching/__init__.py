"""Stage: batching and collation."""
