//! The report: the table of each collection's uncertainty statistics.

use bdl_eval::table::Table;

use super::{AMBIGUOUS, Row};

pub(super) fn table(rows: &[Row]) -> String {
    let mut t = Table::new([
        "data",
        "chain",
        "acceptance per layer",
        "test accuracy",
        "entropy, correct",
        "entropy, wrong",
        "AUROC (wrong by entropy)",
        "AUROC, last draw alone",
        &format!("true class in the top two, {AMBIGUOUS} most ambiguous"),
    ]);
    for r in rows {
        t.row([
            r.data.folder().to_owned(),
            format!(
                "batch {}, {} iterations, last {}",
                r.batch_size, r.iterations, r.prediction_window
            ),
            crate::gibbs_xor::list(&r.layer_acceptance, 3),
            format!("{:.3}", r.test_accuracy),
            format!("{:.3}", r.entropy_correct),
            format!("{:.3}", r.entropy_wrong),
            format!("{:.3}", r.auroc_wrong_by_entropy),
            format!("{:.3}", r.auroc_single_draw),
            format!(
                "{:.2} ({} wrong by argmax)",
                r.ambiguous_top_two, r.ambiguous_wrong
            ),
        ]);
    }
    format!(
        "The main chain of `gibbs-mnist` on each collection, its Bayesian marginal over the \
         last iterations; ambiguity is the margin between the two highest predictive \
         probabilities. The images with the smallest margins are in `ambiguous-*.svg`, the \
         entropy by correctness in `entropy-*.svg`.\n\n{}",
        t.to_markdown()
    )
}
