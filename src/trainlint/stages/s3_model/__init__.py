"""Stage: model and head."""
