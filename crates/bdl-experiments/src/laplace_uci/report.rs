//! The report: the tables of test log-likelihood per data set, split kind and method, the
//! protocol checks and the figure.

use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::claims::{groups, methods, stat};
use super::{INFORMED, MAP, RULES, Row};

/// Mean ± standard error of the test log-likelihood per dataset, split kind and method.
pub(super) fn table(rows: &[Row]) -> String {
    let mut t = Table::new([
        "dataset",
        "splits",
        "model",
        "posterior",
        "s",
        "test LL",
        "test RMSE",
    ]);
    for group in groups(rows) {
        for (w, m, s) in methods(rows, &group) {
            let (ll, rmse, n) = stat(rows, &group, w, &m, s);
            t.row([
                group.0.clone(),
                format!("{} ×{n}", group.1),
                format!("width {w}"),
                if m == "full" {
                    "full network".into()
                } else if m == MAP {
                    "MAP (no posterior)".into()
                } else if RULES.contains(&m.as_str()) || m == INFORMED {
                    format!("{m} subnetwork")
                } else {
                    m.clone() // a listed method
                },
                s.to_string(),
                format!("{ll:.3}"),
                format!("{rmse:.3}"),
            ]);
        }
    }
    format!(
        "Two hidden ReLU layers of the given width; λ chosen per posterior on a 15% validation part; test \
         log-likelihood per point in the original units (mean ± standard error over splits).\n\n{}",
        t.to_markdown()
    )
}

/// Three checks of the protocol per dataset and split kind: how many posteriors chose the
/// lowest candidate λ (a search clipped by its grid); how many of the weights the Wasserstein
/// rule chose sit at the prior variance (zero GGN diagonal: chosen for carrying no information),
/// and how many the informed rule had to take without a signal; and on how many splits the
/// controls ran on the posteriors' MAPs (`checks`: the smallest model's full Laplace again,
/// equal to rounding, [`same_to_rounding`]).
pub(super) fn protocol_checks(rows: &[Row], checks: &[Row], lowest_lambda: f64) -> String {
    let mut t = Table::new([
        "dataset",
        "posteriors",
        "λ at the lowest candidate",
        "Wasserstein weights at the prior variance",
        "informed Wasserstein weights without a signal",
        "controls on the same MAPs",
    ]);
    let flat = |pick: &[&Row], method: &str| {
        let (u, n) = pick
            .iter()
            .filter(|r| r.method == method)
            .filter_map(|r| r.at_prior_variance.map(|u| (u, r.s)))
            .fold((0, 0), |(u, n), (du, dn)| (u + du, n + dn));
        format!("{u} of {n}")
    };
    for group in groups(rows) {
        let in_group = |r: &&Row| (&r.dataset, &r.split_kind) == (&group.0, &group.1);
        let pick: Vec<&Row> = rows.iter().filter(in_group).collect();
        let clipped = pick
            .iter()
            .filter(|r| r.method != MAP && r.lambda == lowest_lambda)
            .count();
        let repeated: Vec<&Row> = checks.iter().filter(in_group).collect();
        let same = repeated
            .iter()
            .filter(|c| {
                pick.iter().any(|r| {
                    r.method == "full"
                        && (r.split, r.width) == (c.split, c.width)
                        && same_to_rounding(r.test_log_lik, c.test_log_lik)
                        && same_to_rounding(r.rmse, c.rmse)
                })
            })
            .count();
        t.row([
            format!("{} ({})", group.0, group.1),
            pick.iter().filter(|r| r.method != MAP).count().to_string(),
            clipped.to_string(),
            flat(&pick, "Wasserstein"),
            flat(&pick, INFORMED),
            format!("{same} of {} splits", repeated.len()),
        ]);
    }
    format!(
        "Protocol checks: posteriors whose validation search chose the lowest candidate λ = {lowest_lambda}; \
         the weights chosen by the Wasserstein (diagonal-Laplace) rule whose variance is the prior's, \
         and those the informed rule took without a GGN signal; the splits whose controls (the MAPs' \
         predictive, the informed rule) were computed on the posteriors' MAPs, shown by the smallest \
         model's full Laplace computed again and equal to 10⁻⁹ relative (the rounding of code changed \
         between the two runs moves the last digits; a MAP that early stopping took elsewhere moves \
         the first).\n\n{}",
        t.to_markdown()
    )
}

/// `a` and `b` equal up to the rounding of a recomputation: within 10⁻⁹ relative.
pub(super) fn same_to_rounding(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// One panel per dataset and split kind: test log-likelihood against log₁₀ s, full-network
/// Laplace on each width and the widest model's subnetworks by rule.
pub(super) fn figure(rows: &[Row]) -> Figure {
    let widest = rows.iter().map(|r| r.width).max().unwrap_or(0);
    let styles = [
        ("full", "#000000"),
        ("Wasserstein", "#1f77b4"),
        ("Wasserstein (SWAG)", "#9467bd"),
        ("sensitivity", "#2ca02c"),
        ("random", "#d62728"),
        (INFORMED, "#ff7f0e"),
    ];
    groups(rows)
        .into_iter()
        .fold(Figure::new(3), |fig, (dataset, kind)| {
            let mut panel = Panel::new(format!("{dataset} ({kind})"));
            panel.labels("log10 s", "test log-likelihood");
            for (method, color) in styles {
                let mut sizes: Vec<usize> = rows
                    .iter()
                    .filter(|r| r.dataset == dataset && r.split_kind == kind && r.method == method)
                    .filter(|r| method == "full" || r.width == widest)
                    .map(|r| r.s)
                    .collect();
                sizes.sort_unstable();
                sizes.dedup();
                let mean_at = |s: usize| {
                    let v: Vec<f64> = rows
                        .iter()
                        .filter(|r| {
                            r.dataset == dataset
                                && r.split_kind == kind
                                && r.method == method
                                && r.s == s
                        })
                        .map(|r| r.test_log_lik)
                        .collect();
                    MeanSe::of(&v).mean
                };
                let xs: Vec<f64> = sizes.iter().map(|&s| (s as f64).log10()).collect();
                let ys: Vec<f64> = sizes.iter().map(|&s| mean_at(s)).collect();
                let label = if method == "full" {
                    "full Laplace, each width".to_owned()
                } else {
                    format!("width {widest}, {method}")
                };
                panel
                    .line(&xs, &ys, color)
                    .points(&xs, &ys, color)
                    .legend(label, color);
            }
            fig.panel(panel)
        })
}
