# /// script
# dependencies = ["keras==2.3.1", "tensorflow==2.1.0"]
# ///
# (the environment of the question, as defects4ml reproduces it)
# A Stack Overflow question: an AlexNet-like binary image classifier (Sequential.add(), layers imported in the
# middle of the script), ending in `Dense(1)` and `Activation("softmax")`, compiled with binary cross-entropy
# and trained with fit_generator on an ImageDataGenerator flow: the one-unit softmax is constantly 1.0.
# evidence: https://stackoverflow.com/questions/58844149 (the answer: a single output unit needs sigmoid),
# bug 092 of the defects4ml benchmark (mohmehmo/defects4ml, bugs/092)
from keras.models import Sequential
import numpy as np

X_train = np.load("images.npy")
y_train = np.load("labels.npy")

model = Sequential()
from keras.layers import Dropout, Conv2D, MaxPooling2D, Flatten, Activation, Dense
model.add(Conv2D(96, kernel_size=11, padding="same", input_shape=(300, 300, 1), activation='relu'))
model.add(MaxPooling2D(pool_size=(3, 3), strides=(2, 2)))
model.add(Conv2D(128, kernel_size=3, padding="same", activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2), strides=(2, 2)))
model.add(Conv2D(128, kernel_size=3, padding="same", activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2), strides=(2, 2)))
model.add(Flatten())
model.add(Dense(units=300, activation='relu'))
model.add(Dropout(0.2))
model.add(Dense(1))
model.add(Activation("softmax"))  # BUG TL312: softmax over a single output unit is always 1.0

model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])

from keras.preprocessing.image import ImageDataGenerator

datagen = ImageDataGenerator(featurewise_center=True, rotation_range=90, fill_mode='nearest', validation_split=0.2)
datagen.fit(X_train)
train_generator = datagen.flow(X_train, y_train, batch_size=8)
history = model.fit_generator(generator=train_generator, steps_per_epoch=len(train_generator) / 8, epochs=5)
