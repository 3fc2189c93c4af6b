//! `gibbs-uq`: what the blocked-Gibbs posterior predictive says about single test images
//! (Papamarkou 2023, Fig. 8: an ambiguous 9 that looks like a 4 gets its two top classes).
//!
//! Protocol: the main chain of `gibbs-mnist` on MNIST and on Fashion-MNIST (the very chain, in
//! its folder: batch 3000 with the paper's variances and 10 sub-blocks per first-layer node in
//! the paper profile; sampled here if `gibbs-mnist` has not run), its Bayesian marginal over the
//! draws of the last 10,000 iterations (1000 in the quick profile). For every test image: the two
//! highest predictive probabilities, their margin, the predictive entropy. Shown: the 16 test
//! images with the smallest margin, each with its two top classes as bars; the predictive
//! entropy of correct against wrong predictions as box plots, and how well it separates them
//! (AUROC: 0.5 no better than chance, 1 every wrong prediction more uncertain than every
//! correct one).

mod claims;
mod report;
mod settings;

use anyhow::Result;
use bdl_data::mnist::Collection;
use bdl_eval::metrics;
use bdl_eval::plot::{Figure, ImageCell, Panel, image_grid};
use bdl_inference::{Posterior, PredictOptions};
use bdl_mcmc::Keep;
use serde::Serialize;

use self::claims::claims;
use self::report::table;
use self::settings::Settings;
use crate::gibbs_mnist::{MainChain, main_chain};
use crate::{Context, Entry, Outcome};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "gibbs-uq",
    reproduces: "Papamarkou (2023), Fig. 8: the blocked-Gibbs posterior predictive of single \
     MNIST and Fashion-MNIST test images, ambiguous images and their two top classes",
    run,
    shards: false,
    lists_methods: false,
    profiles: &crate::Profile::ALL,
    any_device: false,
};

/// Images shown, the most ambiguous first.
const SHOWN: usize = 16;
/// The claim about ambiguous images looks at this many of them.
const AMBIGUOUS: usize = 100;
/// The fraction of those whose true class must be one of the two top classes.
const TOP_TWO: f64 = 0.75;
/// The AUROC of entropy for wrong against correct predictions must reach this.
const SEPARATION: f64 = 0.7;

/// One collection's results.
#[derive(Debug, Serialize)]
struct Row {
    data: Collection,
    batch_size: usize,
    iterations: u64,
    prediction_window: u64,
    test_images: usize,
    /// Every layer's acceptance rate after the burn-in.
    layer_acceptance: Vec<f64>,
    test_accuracy: f64,
    /// Mean predictive entropy (nats) of the correct and of the wrong predictions.
    entropy_correct: f64,
    entropy_wrong: f64,
    /// How many test images the marginal gets wrong.
    wrong: usize,
    /// AUROC of the entropy, wrong (positive) against correct predictions.
    auroc_wrong_by_entropy: f64,
    /// The control: the same AUROC for the chain's last draw alone (one network, no
    /// marginalisation), its wrong predictions against its correct ones, and how many it gets
    /// wrong.
    auroc_single_draw: f64,
    single_draw_wrong: usize,
    /// Among the `ambiguous` smallest-margin images, the fraction whose true class is one of
    /// the two top classes, and how many of them are wrong by argmax.
    ambiguous_top_two: f64,
    ambiguous_wrong: usize,
    /// The shown images: test index, true class, the two top classes and probabilities.
    shown: Vec<Shown>,
}

#[derive(Debug, Serialize)]
struct Shown {
    index: usize,
    label: usize,
    top: [(usize, f64); 2],
}

/// The predictive of one test image, reduced.
struct Image {
    label: usize,
    top: [(usize, f64); 2],
    entropy: f64,
}

impl Image {
    fn margin(&self) -> f64 {
        self.top[0].1 - self.top[1].1
    }

    fn correct(&self) -> bool {
        self.top[0].0 == self.label
    }
}

fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings {
        shown: SHOWN,
        ambiguous: AMBIGUOUS,
        top_two_at_least: TOP_TWO,
        auroc_at_least: SEPARATION,
    };
    let mut rows = Vec::new();
    let mut outcome_figures = Vec::new();
    for collection in [Collection::Mnist, Collection::FashionMnist] {
        let main = main_chain(ctx, collection, None)?;
        let (row, figures) = analyse(&main, collection)?;
        ctx.log(format!(
            "{}: accuracy {:.3}, entropy correct {:.3} / wrong {:.3}, AUROC {:.3}",
            collection.folder(),
            row.test_accuracy,
            row.entropy_correct,
            row.entropy_wrong,
            row.auroc_wrong_by_entropy
        ));
        rows.push(row);
        outcome_figures.extend(figures);
    }
    let mut outcome = Outcome::new(
        "gibbs-uq: the blocked-Gibbs posterior predictive of single test images",
        &settings,
        &rows,
    )?
    .body(table(&rows))
    .claims(rows.iter().flat_map(claims).collect());
    for (name, svg) in outcome_figures {
        outcome = outcome.figure(name, svg);
    }
    Ok(outcome)
}

