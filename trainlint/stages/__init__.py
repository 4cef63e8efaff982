"""The training pipeline, stage by stage. Each stage package holds the static rules (``rules.py``)
and, beside them, the runtime probe checks of the same stage (``probe*.py``)."""
