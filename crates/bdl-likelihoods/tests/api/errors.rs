//! Bad input is a typed error naming what is wrong, never a panic.

use bdl_likelihoods::{ClassLink, Error, FunctionVariance, Likelihood, Predictive, Seed};
use candle_core::{DType, Device, Tensor};

use crate::common::tensor;

fn f64s(values: &[f64], shape: &[usize]) -> Tensor {
    tensor(values.to_vec(), shape)
}

fn labels(values: &[u32]) -> Tensor {
    Tensor::from_vec(values.to_vec(), values.len(), &Device::Cpu).unwrap()
}

#[test]
fn wrong_shapes() {
    let gauss = Likelihood::Gaussian { sigma: 1.0 };
    let cat = Likelihood::Categorical { classes: 3 };
    let f2 = f64s(&[0.0; 6], &[2, 3]);
    let cases = [
        // f must be a matrix.
        gauss.log_lik(&f64s(&[0.0; 2], &[2]), &f64s(&[0.0; 2], &[2])),
        // Bernoulli needs one output, Categorical `classes` outputs.
        Likelihood::Bernoulli.grad_f(&f2, &f64s(&[0.0; 2], &[2])),
        Likelihood::Categorical { classes: 4 }.hess_f(&f2),
        // Targets with the wrong number of rows or outputs.
        gauss.log_lik(&f2, &f64s(&[0.0; 9], &[3, 3])),
        gauss.grad_f(&f2, &f64s(&[0.0; 2], &[2])),
        cat.log_lik(&f2, &labels(&[0, 1, 2])),
        cat.grad_f(&f2, &f64s(&[0.0; 4], &[2, 2])),
        // No outputs at all.
        gauss.hess_f(&f64s(&[], &[2, 0])),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        assert!(
            matches!(case, Err(Error::Shape { .. })),
            "case {i}: {case:?}"
        );
    }
}

#[test]
fn invalid_labels() {
    let cat = Likelihood::Categorical { classes: 3 };
    let f = f64s(&[0.0; 6], &[2, 3]);
    let out_of_range = cat.log_lik(&f, &labels(&[0, 3]));
    assert!(
        matches!(
            out_of_range,
            Err(Error::InvalidLabel {
                row: 1,
                value: 3.0,
                classes: 3,
                ..
            })
        ),
        "{out_of_range:?}"
    );
    for bad in [-1.0, 0.5] {
        let err = cat.grad_f(&f, &f64s(&[bad, 0.0], &[2]));
        assert!(
            matches!(err, Err(Error::InvalidLabel { row: 0, .. })),
            "{err:?}"
        );
    }
    let bern = Likelihood::Bernoulli.log_lik(&f64s(&[0.0; 2], &[2, 1]), &f64s(&[1.0, 2.0], &[2]));
    assert!(
        matches!(
            bern,
            Err(Error::InvalidLabel {
                row: 1,
                classes: 2,
                ..
            })
        ),
        "{bern:?}"
    );
    let text = cat.log_lik(&f, &labels(&[0, 7])).unwrap_err().to_string();
    assert!(text.contains("label 7") && text.contains("row 1"), "{text}");
    // target_rows validates as log_lik does, and checks the number of outputs.
    let rows = cat.target_rows(&labels(&[0, 3]), 2, 3);
    assert!(
        matches!(rows, Err(Error::InvalidLabel { row: 1, .. })),
        "{rows:?}"
    );
    let rows = cat.target_rows(&labels(&[0, 1]), 2, 4);
    assert!(matches!(rows, Err(Error::Shape { .. })), "{rows:?}");
}

#[test]
fn non_finite_values() {
    let gauss = Likelihood::Gaussian { sigma: 1.0 };
    let nan_f = gauss.log_lik(&f64s(&[0.0, f64::NAN], &[2, 1]), &f64s(&[0.0; 2], &[2]));
    assert!(
        matches!(&nan_f, Err(Error::NonFinite { arg, index: 1, .. }) if arg == "f"),
        "{nan_f:?}"
    );
    let inf_y = gauss.grad_f(
        &f64s(&[0.0; 2], &[2, 1]),
        &f64s(&[f64::INFINITY, 0.0], &[2]),
    );
    assert!(
        matches!(&inf_y, Err(Error::NonFinite { arg, index: 0, .. }) if arg == "y"),
        "{inf_y:?}"
    );
    let nan_label = Likelihood::Categorical { classes: 2 }
        .log_lik(&f64s(&[0.0; 2], &[1, 2]), &f64s(&[f64::NAN], &[1]));
    assert!(
        matches!(nan_label, Err(Error::NonFinite { .. })),
        "{nan_label:?}"
    );
    let nan_var = Likelihood::Bernoulli.predictive(
        &f64s(&[0.0], &[1, 1]),
        &FunctionVariance::Diagonal(f64s(&[f64::NAN], &[1, 1])),
        ClassLink::Probit,
    );
    assert!(
        matches!(nan_var, Err(Error::NonFinite { .. })),
        "{nan_var:?}"
    );
}

#[test]
fn wrong_dtypes() {
    let f = Tensor::zeros((2, 1), DType::U32, &Device::Cpu).unwrap();
    let err = Likelihood::Bernoulli.hess_f(&f);
    assert!(
        matches!(
            err,
            Err(Error::DType {
                dtype: DType::U32,
                ..
            })
        ),
        "{err:?}"
    );
    let y = Tensor::zeros(2, DType::U32, &Device::Cpu).unwrap();
    let err = Likelihood::Gaussian { sigma: 1.0 }.log_lik(&f64s(&[0.0; 2], &[2, 1]), &y);
    assert!(matches!(err, Err(Error::DType { .. })), "{err:?}");
}

