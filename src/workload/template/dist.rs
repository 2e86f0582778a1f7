//! `^RandomDouble`'s distributions other than `uniform`, with genny's names and parameters (those
//! of boost's distributions), and `^RandomInt`'s negative binomial.

use rand::distr::Distribution;
use rand::{Rng, RngCore};
use rand_distr::{
    Beta, Cauchy, ChiSquared, Exp, FisherF, Gamma, Gumbel, LogNormal, Normal, Poisson, StudentT,
    Weibull,
};

/// A distribution of `^RandomDouble` other than `uniform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Exponential,
    Gamma,
    Weibull,
    ExtremeValue,
    Beta,
    Laplace,
    Normal,
    Lognormal,
    ChiSquared,
    NonCentralChiSquared,
    Cauchy,
    FisherF,
    StudentT,
}

/// Every `distribution` of `^RandomDouble`, `uniform` first.
pub(super) const DOUBLE_NAMES: &[&str] = &[
    "uniform",
    "exponential",
    "gamma",
    "weibull",
    "extreme_value",
    "beta",
    "laplace",
    "normal",
    "lognormal",
    "chi_squared",
    "non_central_chi_squared",
    "cauchy",
    "fisher_f",
    "student_t",
];

impl Kind {
    pub(super) fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "exponential" => Kind::Exponential,
            "gamma" => Kind::Gamma,
            "weibull" => Kind::Weibull,
            "extreme_value" => Kind::ExtremeValue,
            "beta" => Kind::Beta,
            "laplace" => Kind::Laplace,
            "normal" => Kind::Normal,
            "lognormal" => Kind::Lognormal,
            "chi_squared" => Kind::ChiSquared,
            "non_central_chi_squared" => Kind::NonCentralChiSquared,
            "cauchy" => Kind::Cauchy,
            "fisher_f" => Kind::FisherF,
            "student_t" => Kind::StudentT,
            _ => return None,
        })
    }

    /// Its parameters, in order, with their defaults when left out (genny needs each written).
    pub(super) fn params(self) -> &'static [(&'static str, f64)] {
        match self {
            Kind::Exponential => &[("lambda", 1.0)],
            Kind::Gamma => &[("alpha", 1.0), ("beta", 1.0)],
            Kind::Weibull => &[("a", 1.0), ("b", 1.0)],
            Kind::ExtremeValue => &[("a", 0.0), ("b", 1.0)],
            Kind::Beta => &[("alpha", 1.0), ("beta", 1.0)],
            Kind::Laplace => &[("mean", 0.0), ("beta", 1.0)],
            Kind::Normal => &[("mean", 0.0), ("sigma", 1.0)],
            Kind::Lognormal => &[("m", 0.0), ("s", 1.0)],
            Kind::ChiSquared | Kind::StudentT => &[("n", 1.0)],
            Kind::NonCentralChiSquared => &[("k", 1.0), ("lambda", 1.0)],
            Kind::Cauchy => &[("median", 0.0), ("sigma", 1.0)],
            Kind::FisherF => &[("m", 1.0), ("n", 1.0)],
        }
    }
}

/// A distribution with its parameters, ready to draw.
#[derive(Debug, Clone)]
pub(super) enum Sampler {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
    Weibull(Weibull<f64>),
    Gumbel(Gumbel<f64>),
    Beta(Beta<f64>),
    Laplace { mean: f64, scale: f64 },
    Normal(Normal<f64>),
    LogNormal(LogNormal<f64>),
    ChiSquared(ChiSquared<f64>),
    NonCentral { k: f64, lambda: f64 },
    Cauchy(Cauchy<f64>),
    FisherF(FisherF<f64>),
    StudentT(StudentT<f64>),
}

/// What is wrong with a parameter: its name and the problem.
pub(super) type BadParam = (&'static str, String);

fn positive(name: &'static str, v: f64) -> Result<f64, BadParam> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err((name, format!("{name} ({v}) must be above 0")))
    }
}

fn finite(name: &'static str, v: f64) -> Result<f64, BadParam> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err((name, format!("{name} ({v}) must be a finite number")))
    }
}

