//! The claims of Table 4: augmenting the training set, by all three transformations and by each
//! alone, hurts the accuracy on the original test images.

use anyhow::Result;

use super::{Chain, Row};
use crate::Context;
use crate::claim::{self, Cite, Claim, Measured, Paper};
use crate::gibbs_mnist::test_images;

/// The paper's statement the claims test.
pub(super) const HURTS: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Table 4",
    quote: "",
};
/// The claims (each collection's accuracies logged first): augmenting by all three
/// transformations, and by each alone (`alone`, the
/// chains `singles`), hurts each collection's plain chain's accuracy.
pub(super) fn claims(
    ctx: &Context,
    plain_and_all: &[Row],
    alone: &[Row],
    singles: &[Chain],
    name: &dyn Fn(&Chain) -> &'static str,
) -> Result<Vec<Claim>> {
    for pair in plain_and_all.chunks_exact(2) {
        ctx.log(format!(
            "{}: accuracy {:.3} without augmentation, {:.3} with",
            pair[0].data.folder(),
            pair[0].test_accuracy,
            pair[1].test_accuracy
        ));
    }
    let mut claims = Vec::new();
    for pair in plain_and_all.chunks_exact(2) {
        let (plain, augmented) = (&pair[0], &pair[1]);
        let n_test = test_images(ctx, plain.data)?;
        claims.push(hurts(
            plain,
            augmented,
            "augmenting the training set",
            n_test,
        ));
        for (r, chain) in alone.iter().zip(singles) {
            if r.data == plain.data {
                let what = format!("augmenting by {} alone", name(chain));
                claims.push(hurts(plain, r, &what, n_test));
            }
        }
    }
    Ok(claims)
}

/// The claim that `what` (the chain of `augmented`) hurts the accuracy of the `plain` chain, on
/// `n_test` test images.
pub(super) fn hurts(plain: &Row, augmented: &Row, what: &str, n_test: usize) -> Claim {
    Claim::new(
        HURTS,
        format!("{}: {what} hurts accuracy", plain.data.folder()),
        format!(
            "test accuracy {:.3} without augmentation, {:.3} with ({n_test} test images)",
            plain.test_accuracy, augmented.test_accuracy
        ),
        claim::less(
            Measured::proportion(augmented.test_accuracy, n_test),
            Measured::proportion(plain.test_accuracy, n_test),
        )
        .described(
            "the augmented chain's test accuracy below the plain chain's by more than one \
             binomial standard error of the difference (undecided within one)",
        ),
    )
}
