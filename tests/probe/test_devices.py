"""Scripts written for GPUs and clusters, probed on one CPU (docs/gpu-probes.md).

The scripts under tests/data/probe_gpu/ are ours, each in the shape of a public multi-GPU script it
names (pytorch/examples ddp-tutorial-series and distributed/ddp, transformers' run_glue under
torchrun, accelerate's nlp_example with fp16, TensorFlow's "Distributed training with Keras"),
adapted to local synthetic data and tiny models. Each correct script must come back all clear on a
CPU-only machine; each injected bug (labels outside the head, no zero_grad, lr 0, a frozen model) must
be confirmed under its code; none may reach the timeout. One probe child per test.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support import keras_python
from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, run_probe
from trainlint.probe.child.frameworks.cuda_on_cpu import launcher_name

DATA = Path(__file__).resolve().parents[1] / "data" / "probe_gpu"
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 150.0


def probe(tmp_path: Path, name: str, *replacements: tuple[str, str], args: tuple[str, ...] = (),
          launcher: str = "", python: str | None = None, text: str | None = None):
    """Probe a copy of tests/data/probe_gpu/<name> (with ``replacements`` applied: the injected bug)."""
    source = text if text is not None else (DATA / name).read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in source, f"{old!r} not in {name}"
        source = source.replace(old, new)
    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    report = run_probe(script, [], ProbeOptions(python=python, timeout=TIMEOUT, verbose=True, script_args=args,
                                                launcher=launcher))
    assert report.outcome != "timeout", explain(report)
    return report


def explain(report) -> str:
    lines = [f"{f.code} {f.probe.status.value if f.probe else '-'}: {f.message} | {f.probe.evidence if f.probe else ''}"
             for f in report.findings]
    return "\n".join([f"outcome {report.outcome}", *lines, *report.notes, *report.details[-4:]])


def assert_all_clear(report) -> None:
    assert report.outcome == "reached-training", explain(report)
    assert not report.findings, explain(report)
    assert not report.incomplete, explain(report)


def confirmed(report, code: str):
    found = [f for f in report.findings if f.code == code]
    assert found, explain(report)
    assert all(f.probe is not None and f.probe.status is ProbeStatus.CONFIRMED for f in found), explain(report)
    return found[0]


def note(report, pattern: str) -> str:
    hits = [n for n in report.notes if re.search(pattern, n)]
    assert hits, f"no note matches {pattern!r}\n" + explain(report)
    return hits[0]


# ---------------------------------------------------------------- launcher names (no child)


@pytest.mark.parametrize(("text", "name"), [
    ("torchrun --nproc_per_node=8", "torchrun"),
    ("python -m torch.distributed.launch --nproc_per_node 2", "torch.distributed.launch"),
    ("accelerate launch --multi_gpu --mixed_precision fp16", "accelerate"),
    ("deepspeed --num_gpus 8", "deepspeed"),
    ("mp.spawn", "mp.spawn"),
    ("python3.11", "python"),
    ("srun", None),
])
def test_launcher_command_lines(text, name):
    assert launcher_name(text) == name


def test_unknown_launcher_is_a_usage_error(cli, tmp_path):
    script = tmp_path / "t.py"
    script.write_text("print(1)\n", encoding="utf-8")
    result = cli("--probe", "--launcher", "srun -N 4", str(script))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a launcher the probe knows" in result.stderr


# ---------------------------------------------------------------- single GPU: .cuda(), GradScaler, autocast

SINGLE = "single_gpu_amp.py"


@pytest.mark.probe
def test_single_gpu_amp_script_all_clear_with_cuda_emulated(tmp_path):
    report = probe(tmp_path, SINGLE, args=("--epochs", "1"))
    assert_all_clear(report)
    mapped = note(report, "^CUDA emulated on CPU")
    for what in (".cuda() → CPU", ".to('cuda') → CPU", "GradScaler('cuda') → off",
                 "autocast('cuda', float16) → off (float32)", "torch.cuda.synchronize() ignored",
                 "torch.cuda.is_available() → True for the script"):
        assert what in mapped, mapped
    note(report, "float16 overflow .* could not be confirmed on CPU")


@pytest.mark.probe
def test_single_gpu_amp_without_zero_grad_is_tl701(tmp_path):
    report = probe(tmp_path, SINGLE, ("        optimizer.zero_grad(set_to_none=True)\n", ""))
    assert report.outcome == "reached-training", explain(report)
    f = confirmed(report, "TL701")
    assert "still hold step 1's gradients" in f.probe.evidence


@pytest.mark.probe
def test_single_gpu_amp_labels_outside_the_head_is_tl106(tmp_path):
    report = probe(tmp_path, SINGLE, ("model = Net().cuda()", "model = Net(num_classes=3).cuda()"))
    f = confirmed(report, "TL106")
    assert "out of bounds" in f.probe.evidence
    assert not [x for x in report.findings if x.code == "TL707"], explain(report)


@pytest.mark.probe
def test_single_gpu_amp_frozen_model_is_tl305(tmp_path):
    report = probe(tmp_path, SINGLE, ("    model = Net().cuda()\n",
                                      "    model = Net().cuda()\n    for p in model.parameters():\n"
                                      "        p.requires_grad = False\n"))
    confirmed(report, "TL305")
    assert not [x for x in report.findings if x.code == "TL707"], explain(report)


@pytest.mark.probe
def test_gpu_memory_growth_is_not_confirmed_on_cpu(tmp_path):
    # `total += loss` keeps every step's graph alive (TL703): on the GPU memory grows until OOM; the
    # probe cannot measure GPU memory on the CPU and must say so instead of passing the finding.
    script_text = (DATA / SINGLE).read_text(encoding="utf-8").replace(
        "        scaler.update()\n", "        scaler.update()\n        total = total + loss if step else loss\n")
    script = tmp_path / SINGLE
    script.write_text(script_text, encoding="utf-8")
    row = script_text.splitlines().index("        total = total + loss if step else loss") + 1
    static = Finding(code="TL703", name="loss-accumulated-as-tensor", message="static TL703", severity=Severity.WARNING,
                     filename=str(script), start=Position(row, 9), end=Position(row, 50))
    report = run_probe(script, [static], ProbeOptions(timeout=TIMEOUT, verbose=True))
    assert report.outcome == "reached-training", explain(report)
    assert any("GPU memory" in i and "could not be confirmed on CPU" in i for i in report.incomplete), explain(report)
    [f] = [x for x in report.findings if x.code == "TL703"]
    assert f.probe is not None and f.probe.status is not ProbeStatus.CONFIRMED, explain(report)


@pytest.mark.probe
def test_cuda_feature_without_emulation_is_a_status_not_a_finding(tmp_path):
    text = ("import torch\n"
            "model = torch.nn.Linear(4, 2).cuda()\n"
            "state = torch.cuda.get_rng_state()\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for _ in range(3):\n"
            "    opt.zero_grad(); model(torch.ones(2, 4, device='cuda')).sum().backward(); opt.step()\n")
    report = probe(tmp_path, "rng.py", text=text)
    assert report.outcome == "unsupported", explain(report)
    assert not report.findings, explain(report)
    assert any("get_rng_state" in i or "CUDA" in i for i in report.incomplete), explain(report)


@pytest.mark.probe
def test_device_map_on_a_gpu_is_the_cpu(tiny_env, tmp_path):
    text = ("import os\nimport torch\nfrom transformers import AutoModelForSequenceClassification\n"
            "model = AutoModelForSequenceClassification.from_pretrained(os.environ['TINY_CKPT'], num_labels=3,\n"
            "                                                           device_map={'': 0})\n"
            "model.train()\n"
            "print(torch.cuda.get_device_properties(0).total_memory, torch.cuda.memory_allocated())\n"
            "import tempfile\n"
            "path = os.path.join(tempfile.gettempdir(), 'head.pt')\n"
            "torch.save(model.classifier.state_dict(), path)\n"
            "model.classifier.load_state_dict(torch.load(path, map_location='cuda:0'))\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=5e-5)\n"
            "ids = torch.randint(5, 40, (4, 12)).cuda()\n"
            "labels = torch.tensor([0, 1, 2, 0], device='cuda')\n"
            "for step in range(5):\n"
            "    opt.zero_grad()\n"
            "    model(input_ids=ids, labels=labels).loss.backward()\n"
            "    opt.step()\n")
    report = probe(tmp_path, "device_map.py", text=text)
    assert_all_clear(report)
    mapped = note(report, "^CUDA emulated on CPU")
    assert "from_pretrained(device_map={'': 0}) → 'cpu'" in mapped
    assert "torch.load(map_location='cuda:0') → CPU" in mapped


# ---------------------------------------------------------------- a one-rank world: torchrun, launch, mp.spawn

TORCHRUN = "ddp_torchrun.py"


@pytest.mark.probe
def test_torchrun_ddp_script_all_clear_as_rank_0_of_1(tmp_path):
    report = probe(tmp_path, TORCHRUN, args=("50", "10"), launcher="torchrun")
    assert_all_clear(report)
    world = note(report, "^probed as rank 0 of a world of size 1")
    assert "RANK=0, WORLD_SIZE=1, LOCAL_RANK=0" in world and "MASTER_PORT=" in world
    assert "init_process_group(backend='nccl'" in world and "gloo" in world
    assert "DistributedDataParallel(device_ids=...) → CPU module" in note(report, "^CUDA emulated on CPU")


@pytest.mark.probe
def test_torchrun_ddp_lr_zero_is_tl506(tmp_path):
    report = probe(tmp_path, TORCHRUN, ("lr=1e-2", "lr=0.0"), args=("50", "10"), launcher="torchrun")
    f = confirmed(report, "TL506")
    assert "lr=0" in f.message


@pytest.mark.probe
def test_torchrun_ddp_frozen_model_is_tl305(tmp_path):
    frozen = "    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))\n"
    report = probe(tmp_path, TORCHRUN, (frozen, frozen + "    model.requires_grad_(False)\n"), args=("50", "10"),
                   launcher="torchrun")
    confirmed(report, "TL305")
    assert not [x for x in report.findings if x.code == "TL707"], explain(report)


@pytest.mark.probe
def test_mp_spawn_script_runs_rank_0_in_the_probe(tmp_path):
    # No --launcher: the script starts torch.distributed itself, world_size = torch.cuda.device_count().
    report = probe(tmp_path, "ddp_multigpu_spawn.py", args=("50", "10"))
    assert_all_clear(report)
    world = note(report, "^probed as rank 0 of a world of size 1")
    assert "mp.spawn(nprocs=1) → one call of main(0, ...)" in world
    assert "torch.cuda.device_count() → 1 for the script" in note(report, "^CUDA emulated on CPU")


@pytest.mark.probe
def test_distributed_launch_local_rank_script(tmp_path):
    report = probe(tmp_path, "ddp_launch_local_rank.py", launcher="python -m torch.distributed.launch")
    assert_all_clear(report)
    note(report, r"as `torch.distributed.launch` with one process")


@pytest.mark.probe
def test_distributed_launch_without_zero_grad_is_tl701(tmp_path):
    report = probe(tmp_path, "ddp_launch_local_rank.py", ("        optimizer.zero_grad()\n", ""),
                   launcher="torch.distributed.launch")
    confirmed(report, "TL701")


FSDP = """\
import os
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(local_rank)
model = FSDP(model, device_id=torch.cuda.current_device())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(100):
    x = torch.randn(8, 20, device="cuda")
    y = torch.randint(0, 4, (8,), device="cuda")
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
"""


@pytest.mark.probe
def test_fsdp_under_torchrun_all_clear(tmp_path):
    report = probe(tmp_path, "fsdp.py", text=FSDP, launcher="torchrun")
    assert_all_clear(report)
    assert "FullyShardedDataParallel(device_id=cuda) → CPU" in note(report, "^CUDA emulated on CPU")


WORLD_OF_ONE = """\
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard
from trainlint.probe.child.frameworks.cuda_on_cpu import _register_world_of_one, loopback_up

