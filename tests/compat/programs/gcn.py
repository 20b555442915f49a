"""A two-layer graph convolutional network (Kipf & Welling) for node classification, with a
symmetric-normalised sparse adjacency built by scatter-add from an edge list, a training mask,
NLL loss on log-softmax, and Adam with weight decay."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_NODES, N_FEAT, N_HID, N_CLASS = 60, 16, 32, 3


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        nn.init.xavier_uniform_(self.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, edge_weight):
        support = x @ self.weight
        src, dst = edge_index
        messages = support[src] * edge_weight.unsqueeze(-1)
        out = torch.zeros_like(support).index_add_(0, dst, messages)
        return out + self.bias


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gc1 = GraphConvolution(N_FEAT, N_HID)
        self.gc2 = GraphConvolution(N_HID, N_CLASS)

    def forward(self, x, edge_index, edge_weight):
        x = F.relu(self.gc1(x, edge_index, edge_weight))
        x = F.dropout(x, 0.0, training=self.training)
        return F.log_softmax(self.gc2(x, edge_index, edge_weight), dim=1)


def normalize(edge_index, num_nodes):
    loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    edge_index = torch.cat([edge_index, loops], dim=1)
    deg = torch.zeros(num_nodes).scatter_add_(0, edge_index[1], torch.ones(edge_index.size(1)))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
    return edge_index, deg_inv_sqrt[edge_index[0]] * deg_inv_sqrt[edge_index[1]]


def make_model():
    torch.manual_seed(0)
    return GCN()


def make_data():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, N_CLASS, size=N_NODES)
    feats = (rng.standard_normal((N_NODES, N_FEAT)) + labels[:, None] * 0.5).astype(np.float32)
    edges = [(i, j) for i in range(N_NODES) for j in range(N_NODES)
             if i != j and rng.random() < (0.15 if labels[i] == labels[j] else 0.02)]
    edge_index = torch.tensor(np.array(edges).T, dtype=torch.long)
    train_mask = torch.from_numpy(rng.random(N_NODES) < 0.5)
    return torch.from_numpy(feats), edge_index, torch.from_numpy(labels), train_mask


def train(model, data, steps):
    features, edge_index, labels, train_mask = data
    edge_index, edge_weight = normalize(edge_index, N_NODES)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        output = model(features, edge_index, edge_weight)
        loss = F.nll_loss(output[train_mask], labels[train_mask])
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.eval()
            pred = model(features, edge_index, edge_weight).argmax(dim=1)
            _ = (pred[~train_mask] == labels[~train_mask]).float().mean()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 10))
