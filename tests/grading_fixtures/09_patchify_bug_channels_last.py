# Planted bug: the reference solution of 09_patchify flattening each patch in (row, column, channel) order.
# course-llm exercise: 09_patchify
# expect-fail: several_channels
# expect-hint: (channel, row, column) order


def patchify(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    x = images.reshape(B, C, H // p, p, W // p, p)
    x = x.permute(0, 2, 4, 3, 5, 1)  # BUG: channel last inside each patch
    return x.reshape(B, (H // p) * (W // p), C * p * p)
