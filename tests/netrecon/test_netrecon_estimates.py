"""Standard errors of the claims' estimates (arXiv:2409.04240)."""
import numpy as np
import pytest

from papers.netrecon import estimates, tasks


def test_sem_by_hand():
    assert estimates.sem([1.0, 2.0, 3.0, 4.0]) == pytest.approx(np.sqrt(5 / 3) / 2)
    assert np.isnan(estimates.sem([1.0]))


def test_jackknife_of_the_mean_is_the_standard_error():
    x = np.random.default_rng(0).standard_normal(9)
    assert estimates.jackknife_se(x, np.mean) == pytest.approx(estimates.sem(x), rel=1e-12)


def test_jackknife_of_a_constant_statistic_is_zero_and_rows_are_samples():
    x = np.arange(12.0).reshape(4, 3)
    assert estimates.jackknife_se(x, lambda u: 1.0) == 0.0
    # a maximum over columns of the column means: rows are deleted, not columns
    assert estimates.jackknife_se(x, lambda u: u.mean(axis=0).max()) == pytest.approx(estimates.sem(x[:, 2]))


def test_per_trajectory_autocorrelation_averages_to_the_pooled_one():
    s = np.random.default_rng(1).standard_normal((64, 3, 5))
    each = tasks.autocorrelation(s, 10, per_trajectory=True)
    assert each.shape == (11, 3)
    assert np.allclose(each.mean(axis=1), tasks.autocorrelation(s, 10))
    assert each[0] == pytest.approx((s**2).mean(axis=(0, 2)))     # lag 0: the variance per trajectory


def test_autocorrelation_equals_the_transform_along_time_bit_for_bit():
    """The series are made contiguous before their transforms (issue 43): the same numbers, bit for bit, as the
    transforms taken along the time axis in place."""
    s = np.random.default_rng(2).standard_normal((75, 3, 40))
    f = np.fft.rfft(s, n=256, axis=0)
    ac = np.fft.irfft(f * np.conj(f), n=256, axis=0)[:31]
    norm = 75 - np.arange(31)
    assert np.array_equal(tasks.autocorrelation(s, 30, per_trajectory=True), ac.mean(axis=2) / norm[:, None])
    assert np.array_equal(tasks.autocorrelation(s, 30), ac.mean(axis=(1, 2)) / norm)


def test_figure_legend_shows_each_label_once():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from papers.netrecon import figures

    fig, ax = plt.subplots()
    for _ in range(2):
        ax.plot([0, 1], [0, 1], label="simulation, N = 100")
    ax.plot([0, 1], [1, 0], label="DMFT")
    assert figures.legend(ax) == ["simulation, N = 100", "DMFT"]
    assert len(ax.get_legend().get_texts()) == 2
    plt.close(fig)
