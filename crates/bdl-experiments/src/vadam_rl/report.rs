//! The report: the table of returns over seeds and the figure of evaluation returns, behaviour
//! returns and the perturbation's scale.

use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, PALETTE, Panel};
use bdl_eval::table::Table;

use super::ddpg::Exploration;
use super::settings::Settings;
use super::{
    INIT_PRECISION, PRIOR_PRECISION, Run, VADAGRAD_LR, VADAM_EXAMPLES, early, last, mean,
    over_seeds, runs_of,
};

pub(super) fn body(runs: &[Run], settings: &Settings) -> String {
    let mut t = Table::new([
        "exploration",
        "mean-actor return, first half",
        "mean-actor return, last",
        "training-episode return, last 10",
        "seconds per run",
    ]);
    for e in &settings.explorations {
        let of = runs_of(runs, &e.name());
        t.row([
            e.name(),
            format!("{:.1}", over_seeds(&of, early)),
            format!("{:.1}", over_seeds(&of, last)),
            format!(
                "{:.1}",
                over_seeds(&of, |r| mean(
                    &r.train_returns[r.train_returns.len().saturating_sub(10)..]
                ))
            ),
            format!("{:.0}", over_seeds(&of, |r| r.seconds)),
        ]);
    }
    let d = &settings.ddpg;
    format!(
        "Pendulum swing-up (200 steps per episode; the best return is near −150), {} episodes, \
         {} seeds (mean ± standard error). DDPG: actor and critic MLPs with two hidden layers of \
         {} ReLU units, γ = {}, τ = {}, minibatches of {}, replay capacity {}, Adam at {} (actor) \
         and {} (critic); learning starts once the buffer holds a minibatch, collected by each \
         rule's own behaviour policy. Vadam: α = 10⁻³, λ = {PRIOR_PRECISION}, N = \
         {VADAM_EXAMPLES}; VadaGrad: α = {VADAGRAD_LR}, γ₂ = 0.999; both start at σ₁ = 0.05 \
         (initial precision {INIT_PRECISION}) and act one weight sample per episode. The mean \
         actor is evaluated every {} episodes from {} fixed start states.\n\n{}\n\
         The paper's environment is MuJoCo's Half-Cheetah, which is not available offline; the \
         pendulum is the stand-in, so the paper's numbers do not transfer, only the comparison.\n",
        settings.episodes,
        settings.seeds,
        d.hidden,
        d.discount,
        d.target_rate,
        d.batch_size,
        d.capacity,
        d.actor_lr,
        d.critic_lr,
        settings.eval_every,
        settings.eval_starts,
        t.to_markdown()
    )
}
pub(super) fn figure(runs: &[Run], settings: &Settings) -> Figure {
    let mut eval = Panel::new("mean actor: average return from fixed starts");
    eval.labels("episode", "return");
    let mut behaviour = Panel::new("training episodes: return of the behaviour policy");
    behaviour.labels("episode", "return");
    let mut sigma = Panel::new("weight noise: mean σ of the actor's weights");
    sigma.labels("episode", "mean σ");
    let eval_at: Vec<f64> = (0..=settings.episodes / settings.eval_every)
        .map(|k| (k * settings.eval_every) as f64)
        .collect();
    let episodes: Vec<f64> = (1..=settings.episodes).map(|e| e as f64).collect();
    for (e, color) in settings.explorations.iter().zip(PALETTE) {
        let of = runs_of(runs, &e.name());
        let curve = |series: fn(&Run) -> &[f64], len: usize| -> [Vec<f64>; 3] {
            let stats: Vec<MeanSe> = (0..len)
                .map(|i| over_seeds(&of, |r| series(r)[i]))
                .collect();
            [
                stats.iter().map(|s| s.mean).collect(),
                stats.iter().map(|s| s.mean - s.se).collect(),
                stats.iter().map(|s| s.mean + s.se).collect(),
            ]
        };
        let [m, lo, hi] = curve(|r| &r.eval_returns, eval_at.len());
        eval.band(&eval_at, &lo, &hi, color)
            .line(&eval_at, &m, color)
            .legend(e.name(), color);
        let [m, lo, hi] = curve(|r| &r.train_returns, episodes.len());
        behaviour
            .band(&episodes, &lo, &hi, color)
            .line(&episodes, &m, color)
            .legend(e.name(), color);
        if let Exploration::Parameter { .. } = e {
            let [m, ..] = curve(|r| &r.mean_sigma, episodes.len());
            sigma.line(&episodes, &m, color).legend(e.name(), color);
        }
    }
    Figure::new(3).panel(eval).panel(behaviour).panel(sigma)
}
