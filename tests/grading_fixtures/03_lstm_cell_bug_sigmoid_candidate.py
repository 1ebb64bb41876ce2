# Planted bug: the reference solution of 03_lstm_cell that squashes the candidate with a sigmoid,
# like the three gates, instead of tanh.
# course-llm exercise: 03_lstm_cell
# expect-fail: cell_state hidden_state remember_gate
# expect-hint: use tanh(g)
import torch


def peephole_lstm_cell(u, h, c, W_u, W_h, b, p):
    z = u @ W_u.T + h @ W_h.T + b
    z_i, z_f, z_g, z_o = z.chunk(4, dim=-1)
    i = torch.sigmoid(z_i + p[0] * c)
    f = torch.sigmoid(z_f + p[1] * c)
    c_new = f * c + i * torch.sigmoid(z_g)  # BUG: tanh
    o = torch.sigmoid(z_o + p[2] * c_new)
    return o * torch.tanh(c_new), c_new
