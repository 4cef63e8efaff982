# /// script
# dependencies = ["tensorflow<2"]
# ///
# (a TensorFlow 1 graph model, as the repository had it)
# Adaptive style transfer's model (model.py): the multi-scale discriminator returns a dict of raw scores per
# scale, the losses are sigmoid cross-entropy on those logits, and the accuracies are dict comprehensions over
# the same predictions thresholded at 0.5 (`pred > tf.ones_like(pred)*0.5`) as if they were probabilities:
# the decision boundary of a logit is 0.
# evidence: CompVis/adaptive-style-transfer#4 ("accuracy calculation": "pred is not the output of sigmoid"; the
# author: "you're right, there is a minor mistake... the correct solution will be x=(pred > tf.zeros_like(pred))"),
# fixed in CompVis/adaptive-style-transfer@f8e1c6af00330faeaa386e951d82a206ba735bfa
import tensorflow as tf

from module import discriminator, encoder, decoder


def sce_criterion(logits, labels):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=logits, labels=labels))


class Artgan(object):
    def __init__(self, sess, args):
        self.sess = sess
        self.options = args
        self.loss = sce_criterion
        self._build_model()

    def _build_model(self):
        self.input_painting = tf.placeholder(tf.float32, [None, 768, 768, 3])
        self.input_photo = tf.placeholder(tf.float32, [None, 768, 768, 3])
        self.output_photo = decoder(encoder(self.input_photo, self.options), self.options)

        self.input_painting_discr_predictions = discriminator(image=self.input_painting, options=self.options, reuse=False)
        self.output_photo_discr_predictions = discriminator(image=self.output_photo, options=self.options, reuse=True)

        scale_weight = {"scale_0": 1., "scale_1": 1., "scale_3": 1., "scale_5": 1., "scale_6": 1.}
        self.input_painting_discr_loss = {key: self.loss(pred, tf.ones_like(pred)) * scale_weight[key]
                                          for key, pred in zip(self.input_painting_discr_predictions.keys(),
                                                               self.input_painting_discr_predictions.values())}
        self.input_painting_discr_acc = {key: tf.reduce_mean(tf.cast(x=(pred > tf.ones_like(pred)*0.5),  # BUG TL609: accuracy thresholds raw logits at 0.5 as if they were probabilities
                                                                     dtype=tf.float32)) * scale_weight[key]
                                         for key, pred in zip(self.input_painting_discr_predictions.keys(),
                                                              self.input_painting_discr_predictions.values())}

        self.output_photo_gener_loss = {key: self.loss(pred, tf.ones_like(pred)) * scale_weight[key]
                                        for key, pred in zip(self.output_photo_discr_predictions.keys(),
                                                             self.output_photo_discr_predictions.values())}
        self.output_photo_gener_acc = {key: tf.reduce_mean(tf.cast(x=(pred > tf.ones_like(pred)*0.5),  # BUG TL609: accuracy thresholds raw logits at 0.5 as if they were probabilities
                                                                   dtype=tf.float32)) * scale_weight[key]
                                       for key, pred in zip(self.output_photo_discr_predictions.keys(),
                                                            self.output_photo_discr_predictions.values())}
        self.gener_acc = tf.add_n(list(self.output_photo_gener_acc.values())) / float(len(scale_weight.keys()))
