# A Keras MLP predicting a stock's up/down trend from 34 technical indicators: Dense layers of 512, 200, 200
# and 128 units, then `Dense(1, activation='softmax')` with binary cross-entropy; predict_proba returns 0.0
# (1.0 in newer Keras) for every sample because a softmax over one unit is constant.
# evidence: keras-team/keras#10607 ("Why the predict_proba() doesn't work": every prediction is the same; the
# answer: the final activation for binary classification with one output must be sigmoid)
from keras.layers import Dense
from keras.models import Sequential

from data import load_indicators

x_train, y_train, x_test = load_indicators()

model = Sequential()
model.add(Dense(512, activation='relu', input_dim=34))
model.add(Dense(200, activation='relu'))
model.add(Dense(200, activation='relu'))
model.add(Dense(128, activation='relu'))
model.add(Dense(1, activation='softmax'))  # BUG TL312: softmax over a single output unit is always 1.0
model.compile(optimizer='rmsprop',
              loss='binary_crossentropy',
              metrics=['binary_accuracy'])

model.fit(x_train, y_train, epochs=2, batch_size=50, verbose=0)
print(model.predict_proba(x_test, batch_size=50))
