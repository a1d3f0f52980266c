"""paperid: one line per profile key, shown by the README's generated Profiles table (TEMPLATE: one line per key)."""

DESCRIPTIONS = {
    "n_draws": "uniform draws u of the Monte-Carlo estimates (integrand evaluations of each estimator)",
    "near_miss": "the agreement's near miss: the integrand exp((1 + near_miss) u) against the closed form of exp(u)",
}
