# Planted bug: the reference solution of 03_lstm_cell with the output gate's peephole reading the old cell state.
# course-llm exercise: 03_lstm_cell
# expect-fail: hidden_state
# expect-hint: peephole reads the old cell state
import torch


def peephole_lstm_cell(u, h, c, W_u, W_h, b, p):
    z = u @ W_u.T + h @ W_h.T + b
    z_i, z_f, z_g, z_o = z.chunk(4, dim=-1)
    i = torch.sigmoid(z_i + p[0] * c)
    f = torch.sigmoid(z_f + p[1] * c)
    c_new = f * c + i * torch.tanh(z_g)
    o = torch.sigmoid(z_o + p[2] * c)  # BUG: the output gate reads c_new
    return o * torch.tanh(c_new), c_new
