# Planted bug: the reference solution of 09_patchify that reads each patch vector as (row, column,
# channel) instead of (channel, row, column); with one channel the two orders agree.
# course-llm exercise: 09_patchify
# expect-fail: several_channels
# expect-hint: (channel, row, column) order
import math

import torch


def unpatchify(patches, patch_size, height, width):
    B, n, D = patches.shape
    p = patch_size
    C = D // (p * p)
    x = patches.reshape(B, height // p, width // p, p, p, C)             # BUG: channels last
    x = x.permute(0, 5, 1, 3, 2, 4)
    return x.reshape(B, C, height, width)
