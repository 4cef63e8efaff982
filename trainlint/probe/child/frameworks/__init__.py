"""The framework plugins of the probe (child side): each module has ``install(h)``, which registers
post-import hooks on the framework's entry points. ``PLUGINS`` is the order they are installed in:
where two plugins hook the same module, the earlier one's hook runs first (the CPU emulation of CUDA
before the loop observer on ``torch``; its ``device_map`` rewrite inside the ``--tiny-model`` loader).
"""

PLUGINS = (
    "trainlint.probe.child.frameworks.cuda_on_cpu",
    "trainlint.probe.child.frameworks.keras_fit",
    "trainlint.probe.child.frameworks.tf_devices",
    "trainlint.probe.child.frameworks.hf_trainer",
)
