# DANA's tutorial notebook (experiment/DANA_a_tutorial.ipynb): a functional Keras model for activity
# recognition built by a helper, ending in Dense(out_shape, activation='softmax'), trained by a hand-written
# GradientTape loop whose loss is SparseCategoricalCrossentropy(from_logits=True): the loss applies a second
# softmax to the probabilities. (The convolution stack and the dimension-adaptive variant are shortened here.)
# evidence: mmalekzadeh/dana#1 ("Potential bug - Usage of from_logits=True on the model that has softmax
# activated output"; closed after the fix), fixed in mmalekzadeh/dana@02cce81 ("Update DANA_a_tutorial.ipynb":
# from_logits=True becomes from_logits=False)
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras.layers import LSTM, Conv2D, Dense, Dropout, Input, Reshape


def Ordonez2016DeepOriginal(inp_shape, out_shape):
    nb_filters = 64
    drp_out_dns = .5
    nb_dense = 128
    inp = Input(inp_shape)
    x = Conv2D(nb_filters, kernel_size = (5,1), strides=(1,1), padding='valid', activation='relu')(inp)
    x = Conv2D(nb_filters, kernel_size = (5,1), strides=(1,1), padding='valid', activation='relu')(x)
    x = Reshape((x.shape[1],x.shape[2]*x.shape[3]))(x)
    act = LSTM(nb_dense, return_sequences=True, activation='tanh', name="lstm_1")(x)
    act = Dropout(drp_out_dns, name= "dot_1")(act)
    act = LSTM(nb_dense, activation='tanh', name="lstm_2")(act)
    act = Dropout(drp_out_dns, name= "dot_2")(act)
    out_act = Dense(out_shape, activation='softmax',  name="act_smx")(act)
    model = keras.models.Model(inputs=inp, outputs=out_act)
    return model


def standard_training(model, X_train, Y_train, X_val, Y_val, data_class_weights,
                      batch_size=128, num_epochs=128, save_dir=None):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)  # BUG TL403: the model already ends in a softmax
    optimizer = tf.keras.optimizers.Adam()
    best_val_accuracy = 0.
    for epoch in range(num_epochs):
        train_dataset = tf.data.Dataset.from_tensor_slices((X_train, Y_train))
        train_dataset = iter(train_dataset.shuffle(len(X_train)).batch(batch_size))
        n_iterations_per_epoch = len(X_train)//(batch_size)
        for i in range(n_iterations_per_epoch):
            with tf.GradientTape() as tape:
                X, Y = next(train_dataset)
                sample_weight = [data_class_weights[y] for y in Y.numpy()]
                logits = model(X)
                loss_value = loss_fn(Y, logits, sample_weight)
            gradients = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply_gradients(zip(gradients, model.trainable_weights))
        val_accuracy = tf.keras.metrics.Accuracy()
        logits = model(X_val, training=False)
        prediction = tf.argmax(logits, axis=1, output_type=tf.int32)
        val_accuracy(prediction, Y_val)
        if val_accuracy.result() > best_val_accuracy:
            best_val_accuracy = val_accuracy.result()
    return model


X_train, Y_train = np.load("X_train.npy"), np.load("y_train.npy")
X_train = np.expand_dims(X_train, 3)
data_class_weights = dict(enumerate(np.ones(len(np.unique(Y_train)))))
w = X_train.shape[1]
h = X_train.shape[2]
org_model = Ordonez2016DeepOriginal((w, h, 1), len(np.unique(Y_train)))
org_model = standard_training(org_model,
                  X_train[len(X_train)//10:], Y_train[len(X_train)//10:],
                  X_train[:len(X_train)//10], Y_train[:len(X_train)//10],
                  data_class_weights, batch_size=128, num_epochs=500)
