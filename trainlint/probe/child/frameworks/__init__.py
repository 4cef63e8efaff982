"""The framework plugins of the probe (child side): each module has ``install(h)``, which registers
post-import hooks on the framework's entry points and announces the observation points
(``../points.py``) when the script reaches them. A plugin reports nothing itself and imports no stage:
the checks subscribe to its points. ``PLUGINS`` is the order they are installed in: where two plugins
hook the same module, the earlier one's hook runs first (the CPU emulation of CUDA before the loop
observer on ``torch``; its ``device_map`` rewrite inside the ``--tiny-model`` loader).

- ``cuda_on_cpu``: scripts written for GPUs and clusters, on one CPU (``cuda.emulated``);
- ``keras_fit``: ``Model.fit`` (``fit.*``) and hand-written ``GradientTape`` loops (``tape.*``);
- ``tf_devices``: TensorFlow distribution strategies and TPUs, on one CPU;
- ``torch_loop``: hand-written PyTorch loops (``loop.*``);
- ``hf_datasets``: ``load_dataset``, cut to the probe's rows after its label columns are counted;
- ``hf_trainer``: the transformers ``Trainer`` (``trainer.*``), ``--tiny-model``.
"""

PLUGINS = (
    "trainlint.probe.child.frameworks.cuda_on_cpu",
    "trainlint.probe.child.frameworks.keras_fit",
    "trainlint.probe.child.frameworks.tf_devices",
    "trainlint.probe.child.frameworks.torch_loop",
    "trainlint.probe.child.frameworks.hf_datasets",
    "trainlint.probe.child.frameworks.hf_trainer",
)
