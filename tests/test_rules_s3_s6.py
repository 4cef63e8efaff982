"""Stages 3 to 6 (model, loss, optimizer, evaluation): each rule reports only on premises the source
establishes. The scripts here keep the shapes the findings (and the silences) were seen in."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from support import ROOT, lint

from trainlint.facts import FACT_TYPES, ClassValue, Facts, walk


def case(name: str) -> str:
    """A case of the buggy set: a transcription of a real bug, its line marked `# BUG TLxxx`."""
    return (ROOT / "benchmarks" / "buggy" / "cases" / name).read_text(encoding="utf-8")


def marked(source: str, code: str) -> list[int]:
    return [i for i, line in enumerate(source.splitlines(), 1) if f"# BUG {code}" in line]


def lines(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source, code) if f.code == code]


def _facts(source: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(source))
    index, where = walk(module, FACT_TYPES | {"With"})
    return Facts(module, index, where)


# -- facts: a class that derives from the class its own name held before ----------------------------

# in the shape of the Mario RL tutorial (PyTorchKorea/tutorials-kr intermediate_source/mario_rl_tutorial.py):
# the agent class is grown section by section, each `class Mario(Mario):` deriving from the one before
MARIO = """
import torch
from torch import nn


class Mario:
    def __init__(self, state_dim, action_dim, save_dir):
        self.net = MarioNet(state_dim, action_dim).float()
        self.exploration_rate = 1


class Mario(Mario):
    def __init__(self, state_dim, action_dim, save_dir):
        super().__init__(state_dim, action_dim, save_dir)
        self.batch_size = 32


class MarioNet(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.online = nn.Linear(input_dim, output_dim)
        self.target = nn.Linear(input_dim, output_dim)
        for p in self.target.parameters():
            p.requires_grad = False

    def forward(self, input, model):
        return self.online(input) if model == "online" else self.target(input)


class Mario(Mario):
    def __init__(self, state_dim, action_dim, save_dir):
        super().__init__(state_dim, action_dim, save_dir)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=0.00025)
        self.loss_fn = torch.nn.SmoothL1Loss()

    def update_Q_online(self, td_estimate, td_target):
        loss = self.loss_fn(td_estimate, td_target)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


mario = Mario(state_dim=(4, 84, 84), action_dim=2, save_dir="checkpoints")
"""


def test_a_class_deriving_from_the_class_its_name_held_before_is_linted():
    findings = lint(MARIO, "ALL")
    assert not [f for f in findings if f.code == "TL003"], [f.message for f in findings]
    facts = _facts(MARIO)
    classes = [c for c in facts.index["ClassDef"] if c.name.value == "Mario"]
    first, second, third = classes
    assert facts.base_binding("Mario", second).value is first
    assert facts.base_binding("Mario", third).value is second
    v = facts.value_of(cst.ensure_type(third.bases[0].value, cst.Name), third)
    assert isinstance(v, ClassValue)


# -- TL504 ------------------------------------------------------------------------------------------

# in the shape of PyTorchKorea/tutorials-kr beginner_source/blitz/autograd_tutorial.py: the first section
# names its optimizer `optim`; the later section's `from torch import nn, optim` makes `optim` the module
# again, and the new model gets an optimizer of its own
AUTOGRAD_TUTORIAL = """
import torch
from torchvision.models import resnet18, ResNet18_Weights

model = resnet18(weights=ResNet18_Weights.DEFAULT)
data = torch.rand(1, 3, 64, 64)
labels = torch.rand(1, 1000)
prediction = model(data)
loss = (prediction - labels).sum()
loss.backward()
optim = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
optim.step()

from torch import nn, optim

model = resnet18(weights=ResNet18_Weights.DEFAULT)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(512, 10)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
"""


def test_tl504_silent_when_an_import_rebinds_the_optimizer_name():
    assert lines(AUTOGRAD_TUTORIAL, "TL504") == []
    # without the import, the old SGD object is what `optim` names when it steps for the new model
    stepped = AUTOGRAD_TUTORIAL.replace("from torch import nn, optim", "from torch import nn") + (
        "model(data).sum().backward()\noptim.step()\n")
    assert lines(stepped, "TL504") == [16]


# in the shape of rasbt/LLMs-from-scratch ch05: the trained model is rebuilt to reload its weights for
# inference; the old optimizer's state is saved, never stepped, and a new optimizer is built later
LLM_CH05 = """
import torch
from previous_chapters import GPTModel

model = GPTModel(GPT_CONFIG_124M)
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.0004, weight_decay=0.1)
train_losses, val_losses, tokens_seen = train_model_simple(
    model, train_loader, val_loader, optimizer, device,
    num_epochs=10, eval_freq=5, eval_iter=5, start_context="Every effort moves you", tokenizer=tokenizer)
torch.save(model.state_dict(), "model.pth")

model = GPTModel(GPT_CONFIG_124M)
model.load_state_dict(torch.load("model.pth", map_location=device, weights_only=True))
model.eval()

torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()},
           "model_and_optimizer.pth")