print("loopback:", loopback_up() or "up")
dist.init_process_group(_register_world_of_one(), store=dist.HashStore(), rank=0, world_size=1)
x = torch.arange(4.0)
dist.all_reduce(x)
dist.broadcast(x, 0)
dist.barrier()
gathered = torch.zeros(4)
dist.all_gather_into_tensor(gathered, x)
parts = [torch.zeros(4)]
dist.all_gather(parts, x)
scattered = torch.zeros(4)
dist.reduce_scatter_tensor(scattered, x)
assert x.tolist() == gathered.tolist() == parts[0].tolist() == scattered.tolist() == [0.0, 1.0, 2.0, 3.0]
ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
ddp(torch.ones(2, 3)).sum().backward()
assert float(ddp.module.bias.grad.sum()) == 4.0
fsdp = FSDP(torch.nn.Linear(3, 2), device_id=torch.device("cpu"))
fsdp(torch.ones(2, 3)).sum().backward()
seq = torch.nn.Sequential(torch.nn.Linear(3, 2))
fully_shard(seq)
seq(torch.ones(2, 3)).sum().backward()
print("world of one: ok")
"""


@pytest.mark.probe
def test_world_of_one_without_any_network(tmp_path):
    # gloo needs the loopback interface; where the sandbox cannot bring it up (a user namespace
    # nested in the network namespace's owner, as here), collectives of the one rank are copies.
    import shutil
    import subprocess
    import sys

    script = tmp_path / "one.py"
    script.write_text(WORLD_OF_ONE, encoding="utf-8")
    prefix = []
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "--net", "--map-root-user", unshare, "--user", "true"],
                                  capture_output=True).returncode == 0:
        prefix = [unshare, "--net", "--map-root-user", unshare, "--user"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*prefix, sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "world of one: ok" in done.stdout
    if prefix:
        assert "cannot be brought up" in done.stdout, done.stdout


@pytest.mark.probe
def test_deepspeed_engine_is_unsupported_never_a_finding(tmp_path):
    # A stand-in for the real package (not installed in the test environment): the probe's hook on
    # deepspeed.initialize must stop before it, whatever the package would do on a CPU.
    pkg = tmp_path / "deepspeed"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def initialize(*args, **kwargs):\n    raise RuntimeError('DeepSpeed needs CUDA')\n", encoding="utf-8")
    text = ("import argparse\nimport torch\nimport deepspeed\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
            "args = parser.parse_args()\n"
            "model = torch.nn.Linear(4, 2)\n"
            "engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(),\n"
            "                                               config={'train_batch_size': 8, 'fp16': {'enabled': True}})\n"
            "for _ in range(3):\n"
            "    loss = engine(torch.ones(8, 4)).sum()\n    engine.backward(loss)\n    engine.step()\n")
    report = probe(tmp_path, "ds_train.py", text=text, launcher="deepspeed")
    assert report.outcome == "unsupported", explain(report)
    assert not report.findings, explain(report)
    assert any("DeepSpeed" in i and "GPU" in i for i in report.incomplete), explain(report)


# ---------------------------------------------------------------- transformers under torchrun, accelerate fp16


@pytest.mark.probe
def test_trainer_under_torchrun_all_clear(tiny_env, tmp_path):
    report = probe(tmp_path, "trainer_torchrun.py", launcher="torchrun --nproc_per_node=8")
    assert_all_clear(report)
    assert "gloo" in note(report, "^probed as rank 0 of a world of size 1")


@pytest.mark.probe
def test_trainer_under_torchrun_labels_outside_the_head_is_tl106(tiny_env, tmp_path):
    report = probe(tmp_path, "trainer_torchrun.py", ("num_labels=len(label_list)", "num_labels=len(label_list) - 1"),
                   launcher="torchrun")
    confirmed(report, "TL106")


@pytest.mark.probe
def test_accelerate_fp16_script_all_clear(tiny_env, tmp_path):
    report = probe(tmp_path, "accelerate_fp16.py", launcher="accelerate launch --multi_gpu")
    assert_all_clear(report)
    assert "Accelerator(mixed_precision='fp16') → 'no' (float32)" in note(report, "^CUDA emulated on CPU")


@pytest.mark.probe
def test_accelerate_fp16_without_zero_grad_is_tl701(tiny_env, tmp_path):
    report = probe(tmp_path, "accelerate_fp16.py", ("            optimizer.zero_grad()\n", ""))
    confirmed(report, "TL701")


# ---------------------------------------------------------------- Keras: MirroredStrategy over two GPUs


MIRRORED = "keras_mirrored.py"


@pytest.mark.keras
@pytest.mark.probe
def test_keras_mirrored_strategy_over_two_gpus_all_clear(tmp_path):
    report = probe(tmp_path, MIRRORED, python=keras_python())
    assert_all_clear(report)
    assert "MirroredStrategy(['/gpu:0', '/gpu:1']) → ['/cpu:0']" in note(report, "^GPU devices emulated on CPU")


@pytest.mark.keras
@pytest.mark.probe
def test_keras_mirrored_strategy_lazily_built_model_all_clear(tmp_path):
    """No Input: the model creates its variables at its first call, which the probe makes; inside the
    strategy's scope, as fit makes it (outside, the optimizer refuses them: a false TL707)."""
    report = probe(tmp_path, MIRRORED, ("        tf.keras.layers.Input(shape=(28, 28, 1)),\n", ""), python=keras_python())
    assert_all_clear(report)


