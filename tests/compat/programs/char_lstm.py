"""A character-level LSTM language model with truncated backpropagation through time
(hidden state carried and detached between batches), gradient clipping and Adam."""

import numpy as np
import torch
import torch.nn as nn

VOCAB, EMBED, HIDDEN, LAYERS, SEQ, BATCH = 40, 32, 64, 2, 16, 8


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, HIDDEN, num_layers=LAYERS, batch_first=True)
        self.fc = nn.Linear(HIDDEN, VOCAB)

    def forward(self, x, hidden):
        self.lstm.flatten_parameters()
        out, hidden = self.lstm(self.embed(x), hidden)
        return self.fc(out.reshape(-1, HIDDEN)), hidden

    def init_hidden(self, batch_size):
        weight = next(self.parameters())
        return (weight.new_zeros(LAYERS, batch_size, HIDDEN),
                weight.new_zeros(LAYERS, batch_size, HIDDEN))


def make_model():
    torch.manual_seed(0)
    return CharLSTM()


def make_data():
    rng = np.random.default_rng(1)
    text = np.tile(rng.integers(0, VOCAB, size=53), 60)
    n = len(text) // BATCH
    return torch.tensor(text[: n * BATCH].reshape(BATCH, n), dtype=torch.long)


def train(model, data, steps):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    hidden = model.init_hidden(BATCH)
    losses = []
    for step in range(steps):
        i = (step * SEQ) % (data.size(1) - SEQ - 1)
        inputs, targets = data[:, i:i + SEQ], data[:, i + 1:i + SEQ + 1]
        hidden = tuple(h.detach() for h in hidden)
        optimizer.zero_grad()
        logits, hidden = model(inputs, hidden)
        loss = criterion(logits, targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 30))
