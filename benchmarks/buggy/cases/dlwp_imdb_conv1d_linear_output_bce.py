# /// script
# dependencies = ["keras==2.0.8", "tensorflow==1.3.0"]
# ///
# (the book's environment: Keras 2.0.8 on TensorFlow 1.x)
# A book's notebook (6.4-sequence-processing-with-convnets.ipynb) training a 1D convnet on IMDB: a
# Sequential model built layer by layer with model.add, ending in layers.Dense(1) with no activation,
# compiled with loss='binary_crossentropy', which expects probabilities; the linear output is read as a
# probability (Keras clips it to [eps, 1-eps]) and the loss barely moves.
# evidence: fchollet/deep-learning-with-python-notebooks#124 ("In the Dense layer, a sigmoidal activation
# function must be added"; a reader: "Until I added the sigmoid activation the loss wasn't changing with
# the epochs"); the notebook as of fchollet/deep-learning-with-python-notebooks@8a30b90fed187aaddaaf1fc868ec8e0ac92bca40
from keras.datasets import imdb
from keras.preprocessing import sequence

max_features = 10000
max_len = 500

print('Loading data...')
(x_train, y_train), (x_test, y_test) = imdb.load_data(num_words=max_features)
x_train = sequence.pad_sequences(x_train, maxlen=max_len)
x_test = sequence.pad_sequences(x_test, maxlen=max_len)

from keras.models import Sequential
from keras import layers
from keras.optimizers import RMSprop

model = Sequential()
model.add(layers.Embedding(max_features, 128, input_length=max_len))
model.add(layers.Conv1D(32, 7, activation='relu'))
model.add(layers.MaxPooling1D(5))
model.add(layers.Conv1D(32, 7, activation='relu'))
model.add(layers.GlobalMaxPooling1D())
model.add(layers.Dense(1))

model.summary()

model.compile(optimizer=RMSprop(lr=1e-4),
              loss='binary_crossentropy',  # BUG TL412: the last layer is linear (Dense(1), no activation) and the loss expects probabilities
              metrics=['acc'])
history = model.fit(x_train, y_train,
                    epochs=10,
                    batch_size=128,
                    validation_split=0.2)

import matplotlib.pyplot as plt

acc = history.history['acc']
val_acc = history.history['val_acc']
epochs = range(len(acc))
plt.plot(epochs, acc, 'bo', label='Training acc')
plt.plot(epochs, val_acc, 'b', label='Validation acc')
plt.show()
