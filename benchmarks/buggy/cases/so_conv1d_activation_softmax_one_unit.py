# /// script
# dependencies = ["keras==2.3.1", "tensorflow==2.1.0"]
# ///
# (the environment of the question, as defects4ml reproduces it)
# A Stack Overflow question: a 1-D convolutional binary classifier built with Sequential.add(), whose head is
# `Dense(1)` followed by a separate `Activation('softmax')` layer, compiled with binary cross-entropy: the
# softmax of one unit is constantly 1.0 and accuracy sticks at the share of the positive class.
# evidence: https://stackoverflow.com/questions/45378493 (the answer: with one output unit use sigmoid, not
# softmax), bug 086 of the defects4ml benchmark (mohmehmo/defects4ml, bugs/086)
from keras.models import Sequential
from keras.layers import Dense, Dropout, Activation, Conv1D, BatchNormalization, LeakyReLU, Flatten
from keras.callbacks import ReduceLROnPlateau
import numpy as np

X_train = np.load("x_train.npy")
y_train = np.load("y_train.npy")
X_test = np.load("x_test.npy")
y_test = np.load("y_test.npy")

model = Sequential()
model.add(Conv1D(input_shape=(10, 4), filters=16, kernel_size=4, padding='same'))
model.add(BatchNormalization())
model.add(LeakyReLU())
model.add(Dropout(0.2))
model.add(Conv1D(filters=8, kernel_size=4, padding='same'))
model.add(BatchNormalization())
model.add(LeakyReLU())
model.add(Dropout(0.2))
model.add(Flatten())
model.add(Dense(64))
model.add(BatchNormalization())
model.add(LeakyReLU())
model.add(Dense(1))
model.add(Activation('softmax'))  # BUG TL312: softmax over a single output unit is always 1.0

reduce_lr = ReduceLROnPlateau(monitor='val_accuracy', factor=0.9, patience=30, min_lr=0.000001, verbose=0)
model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])
history = model.fit(X_train, y_train, nb_epoch=100, batch_size=128, verbose=0,
                    validation_data=(X_test, y_test), callbacks=[reduce_lr], shuffle=True)
