# Planted bug: the reference solution of 09_patchify without the permute (a plain reshape mixes pixels of different patches).
# course-llm exercise: 09_patchify
# expect-fail: square_grey_images non_square_images several_channels
# expect-hint: a plain reshape mixes pixels


def patchify(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    return images.reshape(B, (H // p) * (W // p), C * p * p)  # BUG: no permute
