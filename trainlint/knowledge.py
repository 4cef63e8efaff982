"""What trainlint knows without running anything: well-known hub datasets and model classes, and when
the library APIs the version rules ask about appeared, were deprecated and went away.

The dataset table lets the static pass know that ``load_dataset("glue", "mnli")`` has 3 classes in
its ``label`` column, which columns it has, and whether its splits are stored sorted by label.
Entries are keyed by the dataset's short name (``"nyu-mll/glue"`` and ``"glue"`` are the same; another
owner's copy, ``"SetFit/sst2"``, is not).
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    name: str
    config: str | None
    num_labels: int | None  # classes of the label column; 1 = regression; None: not classification
    label_column: str = "label"
    columns: tuple[str, ...] = ()
    task: str = "sequence-classification"  # or token-classification, multi-label, language-modeling, ...
    sorted_by_label: bool = False  # splits stored sorted by label: the first N rows are one class
    splits: tuple[str, ...] = ("train", "validation", "test")
    #: the hub owners under which a namespaced name is this dataset (empty: its canonical owner in
    #: `_HUB_OWNERS`); copies under other owners with other columns share the short name (`mteb/amazon_reviews_multi`)
    owners: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return f"{self.name}/{self.config}" if self.config else self.name


def _d(name, config, num_labels, columns, **kw) -> DatasetInfo:
    return DatasetInfo(name, config, num_labels, columns=tuple(columns), **kw)


_MNLI_SPLITS = ("train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched")

DATASETS: dict[tuple[str, str | None], DatasetInfo] = {
    (d.name, d.config): d
    for d in [
        # GLUE
        _d("glue", "cola", 2, ["sentence", "label", "idx"]),
        _d("glue", "sst2", 2, ["sentence", "label", "idx"]),
        _d("glue", "mrpc", 2, ["sentence1", "sentence2", "label", "idx"]),
        _d("glue", "qqp", 2, ["question1", "question2", "label", "idx"]),
        _d("glue", "stsb", 1, ["sentence1", "sentence2", "label", "idx"], task="regression"),
        _d("glue", "mnli", 3, ["premise", "hypothesis", "label", "idx"], splits=_MNLI_SPLITS),
        _d("glue", "mnli_matched", 3, ["premise", "hypothesis", "label", "idx"], splits=("validation", "test")),
        _d("glue", "mnli_mismatched", 3, ["premise", "hypothesis", "label", "idx"], splits=("validation", "test")),
        _d("glue", "qnli", 2, ["question", "sentence", "label", "idx"]),
        _d("glue", "rte", 2, ["sentence1", "sentence2", "label", "idx"]),
        _d("glue", "wnli", 2, ["sentence1", "sentence2", "label", "idx"]),
        _d("glue", "ax", 3, ["premise", "hypothesis", "label", "idx"], splits=("test",)),
        # SuperGLUE (classification configs)
        _d("super_glue", "boolq", 2, ["question", "passage", "idx", "label"]),
        _d("super_glue", "cb", 3, ["premise", "hypothesis", "idx", "label"]),
        _d("super_glue", "rte", 2, ["premise", "hypothesis", "idx", "label"]),
        _d("super_glue", "wic", 2, ["word", "sentence1", "sentence2", "start1", "start2", "end1", "end2", "idx", "label"]),
        # single-config text classification
        _d("imdb", None, 2, ["text", "label"], sorted_by_label=True, splits=("train", "test", "unsupervised")),
        _d("rotten_tomatoes", None, 2, ["text", "label"], sorted_by_label=True),
        _d("ag_news", None, 4, ["text", "label"], splits=("train", "test")),
        _d("emotion", None, 6, ["text", "label"]),
        _d("yelp_review_full", None, 5, ["text", "label"], splits=("train", "test")),
        _d("yelp_polarity", None, 2, ["text", "label"], splits=("train", "test")),
        _d("amazon_polarity", None, 2, ["label", "title", "content"], splits=("train", "test")),
        _d("dbpedia_14", None, 14, ["label", "title", "content"], sorted_by_label=True, splits=("train", "test")),
        _d("sst2", None, 2, ["idx", "sentence", "label"]),
        _d("snli", None, 3, ["premise", "hypothesis", "label"]),
        _d("multi_nli", None, 3, ["promptID", "pairID", "premise", "premise_binary_parse", "premise_parse",
                                   "hypothesis", "hypothesis_binary_parse", "hypothesis_parse", "genre", "label"],
           splits=("train", "validation_matched", "validation_mismatched")),
        _d("banking77", None, 77, ["text", "label"], splits=("train", "test")),
        _d("financial_phrasebank", "sentences_allagree", 3, ["sentence", "label"], splits=("train",)),
        _d("trec", None, 6, ["text", "coarse_label", "fine_label"], label_column="coarse_label", splits=("train", "test")),
        _d("tweet_eval", "sentiment", 3, ["text", "label"]),
        _d("tweet_eval", "emotion", 4, ["text", "label"]),
        _d("tweet_eval", "hate", 2, ["text", "label"]),
        _d("tweet_eval", "irony", 2, ["text", "label"]),
        _d("tweet_eval", "offensive", 2, ["text", "label"]),
        _d("paws", "labeled_final", 2, ["id", "sentence1", "sentence2", "label"]),
        _d("xnli", "en", 3, ["premise", "hypothesis", "label"]),
        _d("go_emotions", "simplified", 28, ["text", "labels", "id"], label_column="labels", task="multi-label"),
        # token classification
        _d("conll2003", None, 9, ["id", "tokens", "pos_tags", "chunk_tags", "ner_tags"], label_column="ner_tags",
           task="token-classification"),
        _d("wnut_17", None, 13, ["id", "tokens", "ner_tags"], label_column="ner_tags", task="token-classification"),
        # language modelling (no labels)
        _d("wikitext", "wikitext-2-raw-v1", None, ["text"], task="language-modeling"),
        _d("wikitext", "wikitext-103-raw-v1", None, ["text"], task="language-modeling"),
        _d("wikitext", "wikitext-2-v1", None, ["text"], task="language-modeling"),
        _d("wikitext", "wikitext-103-v1", None, ["text"], task="language-modeling"),
        # more single-config classification
        _d("sms_spam", None, 2, ["sms", "label"], splits=("train",)),
        # question answering, summarization (columns only: TL102)
        _d("squad", None, None, ["id", "title", "context", "question", "answers"], task="question-answering",
           splits=("train", "validation")),
        _d("squad_v2", None, None, ["id", "title", "context", "question", "answers"], task="question-answering",
           splits=("train", "validation")),
        _d("cnn_dailymail", None, None, ["article", "highlights", "id"], task="summarization"),
        _d("xsum", None, None, ["document", "summary", "id"], task="summarization"),
        _d("samsum", None, None, ["id", "dialogue", "summary"], task="summarization"),
        _d("billsum", None, None, ["text", "summary", "title"], task="summarization", splits=("train", "test", "ca_test")),
        # product reviews: star ratings 1..5 (integers, not class ids), every language config has the same columns
        _d("amazon_reviews_multi", None, None, ["review_id", "product_id", "reviewer_id", "stars", "review_body",
                                                "review_title", "language", "product_category"],
           label_column="stars", task="review-rating", owners=("defunct-datasets",)),
    ]
}
#: datasets whose single config is also reachable without a config name
_DEFAULT_CONFIG = {"tweet_eval": None, "paws": "labeled_final", "go_emotions": "simplified"}


#: the hub organisations that hold the canonical copy of each dataset (the short names redirect there).
#: A namespaced name under any other owner is someone's own copy, often with other columns
#: (`SetFit/sst2` has `text`, `label`, `label_text`; GLUE's SST-2 has `sentence`): not this dataset.
_HUB_OWNERS = {
    "glue": ("nyu-mll",), "super_glue": ("aps",), "imdb": ("stanfordnlp",),
    "rotten_tomatoes": ("cornell-movie-review-data",), "ag_news": ("fancyzhx",), "emotion": ("dair-ai",),
    "yelp_review_full": ("yelp",), "yelp_polarity": ("fancyzhx",), "amazon_polarity": ("fancyzhx",),
    "dbpedia_14": ("fancyzhx",), "sst2": ("stanfordnlp",), "snli": ("stanfordnlp",), "multi_nli": ("nyu-mll",),
    "banking77": ("polyai",), "financial_phrasebank": ("takala",), "trec": ("cogcomp",),
    "tweet_eval": ("cardiffnlp",), "paws": ("google-research-datasets",), "xnli": ("facebook",),
    "go_emotions": ("google-research-datasets",), "conll2003": ("eriktks",), "wnut_17": ("leondz",),
    "wikitext": ("salesforce",), "sms_spam": ("ucirvine",), "squad": ("rajpurkar",), "squad_v2": ("rajpurkar",),
    "cnn_dailymail": ("abisee",), "xsum": ("edinburghnlp",), "samsum": ("samsung",), "billsum": ("fiscalnote",),
}


def dataset_info(name: str | None, config: str | None = None) -> DatasetInfo | None:
    """Look up a hub dataset by short name (`"glue"`) or by the canonical namespaced name
    (`"nyu-mll/glue"`) and config. Another owner's copy (`"SetFit/sst2"`) is unknown."""
    if not name:
        return None
    info = _lookup(name.rsplit("/", 1)[-1].lower(), config)
    if info is not None and "/" in name:
        owner = name.rsplit("/", 1)[0].lower()
        if owner not in (info.owners or _HUB_OWNERS.get(info.name, ())):
            return None
    return info


