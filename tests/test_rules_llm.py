"""The LLM fine-tuning rules (TL208, TL310, TL411, TL508, TL810, TL811): the forms the documents' blocks do not
show, in the shapes they were found in (notebooks, dreambooth scripts, trainer subclasses, helper classes)."""

from __future__ import annotations

import textwrap

import pytest

from trainlint.config import Settings
from trainlint.engine import lint_source

CODES = ("TL208", "TL810", "TL411", "TL310", "TL508", "TL811")


def found(source: str, code: str) -> list:
    return [f for f in lint_source(textwrap.dedent(source), "train.py", Settings(select=[code])) if f.code == code]


def rows(source: str, code: str) -> list[int]:
    return [f.start.row for f in found(source, code)]


# -- TL208 ---------------------------------------------------------------------------------------------------

BREVDEV = '''\
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

base_model_id = "mistralai/Mistral-7B-v0.1"
model = AutoModelForCausalLM.from_pretrained(base_model_id)
tokenizer = AutoTokenizer.from_pretrained(
    base_model_id,
    model_max_length=512,
    padding_side="left",
    add_eos_token=True)

tokenizer.pad_token = tokenizer.eos_token


def tokenize(prompt):
    result = tokenizer(prompt, truncation=True, max_length=512, padding="max_length")
    result["labels"] = result["input_ids"].copy()
    return result


tokenized_train_dataset = train_dataset.map(tokenize)
eval_tokenizer = AutoTokenizer.from_pretrained(base_model_id, add_bos_token=True)

tokenizer.pad_token = tokenizer.eos_token

trainer = transformers.Trainer(
    model=model,
    train_dataset=tokenized_train_dataset,
    args=transformers.TrainingArguments(output_dir="out", max_steps=1000),
    data_collator=transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False),
)
trainer.train()
'''


def test_tl208_the_notebook_that_sets_the_pad_token_twice():
    assert rows(BREVDEV, "TL208") == [12, 24]
    assert all(len(f.message) <= 160 for f in found(BREVDEV, "TL208"))


def test_tl208_quiet_for_another_tokenizer_and_for_a_pad_token_set_on_one_branch():
    other = BREVDEV.replace("tokenizer.pad_token = tokenizer.eos_token", "eval_tokenizer.pad_token = eval_tokenizer.eos_token")
    assert rows(other, "TL208") == []
    branch = BREVDEV.replace("\ntokenizer.pad_token = tokenizer.eos_token\n\ntrainer",
                             "\nif use_eos_padding:\n    tokenizer.pad_token = tokenizer.eos_token\n\ntrainer")
    assert rows(branch, "TL208") == [12]  # the first, unconditional assignment still reaches the collator


def test_tl208_eos_appended_through_a_name_with_the_completion_only_collator():
    src = '''\
    from transformers import AutoTokenizer, Trainer
    from trl import DataCollatorForCompletionOnlyLM

    tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
    tokenizer.pad_token_id = tokenizer.eos_token_id
    EOS_TOKEN = tokenizer.eos_token

    def formatting(example):
        return {"text": PROMPT.format(example["instruction"], example["output"]) + EOS_TOKEN}

    collator = DataCollatorForCompletionOnlyLM("### Response:", tokenizer=tokenizer)
    Trainer(model=model, args=args, train_dataset=ds.map(formatting), data_collator=collator).train()
    '''
    assert rows(src, "TL208") == [5]
    assert rows(src.replace(" + EOS_TOKEN", ""), "TL208") == []


@pytest.mark.parametrize("trl, packing, expected", [
    ("trl==0.14.0", "True", []),  # packed examples went through Trainer's default collator
    ("trl==0.14.0", "False", [7]),
    ("trl==0.15.2", "True", [7]),
    ("trl==0.17.0", "False", []),
])
def test_tl208_sft_trainer_default_collator_by_trl_release_and_packing(trl, packing, expected):
    src = f'''\
    # /// script
    # dependencies = ["{trl}"]
    # ///
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer
    tokenizer = AutoTokenizer.from_pretrained("mistralai/Mistral-7B-v0.1", add_eos_token=True)
    tokenizer.pad_token = tokenizer.eos_token
    args = SFTConfig(output_dir="out", packing={packing})
    SFTTrainer(model="mistralai/Mistral-7B-v0.1", args=args, train_dataset=ds, processing_class=tokenizer).train()
    '''
    assert rows(src, "TL208") == expected


# -- TL810 ---------------------------------------------------------------------------------------------------

MINIMO = '''\
import io

import torch
from celery import Celery

app = Celery("worker")


@app.task
def try_prove(agent_dump: bytes, statement: str):
    with io.BytesIO(agent_dump) as f:
        agent = torch.load(f)
    result = agent.proof_search(statement)
    return result.success
'''


def test_tl810_a_pickled_agent_rebuilt_in_a_worker_task():
    assert rows(MINIMO, "TL810") == [12]
    assert rows(MINIMO.replace("torch.load(f)", "torch.load(f, weights_only=False)"), "TL810") == []
    pinned = '# /// script\n# dependencies = ["torch==2.4.1"]\n# ///\n' + MINIMO
    assert rows(pinned, "TL810") == []


