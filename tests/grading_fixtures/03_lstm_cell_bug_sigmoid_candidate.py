# Planted bug: the reference solution of 03_lstm_cell that squashes the candidate with a sigmoid,
# like the three gates, instead of tanh.
# course-llm exercise: 03_lstm_cell
# expect-fail: cell_state hidden_state
# expect-hint: squashed the candidate with a sigmoid
import torch


def lstm_cell(u, h, c, W_u, W_h, b):
    z = u @ W_u.T + h @ W_h.T + b
    i, f, g, o = z.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.sigmoid(g)  # BUG: tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new
