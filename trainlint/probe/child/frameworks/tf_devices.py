"""Child-side plugin: TensorFlow scripts written for GPUs and TPUs, probed on one CPU
(docs/gpu-probes.md; the PyTorch half is :mod:`trainlint.probe.child.frameworks.cuda_on_cpu`).

Post-import hooks only: nothing is imported before the script imports tensorflow.

- ``tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])`` (and MirroredStrategy's base of
  ``MultiWorkerMirroredStrategy``) mirror over the CPU device only: one replica. A strategy over
  devices that do not exist builds its variables (soft placement) and then waits forever in its
  first cross-device reduction;
- ``MultiWorkerMirroredStrategy`` runs as the only worker (a ``TF_CONFIG`` naming other workers
  would wait for them);
- ``OneDeviceStrategy("/gpu:0")`` and ``tf.device("/gpu:N")`` scopes use ``/cpu:0``;
- TPUs: ``TPUClusterResolver()`` raises ValueError at once, as on a machine without a TPU, so a
  script that falls back to the default strategy goes on; when the script does not catch it, or
  reaches ``TPUStrategy`` / ``initialize_tpu_system``, the run stops with the status ``unsupported``
  (never a finding, never "all clear").
"""

from __future__ import annotations

import functools
import os
from typing import Any

from trainlint.probe.child.harness import Harness

_mapped: list[str] = []


class NoTPU(ValueError):
    """What ``TPUClusterResolver()`` raises in the probe (a ValueError, as without a TPU)."""


def install(h: Harness) -> None:
    h.when_imported("tensorflow", lambda m: _on_tensorflow(h, m))
    h.exception_hooks.insert(0, lambda exc, line: _unsupported(h, "TPUClusterResolver") if isinstance(exc, NoTPU)
                               else None)

    def end() -> None:
        if _mapped:
            h.note("GPU devices emulated on CPU (the probe has no GPU): " + "; ".join(dict.fromkeys(_mapped)))

    h.on_end(end)


def _is_accelerator(device: Any) -> bool:
    text = str(device or "").lower()
    return "gpu" in text or "tpu" in text or "cuda" in text


def _has_gpu(tf: Any) -> bool:
    try:
        return bool(tf.config.list_physical_devices("GPU"))
    except Exception:  # noqa: BLE001
        return False


def _unsupported(h: Harness, what: str) -> None:
    reason = f"{what} needs a TPU; the probe runs on CPU (probe the same model under the default strategy)"
    h.incomplete("TPU strategy", reason)
    h.stop("unsupported", f"not probed: {reason}", h.user_line())


def _on_tensorflow(h: Harness, tf: Any) -> None:
    if _has_gpu(tf):
        return
    try:
        from tensorflow.python.distribute import mirrored_strategy, one_device_strategy
    except ImportError:
        return

    Mirrored = mirrored_strategy.MirroredExtended
    original_mirrored = Mirrored.__init__

    @functools.wraps(original_mirrored)
    def mirrored_init(self: Any, container_strategy: Any, devices: Any = None, cross_device_ops: Any = None) -> None:
        if devices is not None and any(_is_accelerator(d) for d in devices):
            _mapped.append(f"{type(container_strategy).__name__}({list(devices)}) → ['/cpu:0'] (one replica)")
            devices = ["/cpu:0"]
        original_mirrored(self, container_strategy, devices=devices, cross_device_ops=cross_device_ops)

    Mirrored.__init__ = mirrored_init

    OneDevice = one_device_strategy.OneDeviceExtended
    original_one = OneDevice.__init__

    @functools.wraps(original_one)
    def one_init(self: Any, container_strategy: Any, device: Any) -> None:
        if _is_accelerator(device):
            _mapped.append(f"OneDeviceStrategy({device!r}) → '/cpu:0'")
            device = "/cpu:0"
        original_one(self, container_strategy, device)

    OneDevice.__init__ = one_init

    try:
        from tensorflow.python.distribute import collective_all_reduce_strategy as cars
    except ImportError:
        cars = None
    if cars is not None:
        Collective = cars.CollectiveAllReduceStrategy
        original_collective = Collective.__init__

        @functools.wraps(original_collective)
        def collective_init(self: Any, *args: Any, **kwargs: Any) -> None:
            if os.environ.pop("TF_CONFIG", None) is not None:
                _mapped.append("MultiWorkerMirroredStrategy: TF_CONFIG ignored, the only worker")
            else:
                _mapped.append("MultiWorkerMirroredStrategy → the only worker, on '/cpu:0'")
            original_collective(self, *args, **kwargs)

        Collective.__init__ = collective_init

    original_device = getattr(tf, "device", None)
    if original_device is not None:
        @functools.wraps(original_device)
        def device(name: Any) -> Any:
            if isinstance(name, str) and _is_accelerator(name):
                _mapped.append(f"tf.device({name!r}) → '/cpu:0'")
                name = "/cpu:0"
            return original_device(name)

        tf.device = device

    # TPUs: a clear status instead of a resolver error or a wait.
    try:
        from tensorflow.python.distribute import tpu_strategy
        from tensorflow.python.distribute.cluster_resolver.tpu import tpu_cluster_resolver
    except ImportError:
        return

    def no_tpu(self: Any, *args: Any, **kwargs: Any) -> None:
        # As on a machine without a TPU, at once (the real resolver may wait on a metadata server):
        # a script that falls back to the default strategy goes on; one that does not ends unsupported.
        _mapped.append("TPUClusterResolver() → no TPU (ValueError)")
        raise NoTPU("Please provide a TPU Name to connect to: no TPU here (the trainlint probe runs on CPU)")

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        _unsupported(h, "TPUStrategy")

    tpu_cluster_resolver.TPUClusterResolver.__init__ = no_tpu
    tpu_strategy.TPUExtended.__init__ = refuse
    tpu_api = getattr(getattr(tf, "tpu", None), "experimental", None)
    if tpu_api is not None and hasattr(tpu_api, "initialize_tpu_system"):
        tpu_api.initialize_tpu_system = lambda *a, **k: _unsupported(h, "tf.tpu.experimental.initialize_tpu_system")