def _lookup(short: str, config: str | None) -> DatasetInfo | None:
    if (short, None) in DATASETS and config is None:
        return DATASETS[(short, None)]
    if (short, config) in DATASETS:
        return DATASETS[(short, config)]
    if (short, None) in DATASETS:
        return DATASETS[(short, None)]
    if config is None and _DEFAULT_CONFIG.get(short):
        return DATASETS.get((short, _DEFAULT_CONFIG[short]))
    return None


# ---------------------------------------------------------------------------------------------
# Model classes.

#: (class-name suffix, task head) of the transformers model classes
HEADS = (
    ("ForSequenceClassification", "sequence-classification"),
    ("ForTokenClassification", "token-classification"),
    ("ForMultipleChoice", "multiple-choice"),
    ("ForQuestionAnswering", "question-answering"),
    ("ForCausalLM", "causal-lm"),
    ("ForMaskedLM", "masked-lm"),
    ("ForSeq2SeqLM", "seq2seq-lm"),
    ("ForConditionalGeneration", "seq2seq-lm"),
    ("ForImageClassification", "image-classification"),
    ("ForAudioClassification", "audio-classification"),
    ("ForPreTraining", "pretraining"),
    ("LMHeadModel", "causal-lm"),
)


def head_of(cls_name: str) -> str | None:
    """The task head of a transformers model class name (``TFAutoModelForSequenceClassification``)."""
    for suffix, head in HEADS:
        if cls_name.endswith(suffix):
            return head
    if re.fullmatch(r"(TF|Flax)?(Auto)?Model|(TF|Flax)?\w+Model", cls_name):
        return "base"
    return None


