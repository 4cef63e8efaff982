"""The modes of a file's modules (trainlint.facts.modes): which mode a module is in where a node runs,
followed through branches, loop passes and the file's functions; and whether the mode changes what it
computes."""

from __future__ import annotations

import textwrap

import libcst as cst

from trainlint.facts import FACT_TYPES, Facts, walk
from trainlint.facts.modes import (
    EVAL,
    MIXED,
    TRAIN,
    UNKNOWN_MODE,
    mode_dependent,
    mode_flow,
)


def _facts(source: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(source))
    index, where = walk(module, FACT_TYPES | {"While", "With"})
    return Facts(module, index, where)


def modes_at(source: str, name: str, text: str) -> set[str]:
    """The modes `name` can be in at the call of ``source`` whose code is ``text``."""
    facts = _facts(source)
    call = next(c for c in facts.index["Call"] if facts.module.code_for_node(c) == text)
    return {m.mode for m in mode_flow(facts).at(name, call)}


def test_branches_and_loop_passes():
    src = """
    import torch
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        step(model)
        if epoch % 5 == 0:
            model.eval()
            evaluate(model)
    """
    # a new module starts in train mode; the eval() of one pass reaches the next one
    assert modes_at(src, "model", "step(model)") == {TRAIN, EVAL}
    assert modes_at(src, "model", "evaluate(model)") == {EVAL}
    # the evaluation on the last pass is followed by the end of the loop, not by another step
    last = src.replace("if epoch % 5 == 0:", "if epoch == len(epochs) - 1:")
    assert modes_at(last, "model", "step(model)") == {TRAIN}


def test_a_condition_tested_twice_takes_the_same_branch():
    src = """
    import torch
    model = torch.nn.Linear(2, 2)
    for phase in ["train", "val"]:
        if phase == "train":
            model.train()
        else:
            model.eval()
        if phase == "train":
            step(model)
    """
    assert modes_at(src, "model", "step(model)") == {TRAIN}


def test_a_function_of_the_file_that_leaves_the_mode_and_its_flag_argument():
    src = """
    import torch
    model = torch.nn.Linear(2, 2)

    def run(model, train):
        if train:
            model.train()
        else:
            model.eval()

    run(model, True)
    step(model)
    run(model, False)
    check(model)
    """
    assert modes_at(src, "model", "step(model)") == {TRAIN}
    assert modes_at(src, "model", "check(model)") == {EVAL}


def test_the_mode_where_a_function_starts_is_what_its_callers_leave():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")

    def train_epoch(model):
        step(model)

    train_epoch(model)
    model.train(flag)
    train_epoch(model)
    """
    # from_pretrained returns the model in eval mode; `train(flag)` sets a mode the source does not say
    assert modes_at(src, "model", "step(model)") == {EVAL, UNKNOWN_MODE}


def test_adapters_added_to_a_model_make_its_mode_mixed():
    src = """
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model = get_peft_model(model, config)
    step(model)
    """
    assert modes_at(src, "model", "step(model)") == {MIXED}


def dependent(source: str, name: str):
    facts = _facts(source)
    call = next(c for c in facts.index["Call"] if facts.module.code_for_node(c) == f"probe({name})")
    return mode_dependent(facts, call.args[0].value, call)


def test_transformers_families_with_and_without_dropout():
    head = "from transformers import AutoModel, AutoModelForCausalLM, LlamaForCausalLM\n"
    assert dependent(head + 'm = AutoModel.from_pretrained("bert-base-uncased")\nprobe(m)\n', "m") is True
    assert dependent(head + 'm = AutoModelForCausalLM.from_pretrained("google/gemma-2-2b")\nprobe(m)\n', "m") is False
    assert dependent(head + 'm = LlamaForCausalLM.from_pretrained(path)\nprobe(m)\n', "m") is False
    # the checkpoint is not shown: the configuration decides
    assert dependent(head + "m = AutoModel.from_pretrained(args.model)\nprobe(m)\n", "m") is None
    # a dropout set where it is wrapped
    lora = head + ("from peft import LoraConfig, get_peft_model\n"
                   'm = AutoModelForCausalLM.from_pretrained("google/gemma-2-2b")\n'
                   "m = get_peft_model(m, LoraConfig(lora_dropout=0.05))\nprobe(m)\n")
    assert dependent(lora, "m") is True


def test_a_diffusers_model_has_no_dropout_unless_one_is_configured():
    head = "from diffusers import UNet2DConditionModel\n"
    unet = head + 'unet = UNet2DConditionModel.from_pretrained(path, subfolder="unet")\nprobe(unet)\n'
    assert dependent(unet, "unet") is False
    assert dependent(unet.replace('subfolder="unet")', 'subfolder="unet", dropout=rate)'), "unet") is None
