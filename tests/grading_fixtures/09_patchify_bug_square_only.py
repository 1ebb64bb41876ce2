# Planted bug: the reference solution of 09_patchify that assumes square images (uses H for the width).
# course-llm exercise: 09_patchify
# expect-fail: non_square_images
# expect-hint: with H != W


def patchify(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H != W:
        H = W = min(H, W)  # BUG: crops to a square instead of using H/p rows and W/p columns
        images = images[..., :H, :W]
    x = images.reshape(B, C, H // p, p, W // p, p)
    x = x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p)