#: checkpoint name fragments of decoder-only models (no pad token by default)
DECODER_ONLY = ("gpt2", "gpt-2", "gpt-neo", "gpt-j", "gptj", "llama", "mistral", "mixtral", "qwen", "phi-",
                "falcon", "opt-", "bloom", "pythia", "gemma", "smollm", "olmo", "tinyllama", "distilgpt2")


#: checkpoints trained in bfloat16 whose activations or gradients leave float16's range (65504) when they run in
#: float16: (pattern over the lowercased checkpoint name, the family). The evidence for each is in rules/TL508.md;
#: Llama 2/3, Mistral and Qwen 2/2.5 are not here: float16 fine-tuning of them is common and works.
FP16_OVERFLOW = (
    (re.compile(r"(?<![a-z])gemma-?3|embeddinggemma|functiongemma"), "Gemma 3"),
    (re.compile(r"qwen3-(?:coder-)?\d+b-a\d+b"), "Qwen3 MoE"),
    (re.compile(r"flan-t5"), "Flan-T5"),
    (re.compile(r"t5-v1_1"), "T5 v1.1"),
    (re.compile(r"(?<![a-z0-9])mt5-"), "mT5"),
    (re.compile(r"(?<![a-z0-9-])t5-(?:large|3b|11b)"), "T5 (large and up)"),
)


