//! The claims of Fig. 8: the marginal more uncertain where it is wrong (against one draw of the
//! chain), and an ambiguous image's true class among its top two.

use super::{AMBIGUOUS, Row, SEPARATION, TOP_TWO};
use crate::claim::{self, Cite, Claim, Measured, Paper};

/// The paper's statements the claims test.
pub(super) const AMBIGUITY: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Fig. 8",
    quote: "",
};
pub(super) const NON_CONVERGENT_UQ: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Abstract",
    quote: "Moreover, non-convergent chain realizations aid in the quantification of predictive \
            uncertainty.",
};

/// The AUROC of one row's scores with its Hanley–McNeil standard error.
pub(super) fn auroc(value: f64, wrong: usize, images: usize) -> Measured {
    Measured::auroc(value, wrong, images - wrong)
}

/// The paper's statements, decided on one collection's row, and the control: the chain's
/// marginal against its last draw alone.
pub(super) fn claims(r: &Row) -> Vec<Claim> {
    let name = r.data.folder();
    let marginal = auroc(r.auroc_wrong_by_entropy, r.wrong, r.test_images);
    let single = auroc(r.auroc_single_draw, r.single_draw_wrong, r.test_images);
    let ambiguous = Measured::proportion(r.ambiguous_top_two, AMBIGUOUS);
    vec![
        Claim::new(
            NON_CONVERGENT_UQ,
            format!("{name}: the posterior predictive is more uncertain where it is wrong"),
            format!(
                "mean entropy {:.3} (correct) vs {:.3} (wrong); AUROC {marginal}",
                r.entropy_correct, r.entropy_wrong
            ),
            claim::positive(marginal.less_value(SEPARATION)).described(format!(
                "the entropy's AUROC for telling wrong predictions from correct ones above \
                 {SEPARATION} by more than its (Hanley–McNeil) standard error (undecided within \
                 one)"
            )),
        ),
        Claim::new(
            NON_CONVERGENT_UQ,
            format!(
                "{name} (control): marginalising over the chain separates wrong from correct \
                 predictions better than one draw of it"
            ),
            format!("AUROC {marginal} (marginal) vs {single} (last draw alone)"),
            claim::greater(marginal, single).described(
                "the marginal's AUROC above the last draw's by more than one standard error of \
                 the difference (undecided within one): the entropy of any single network \
                 separates them somewhat, so this is what the posterior adds",
            ),
        ),
        Claim::new(
            AMBIGUITY,
            format!("{name}: an ambiguous image gets its true class among its two top classes"),
            format!(
                "{ambiguous:.2} of the {AMBIGUOUS} smallest-margin test images have the true \
                 class in the top two ({} of them wrong by argmax)",
                r.ambiguous_wrong
            ),
            claim::positive(ambiguous.less_value(TOP_TWO)).described(format!(
                "the true class is one of the two top classes for more than {TOP_TWO} of the \
                 {AMBIGUOUS} test images with the smallest margin, by more than the binomial \
                 standard error (undecided within one)"
            )),
        ),
    ]
}