@pytest.mark.keras
@pytest.mark.probe
def test_keras_mirrored_strategy_lr_zero_is_tl506(tmp_path):
    report = probe(tmp_path, MIRRORED, ("learning_rate=1e-3)", "learning_rate=0.0)"), python=keras_python())
    confirmed(report, "TL506")


@pytest.mark.keras
@pytest.mark.probe
def test_keras_mirrored_strategy_labels_outside_the_head_is_tl106(tmp_path):
    report = probe(tmp_path, MIRRORED, ("integers(0, 10,", "integers(0, 12,"), python=keras_python())
    confirmed(report, "TL106")


@pytest.mark.keras
@pytest.mark.probe
def test_keras_mirrored_strategy_frozen_model_is_tl305(tmp_path):
    report = probe(tmp_path, MIRRORED, ("    model.compile(", "    model.trainable = False\n    model.compile("),
                   python=keras_python())
    confirmed(report, "TL305")


MULTI_WORKER = """\
import json
import os

import numpy as np
import tensorflow as tf

os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["localhost:12345", "localhost:23456"]},
                                      "task": {"type": "worker", "index": 0}})
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rng = np.random.default_rng(0)
x = rng.random((256, 8), dtype=np.float32)
y = rng.integers(0, 3, size=(256,))
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(3)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dataset, epochs=3)
"""

