# /// script
# dependencies = ["keras==2.0.8", "tensorflow==1.3.0", "numpy"]
# ///
# (the environment of the report: Keras 2.0.x, August 2017)
# A Keras user switching a working classifier from categorical_crossentropy to
# sparse_categorical_crossentropy (hoping it would help with rare classes) while keeping the one-hot
# targets: the sparse loss expects one integer class id per sample, so fit rejects the target shape
# ("expected activation_1 to have shape (None, None, 1) but got array with shape (1, 1, 2)").
# evidence: keras-team/keras#7749 ("sparse_categorical_crossentropy requires a single output": the asker's
# one-hot targets worked with categorical_crossentropy and fail with the sparse loss; the reply: "you're
# having some confusion with" the sparse loss, which takes integer class ids)
import numpy as np
from keras.models import Sequential
from keras.layers import Dense, Activation

model = Sequential()
model.add(Dense(2, input_shape=(None, 2)))
model.add(Activation('softmax'))

model.compile(loss='sparse_categorical_crossentropy',  # BUG TL408: the targets below are one-hot vectors; the sparse loss expects integer class ids
              optimizer='rmsprop',
              metrics=['accuracy'])

inp = np.array([[[2, 3]]])
out = np.array([[[1, 0]]])

model.fit(inp, out)