def fp16_overflow_family(checkpoint: str) -> str | None:
    """The family of a checkpoint (a hub id or a local path) known to overflow in float16, else None."""
    name = checkpoint.lower()
    return next((family for pattern, family in FP16_OVERFLOW if pattern.search(name)), None)


# ---------------------------------------------------------------------------------------------
# The version table: when each API the version rules (TL8xx, TL206, TL503's Keras 3 fix) ask about
# appeared, was deprecated and went away, read from the libraries' own releases. It is the only place
# these numbers live: the rules judge an API with `trainlint.pins.status` at the version the script runs
# (`trainlint.pins`), and each rule's document states them (`tests/test_versions.py` checks both).

Version = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class ApiVersions:
    """One API's life in its distribution's releases. ``None``: no such release (introduced: present in
    every release a rule asks about; deprecated: never deprecated before its removal; removed: still there)."""

    dist: str
    api: str  # as a script writes it
    introduced: Version | None = None  # the first release that has it
    deprecated: Version | None = None  # the first release that warns it is deprecated
    removed: Version | None = None  # the first release without it (or where it stops working)
    replacement: str | None = None  # the key of what replaces it, in this table
    source: str = ""  # where each number was read


def _api(key: str, dist: str, api: str, **kw) -> tuple[str, ApiVersions]:
    return key, ApiVersions(dist, api, **kw)


_TRL = "huggingface/trl at tags v0.11.4, v0.12.0, v0.15.2, v0.16.0: trl/trainer/*_trainer.py `__init__`"
#: trl's trainers that took `tokenizer=` (trl 0.11): `SFTTrainer`/`DPOTrainer` kept it as a deprecated alias
#: of `processing_class` (`@deprecate_kwarg`) from 0.12 to 0.15; the others renamed it in 0.12 outright
TRL_TOKENIZER_ALIAS = ("SFTTrainer", "DPOTrainer")
TRL_TOKENIZER_RENAMED = ("BCOTrainer", "CPOTrainer", "IterativeSFTTrainer", "KTOTrainer", "NashMDTrainer",
                         "OnlineDPOTrainer", "ORPOTrainer", "RewardTrainer", "RLOOTrainer", "XPOTrainer")