#[test]
fn invalid_likelihood_parameters() {
    let f = f64s(&[0.0; 2], &[1, 2]);
    for lik in [
        Likelihood::Gaussian { sigma: 0.0 },
        Likelihood::Gaussian { sigma: -1.0 },
        Likelihood::Gaussian { sigma: f64::NAN },
        Likelihood::Categorical { classes: 1 },
    ] {
        assert!(
            matches!(lik.check(), Err(Error::InvalidLikelihood(_))),
            "{lik:?}"
        );
        assert!(
            matches!(lik.hess_f(&f), Err(Error::InvalidLikelihood(_))),
            "{lik:?}"
        );
    }
    let wrong = Likelihood::Bernoulli.grad_log_sigma(&f64s(&[0.0], &[1, 1]), &f64s(&[0.0], &[1]));
    assert!(matches!(wrong, Err(Error::WrongKind { .. })), "{wrong:?}");
    let exact = Likelihood::gaussian_mle(&f64s(&[1.0], &[1, 1]), &f64s(&[1.0], &[1]));
    assert!(matches!(exact, Err(Error::ZeroResidual)), "{exact:?}");
}

#[test]
fn invalid_function_variances() {
    let cat = Likelihood::Categorical { classes: 2 };
    let m = f64s(&[0.0; 2], &[1, 2]);
    let cases = [
        (
            FunctionVariance::Diagonal(f64s(&[1.0; 3], &[1, 3])),
            "shape",
        ),
        (FunctionVariance::Full(f64s(&[1.0; 2], &[1, 2])), "shape"),
        (
            FunctionVariance::Diagonal(f64s(&[1.0, -1.0], &[1, 2])),
            "variance",
        ),
        (
            FunctionVariance::Full(f64s(&[-1.0, 0.0, 0.0, 1.0], &[1, 2, 2])),
            "variance",
        ),
    ];
    for (var, what) in cases {
        let err = cat.predictive(&m, &var, ClassLink::Probit);
        let ok = match what {
            "shape" => matches!(err, Err(Error::Shape { .. })),
            _ => matches!(err, Err(Error::InvalidVariance { .. })),
        };
        assert!(ok, "{what}: {err:?}");
    }
    // Indefinite covariance: caught where it is factored (Monte Carlo).
    let indefinite = FunctionVariance::Full(f64s(&[1.0, 2.0, 2.0, 1.0], &[1, 2, 2]));
    let mc = ClassLink::MonteCarlo {
        samples: 10,
        seed: Seed(0),
    };
    let err = cat.predictive(&m, &indefinite, mc);
    assert!(
        matches!(err, Err(Error::NotPositiveSemiDefinite { point: 0, .. })),
        "{err:?}"
    );
    let zero = ClassLink::MonteCarlo {
        samples: 0,
        seed: Seed(0),
    };
    let err = cat.predictive(&m, &FunctionVariance::Diagonal(m.clone()), zero);
    assert!(matches!(err, Err(Error::ZeroSamples)), "{err:?}");
    let err = cat.predictive(
        &m,
        &FunctionVariance::Diagonal(m.clone()),
        ClassLink::LaplaceBridge,
    );
    assert!(
        matches!(err, Err(Error::DegenerateBridge { point: 0, .. })),
        "{err:?}"
    );
}

#[test]
fn invalid_predictives() {
    let m = f64s(&[0.0; 2], &[2, 1]);
    let err = Predictive::gaussian(&m, &f64s(&[1.0, 0.0], &[2, 1]));
    assert!(
        matches!(err, Err(Error::InvalidVariance { index: 1, .. })),
        "{err:?}"
    );
    let err = Predictive::gaussian(&m, &f64s(&[1.0; 2], &[1, 2]));
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
    let err = Predictive::gaussian_mixture(&f64s(&[], &[0, 2, 1]), &f64s(&[], &[0, 2, 1]));
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
    for probs in [[0.5, 0.6], [1.5, -0.5], [f64::NAN, 1.0]] {
        let err = Predictive::categorical(&f64s(&probs, &[1, 2]));
        assert!(
            matches!(
                err,
                Err(Error::NotProbabilities { .. } | Error::NonFinite { .. })
            ),
            "{err:?}"
        );
    }

    let gauss = Predictive::gaussian(&m, &f64s(&[1.0; 2], &[2, 1])).unwrap();
    let cat = Predictive::categorical(&f64s(&[0.5; 4], &[2, 2])).unwrap();
    assert!(matches!(Predictive::mixture(&[]), Err(Error::EmptyMixture)));
    let err = Predictive::mixture(&[gauss.clone(), cat.clone()]);
    assert!(matches!(err, Err(Error::WrongKind { .. })), "{err:?}");
    let three = Predictive::gaussian(&f64s(&[0.0; 3], &[3, 1]), &f64s(&[1.0; 3], &[3, 1])).unwrap();
    let err = Predictive::mixture(&[gauss.clone(), three]);
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
    assert!(matches!(gauss.probs(), Err(Error::WrongKind { .. })));
    let err = gauss.log_lik(&f64s(&[0.0; 3], &[3]));
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
    let err = cat.log_lik(&labels(&[0, 2]));
    assert!(matches!(err, Err(Error::InvalidLabel { .. })), "{err:?}");
}
