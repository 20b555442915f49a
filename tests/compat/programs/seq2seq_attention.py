"""A GRU encoder-decoder with additive (Bahdanau) attention and teacher forcing, learning to
reverse digit sequences; padding masked in attention and ignored in the loss."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, SOS, VOCAB, HIDDEN, MAXLEN = 0, 1, 12, 48, 7


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD)
        self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, HIDDEN)

    def forward(self, src):
        outputs, hidden = self.gru(self.embedding(src))
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.Linear(3 * HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, 1, bias=False)

    def forward(self, hidden, encoder_outputs, mask):
        src_len = encoder_outputs.shape[1]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        attention = attention.masked_fill(mask == 0, -1e10)
        return F.softmax(attention, dim=1)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN)
        self.attention = Attention()
        self.gru = nn.GRU(3 * HIDDEN, HIDDEN, batch_first=True)
        self.fc_out = nn.Linear(4 * HIDDEN, VOCAB)

    def forward(self, token, hidden, encoder_outputs, mask):
        embedded = self.embedding(token.unsqueeze(1))
        a = self.attention(hidden, encoder_outputs, mask).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=2).squeeze(1))
        return prediction, hidden.squeeze(0)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()

    def forward(self, src, trg):
        batch_size, trg_len = trg.shape
        outputs = torch.zeros(batch_size, trg_len, VOCAB)
        encoder_outputs, hidden = self.encoder(src)
        mask = src != PAD
        token = torch.full((batch_size,), SOS, dtype=torch.long)
        for t in range(trg_len):
            output, hidden = self.decoder(token, hidden, encoder_outputs, mask)
            outputs[:, t] = output
            token = trg[:, t]  # teacher forcing
        return outputs


def make_model():
    torch.manual_seed(0)
    model = Seq2Seq()
    for name, param in model.named_parameters():
        if "weight" in name:
            nn.init.normal_(param.data, mean=0, std=0.1)
        else:
            nn.init.constant_(param.data, 0)
    return model


def make_data():
    rng = np.random.default_rng(4)
    src = rng.integers(2, VOCAB, size=(64, MAXLEN))
    lengths = rng.integers(4, MAXLEN + 1, size=64)
    for row, n in zip(src, lengths):
        row[n:] = PAD
    trg = np.zeros_like(src)
    for i, n in enumerate(lengths):
        trg[i, :n] = src[i, :n][::-1]
    return torch.from_numpy(src), torch.from_numpy(trg)


def train(model, data, steps):
    src, trg = data
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    model.train()
    losses = []
    for step in range(steps):
        i = (step * 16) % 64
        optimizer.zero_grad()
        output = model(src[i:i + 16], trg[i:i + 16])
        loss = criterion(output.view(-1, VOCAB), trg[i:i + 16].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1)
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
