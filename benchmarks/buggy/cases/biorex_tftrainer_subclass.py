# /// script
# dependencies = ["transformers>=4.18.0", "tensorflow>=2.9.3", "datasets>=2.3.2", "numpy>=1.20.0"]
# ///
# (the repository's requirements.txt of the time: no upper bound, so a fresh install gets a transformers
# without TFTrainer)
# A biomedical relation-extraction project's TensorFlow training wrapper (src/tf_wrapper.py): it imports
# transformers' internals by submodule, then `TFTrainer` from the top level, and subclasses it to track a
# main metric; the run script builds `TFTrainerWrapper(model=..., args=TFTrainingArguments, ...)`.
# evidence: ncbi/BioREx#7 ("ImportError: cannot import name 'TFTrainer' from 'transformers'"); fixed in
# ncbi/BioREx@e9e7c89539af6158d568a42004911ffac616dcb6 ("remove import of TFTrainer": the class is vendored
# into tf_wrapper.py and the import dropped)
import datetime
import math
import os
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from transformers.modeling_tf_utils import TFPreTrainedModel
from transformers.optimization_tf import GradientAccumulator, create_optimizer
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, EvalPrediction, IntervalStrategy, PredictionOutput, set_seed
from transformers.training_args_tf import TFTrainingArguments
from transformers.utils import logging
from transformers import TFTrainer  # BUG TL803: TFTrainer is gone from transformers: ImportError at import time

logger = logging.get_logger(__name__)


class TFTrainerWrapper(TFTrainer):

    def __init__(
        self,
        model: TFPreTrainedModel,
        args: TFTrainingArguments,
        train_dataset: tf.data.Dataset,
        eval_dataset: tf.data.Dataset,
        compute_metrics: Callable[[EvalPrediction], Dict],
        main_metric_name: str,
        tb_writer: Optional[tf.summary.SummaryWriter] = None,
        optimizers: Tuple[tf.keras.optimizers.Optimizer, tf.keras.optimizers.schedules.LearningRateSchedule] = (
            None,
            None,
        ),
    ):
        super().__init__(
            model=model,
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            compute_metrics=compute_metrics,
            tb_writer=tb_writer,
            optimizers=optimizers,
        )
        self.main_metric_name = main_metric_name if main_metric_name.startswith("eval_") else "eval_" + main_metric_name

    def train(self, output_dir: Optional[str] = None) -> None:
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        train_ds = self.get_train_tfdataset()
        self.gradient_accumulator.reset()
        num_update_steps_per_epoch = self.num_train_examples / self.total_train_batch_size
        approx = math.floor if self.args.dataloader_drop_last else math.ceil
        num_update_steps_per_epoch = max(approx(num_update_steps_per_epoch), 1)
        self.steps_per_epoch = num_update_steps_per_epoch
        t_total = self.steps_per_epoch * self.args.num_train_epochs
        with self.args.strategy.scope():
            self.create_optimizer_and_scheduler(num_training_steps=t_total)
            for step, batch in enumerate(train_ds):
                self.distributed_training_steps(batch)
                if self.global_step % self.args.eval_steps == 0:
                    metrics = self.evaluate()
                    logger.info(f"{self.main_metric_name}: {metrics[self.main_metric_name]}")
                if self.global_step >= t_total:
                    break
