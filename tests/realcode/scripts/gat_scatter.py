"""Graph neural networks without PyTorch Geometric, as tutorials and small repos write message passing
by hand on an edge_index: self-loops added with torch.arange/torch.cat, GCN's symmetric
normalisation from node degrees (torch.bincount, deg.pow(-0.5) with masked_fill of inf), messages
gathered by index_select and summed with index_add_; a GAT layer (Velickovic et al.) whose edge
softmax is done with scatter_reduce_(reduce="amax", include_self=False) for the max, exp, and
scatter_add_ for the denominator, LeakyReLU(0.2) scores, multi-head concat and a mean-pooled last
layer, ELU, dropout; node classification on a train mask with F.nll_loss(log_softmax), Adam with
weight_decay, and validation accuracy on a boolean mask."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DROPOUT = 0.3
N_NODES, N_FEATS, N_CLASSES = 60, 10, 3


def add_self_loops(edge_index, num_nodes):
    loops = torch.arange(num_nodes, dtype=edge_index.dtype).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x, edge_index):
        edge_index = add_self_loops(edge_index, x.size(0))
        row, col = edge_index
        deg = torch.bincount(col, minlength=x.size(0)).to(x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt = deg_inv_sqrt.masked_fill(deg_inv_sqrt == float("inf"), 0)
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
        x = self.lin(x)
        msg = x.index_select(0, row) * norm.view(-1, 1)
        out = torch.zeros_like(x).index_add_(0, col, msg)
        return out + self.bias


class GATConv(nn.Module):
    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0):
        super().__init__()
        self.heads, self.out_channels, self.concat = heads, out_channels, concat
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.zeros(heads * out_channels if concat else out_channels))
        self.negative_slope, self.dropout = negative_slope, dropout
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, edge_index):
        N, H, C = x.size(0), self.heads, self.out_channels
        edge_index = add_self_loops(edge_index, N)
        src, dst = edge_index[0], edge_index[1]
        x = self.lin(x).view(-1, H, C)
        alpha_src = (x * self.att_src).sum(dim=-1)
        alpha_dst = (x * self.att_dst).sum(dim=-1)
        alpha = F.leaky_relu(alpha_src[src] + alpha_dst[dst], self.negative_slope)
        index = dst.unsqueeze(-1).expand_as(alpha)
        alpha_max = torch.zeros(N, H, dtype=alpha.dtype).scatter_reduce_(0, index, alpha, reduce="amax",
                                                                          include_self=False)
        alpha = (alpha - alpha_max[dst]).exp()
        denom = torch.zeros(N, H, dtype=alpha.dtype).scatter_add_(0, index, alpha)
        alpha = alpha / (denom[dst] + 1e-16)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = torch.zeros(N, H, C, dtype=x.dtype).index_add_(0, dst, x[src] * alpha.unsqueeze(-1))
        out = out.reshape(N, H * C) if self.concat else out.mean(dim=1)
        return out + self.bias


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gcn = GCNConv(N_FEATS, 16)
        self.gat1 = GATConv(16, 8, heads=4, dropout=DROPOUT)
        self.gat2 = GATConv(8 * 4, N_CLASSES, heads=2, concat=False, dropout=DROPOUT)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = F.relu(self.gcn(x, edge_index))
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = F.elu(self.gat1(x, edge_index))
        x = F.dropout(x, p=DROPOUT, training=self.training)
        return F.log_softmax(self.gat2(x, edge_index), dim=1)


def get_data():
    """A stochastic block model: three communities, dense inside, sparse across, noisy features."""
    rng = np.random.default_rng(8)
    y = np.repeat(np.arange(N_CLASSES), N_NODES // N_CLASSES)
    same = y[:, None] == y[None, :]
    adj = np.triu(rng.random((N_NODES, N_NODES)) < np.where(same, 0.15, 0.01), 1)
    src, dst = np.nonzero(adj | adj.T)
    means = rng.standard_normal((N_CLASSES, N_FEATS))
    x = means[y] * 0.6 + rng.standard_normal((N_NODES, N_FEATS))
    train_mask = np.zeros(N_NODES, bool)
    train_mask[rng.permutation(N_NODES)[:24]] = True
    return {"x": x.astype(np.float32), "edge_index": np.stack([src, dst]).astype(np.int64), "y": y.astype(np.int64),
            "train_mask": train_mask}


def build():
    return Net()


def train(model, data, steps):
    x, edge_index = torch.from_numpy(data["x"]), torch.from_numpy(data["edge_index"])
    y = torch.from_numpy(data["y"])
    train_mask = torch.from_numpy(data["train_mask"])
    val_mask = ~train_mask
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for _epoch in range(steps):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.nll_loss(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(x, edge_index).argmax(dim=1)
        val_acc = int((pred[val_mask] == y[val_mask]).sum()) / int(val_mask.sum())
    assert 0.0 <= val_acc <= 1.0
    return losses