ONE_DEVICE = """\
import numpy as np
import tensorflow as tf

strategy = tf.distribute.OneDeviceStrategy("/gpu:0")
rng = np.random.default_rng(0)
with tf.device("/GPU:1"):
    x = tf.constant(rng.random((256, 8), dtype=np.float32))
y = rng.integers(0, 3, size=(256,))
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(3)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=32, epochs=3)
"""


@pytest.mark.keras
@pytest.mark.probe
def test_keras_multi_worker_strategy_runs_as_the_only_worker(tmp_path):
    # A TF_CONFIG naming a second worker would make the strategy wait for it until the timeout.
    report = probe(tmp_path, "multi_worker.py", text=MULTI_WORKER, python=keras_python())
    assert_all_clear(report)
    assert "MultiWorkerMirroredStrategy: TF_CONFIG ignored, the only worker" in note(report, "^GPU devices emulated")


@pytest.mark.keras
@pytest.mark.probe
def test_keras_one_device_strategy_and_gpu_scopes_on_the_cpu(tmp_path):
    report = probe(tmp_path, "one_device.py", text=ONE_DEVICE, python=keras_python())
    assert_all_clear(report)
    mapped = note(report, "^GPU devices emulated")
    assert "OneDeviceStrategy('/gpu:0') → '/cpu:0'" in mapped and "tf.device('/GPU:1') → '/cpu:0'" in mapped


