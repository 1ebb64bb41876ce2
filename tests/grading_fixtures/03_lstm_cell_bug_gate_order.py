# Planted bug: the reference solution of 03_lstm_cell with the input and forget gates swapped.
# course-llm exercise: 03_lstm_cell
# expect-fail: cell_state hidden_state remember_gate
# expect-hint: the order is [i; f; g; o]
import torch


def lstm_cell(u, h, c, W_u, W_h, b):
    z = u @ W_u.T + h @ W_h.T + b
    f, i, g, o = z.chunk(4, dim=-1)  # BUG: PyTorch's order is i, f, g, o
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new