/// The row and the two figures (ambiguous images; entropy by correctness) of one chain.
fn analyse(main: &MainChain, collection: Collection) -> Result<(Row, Vec<(String, String)>)> {
    let images = reduced(main, main.window)?;
    let (correct, wrong): (Vec<&Image>, Vec<&Image>) = images.iter().partition(|i| i.correct());
    let (e_correct, e_wrong) = (entropies(&correct), entropies(&wrong));
    let auroc = separation(&images)?;
    let single = reduced(main, 1)?;
    let single_wrong = single.iter().filter(|i| !i.correct()).count();
    let mut by_margin: Vec<usize> = (0..images.len()).collect();
    by_margin.sort_by(|&a, &b| images[a].margin().total_cmp(&images[b].margin()));
    let ambiguous = &by_margin[..AMBIGUOUS.min(by_margin.len())];
    let top_two = ambiguous
        .iter()
        .filter(|&&i| images[i].top.iter().any(|t| t.0 == images[i].label))
        .count() as f64
        / ambiguous.len().max(1) as f64;
    let classes = collection.classes();
    let x: Vec<Vec<f32>> = main.test.x().to_vec2()?;
    let shown: Vec<usize> = by_margin.iter().copied().take(SHOWN).collect();
    let cells: Vec<ImageCell> = shown
        .iter()
        .map(|&i| ImageCell {
            pixels: x[i].iter().map(|&v| f64::from(v)).collect(),
            width: 28,
            caption: format!("#{i}: {}", classes[images[i].label]),
            bars: images[i]
                .top
                .iter()
                .map(|&(c, p)| (classes[c].to_owned(), p))
                .collect(),
        })
        .collect();
    let mut boxes = Panel::new(format!("predictive entropy, {}", collection.folder()));
    boxes
        .labels("1: correct, 2: wrong", "entropy (nats)")
        .boxes(1.0, &e_correct, "#2ca02c")
        .boxes(2.0, &e_wrong, "#d62728");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (acceptance, _) = main.chain.acceptance(main.burn_in)?;
    let row = Row {
        data: collection,
        batch_size: main.batch,
        iterations: main.iterations,
        prediction_window: main.window,
        test_images: images.len(),
        layer_acceptance: acceptance.layer_rates(main.chain.blocks()),
        test_accuracy: correct.len() as f64 / images.len().max(1) as f64,
        entropy_correct: mean(&e_correct),
        entropy_wrong: mean(&e_wrong),
        wrong: wrong.len(),
        auroc_wrong_by_entropy: auroc,
        auroc_single_draw: separation(&single)?,
        single_draw_wrong: single_wrong,
        ambiguous_top_two: top_two,
        ambiguous_wrong: ambiguous.iter().filter(|&&i| !images[i].correct()).count(),
        shown: shown
            .iter()
            .map(|&i| Shown {
                index: i,
                label: images[i].label,
                top: images[i].top,
            })
            .collect(),
    };
    let name = collection.folder();
    Ok((
        row,
        vec![
            (format!("ambiguous-{name}.svg"), image_grid(&cells, 4)),
            (
                format!("entropy-{name}.svg"),
                Figure::new(1).panel(boxes).to_svg(),
            ),
        ],
    ))
}

/// The reduced predictive of every test image, marginalised over the draws of the chain's last
/// `last` iterations (1: its last draw alone).
fn reduced(main: &MainChain, last: u64) -> Result<Vec<Image>> {
    let window = main.chain.window(&Keep {
        last: Some(last),
        ..Keep::default()
    })?;
    let predictive = window.predictive(main.test.x(), &PredictOptions::default())?;
    let probs: Vec<Vec<f64>> = predictive.probs()?.to_vec2()?;
    let entropy = metrics::predictive_entropy(&predictive)?;
    let labels: Vec<u32> = main.test.y().to_vec1()?;
    Ok(probs
        .iter()
        .zip(&labels)
        .zip(&entropy)
        .map(|((p, &label), &entropy)| Image {
            label: label as usize,
            top: top_two(p),
            entropy,
        })
        .collect())
}

fn entropies(set: &[&Image]) -> Vec<f64> {
    set.iter().map(|i| i.entropy).collect()
}

/// The AUROC of the entropy for the wrong predictions against the correct ones (NaN when
/// either is empty).
fn separation(images: &[Image]) -> Result<f64> {
    let (correct, wrong): (Vec<&Image>, Vec<&Image>) = images.iter().partition(|i| i.correct());
    if correct.is_empty() || wrong.is_empty() {
        return Ok(f64::NAN);
    }
    Ok(metrics::auroc(&entropies(&correct), &entropies(&wrong))?)
}

/// The two largest probabilities with their classes, the largest first.
fn top_two(p: &[f64]) -> [(usize, f64); 2] {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
    [0, 1].map(|k| order.get(k).map_or((0, 0.0), |&c| (c, p[c])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_two_in_order() {
        assert_eq!(top_two(&[0.1, 0.5, 0.3, 0.1]), [(1, 0.5), (2, 0.3)]);
        assert_eq!(top_two(&[1.0]), [(0, 1.0), (0, 0.0)]);
    }
}
