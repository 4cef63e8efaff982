# /// script
# dependencies = ["keras>=3.10", "tensorflow>=2.19"]
# ///
# (the book's third edition, Keras 3)
# A book's text-classification notebook (chapter14_text-classification.ipynb, "Pretraining a word
# embedding"): a continuous-bag-of-words model predicts the missing word of a window over a 30,000-token
# vocabulary, built with the functional API and ending in Dense(max_tokens, activation="sigmoid"), compiled
# with loss="sparse_categorical_crossentropy", which expects one softmax distribution over the vocabulary
# (the sigmoid is left over from the chapter's binary sentiment models).
# evidence: fchollet/deep-learning-with-python-notebooks#279 ("CBOW: `sigmoid` instead of `softmax` loss
# with `sparse_categorical_crossentropy`?"; two more readers agree, and the same report again in
# fchollet/deep-learning-with-python-notebooks#292: the activation should be softmax)
import keras
from keras import layers
import tensorflow as tf

max_tokens = 30_000
context_size = 4
window_size = 9


def window_data(token_ids):
    num_windows = tf.maximum(tf.size(token_ids) - context_size * 2, 0)
    windows = tf.range(window_size)[None, :]
    windows = windows + tf.range(num_windows)[:, None]
    windowed_tokens = tf.gather(token_ids, windows)
    return tf.data.Dataset.from_tensor_slices(windowed_tokens)


def split_label(window):
    left = window[:context_size]
    right = window[context_size + 1 :]
    bag = tf.concat((left, right), axis=0)
    label = window[4]
    return bag, label


# (the notebook's earlier cells that tokenize the IMDB reviews, shortened)
text_vectorization = layers.TextVectorization(max_tokens=max_tokens, split="whitespace", output_mode="int")
dataset = keras.utils.text_dataset_from_directory("aclImdb/train", batch_size=None)
dataset = dataset.map(lambda x, y: x, num_parallel_calls=8)
text_vectorization.adapt(dataset)
dataset = dataset.map(text_vectorization, num_parallel_calls=8)
dataset = dataset.interleave(window_data, cycle_length=8, num_parallel_calls=8)
dataset = dataset.map(split_label, num_parallel_calls=8)

hidden_dim = 64
inputs = keras.Input(shape=(2 * context_size,))
cbow_embedding = layers.Embedding(
    max_tokens,
    hidden_dim,
)
x = cbow_embedding(inputs)
x = layers.GlobalAveragePooling1D()(x)
outputs = layers.Dense(max_tokens, activation="sigmoid")(x)  # BUG TL409: one class out of 30,000 (a sparse categorical loss below) needs a softmax, not independent sigmoids
cbow_model = keras.Model(inputs, outputs)
cbow_model.compile(
    optimizer="adam",
    loss="sparse_categorical_crossentropy",
    metrics=["sparse_categorical_accuracy"],
)

dataset = dataset.batch(1024).cache()
cbow_model.fit(dataset, epochs=4)
