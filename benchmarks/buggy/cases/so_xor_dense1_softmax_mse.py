# /// script
# dependencies = ["keras==2.2.4", "tensorflow==1.12.0"]
# ///
# (the environment of the question, as defects4ml reproduces it)
# A Stack Overflow question training a tiny Keras network on XOR: two sigmoid hidden layers, then an output
# layer of one unit with softmax activation, trained with mean squared error. A softmax over one unit is
# always 1.0, so the output never depends on the input and the loss never moves.
# evidence: https://stackoverflow.com/questions/34311586 (the answer: softmax cannot be used on a 1-D output;
# the fix removes it), bug 084 of the defects4ml benchmark (mohmehmo/defects4ml, bugs/084)
from keras.models import Sequential
from keras.layers.core import Dense
from keras.optimizers import SGD
import numpy

X = numpy.array([[1., 1.], [0., 0.], [1., 0.], [0., 1.], [1., 1.], [0., 0.]])
y = numpy.array([[0.], [0.], [1.], [1.], [0.], [0.]])

model = Sequential()
model.add(Dense(2, input_dim=2, init='uniform', activation='sigmoid'))
model.add(Dense(3, init='uniform', activation='sigmoid'))
model.add(Dense(1, init='uniform', activation='softmax'))  # BUG TL312: softmax over a single output unit is always 1.0
sgd = SGD(lr=0.001, decay=1e-6, momentum=0.9, nesterov=True)
model.compile(loss='mean_squared_error', optimizer=sgd)

history = model.fit(X, y, nb_epoch=20)
print(model.predict(numpy.array([[1, 0]])))
