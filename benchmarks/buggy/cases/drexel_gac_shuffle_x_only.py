# A chatbot's question classifier (tools/gac_training_tests.py): questions read from a CSV are hashed
# into x, one-hot answer classes into y, then only x is shuffled before the train/test split and fit.
# evidence: DrexelChatbotGroup/DrexelChatbot#15 ("Incomplete randomization": gac_training_tests.py
# randomizes the order of the x data, but not the y data; "Fixed"); fixed in
# DrexelChatbotGroup/DrexelChatbot@fedac35cc213c390347e21bea57c952f4a9661a8 (shuffles one index list for both)
file_name = "gac_data.csv"
num_of_gas = 9
max_question_length = 25
top_words = 5000
filt = '.?"\/!,<>@#$%^&*_-+=|}{][:;~`'
embedding_vector_length = 64
percent_test = 0.5

import csv
import math
import numpy
numpy.random.seed(0)

from zlib import adler32
from keras.preprocessing import sequence
from keras.models import Sequential
from keras.layers.embeddings import Embedding
from keras.layers import LSTM
from keras.layers import Dense

import random


def my_hash(item):
    to_hash = item.replace("'", " ")
    for c in filt:
        to_hash = to_hash.replace(c, "")
    return [adler32(word.encode()) % top_words for word in to_hash.lower().split(" ")]


csvfile = open(file_name, newline='')
x = []
y = []
reader = csv.reader(csvfile)
next(reader)
for record in reader:
    if record[4] == "yes":
        x.append(my_hash(record[2]))
        temp = [0] * num_of_gas
        temp[int(record[3])] = 1
        y.append(temp)
csvfile.close()

random.shuffle(x)  # BUG TL104: only the questions are shuffled, the labels in y keep their order

x = sequence.pad_sequences(x, maxlen=max_question_length)

split_point = math.floor(len(x) * percent_test)
x_test = x[:split_point]
x_train = x[split_point:]
y_test = y[:split_point]
y_train = y[split_point:]

model = Sequential()
model.add(Embedding(top_words, embedding_vector_length, input_length=max_question_length))
model.add(LSTM(50))
model.add(Dense(num_of_gas, activation='softmax'))
model.compile(optimizer='rmsprop', loss='categorical_crossentropy', metrics=['accuracy'])
model.fit(x_train, y_train, validation_data=(x_test, y_test), nb_epoch=8, batch_size=64)