def test_tl810_quiet_for_tensor_methods_and_the_callers_checkpoints():
    src = '''\
    import torch

    def restore(model, optimizer, path):
        state = torch.load(path, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        return state["epoch"]

    emb = torch.load("emb.pt")
    print(emb.size(), emb.float().mean())
    '''
    assert rows(src, "TL810") == []


def test_tl810_a_whole_model_saved_by_a_helper_and_loaded_back():
    src = '''\
    import torch
    import torch.nn as nn

    def build():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    torch.save(build(), "model.pt")
    model = torch.load("model.pt")
    '''
    assert rows(src, "TL810") == [8]
    allowed = textwrap.dedent(src) + "torch.serialization.add_safe_globals([nn.Sequential])\n"
    assert rows(allowed, "TL810") == []


# -- TL411 ---------------------------------------------------------------------------------------------------

SOUP = '''\
import torch
from transformers import Trainer, TrainingArguments


class DistillRunner:
    def __init__(self, config, student, teacher):
        self.config = config
        self.model = student
        self.teacher = teacher

    def train(self, train_ds, temperature=2.0):
        tcfg = self.config.training
        args = TrainingArguments(output_dir="out", per_device_train_batch_size=4,
                                 gradient_accumulation_steps=tcfg.gradient_accumulation_steps)
        teacher_ref = self.teacher

        class _DistillTrainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                labels = inputs.get("labels")
                outputs = model(**{k: v for k, v in inputs.items() if k != "labels"})
                shift_logits = outputs.logits[:, :-1, :].contiguous()
                ce = torch.nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)),
                                                       labels[:, 1:].contiguous().view(-1), ignore_index=-100)
                with torch.no_grad():
                    teacher_logits = teacher_ref(**inputs).logits
                kd = torch.nn.functional.kl_div(torch.log_softmax(outputs.logits / temperature, dim=-1),
                                                torch.softmax(teacher_logits / temperature, dim=-1),
                                                reduction="batchmean")
                total = 0.5 * ce + 0.5 * kd
                return (total, outputs) if return_outputs else total

        trainer = _DistillTrainer(model=self.model, args=args, train_dataset=train_ds)
        trainer.train()
'''


def test_tl411_a_distillation_trainer_defined_inside_a_method():
    assert rows(SOUP, "TL411") == [18]
    assert all(len(f.message) <= 160 for f in found(SOUP, "TL411"))
    one_step = SOUP.replace("gradient_accumulation_steps=tcfg.gradient_accumulation_steps",
                            "gradient_accumulation_steps=1")
    assert rows(one_step, "TL411") == []


def test_tl411_quiet_for_an_override_without_the_parameter_or_forwarding_kwargs():
    old = SOUP.replace(", num_items_in_batch=None)", ")")
    assert rows(old, "TL411") == []  # transformers 4.46+ fails with a TypeError instead
    forwarded = SOUP.replace(", num_items_in_batch=None)", ", **kwargs)")
    assert rows(forwarded, "TL411") == []


DPO = '''\
# /// script
# dependencies = ["transformers==4.48.1", "trl==0.13.0"]
# ///
import torch
import torch.nn.functional as F
from transformers import Trainer


class DPOTrainer(Trainer):
    def concatenated_forward(self, model, batch):
        logits = model(batch["concatenated_input_ids"]).logits
        logps = torch.gather(logits.log_softmax(-1), 2, batch["concatenated_labels"].unsqueeze(2)).squeeze(2).sum(-1)
        n = batch["prompt_input_ids"].shape[0]
        return logps[:n], logps[n:]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        chosen, rejected = self.concatenated_forward(model, inputs)
        loss = -F.logsigmoid(0.1 * (chosen - rejected)).mean()
        return (loss, {}) if return_outputs else loss
'''


@pytest.mark.parametrize("transformers, expected", [("4.48.1", [16]), ("4.53.0", []), ("4.45.2", [])])
def test_tl411_a_preference_trainer_without_labels_by_transformers_release(transformers, expected):
    assert rows(DPO.replace("4.48.1", transformers), "TL411") == expected


# -- TL310 ---------------------------------------------------------------------------------------------------

CUSTOM_ADAPTER = '''\
# /// script
# dependencies = ["transformers==4.33.3", "peft"]
# ///
from peft import LoraConfig
from transformers import AutoModelForCausalLM, PretrainedConfig, PreTrainedModel


class CustomModel(PreTrainedModel):
    config_class = PretrainedConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-70m")
        self.peft_config = LoraConfig(task_type="CAUSAL_LM", r=8, lora_alpha=32, lora_dropout=0.1)
        self.model.add_adapter(self.peft_config)
        self.model.gradient_checkpointing_enable()

    def forward(self, input_ids, attention_mask=None, labels=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
'''


