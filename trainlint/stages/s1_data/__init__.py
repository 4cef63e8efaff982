"""Stage: data (what the dataset holds)."""
