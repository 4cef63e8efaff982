"""The frameworks a training script imports, and the distribution that installs each (both sides:
the parent checks the probe's interpreter for them before it starts the run, the child recognises a
``ModuleNotFoundError`` for one while the script runs). Standard library only.
"""

from __future__ import annotations

#: Top-level module → the distribution ``pip install`` takes for it.
DISTRIBUTIONS: dict[str, str] = {
    "torch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio", "torchtext": "torchtext",
    "transformers": "transformers", "datasets": "datasets", "tokenizers": "tokenizers", "evaluate": "evaluate",
    "accelerate": "accelerate", "peft": "peft", "trl": "trl", "bitsandbytes": "bitsandbytes",
    "sentencepiece": "sentencepiece", "safetensors": "safetensors", "huggingface_hub": "huggingface_hub",
    "lightning": "lightning", "pytorch_lightning": "pytorch-lightning", "torchmetrics": "torchmetrics",
    "timm": "timm", "deepspeed": "deepspeed", "unsloth": "unsloth",
    "tensorflow": "tensorflow", "keras": "keras", "tf_keras": "tf-keras", "tensorflow_datasets": "tensorflow-datasets",
    "tensorflow_hub": "tensorflow-hub", "numpy": "numpy", "pandas": "pandas", "scipy": "scipy",
    "sklearn": "scikit-learn", "matplotlib": "matplotlib", "PIL": "pillow", "cv2": "opencv-python",
    "yaml": "pyyaml", "tqdm": "tqdm", "wandb": "wandb", "tensorboard": "tensorboard", "nltk": "nltk",
}

#: Frameworks that train with PyTorch: a script that imports one of them needs ``torch`` too, even when
#: it never imports torch itself (transformers' Trainer and PyTorch model classes).
NEEDS_TORCH = frozenset({"transformers", "trl", "peft", "accelerate", "lightning", "pytorch_lightning", "timm",
                         "torchmetrics", "torchvision", "torchaudio", "unsloth"})
#: Frameworks that also run on TensorFlow: with one of these imported, transformers does not need torch.
TENSORFLOW = frozenset({"tensorflow", "keras", "tf_keras"})


def framework_of(module: str | None) -> str | None:
    """The known framework a (dotted) module name belongs to, if any."""
    top = (module or "").split(".", 1)[0]
    return top if top in DISTRIBUTIONS else None
