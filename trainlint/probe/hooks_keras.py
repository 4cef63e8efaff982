"""Child-side plugin for TensorFlow/Keras ``model.fit`` (the runner loads every ``hooks_*.py``).

The hooks and the probe pipeline live in :mod:`trainlint.probe.child_keras`; see PROTOCOL.md.
"""

from trainlint.probe.child_keras import install

__all__ = ["install"]
