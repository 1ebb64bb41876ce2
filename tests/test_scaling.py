"""course_llm.scaling: fits against closed forms, numpy.polyfit and scipy's curve_fit; compute formulas."""
import numpy as np
import pytest

from course_llm.scaling import chinchilla_loss, chinchilla_optimal, fit_power_law, training_flops


def test_exact_power_law_recovered():
    N = np.logspace(2, 8, 7)
    for alpha, A in ((0.076, 11.0), (0.34, 406.4), (1.0, 2.0)):
        fit = fit_power_law(N, A * N ** -alpha)
        assert fit.alpha == pytest.approx(alpha, abs=1e-10) and fit.A == pytest.approx(A, rel=1e-9)
        assert fit.alpha_se < 1e-8


def test_offset_recovered():
    N = np.logspace(3, 8, 8)
    fit = fit_power_law(N, 1.69 + 406.4 * N ** -0.34, with_offset=True)
    assert fit.E == pytest.approx(1.69, abs=1e-4) and fit.alpha == pytest.approx(0.34, abs=1e-3)


def test_matches_polyfit_and_its_covariance():
    rng = np.random.default_rng(0)
    N = np.logspace(3, 6, 6)
    L = 5.0 * N ** -0.1 * np.exp(rng.normal(0, 0.02, N.size))
    fit = fit_power_law(N, L)
    (slope, intercept), cov = np.polyfit(np.log(N), np.log(L), 1, cov="unscaled")
    resid = np.log(L) - (slope * np.log(N) + intercept)
    se = np.sqrt(cov[0, 0] * resid @ resid / (N.size - 2))
    assert fit.alpha == pytest.approx(-slope, abs=1e-12) and fit.A == pytest.approx(np.exp(intercept))
    assert fit.alpha_se == pytest.approx(se, rel=1e-9)
    assert fit.alpha_ci[0] < fit.alpha < fit.alpha_ci[1]


def test_offset_matches_curve_fit_on_noisy_data():
    from scipy.optimize import curve_fit
    rng = np.random.default_rng(1)
    N = np.logspace(3, 8, 10)
    L = (1.5 + 50 * N ** -0.3) * np.exp(rng.normal(0, 0.002, N.size))
    fit = fit_power_law(N, L, with_offset=True)
    # same objective (squared error of log(L - E) on a line), solved by a different method
    f = lambda x, E, logA, alpha: np.log(np.abs(E + np.exp(logA - alpha * x)) + 1e-300)
    (E, logA, alpha), _ = curve_fit(f, np.log(N), np.log(L), p0=(1.0, np.log(30), 0.2), maxfev=20000)
    assert fit.alpha == pytest.approx(alpha, abs=0.03) and fit.E == pytest.approx(E, abs=0.05)


def test_bad_inputs():
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1, 2, 3], [1, -1, 2])
    with pytest.raises(ValueError, match="points"):
        fit_power_law([1, 2], [1, 2])
    with pytest.raises(ValueError, match="equally long"):
        fit_power_law([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        training_flops(0, 10)
    with pytest.raises(ValueError):
        chinchilla_optimal(-1.0)


def test_compute_formulas():
    assert training_flops(1e9, 2e10) == 6 * 1e9 * 2e10
    assert np.allclose(training_flops(np.array([1.0, 2.0]), 3.0), [18.0, 36.0])
    for C in (1e18, 5.76e23, 1e26):
        N_opt, D_opt = chinchilla_optimal(C)
        assert 6 * N_opt * D_opt == pytest.approx(C)
        grid = np.logspace(4, 16, 400001)                   # brute force along 6ND = C
        N_brute = grid[np.argmin(chinchilla_loss(grid, C / (6 * grid)))]
        assert np.log(N_brute / N_opt) == pytest.approx(0, abs=1e-3)
    # exponent a = beta / (alpha + beta)
    n1, _ = chinchilla_optimal(1e20); n2, _ = chinchilla_optimal(1e22)
    assert np.log(n2 / n1) / np.log(100) == pytest.approx(0.28 / 0.62)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("call, err, match", [
    (lambda: training_flops(NAN, 1e9), ValueError, "n_params"),            # NaN used to pass
    (lambda: training_flops(1e6, [1e9, INF]), ValueError, "n_tokens"),
    (lambda: training_flops([], 1e9), ValueError, "empty"),
    (lambda: training_flops("many", 1e9), TypeError, "n_params"),
    (lambda: fit_power_law([1e6, 1e6, 1e6], [3.0, 2.9, 3.1]), ValueError, "distinct"),   # was LinAlgError
    (lambda: fit_power_law([1e6, 1e7, NAN], [3.0, 2.5, 2.0]), ValueError, "N"),
    (lambda: fit_power_law([1e6, 1e7, 1e8], [3.0, 2.5, 2.0], with_offset=1), TypeError, "with_offset"),
    (lambda: fit_power_law([1e6, 1e7, 1e8], [3.0, 2.5, 2.0]).predict(0.0), ValueError, "N"),
    (lambda: chinchilla_loss(1e9, 2e10, alpha=NAN), ValueError, "alpha"),
    (lambda: chinchilla_loss(1e9, 2e10, E=-1.0), ValueError, "E"),
    (lambda: chinchilla_optimal(1e21, beta=0.0), ValueError, "beta"),       # was a division by zero
    (lambda: chinchilla_optimal(NAN), ValueError, "C"),
])
def test_bad_inputs_rejected(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("call", [lambda: training_flops("1e6", 1e9), lambda: chinchilla_loss(1e6, "1e9"),
                                  lambda: chinchilla_optimal("1e20"), lambda: training_flops(True, 1e9)])
def test_strings_and_bools_are_not_numbers(call):
    with pytest.raises(TypeError, match="must be a positive number"):
        call()
