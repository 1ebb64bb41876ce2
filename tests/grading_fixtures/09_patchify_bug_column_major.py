# Planted bug: the reference solution of 09_patchify that lays the patches out column by column
# (top to bottom, then left to right) instead of row by row; the square check already shows it.
# course-llm exercise: 09_patchify
# expect-fail: square_grey_images non_square_images several_channels
# expect-hint: not column by column
import math

import torch


def unpatchify(patches, patch_size, height, width):
    B, n, D = patches.shape
    p = patch_size
    C = D // (p * p)
    x = patches.reshape(B, width // p, height // p, C, p, p)             # BUG: grid read column by column
    x = x.permute(0, 3, 2, 4, 1, 5)
    return x.reshape(B, C, height, width)
