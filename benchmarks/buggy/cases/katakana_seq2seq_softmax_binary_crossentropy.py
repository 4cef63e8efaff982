# katakana's Keras sequence-to-sequence model (katakana/model.py): an LSTM encoder-decoder whose decoder
# ends in TimeDistributed(Dense(output_dict_size, activation="softmax")), one distribution over the output
# characters per step, compiled with loss='binary_crossentropy', which scores every character as an
# independent yes/no instead of the one right class. (train.py builds it with create_keras_model and fits
# it on one-hot targets.)
# evidence: wanasit/katakana#3 ("Loss function": "It should be 'categorical_crossentropy'? Right?"; the
# author: "You are right. I should have used the 'categorical_crossentropy', instead of
# binary_crossentropy. I will fix this soon."), fixed in
# wanasit/katakana@906defa5cd91ba66c11a2fc0bffac355241838e1 ("Fix loss function in the model")
from keras.layers import LSTM, Dense, Embedding, Input, TimeDistributed
from keras.models import Model


def create_keras_model(
        input_dict_size,
        output_dict_size,
        input_length=20,
        output_length=20):

    encoder_input = Input(shape=(input_length,))
    decoder_input = Input(shape=(output_length,))

    encoder = Embedding(input_dict_size, 64, input_length=input_length, mask_zero=True)(encoder_input)
    encoder = LSTM(64, return_sequences=False)(encoder)

    decoder = Embedding(output_dict_size, 64, input_length=output_length, mask_zero=True)(decoder_input)
    decoder = LSTM(64, return_sequences=True)(decoder, initial_state=[encoder, encoder])
    decoder = TimeDistributed(Dense(output_dict_size, activation="softmax"))(decoder)  # BUG TL409: a softmax over the output characters scored with binary_crossentropy

    model = Model(inputs=[encoder_input, decoder_input], outputs=[decoder])
    model.compile(optimizer='adam', loss='binary_crossentropy')

    return model
