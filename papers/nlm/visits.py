"""Class visits of long Langevin chains (notebook 04): windows of averaged images, the data-like gate,
nearest-centroid classes, visits that last a dwell, transitions between them.

Paper: Yu, Huang & Huang, arXiv:2506.23546, the phase-space exploration figure (one chain of the P = 288
model, steps 120k-150k, projected on the top three principal components of the training images,
coloured by digit: the chain hops between classes).
"""
from __future__ import annotations

import numpy as np

from . import metrics


def count_transitions(labels, min_dwell: int = 3) -> tuple[int, list]:
    """Class changes of a label sequence, ignoring visits shorter than `min_dwell` frames."""
    runs = []
    for lab in labels:
        if runs and runs[-1][0] == lab:
            runs[-1][1] += 1
        else:
            runs.append([lab, 1])
    kept = [r for r in runs if r[1] >= min_dwell]
    merged = []
    for lab, n in kept:
        if merged and merged[-1][0] == lab:
            merged[-1][1] += n
        else:
            merged.append([lab, n])
    return max(0, len(merged) - 1), merged


def window_images(frames, window: int):
    """Average consecutive frames (T, ..., D) in non-overlapping windows of `window` frames."""
    frames = np.asarray(frames)
    n = len(frames) // max(1, window)
    return frames[: n * window].reshape(n, window, *frames.shape[1:]).mean(1)


def window_classes(windows, train_img, labels, radius: float) -> np.ndarray:
    """The class each of one chain's time-averaged windows (W, D) visits, −1 where it visits none.

    A window is a visit of a class only when it is data-like: its nearest training image lies within
    `radius` (the 95th percentile of the held-out images' own nearest-training distance), and then its
    class is the nearest class centroid (labels are >= 0). A chain of noise images is never data-like.
    """
    ok = metrics.nearest_distance(windows, train_img) <= radius
    cls = np.full(len(ok), -1, dtype=np.int64)
    if ok.any():
        cls[ok] = metrics.nearest_centroid_labels(windows[ok], train_img, labels)
    return cls


def class_visits(windows, train_img, labels, radius: float, dwell: int = 1) -> dict:
    """Classes visited and class transitions of one chain's windows (`window_classes`, `visits`)."""
    return visits(window_classes(windows, train_img, labels, radius), dwell)


def visits(cls, dwell: int = 1) -> dict:
    """Classes visited, class transitions and the data-like fraction of one chain's window classes (−1:
    off the data). A visit of a class counts only when the chain stays in it for at least `dwell`
    successive data-like windows (off-data windows skipped); transitions are class changes between
    successive counted visits. dwell = 1: every data-like window counts."""
    cls = np.asarray(cls)
    seq = cls[cls >= 0].tolist()
    n_trans, runs = count_transitions(seq, min_dwell=int(dwell))
    return {"classes": len({r[0] for r in runs}), "transitions": n_trans,
            "data_like": float((cls >= 0).mean()) if len(cls) else float("nan")}


# the main model at T = 1; the same J, b at T = 0 (the noiseless flow) from the same persistent states (logged);
# its J, b at update 0; J = 0, b = 0 (Ornstein-Uhlenbeck); the same J, b at T = 1 put back to the same persistent
# states at the start of every window (the claims' null: no long-time exploration); the order of the frames' stack
EXPLORE_MODELS = ("trained", "quench", "untrained", "j0", "restart")
