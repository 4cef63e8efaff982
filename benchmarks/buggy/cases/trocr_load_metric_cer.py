# A TrOCR seal-recognition fine-tuning script using Seq2SeqTrainer and the CER metric through
# `datasets.load_metric`, which datasets 3 removed.
# evidence: Gmgge/TrOCR-Seal-Recognition#51 (ImportError: cannot import name 'load_metric' from 'datasets')
import torch
from datasets import load_metric  # BUG TL801: load_metric was removed from datasets
from transformers import (
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    TrOCRProcessor,
    VisionEncoderDecoderModel,
    default_data_collator,
)

from dataset import SealDataset

processor = TrOCRProcessor.from_pretrained("microsoft/trocr-base-printed")
model = VisionEncoderDecoderModel.from_pretrained("microsoft/trocr-base-printed")
model.config.decoder_start_token_id = processor.tokenizer.cls_token_id
model.config.pad_token_id = processor.tokenizer.pad_token_id

train_dataset = SealDataset("data/train", processor)
eval_dataset = SealDataset("data/val", processor)
cer_metric = load_metric("cer")


def compute_metrics(pred):
    labels_ids = pred.label_ids
    pred_ids = pred.predictions
    pred_str = processor.batch_decode(pred_ids, skip_special_tokens=True)
    labels_ids[labels_ids == -100] = processor.tokenizer.pad_token_id
    label_str = processor.batch_decode(labels_ids, skip_special_tokens=True)
    return {"cer": cer_metric.compute(predictions=pred_str, references=label_str)}


training_args = Seq2SeqTrainingArguments(
    predict_with_generate=True,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=8,
    output_dir="./checkpoints",
    num_train_epochs=20,
)
trainer = Seq2SeqTrainer(
    model=model,
    args=training_args,
    compute_metrics=compute_metrics,
    train_dataset=train_dataset,
    eval_dataset=eval_dataset,
    data_collator=default_data_collator,
)
trainer.train()