checkpoint = torch.load("model_and_optimizer.pth", weights_only=True)
model = GPTModel(GPT_CONFIG_124M)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer = torch.optim.AdamW(model.parameters(), lr=0.0005, weight_decay=0.1)
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
model.train()
"""


def test_tl504_silent_when_the_old_optimizer_never_steps_for_the_new_model():
    assert lines(LLM_CH05, "TL504") == []
    # training the reloaded model with the old optimizer is the bug
    resumed = LLM_CH05.replace('torch.save({"model_state_dict"', "train_model_simple(model, train_loader, "
                               "val_loader, optimizer, device, num_epochs=1)\ntorch.save({\"model_state_dict\"")
    assert lines(resumed, "TL504") == [13]


# -- TL403 ------------------------------------------------------------------------------------------

# in the shape of PacktPublishing/Deep-Learning-with-TensorFlow-and-Keras-3rd-edition Chapter_2
# logistic_regression_using_keras_API.ipynb: a sigmoid output layer with SparseCategoricalCrossentropy(from_logits=True)
KERAS_SIGMOID_SPARSE = """
import tensorflow as tf
import tensorflow.keras as K
from tensorflow.keras.layers import Dense, Flatten

((train_data, train_labels), (test_data, test_labels)) = tf.keras.datasets.mnist.load_data()
model = K.Sequential([
    Flatten(input_shape=(28, 28)),
    Dense(10, activation='sigmoid')
])
model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])
history = model.fit(x=train_data, y=train_labels, epochs=50, validation_split=0.2)
"""


def test_tl403_says_what_the_keras_loss_applies():
    [f] = lint(KERAS_SIGMOID_SPARSE, "TL403")
    assert "applies softmax" in f.message and "again" not in f.message, f.message
    binary = KERAS_SIGMOID_SPARSE.replace("SparseCategoricalCrossentropy", "BinaryCrossentropy")
    [f] = lint(binary, "TL403")
    assert "applies sigmoid to them again" in f.message, f.message
    softmax = KERAS_SIGMOID_SPARSE.replace("'sigmoid'", "'softmax'")
    [f] = lint(softmax, "TL403")
    assert "ends in a softmax" in f.message and "applies softmax to them again" in f.message, f.message


# in the shape of jeffheaton/t81_558_deep_learning class_07_2_Keras_gan (the fix: jeffheaton/t81_558_deep_learning
# @2619685a): the discriminator is built by a helper with `model.add(...)` and ends in a sigmoid; the loss
# object shared by the loss helpers is `from_logits=True`; the generator, built the same way beside it, ends in tanh
GAN = case("t81_558_keras_gan_sigmoid_bce_from_logits.py")


def test_tl403_keras_loss_object_called_on_a_sigmoid_model_output():
    assert lines(GAN, "TL403") == marked(GAN, "TL403")
    # the generator's tanh output given to the loss: no probabilities, nothing to report
    on_generator = GAN.replace("real_output = discriminator(images, training=True)",
                               "real_output = generator(seed, training=True)").replace(
        "fake_output = discriminator(generated_images, training=True)", "fake_output = generated_images")
    assert lines(on_generator, "TL403") == []
    # the repository's fix: the sigmoid kept, `from_logits=True` dropped
    assert lines(GAN.replace("from_logits=True", "from_logits=False"), "TL403") == []


# in the shape of Yard1/ray-skorch's README example (Yard1/ray-skorch#18): a module class handed, as a class,
# to a skorch-style wrapper with `criterion=nn.CrossEntropyLoss`; the loss is computed inside the library
RAY_SKORCH = case("ray_skorch_readme_module_softmax.py")


def test_tl403_module_class_given_to_a_criterion_wrapper():
    assert lines(RAY_SKORCH, "TL403") == marked(RAY_SKORCH, "TL403")  # the softmax in `forward`
    # the merged fix: no softmax in forward
    assert lines(RAY_SKORCH.replace("X = self.softmax(self.output(X))", "X = self.output(X)"), "TL403") == []
    # skorch's NeuralNetClassifier with its default NLLLoss expects probabilities: right as it is
    default = RAY_SKORCH.replace("from ray_skorch import RayTrainNeuralNet", "from skorch import NeuralNetClassifier") \
        .replace("RayTrainNeuralNet(", "NeuralNetClassifier(").replace("criterion=nn.CrossEntropyLoss,", "")
    assert "criterion=nn.CrossEntropyLoss," not in default and lines(default, "TL403") == []


def test_program_reads_each_sequential_from_the_adds_of_its_own_function():
    from trainlint.facts.objects import Module, Output
    from trainlint.facts.program import program

    facts = _facts(GAN)
    p = program(facts)
    made = {a.targets[0].target.value: a for a in facts.index["Assign"] if len(a.targets) == 1
            and isinstance(a.targets[0].target, cst.Name) and a.targets[0].target.value in ("generator", "discriminator")}
    disc = p.of(made["discriminator"].value, made["discriminator"])
    gen = p.of(made["generator"].value, made["generator"])
    assert isinstance(disc, Module) and disc.output is Output.SIGMOID
    assert isinstance(gen, Module) and gen.output is None  # a conditional `add`: its last layer is not known


# -- TL303 ------------------------------------------------------------------------------------------

# in the shape of ayminovitch/fine-tune-codebase (its #2, "pad_token crash"): the checkpoint is an argparse
# default handed through `main` to a helper whose nested function tokenizes with padding
CODEBASE = case("codebase_finetune_codellama_no_pad_token.py")


def test_tl303_tokenizer_of_a_command_line_default_asked_to_pad():
    [f] = lint(CODEBASE, "TL303")
    assert [f.start.row] == marked(CODEBASE, "TL303") and "`--model_name` default" in f.message and f.severity.value == "warning"
    assert len(f.message) <= 160
    # the author's answer: give it the end-of-sequence token as its pad token
    fixed = CODEBASE.replace("        def tokenize_function", "        tokenizer.pad_token = tokenizer.eos_token\n\n"
                             "        def tokenize_function")
    assert lines(fixed, "TL303") == []
    # a checkpoint whose tokenizer has one (and an option without a default: unknown)
    assert lines(CODEBASE.replace("codellama/CodeLlama-7b-hf", "bert-base-uncased"), "TL303") == []
    assert lines(CODEBASE.replace('default="codellama/CodeLlama-7b-hf"', "required=True"), "TL303") == []
    # `padding="max_length"` without `max_length`: Llama tokenizers have no finite length, nothing pads
    assert lines(CODEBASE.replace(', max_length=512', ''), "TL303") == []


# in the shape of trl's README example of June 2023 (huggingface/trl#466)
PPO = case("trl_readme_ppo_gpt2_no_pad_token.py")


def test_tl303_old_ppo_trainer_pads_with_a_gpt2_tokenizer():
    assert lines(PPO, "TL303") == marked(PPO, "TL303")
    assert lines(PPO.replace("tokenizer = AutoTokenizer.from_pretrained('gpt2')",
                             "tokenizer = AutoTokenizer.from_pretrained('gpt2')\ntokenizer.pad_token = tokenizer.eos_token"),
                 "TL303") == []
    # trl 0.12 rewrote PPOTrainer (it takes `processing_class`): the old `step()` is not what runs
    assert lines(PPO.replace("trl==0.4.6", "trl==0.12.0"), "TL303") == []


# in the shape of NielsRogge/Transformers-Tutorials LLaVa-NeXT fine-tuning (PyTorch Lightning): a multimodal
# checkpoint built on Mistral, whose processor's tokenizer has a pad token, pads in the collate function
LLAVA = """
from transformers import AutoProcessor, LlavaNextForConditionalGeneration

