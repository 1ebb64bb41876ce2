# Planted bug: the reference solution of 09_patchify that reshapes the patches straight into images,
# which puts pixels of different patches next to each other.
# course-llm exercise: 09_patchify
# expect-fail: square_grey_images non_square_images several_channels
# expect-hint: a plain reshape puts pixels of different patches
import math

import torch


def unpatchify(patches, patch_size, height, width):
    B, n, D = patches.shape
    C = D // (patch_size * patch_size)
    return patches.reshape(B, C, height, width)                          # BUG: no permute
