# Planted bug: the reference solution of 09_patchify that assumes a square grid of sqrt(n) x sqrt(n)
# patches (right for square images only).
# course-llm exercise: 09_patchify
# expect-fail: non_square_images
# expect-hint: with H != W
import math

import torch


def unpatchify(patches, patch_size, height, width):
    B, n, D = patches.shape
    p = patch_size
    C = D // (p * p)
    side = math.isqrt(n)                                                 # BUG: assumes H == W
    x = patches.reshape(B, side, side, C, p, p)
    x = x.permute(0, 3, 1, 4, 2, 5)
    return x.reshape(B, C, height, width)