MODEL_ID = "llava-hf/llava-v1.6-mistral-7b-hf"
processor = AutoProcessor.from_pretrained(MODEL_ID)
processor.tokenizer.padding_side = "right"


def train_collate_fn(examples):
    images, texts = [], []
    for image, ground_truth in examples:
        images.append(image)
        texts.append(processor.apply_chat_template([{"role": "user", "content": ground_truth}]))
    batch = processor(text=texts, images=images, padding=True, truncation=True, max_length=384, return_tensors="pt")
    labels = batch["input_ids"].clone()
    labels[labels == processor.tokenizer.pad_token_id] = -100
    batch["labels"] = labels
    return batch
"""


def test_tl303_silent_for_a_processor_of_a_checkpoint_built_on_a_family():
    assert lines(LLAVA, "TL303") == []
    # the family's own tokenizer, loaded by its hub name, has none
    own = LLAVA.replace("AutoProcessor.from_pretrained(MODEL_ID)", "AutoTokenizer.from_pretrained(MODEL_ID)") \
        .replace("import AutoProcessor", "import AutoTokenizer").replace(
        'processor.tokenizer.padding_side = "right"', "").replace("llava-hf/llava-v1.6-mistral-7b-hf",
                                                                  "mistralai/Mistral-7B-v0.1")
    assert lines(own, "TL303") == [14]


# -- every reworked rule: a concise message, the details in the hint ---------------------------------

REWORKED = ("TL301", "TL302", "TL303", "TL304", "TL305", "TL306", "TL307", "TL401", "TL402", "TL403", "TL404",
            "TL501", "TL502", "TL503", "TL504", "TL505", "TL601", "TL602", "TL603", "TL604", "TL605", "TL606")


@pytest.mark.parametrize("code", REWORKED)
def test_reworked_rules_state_premises_and_report_concisely(code, tmp_path):
    from support import ROOT

    from trainlint.config import Settings
    from trainlint.docs import parse_doc
    from trainlint.engine import lint_file
    from trainlint.rule import all_rules

    rule = all_rules()[code]
    assert rule.measured_from == 4
    doc = parse_doc(code, (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8"))
    assert doc.premises, f"rules/{code}.md lists no premises"
    found = []
    for i, ex in enumerate(doc.examples("Example")):
        path = tmp_path / f"ex{i}.py"
        path.write_text(ex.code, encoding="utf-8")
        found += [f for f in lint_file(path, Settings(select=[code])).findings if f.code == code]
    assert found
    for f in found:
        assert len(f.message) <= 160, f.message
        assert f.hint, f.message
