"""``torch.nn.modules.rnn``'s import path; the classes are defined in
``tensorix.nn.layers.rnn``."""

from ..layers.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
