# Planted bug: the reference solution of 03_lstm_cell with the peepholes of the input and forget gates swapped.
# course-llm exercise: 03_lstm_cell
# expect-fail: cell_state hidden_state remember_gate
# expect-hint: swapped the peepholes
import torch


def peephole_lstm_cell(u, h, c, W_u, W_h, b, p):
    z = u @ W_u.T + h @ W_h.T + b
    z_i, z_f, z_g, z_o = z.chunk(4, dim=-1)
    i = torch.sigmoid(z_i + p[1] * c)  # BUG: p[0]
    f = torch.sigmoid(z_f + p[0] * c)  # BUG: p[1]
    c_new = f * c + i * torch.tanh(z_g)
    o = torch.sigmoid(z_o + p[2] * c_new)
    return o * torch.tanh(c_new), c_new
