"""TL503 (TrainingArguments path) and TL505 with aliased classes, a `Seq2SeqTrainer` subclass,
`model_init` and GPUs hidden through CUDA_VISIBLE_DEVICES (a string, not a word)."""
import os

from transformers import AutoModelForSequenceClassification as Auto
from transformers import Seq2SeqTrainer
from transformers import Seq2SeqTrainingArguments as Args

os.environ["CUDA_VISIBLE_DEVICES"] = ""


class WeightedTrainer(Seq2SeqTrainer):
    pass


def model_init():
    return Auto.from_pretrained("bert-base-cased", num_labels=2)


lr = 1e-3
args = Args("out", learning_rate=lr, fp16=True)  # TL503, TL505 (hidden GPUs)
trainer = WeightedTrainer(model_init=model_init, args=args)
trainer.train()

cpu_args = Args("out2", fp16=True, no_cuda=True)  # TL505