@pytest.mark.parametrize("transformers, expected", [("4.33.3", [16]), ("4.34.0", [])])
def test_tl310_transformers_add_adapter_in_a_custom_model(transformers, expected):
    assert rows(CUSTOM_ADAPTER.replace("4.33.3", transformers), "TL310") == expected


GRPO = '''\
# /// script
# dependencies = ["trl==0.15.2", "transformers==4.49.0", "peft"]
# ///
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2-0.5B-Instruct", torch_dtype="bfloat16")
lora_config = LoraConfig(task_type="CAUSAL_LM", r=16, lora_alpha=32, lora_dropout=0.05, bias="none")
lora_model = get_peft_model(model, lora_config)
training_args = GRPOConfig(output_dir="out", bf16=True, per_device_train_batch_size=16,
                           gradient_checkpointing=True,
                           gradient_checkpointing_kwargs=dict(use_reentrant=True))
trainer = GRPOTrainer(model=lora_model, reward_funcs=reward_len, args=training_args, train_dataset=dataset)
trainer.train()
'''


def test_tl310_grpo_on_a_lora_model_by_trl_release():
    assert rows(GRPO, "TL310") == [12]
    assert all(len(f.message) <= 160 for f in found(GRPO, "TL310"))
    assert rows(GRPO.replace("trl==0.15.2", "trl==0.16.0"), "TL310") == []
    assert rows(GRPO.replace("use_reentrant=True", "use_reentrant=False"), "TL310") == []
    fixed = GRPO.replace("lora_model = get_peft_model", "model.enable_input_require_grads()\nlora_model = get_peft_model")
    assert rows(fixed, "TL310") == []


# -- TL508 ---------------------------------------------------------------------------------------------------

FLAN = '''\
import argparse

import pytorch_lightning as pl
from transformers import AutoModelForSeq2SeqLM


def init_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name_or_path", type=str, default="google/flan-t5-base")
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    return parser.parse_args()


class LightningModel(pl.LightningModule):
    def __init__(self, hparams):
        super().__init__()
        self.save_hyperparameters(hparams)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(self.hparams.model_name_or_path)


def main():
    args = init_args()
    model = LightningModel(args)
    trainer = pl.Trainer(precision="16-mixed", accelerator="gpu", max_epochs=3)
    trainer.fit(model)
'''


def test_tl508_a_lightning_module_loading_the_checkpoint_of_an_argparse_default():
    assert rows(FLAN, "TL508") == [24]
    assert rows(FLAN.replace('"16-mixed"', '"bf16-mixed"'), "TL508") == []
    assert rows(FLAN.replace("google/flan-t5-base", "t5-small"), "TL508") == []


def test_tl508_a_trl_trainer_given_the_hub_id():
    src = '''\
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir="out", fp16=True, per_device_train_batch_size=2)
    trainer = SFTTrainer(model="google/gemma-3-1b-it", args=args, train_dataset=ds)
    trainer.train()
    '''
    assert rows(src, "TL508") == [3]
    assert rows(src.replace("google/gemma-3-1b-it", "meta-llama/Llama-3.2-1B"), "TL508") == []
    assert rows(src.replace("fp16=True", "bf16=True"), "TL508") == []


# -- TL811 ---------------------------------------------------------------------------------------------------

KERAS_IO = '''\
# /// script
# dependencies = ["keras==3.0.0", "tensorflow==2.15.0", "transformers==4.35.0", "tokenizers", "numpy"]
# ///
import tensorflow as tf
import keras
from keras import layers
from transformers import BertTokenizer, TFBertModel, BertConfig


def create_model():
    encoder = TFBertModel.from_pretrained("bert-base-uncased")
    input_ids = layers.Input(shape=(384,), dtype=tf.int32)
    embedding = encoder(input_ids)[0]
    start = layers.Dense(1, use_bias=False)(embedding)
    return keras.Model(inputs=[input_ids], outputs=[start])
'''


@pytest.mark.parametrize("pins, expected", [
    ('"keras==3.0.0", "tensorflow==2.15.0", "transformers==4.35.0"', [7]),
    ('"tensorflow==2.17.0", "transformers==4.46.0"', [7]),
    ('"keras==3.0.0", "tensorflow==2.15.0", "tf-keras", "transformers==4.46.0"', []),
    ('"tensorflow==2.15.0", "transformers==4.35.0"', []),
])
def test_tl811_a_keras_io_example_moved_to_keras_3(pins, expected):
    src = KERAS_IO.replace('"keras==3.0.0", "tensorflow==2.15.0", "transformers==4.35.0"', pins)
    assert rows(src, "TL811") == expected


def test_tl811_quiet_when_the_pins_come_from_an_install_command():
    src = "# !pip install keras==3.0.0 transformers==4.46.0\nfrom transformers import TFBertModel\n"
    assert rows(src, "TL811") == []


def test_every_message_is_concise():
    sources = [BREVDEV, MINIMO, SOUP, DPO, CUSTOM_ADAPTER, GRPO, FLAN, KERAS_IO]
    for code in CODES:
        for src in sources:
            assert all(len(f.message) <= 160 for f in found(src, code)), code
