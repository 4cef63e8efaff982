"""The child side of the probe: what runs inside the user's interpreter (``--python``), started as
``python -m trainlint.probe.child`` in the sandbox (see ../PROTOCOL.md).

Every module of this package imports only the standard library at import time, and the frameworks
(torch, transformers, datasets, tensorflow, keras) lazily, once the script has imported them; never
libcst, click or the parent side of trainlint: the user's interpreter has none of them.
"""
