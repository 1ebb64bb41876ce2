# Planted bug: the reference solution of 03_lstm_cell with the output gate reading the old cell state.
# course-llm exercise: 03_lstm_cell
# expect-fail: hidden_state
# expect-hint: reads the *new* cell state
import torch


def lstm_cell(u, h, c, W_u, W_h, b):
    z = u @ W_u.T + h @ W_h.T + b
    i, f, g, o = z.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c)  # BUG: should read c_new
    return h_new, c_new