@pytest.mark.keras
@pytest.mark.probe
def test_keras_tpu_with_fallback_runs_on_the_default_strategy(tmp_path):
    # The usual notebook form: try a TPU, else the default strategy.
    text = ("import tensorflow as tf\n"
            "try:\n"
            "    tpu = tf.distribute.cluster_resolver.TPUClusterResolver()\n"
            "    tf.config.experimental_connect_to_cluster(tpu)\n"
            "    tf.tpu.experimental.initialize_tpu_system(tpu)\n"
            "    strategy = tf.distribute.TPUStrategy(tpu)\n"
            "except ValueError:\n"
            "    strategy = tf.distribute.get_strategy()\n"
            "with strategy.scope():\n"
            "    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])\n"
            "    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),\n"
            "                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))\n"
            "x = tf.random.stateless_normal((64, 4), seed=(1, 2))\n"
            "y = tf.cast(tf.argmax(x[:, :3], axis=1), tf.int64)\n"
            "model.fit(x, y, batch_size=16, epochs=2)\n")
    report = probe(tmp_path, "tpu_fallback.py", text=text, python=keras_python())
    assert_all_clear(report)
    assert "TPUClusterResolver() → no TPU" in note(report, "^GPU devices emulated")


@pytest.mark.keras
@pytest.mark.probe
def test_keras_tpu_strategy_is_unsupported(tmp_path):
    text = ("import tensorflow as tf\n"
            "resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')\n"
            "tf.config.experimental_connect_to_cluster(resolver)\n"
            "tf.tpu.experimental.initialize_tpu_system(resolver)\n"
            "strategy = tf.distribute.TPUStrategy(resolver)\n"
            "with strategy.scope():\n"
            "    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])\n"
            "    model.compile(optimizer='adam', loss='mse')\n"
            "model.fit(tf.ones((8, 4)), tf.ones((8, 2)), epochs=1)\n")
    report = probe(tmp_path, "tpu.py", text=text, python=keras_python())
    assert report.outcome == "unsupported", explain(report)
    assert not report.findings, explain(report)
    assert any("TPU" in i for i in report.incomplete), explain(report)