API_VERSIONS: dict[str, ApiVersions] = dict([
    _api("datasets.load_metric", "datasets", "datasets.load_metric", deprecated=(2, 5), removed=(3, 0),
         replacement="evaluate.load",
         source="huggingface/datasets src/datasets/load.py: `@deprecated` on load_metric from tag 2.5.0 (not in "
                "2.4.0); load_metric gone at tag 3.0.0"),
    _api("evaluate.load", "evaluate", "evaluate.load", introduced=(0, 1),
         source="huggingface/evaluate src/evaluate/__init__.py at tag v0.1.0 (its first release) exports `load`"),
    _api("transformers.AdamW", "transformers", "transformers.AdamW", deprecated=(4, 16), removed=(4, 50),
         replacement="torch.optim.AdamW",
         source="transformers wheels, transformers/optimization.py: the FutureWarning \"This implementation of "
                "AdamW is deprecated\" from 4.16.0 (not in 4.15.0); class AdamW in 4.49.0, gone in 4.50.0"),
    _api("torch.optim.AdamW", "torch", "torch.optim.AdamW", introduced=(1, 2),
         source="the PyTorch 1.2 release announcement (pytorch.org/blog/pytorch-1.2-and-domain-api-release), "
                "which lists AdamW among the new optimizers (not read from the source at the tag)"),
    _api("transformers.TFTrainer", "transformers", "transformers.TFTrainer", deprecated=(4, 9), removed=(4, 37),
         source="transformers wheels: the warning \"The class `TFTrainer` is deprecated\" in trainer_tf.py from 4.9.0 "
                "(not in 4.8.0); trainer_tf.py in 4.36.0, gone in 4.37.0"),
    _api("transformers.Trainer(tokenizer=)", "transformers", "Trainer(tokenizer=...)", deprecated=(4, 46),
         removed=(5, 0), replacement="transformers.Trainer(processing_class=)",
         source="transformers wheels, trainer.py: `@deprecate_kwarg(\"tokenizer\", new_name=\"processing_class\", "
                "version=\"5.0.0\")` from 4.46.0 to 4.57.6; gone in 5.0.0"),
    _api("transformers.Trainer(processing_class=)", "transformers", "Trainer(processing_class=...)",
         introduced=(4, 46), source="transformers wheels, trainer.py: `processing_class` in 4.46.0, not in 4.45.2"),
    _api("transformers.TrainingArguments(evaluation_strategy=)", "transformers",
         "TrainingArguments(evaluation_strategy=...)", deprecated=(4, 41), removed=(4, 51),
         replacement="transformers.TrainingArguments(eval_strategy=)",
         source="transformers wheels, training_args.py: the field is \"Deprecated. Use `eval_strategy`\" from "
                "4.41.0 (the only name in 4.40.2); still there in 4.50.0, gone in 4.51.0"),
    _api("transformers.TrainingArguments(eval_strategy=)", "transformers", "TrainingArguments(eval_strategy=...)",
         introduced=(4, 41), source="transformers wheels, training_args.py: `eval_strategy` in 4.41.0, not in 4.40.2"),
    _api("transformers.TF*", "transformers", "transformers' TensorFlow classes and helpers", deprecated=(4, 53),
         removed=(5, 0),
         source="transformers wheels: modeling_tf_utils.py warns \"TensorFlow and JAX classes are deprecated and "
                "will be removed in Transformers v5\" from 4.53.0 (not in 4.52.1); no TF module in 5.0.0"),
    _api("transformers.*Tokenizer(vocab_file=)", "transformers", "…Tokenizer(vocab_file=..., merges_file=...)",
         removed=(5, 0),
         source="transformers wheels: BertTokenizer.__init__(vocab_file, ...) in 4.57.6, "
                "BertTokenizer.__init__(vocab=None, ...) in 5.0.0"),
    _api("transformers.TF*.fit(BatchEncoding)", "transformers", "a TF model's fit(BatchEncoding)", introduced=(4, 38),
         source="transformers wheels, modeling_tf_utils.py: `fit` calls `convert_batch_encoding` from 4.38.0 "
                "(not in 4.37.0)"),
    _api("keras 3", "keras", "Keras 3", introduced=(3, 0), source="keras-team/keras: tag v3.0.0 (keras/version.py: 3.0.0)"),
    _api("tensorflow.keras is Keras 3", "tensorflow", "tensorflow.keras as Keras 3", introduced=(2, 16),
         source="tensorflow/tensorflow release notes of 2.16.1 (\"Keras 3.0 will be the default Keras version\")"),
    *(_api(f"trl.{cls}(tokenizer=)", "trl", f"{cls}(tokenizer=...)", deprecated=(0, 12), removed=(0, 16),
           replacement=f"trl.{cls}(processing_class=)", source=_TRL) for cls in TRL_TOKENIZER_ALIAS),
    *(_api(f"trl.{cls}(tokenizer=)", "trl", f"{cls}(tokenizer=...)", removed=(0, 12),
           replacement=f"trl.{cls}(processing_class=)", source=_TRL) for cls in TRL_TOKENIZER_RENAMED),
    *(_api(f"trl.{cls}(processing_class=)", "trl", f"{cls}(processing_class=...)", introduced=(0, 12), source=_TRL)
      for cls in TRL_TOKENIZER_ALIAS + TRL_TOKENIZER_RENAMED),
    # -- the LLM fine-tuning rules (TL208, TL310, TL411, TL810, TL811) -----------------------------------
    _api("trl.SFTTrainer masks pad-id labels", "trl", "SFTTrainer's default collator (labels == pad id → -100)",
         removed=(0, 17),
         source="huggingface/trl tags v0.4.7 to v0.16.1, trl/trainer/sft_trainer.py: `data_collator = "
                "DataCollatorForLanguageModeling(tokenizer=..., mlm=False)` (transformers' collator, which sets every "
                "label equal to the pad id to -100) when no `data_collator` is given (up to v0.14.0 only without "
                "packing); from v0.17.0 trl's own collator pads the labels with -100 by "
                "position and keeps every EOS"),
    _api("trl.SFTTrainer appends EOS", "trl", "SFTTrainer appends the EOS token to every tokenized example",
         introduced=(0, 16),
         source="huggingface/trl tag v0.16.0, trl/trainer/sft_trainer.py `tokenize`: `input_ids + [eos_token_id]` "
                "when the text does not end with it (not in v0.15.2)"),
    _api("trl.SFTTrainer masks pad-id labels when packing", "trl",
         "SFTTrainer(packing=True) with transformers' collator", introduced=(0, 15), removed=(0, 17),
         source="huggingface/trl tags v0.4.7 to v0.14.0, trl/trainer/sft_trainer.py: the default collator is set "
                "only `if not packing` (packed examples go through Trainer's default collator, which keeps every "
                "label); from v0.15.0 it is set whatever the packing"),
    _api("trl.DataCollatorForCompletionOnlyLM", "trl", "trl.DataCollatorForCompletionOnlyLM", deprecated=(0, 17),
         removed=(0, 20),
         source="huggingface/trl: trl/trainer/utils.py from v0.4.7, a subclass of transformers' "
                "DataCollatorForLanguageModeling calling its `torch_call`; \"This class is deprecated and will be "
                "removed in version 0.20.0\" from v0.17.0 (not in v0.16.1); gone at v0.20.0"),
    _api("transformers.PreTrainedModel.gradient_checkpointing_enable enables adapter input grads", "transformers",
         "gradient_checkpointing_enable() calling enable_input_require_grads() on a model with adapters",
         introduced=(4, 34),
         source="transformers wheels, modeling_utils.py: `if getattr(self, \"_hf_peft_config_loaded\", False): "
                "self.enable_input_require_grads()` in gradient_checkpointing_enable from 4.34.0 (not in 4.33.3, "
                "where `add_adapter` first appeared)"),
    _api("transformers gradient checkpointing non-reentrant", "transformers",
         "gradient_checkpointing_enable() non-reentrant by default, with input grads for text models",
         introduced=(5, 0),
         source="transformers wheels, modeling_utils.py gradient_checkpointing_enable: no kwargs (torch's default, "
                "reentrant) in 4.35.0 and 4.36.0, `{\"use_reentrant\": True}` from 4.40.0 to 4.57.6; "
                "`{\"use_reentrant\": False}` and `enable_input_require_grads()` for models whose main input is "
                "`input_ids` in 5.0.0"),
    _api("trl.GRPOTrainer enables input grads", "trl", "GRPOTrainer calling enable_input_require_grads() for reentrant "
         "gradient checkpointing", introduced=(0, 16),
         source="huggingface/trl tag v0.16.0, trl/trainer/grpo_trainer.py `_enable_gradient_checkpointing` (added by "
                "#2848); v0.15.2 leaves gradient checkpointing to transformers' Trainer"),
    _api("trl.SFTTrainer enables input grads of a PeftModel", "trl", "SFTTrainer given a PeftModel (no peft_config) "
         "calling enable_input_require_grads() for reentrant gradient checkpointing", introduced=(0, 20),
         source="huggingface/trl tag v0.20.0, trl/trainer/sft_trainer.py: `_prepare_peft_model` also for an "
                "`isinstance(model, PeftModel)` model, then `_enable_gradient_checkpointing` when "
                "`args.gradient_checkpointing`; v0.19.0 prepares only when `peft_config` is given"),
    _api("transformers.Trainer(num_items_in_batch)", "transformers", "Trainer.compute_loss(..., num_items_in_batch)",
         introduced=(4, 46),
         source="transformers wheels, trainer.py: `training_step` passes `num_items_in_batch` to `compute_loss` "
                "from 4.46.0 (not in 4.45.2)"),
    _api("transformers.Trainer divides a loss without num_items_in_batch", "transformers",
         "Trainer dividing the loss by the accumulation steps when the batches carry no labels", introduced=(4, 53),
         source="transformers wheels, trainer.py `training_step`: `if not self.model_accepts_loss_kwargs and "
                "self.compute_loss_func is None: loss = loss / self.args.gradient_accumulation_steps` from 4.46.1 to "
                "4.52.1; `(not self.model_accepts_loss_kwargs or num_items_in_batch is None)` from 4.53.0 "
                "(`num_items_in_batch` is counted from the batches' `labels`); 4.46.0 multiplies every loss by the "
                "accumulation steps before accelerate's division"),
    _api("torch.load(weights_only=)", "torch", "torch.load(weights_only=...)", introduced=(1, 13),
         source="the torch.load documentation of PyTorch 1.13 (docs.pytorch.org/docs/1.13/generated/torch.load.html), "
                "the first with `weights_only` (pytorch/pytorch#86812)"),
    _api("torch.load weights_only default", "torch", "torch.load's default `weights_only=True`", introduced=(2, 6),
         source="torch/serialization.py: `weights_only=None` resolved by `_default_to_weights_only` to True without a "
                "`pickle_module` (torch 2.13); the UnpicklingError text \"In PyTorch 2.6, we changed the default value "
                "of the `weights_only` argument in `torch.load` from `False` to `True`\""),
    _api("transformers.TF* refuses Keras 3", "transformers", "transformers' TensorFlow code under Keras 3",
         introduced=(4, 38),
         source="transformers wheels, modeling_tf_utils.py: `import tf_keras as keras`, else `import keras` and "
                "\"ValueError: Your currently installed version of Keras is Keras 3, but this is not yet supported in "
                "Transformers. Please install the backwards-compatible tf-keras package\" from 4.38.0; 4.37.0 and "
                "earlier import `from keras import backend as K` whatever its version"),
])


def api_versions(key: str) -> ApiVersions:
    """The table's entry for ``key`` (a KeyError for a key it does not have: a bug in a rule)."""
    return API_VERSIONS[key]


#: modules a library API cannot run without: a script that uses one of these (qualified-name prefixes) and
#: runs has the module installed. transformers' TensorFlow classes raise "requires the TensorFlow library"
#: without tensorflow; `transformers.optimization` (its `AdamW`) imports torch at its top.
REQUIRED_BY = {
    "tensorflow": ("transformers.TF", "transformers.modeling_tf_utils", "transformers.keras_callbacks"),
    "torch": ("transformers.AdamW", "transformers.optimization.AdamW"),
}
