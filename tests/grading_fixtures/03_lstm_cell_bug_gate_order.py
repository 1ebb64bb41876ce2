# Planted bug: the reference solution of 03_lstm_cell with the input and forget gates swapped.
# course-llm exercise: 03_lstm_cell
# expect-fail: cell_state hidden_state remember_gate
# expect-hint: the order is [i; f; g; o]
import torch


def peephole_lstm_cell(u, h, c, W_u, W_h, b, p):
    z = u @ W_u.T + h @ W_h.T + b
    z_f, z_i, z_g, z_o = z.chunk(4, dim=-1)  # BUG: the order is i, f, g, o
    i = torch.sigmoid(z_i + p[0] * c)
    f = torch.sigmoid(z_f + p[1] * c)
    c_new = f * c + i * torch.tanh(z_g)
    o = torch.sigmoid(z_o + p[2] * c_new)
    return o * torch.tanh(c_new), c_new
