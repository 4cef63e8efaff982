# /// script
# dependencies = ["transformers>=4.39.3", "peft>=0.6.2", "datasets>=2.11.0", "accelerate>=0.21.0"]
# ///
# (the environment of the report: the repository's requirements, which a fresh install resolves to a
# transformers release without `evaluation_strategy` and without the Trainer's `tokenizer=` argument)
# Whisper LoRA/AdaLoRA fine-tuning script (finetune.py): arguments come from a `functools.partial` over an
# argparse helper, the training arguments are built inside main() with a line continuation, and the
# Seq2SeqTrainer gets the processor's feature extractor as `tokenizer=`.
# evidence: yeyupiaoling/Whisper-Finetune#112 (TypeError: Seq2SeqTrainingArguments.__init__() got an
# unexpected keyword argument 'evaluation_strategy'); fixed by the author in
# yeyupiaoling/Whisper-Finetune@9fddbb042ffcab490b587ead788eb4d00883e90f (eval_strategy=, and
# processing_class= for the trainer)
import argparse
import functools
import os

from peft import AdaLoraConfig, LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, WhisperForConditionalGeneration, WhisperProcessor

from utils.callback import SavePeftModelCallback
from utils.data_utils import DataCollatorSpeechSeq2SeqWithPadding
from utils.reader import CustomDataset
from utils.utils import add_arguments, make_inputs_require_grad

parser = argparse.ArgumentParser(description=__doc__)
add_arg = functools.partial(add_arguments, argparser=parser)
add_arg("train_data", type=str, default="dataset/train.json", help="training manifest")
add_arg("test_data", type=str, default="dataset/test.json", help="test manifest")
add_arg("base_model", type=str, default="openai/whisper-tiny", help="Whisper checkpoint")
add_arg("output_dir", type=str, default="output/", help="where checkpoints go")
add_arg("learning_rate", type=float, default=1e-3, help="learning rate")
add_arg("use_adalora", type=bool, default=True, help="AdaLoRA instead of LoRA")
add_arg("fp16", type=bool, default=True, help="mixed precision")
add_arg("num_train_epochs", type=int, default=3, help="epochs")
add_arg("per_device_train_batch_size", type=int, default=8, help="train batch size")
add_arg("per_device_eval_batch_size", type=int, default=8, help="eval batch size")
add_arg("eval_steps", type=int, default=1000, help="evaluate every N steps")
add_arg("save_steps", type=int, default=1000, help="save every N steps")
args = parser.parse_args()


def main():
    processor = WhisperProcessor.from_pretrained(args.base_model, language="Chinese", task="transcribe")
    train_dataset = CustomDataset(data_list_path=args.train_data, processor=processor)
    test_dataset = CustomDataset(data_list_path=args.test_data, processor=processor)
    data_collator = DataCollatorSpeechSeq2SeqWithPadding(processor=processor)

    model = WhisperForConditionalGeneration.from_pretrained(args.base_model, device_map="auto")
    model.config.forced_decoder_ids = None
    model.config.suppress_tokens = []
    model = prepare_model_for_kbit_training(model)
    model.model.encoder.conv1.register_forward_hook(make_inputs_require_grad)

    target_modules = ["k_proj", "q_proj", "v_proj", "out_proj", "fc1", "fc2"]
    if args.use_adalora:
        config = AdaLoraConfig(init_r=12, target_r=4, beta1=0.85, beta2=0.85, tinit=200, tfinal=1000, deltaT=10,
                               lora_alpha=32, lora_dropout=0.1, orth_reg_weight=0.5, target_modules=target_modules)
    else:
        config = LoraConfig(r=32, lora_alpha=64, target_modules=target_modules, lora_dropout=0.05, bias="none")
    model = get_peft_model(model, config)

    output_dir = os.path.join(args.output_dir, os.path.basename(args.base_model))
    training_args = \
        Seq2SeqTrainingArguments(output_dir=output_dir,
                                 per_device_train_batch_size=args.per_device_train_batch_size,
                                 per_device_eval_batch_size=args.per_device_eval_batch_size,
                                 learning_rate=args.learning_rate,
                                 num_train_epochs=args.num_train_epochs,
                                 save_strategy="steps",
                                 evaluation_strategy="steps",  # BUG TL805: removed argument (eval_strategy): TypeError
                                 load_best_model_at_end=True,
                                 fp16=args.fp16,
                                 save_steps=args.save_steps,
                                 eval_steps=args.eval_steps,
                                 remove_unused_columns=False,
                                 label_names=["labels"],
                                 )

    trainer = Seq2SeqTrainer(args=training_args,
                             model=model,
                             train_dataset=train_dataset,
                             eval_dataset=test_dataset,
                             data_collator=data_collator,
                             tokenizer=processor.feature_extractor,  # BUG TL804: the Trainer no longer takes tokenizer= (processing_class=)
                             callbacks=[SavePeftModelCallback])
    model.config.use_cache = False
    trainer.train()
    trainer.save_state()


if __name__ == '__main__':
    main()