impl Sampler {
    /// The distribution `kind` with the parameters `p` (as many as `kind.params()`), or which
    /// parameter is out of its range.
    pub(super) fn new(kind: Kind, p: &[f64]) -> Result<Sampler, BadParam> {
        let bad = |name: &'static str| move |e: &dyn std::fmt::Display| (name, e.to_string());
        Ok(match kind {
            Kind::Exponential => {
                let lambda = positive("lambda", p[0])?;
                Sampler::Exp(Exp::new(lambda).map_err(|e| bad("lambda")(&e))?)
            }
            Kind::Gamma => {
                let (alpha, beta) = (positive("alpha", p[0])?, positive("beta", p[1])?);
                Sampler::Gamma(Gamma::new(alpha, beta).map_err(|e| bad("alpha")(&e))?)
            }
            Kind::Weibull => {
                // boost's weibull(a, b): shape a, scale b.
                let (a, b) = (positive("a", p[0])?, positive("b", p[1])?);
                Sampler::Weibull(Weibull::new(b, a).map_err(|e| bad("a")(&e))?)
            }
            Kind::ExtremeValue => {
                // boost's extreme_value(a, b): location a, scale b (Gumbel).
                let (a, b) = (finite("a", p[0])?, positive("b", p[1])?);
                Sampler::Gumbel(Gumbel::new(a, b).map_err(|e| bad("b")(&e))?)
            }
            Kind::Beta => {
                let (alpha, beta) = (positive("alpha", p[0])?, positive("beta", p[1])?);
                Sampler::Beta(Beta::new(alpha, beta).map_err(|e| bad("alpha")(&e))?)
            }
            Kind::Laplace => Sampler::Laplace {
                mean: finite("mean", p[0])?,
                scale: positive("beta", p[1])?,
            },
            Kind::Normal => {
                let (mean, sigma) = (p[0], p[1]);
                if sigma.is_nan() || sigma < 0.0 || !sigma.is_finite() || !mean.is_finite() {
                    return Err((
                        "sigma",
                        format!("sigma ({sigma}) must be 0 or more, and mean ({mean}) finite"),
                    ));
                }
                Sampler::Normal(Normal::new(mean, sigma).map_err(|e| bad("sigma")(&e))?)
            }
            Kind::Lognormal => {
                let m = finite("m", p[0])?;
                let s = p[1];
                if !s.is_finite() || s < 0.0 {
                    return Err(("s", format!("s ({s}) must be 0 or more")));
                }
                Sampler::LogNormal(LogNormal::new(m, s).map_err(|e| bad("s")(&e))?)
            }
            Kind::ChiSquared => {
                let n = positive("n", p[0])?;
                Sampler::ChiSquared(ChiSquared::new(n).map_err(|e| bad("n")(&e))?)
            }
            Kind::NonCentralChiSquared => {
                let k = positive("k", p[0])?;
                let lambda = p[1];
                if !lambda.is_finite() || lambda < 0.0 {
                    return Err(("lambda", format!("lambda ({lambda}) must be 0 or more")));
                }
                Sampler::NonCentral { k, lambda }
            }
            Kind::Cauchy => {
                let (median, sigma) = (finite("median", p[0])?, positive("sigma", p[1])?);
                Sampler::Cauchy(Cauchy::new(median, sigma).map_err(|e| bad("sigma")(&e))?)
            }
            Kind::FisherF => {
                let (m, n) = (positive("m", p[0])?, positive("n", p[1])?);
                Sampler::FisherF(FisherF::new(m, n).map_err(|e| bad("m")(&e))?)
            }
            Kind::StudentT => {
                let n = positive("n", p[0])?;
                Sampler::StudentT(StudentT::new(n).map_err(|e| bad("n")(&e))?)
            }
        })
    }

    pub(super) fn sample(&self, rng: &mut dyn RngCore) -> f64 {
        match self {
            Sampler::Exp(d) => d.sample(rng),
            Sampler::Gamma(d) => d.sample(rng),
            Sampler::Weibull(d) => d.sample(rng),
            Sampler::Gumbel(d) => d.sample(rng),
            Sampler::Beta(d) => d.sample(rng),
            Sampler::Laplace { mean, scale } => {
                // The inverse of the distribution function at a uniform draw.
                let u = rng.random::<f64>() - 0.5;
                mean - scale * u.signum() * (1.0 - 2.0 * u.abs()).ln()
            }
            Sampler::Normal(d) => d.sample(rng),
            Sampler::LogNormal(d) => d.sample(rng),
            Sampler::ChiSquared(d) => d.sample(rng),
            Sampler::NonCentral { k, lambda } => non_central_chi_squared(*k, *lambda, rng),
            Sampler::Cauchy(d) => d.sample(rng),
            Sampler::FisherF(d) => d.sample(rng),
            Sampler::StudentT(d) => d.sample(rng),
        }
    }
}

/// A draw of the non-central chi-squared distribution with `k` degrees of freedom (above 0) and
/// non-centrality `lambda` (0 or more).
fn non_central_chi_squared(k: f64, lambda: f64, rng: &mut dyn RngCore) -> f64 {
    let chi = |dof: f64, rng: &mut dyn RngCore| {
        ChiSquared::new(dof).map_or(f64::NAN, |d: ChiSquared<f64>| d.sample(rng))
    };
    if lambda == 0.0 {
        return chi(k, rng);
    }
    if k > 1.0 {
        let z: f64 = Normal::new(lambda.sqrt(), 1.0).map_or(f64::NAN, |d| d.sample(rng));
        return chi(k - 1.0, rng) + z * z;
    }
    // A Poisson mixture of central chi-squared distributions.
    let j = Poisson::new(lambda / 2.0).map_or(0.0, |d: Poisson<f64>| d.sample(rng));
    chi(k + 2.0 * j, rng)
}

/// A draw of boost's negative binomial distribution: the number of failures before the `k`-th
/// success, each trial a success with probability `p` (above 0, at most 1); a gamma-Poisson
/// mixture.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a draw capped at i64::MAX first"
)]
pub(super) fn negative_binomial(k: i64, p: f64, rng: &mut dyn RngCore) -> i64 {
    if k <= 0 || p >= 1.0 {
        return 0;
    }
    let Ok(gamma) = Gamma::new(crate::num::real_signed(k), (1.0 - p) / p) else {
        return 0;
    };
    let lambda: f64 = gamma.sample(rng);
    if lambda.is_nan() || lambda <= 0.0 {
        return 0;
    }
    match Poisson::new(lambda) {
        Ok(d) => {
            let x: f64 = d.sample(rng);
            x.min(crate::num::real_signed(i64::MAX)) as i64
        }
        Err(_) => i64::MAX,
    }
}
