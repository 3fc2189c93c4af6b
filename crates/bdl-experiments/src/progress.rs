//! The one progress-bar style of the experiments: a bar with the count, the elapsed time and
//! an estimate of the time left, hidden in the smoke profile and in tests.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over `len` units of `what` (fits, iterations, chains), drawn on stderr
/// unless `hidden`.
pub fn bar(len: u64, what: &str, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(len),
        if hidden {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "  {prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed_precise} elapsed, ~{eta_precise} left)",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_owned());
    bar
}
