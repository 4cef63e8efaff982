# /// script
# dependencies = ["tensorflow<2", "keras<2.4"]
# ///
# (a TensorFlow 1 graph script, as the repository had it)
# The toy example of an attention layer (toy_example.py): a GRU with attention on IMDB in a TensorFlow 1
# graph, whose fully connected output `y_hat` is a logit fed to sigmoid_cross_entropy_with_logits; the
# accuracy op rounds the raw logit (`tf.round(y_hat)`) and compares it with the 0/1 target (and then takes
# 1 minus that): accuracy computed on logits, not on sigmoid probabilities.
# evidence: ilivans/tf-rnn-attention#3 ("Question for accuracy metric in toy_example.py"; the author: "both
# variants are wrong, because y_hat are logits rather than probabilities. It must be
# tf.round(tf.sigmoid(y_hat))"), fixed in ilivans/tf-rnn-attention@158f8a2538b07587e831806a94d43817ea442b7c
import numpy as np
import tensorflow as tf
from tensorflow.contrib.rnn import GRUCell
from tensorflow.python.ops.rnn import dynamic_rnn as rnn
from keras.datasets import imdb

from attention import attention
from utils import batch_generator, get_vocabulary_size, fit_in_vocabulary, zero_pad

(X_train, y_train), (X_test, y_test) = imdb.load_data()
vocabulary_size = get_vocabulary_size(X_train)
X_test = fit_in_vocabulary(X_test, vocabulary_size)
sequence_length = 250
X_train = zero_pad(X_train, sequence_length)
X_test = zero_pad(X_test, sequence_length)

batch_ph = tf.placeholder(tf.int32, [None, sequence_length])
target_ph = tf.placeholder(tf.float32, [None])
seq_len_ph = tf.placeholder(tf.int32, [None])
keep_prob_ph = tf.placeholder(tf.float32)

embed_dim = 100
embeddings_var = tf.Variable(tf.random_uniform([vocabulary_size, embed_dim], -1.0, 1.0), trainable=True)
batch_embedded = tf.nn.embedding_lookup(embeddings_var, batch_ph)

hidden_size = 150
rnn_outputs, _ = rnn(GRUCell(hidden_size), inputs=batch_embedded, sequence_length=seq_len_ph, dtype=tf.float32)
attention_output = attention(rnn_outputs, 50)
drop = tf.nn.dropout(attention_output, keep_prob_ph)

W = tf.Variable(tf.truncated_normal([drop.get_shape()[1].value, 1], stddev=0.1))
b = tf.Variable(tf.constant(0., shape=[1]))
y_hat = tf.nn.xw_plus_b(drop, W, b)
y_hat = tf.squeeze(y_hat)

loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=y_hat, labels=target_ph))
optimizer = tf.train.AdamOptimizer(learning_rate=1e-3).minimize(loss)

accuracy = 1. - tf.reduce_mean(tf.cast(tf.equal(tf.round(y_hat), target_ph), tf.float32))  # BUG TL609: accuracy on raw logits (rounded without a sigmoid), compared with 0/1 labels

batch_size = 256
train_batch_generator = batch_generator(X_train, y_train, batch_size)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(10):
        for b in range(X_train.shape[0] // batch_size):
            x_batch, y_batch = next(train_batch_generator)
            seq_len = np.array([list(x).index(0) + 1 for x in x_batch])
            loss_tr, acc, _ = sess.run([loss, accuracy, optimizer], feed_dict={batch_ph: x_batch, target_ph: y_batch,
                                                                               seq_len_ph: seq_len, keep_prob_ph: 0.5})
