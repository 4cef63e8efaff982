"""Stage: the file itself (cannot be read, parsed or analysed)."""
