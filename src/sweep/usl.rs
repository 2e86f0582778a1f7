//! The Universal Scalability Law (Gunther): X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)),
//! fitted by nonlinear least squares on throughput (Levenberg-Marquardt with Marquardt's scaling,
//! started from the linear fit of the deviation from linearity, N X(1) / X(N) - 1 against
//! sigma (N - 1) plus kappa N (N - 1)), with standard errors from the Jacobian at the solution. And what the fit
//! may be trusted to say: a parameter the steps cannot determine is named, with the steps that
//! would, never printed as a number.

use serde::{Deserialize, Deserializer, Serialize};

/// Fewest steps whose fit is shown.
pub(crate) const MIN_STEPS: usize = 6;

/// A fitted parameter and its standard error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Estimate {
    pub(crate) value: f64,
    /// Not a number (written as null) when the fit's matrix could not be inverted.
    #[serde(deserialize_with = "null_is_nan")]
    pub(crate) se: f64,
}

fn null_is_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// The least-squares fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Fit {
    pub(crate) lambda: Estimate,
    pub(crate) sigma: Estimate,
    pub(crate) kappa: Estimate,
    /// sqrt(residual sum of squares / (steps - 3)), in throughput's unit.
    pub(crate) residual_se: f64,
    /// The largest residual (measured - fitted) by size, and its N.
    pub(crate) max_residual: f64,
    pub(crate) max_residual_at: f64,
    pub(crate) r_squared: f64,
    /// The covariance of (lambda, sigma, kappa): the residual variance times (J^T J)^-1 (NaN
    /// where it could not be inverted).
    pub(crate) covariance: [[f64; 3]; 3],
}

impl Fit {
    fn parameters(&self) -> [f64; 3] {
        [self.lambda.value, self.sigma.value, self.kappa.value]
    }

    pub(crate) fn throughput(&self, n: f64) -> f64 {
        model(self.parameters(), n)
    }

    /// The standard error of a function of the parameters whose gradient is `g` (the delta
    /// method: sqrt(g^T C g)).
    fn se_of(&self, g: [f64; 3]) -> f64 {
        let c = &self.covariance;
        root(
            (0..3)
                .flat_map(|i| (0..3).map(move |j| (i, j)))
                .map(|(i, j)| g[i] * c[i][j] * g[j])
                .sum::<f64>(),
        )
    }

    /// The peak N* = sqrt((1 - sigma) / kappa), its throughput X(N*), and their standard errors.
    /// At N* dX/dN is 0, so X(N*)'s gradient in the parameters is the model's own there.
    pub(crate) fn peak(&self) -> Option<(Estimate, Estimate)> {
        let (s, k) = (self.sigma.value, self.kappa.value);
        if !(k > 0.0 && s < 1.0) {
            return None;
        }
        let n = ((1.0 - s) / k).sqrt();
        let dn = [0.0, -1.0 / (2.0 * k * n), -n / (2.0 * k)];
        Some((
            Estimate {
                value: n,
                se: self.se_of(dn),
            },
            Estimate {
                value: self.throughput(n),
                se: self.se_of(gradient(self.parameters(), n)),
            },
        ))
    }
}

/// The square root of a variance that rounding may have made slightly negative; NaN stays NaN.
fn root(v: f64) -> f64 {
    if v.is_nan() {
        v
    } else {
        v.max(0.0).sqrt()
    }
}

fn model(p: [f64; 3], n: f64) -> f64 {
    p[0] * n / (1.0 + p[1] * (n - 1.0) + p[2] * n * (n - 1.0))
}

/// d model / d (lambda, sigma, kappa) at `n`.
fn gradient(p: [f64; 3], n: f64) -> [f64; 3] {
    let d = 1.0 + p[1] * (n - 1.0) + p[2] * n * (n - 1.0);
    [
        n / d,
        -p[0] * n * (n - 1.0) / (d * d),
        -p[0] * n * n * (n - 1.0) / (d * d),
    ]
}

fn rss(p: [f64; 3], points: &[(f64, f64)]) -> f64 {
    points.iter().map(|&(n, x)| (x - model(p, n)).powi(2)).sum()
}

/// Solves the 3x3 system `a x = b` (partial pivoting); None when singular.
fn solve(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for c in 0..3 {
        let p = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        let pivot = a[c];
        for r in c + 1..3 {
            let f = a[r][c] / pivot[c];
            for (x, p) in a[r].iter_mut().zip(pivot).skip(c) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; 3];
    for r in (0..3).rev() {
        let s: f64 = (r + 1..3).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// J^T J and J^T r at `p`.
fn normal(p: [f64; 3], points: &[(f64, f64)]) -> ([[f64; 3]; 3], [f64; 3]) {
    let mut jtj = [[0.0; 3]; 3];
    let mut jtr = [0.0; 3];
    for &(n, x) in points {
        let g = gradient(p, n);
        let r = x - model(p, n);
        for i in 0..3 {
            jtr[i] += g[i] * r;
            for j in 0..3 {
                jtj[i][j] += g[i] * g[j];
            }
        }
    }
    (jtj, jtr)
}

/// The start: lambda from the smallest N's throughput per user, sigma and kappa from the linear
/// fit (no intercept) of the deviation from linearity.
fn start(points: &[(f64, f64)]) -> [f64; 3] {
    let &(n1, x1) = points
        .iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("points");
    let lambda = x1 / n1;
    let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in points {
        let y = n * lambda / x - 1.0;
        let (u, v) = (n - 1.0, n * (n - 1.0));
        s11 += u * u;
        s12 += u * v;
        s22 += v * v;
        b1 += u * y;
        b2 += v * y;
    }
    let det = s11 * s22 - s12 * s12;
    let (sigma, kappa) = if det.abs() > 1e-300 {
        ((b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det)
    } else {
        (0.0, 0.0)
    };
    [lambda, sigma.clamp(0.0, 0.99), kappa.max(1e-12)]
}

/// The least-squares fit of the USL to (N, X) points; None with fewer than 4 points (the
/// standard errors need a degree of freedom) or when no fit converges.
pub(crate) fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    if points.len() < 4 || points.iter().any(|&(n, x)| !(n > 0.0 && x > 0.0)) {
        return None;
    }
    let mut p = start(points);
    let mut cost = rss(p, points);
    let mut mu = 1e-3;
    let mut converged = false;
    for _ in 0..10_000 {
        let (jtj, jtr) = normal(p, points);
        let mut damped = jtj;
        for (i, row) in damped.iter_mut().enumerate() {
            row[i] += mu * jtj[i][i].max(1e-300);
        }
        let Some(step) = solve(damped, jtr) else {
            mu *= 10.0;
            continue;
        };
        let next = [p[0] + step[0], p[1] + step[1], p[2] + step[2]];
        let c = rss(next, points);
        if c.is_finite() && c <= cost {
            let small = (0..3).all(|i| step[i].abs() <= 1e-12 * p[i].abs().max(1e-12));
            let flat = cost - c <= 1e-15 * cost.max(1e-300);
            p = next;
            cost = c;
            mu = (mu / 10.0).max(1e-12);
            if small || flat {
                converged = true;
                break;
            }
        } else {
            mu *= 10.0;
            if mu > 1e12 {
                // No step lowers the residuals any more: a minimum.
                converged = true;
                break;
            }
        }
    }
    if !converged {
        return None;
    }
    let (jtj, _) = normal(p, points);
    let dof = crate::num::real_len(points.len() - 3);
    let s2 = cost / dof;
    let mut covariance = [[f64::NAN; 3]; 3];
    for i in 0..3 {
        let mut e = [0.0; 3];
        e[i] = 1.0;
        if let Some(col) = solve(jtj, e) {
            for (row, v) in covariance.iter_mut().zip(col) {
                row[i] = s2 * v;
            }
        }
    }
    let se: [f64; 3] = std::array::from_fn(|i| root(covariance[i][i]));
    let mean = points.iter().map(|p| p.1).sum::<f64>() / crate::num::real_len(points.len());
    let tss: f64 = points.iter().map(|&(_, x)| (x - mean).powi(2)).sum();
    let (at, worst) = points
        .iter()
        .map(|&(n, x)| (n, x - model(p, n)))
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    p.iter().all(|v| v.is_finite()).then(|| Fit {
        lambda: Estimate {
            value: p[0],
            se: se[0],
        },
        sigma: Estimate {
            value: p[1],
            se: se[1],
        },
        kappa: Estimate {
            value: p[2],
            se: se[2],
        },
        residual_se: s2.sqrt(),
        max_residual: worst,
        max_residual_at: at,
        r_squared: if tss > 0.0 { 1.0 - cost / tss } else { 1.0 },
        covariance,
    })
}

/// A prediction of the steps left out of a fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Holdout {
    /// The steps fitted (the first ones).
    pub(crate) fitted_steps: usize,
    /// Per step left out: N, measured, predicted.
    pub(crate) predicted: Vec<(f64, f64, f64)>,
    /// The largest |predicted - measured| / measured.
    pub(crate) worst_error: f64,
}

/// What the steps say, and what they cannot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Analysis {
    /// None with fewer than MIN_STEPS steps or when no fit converges. Not written: `parameters`
    /// is, without what the steps cannot determine.
    #[serde(skip)]
    pub(crate) fit: Option<Fit>,
    pub(crate) parameters: Option<Parameters>,
    pub(crate) sigma_identified: bool,
    pub(crate) kappa_identified: bool,
    /// N* = sqrt((1 - sigma) / kappa) and X(N*), when kappa is identified and N* is within
    /// twice the largest step.
    pub(crate) peak_n: Option<f64>,
    pub(crate) peak_throughput: Option<f64>,
    /// A measured step past the peak fell below it by more than the steps' noise.
    #[serde(default)]
    pub(crate) fell_past_peak: bool,
    /// Their standard errors, from the fit's covariance (the delta method).
    #[serde(default)]
    pub(crate) peak_n_se: Option<f64>,
    #[serde(default)]
    pub(crate) peak_throughput_se: Option<f64>,
    /// 1 / sigma: where returns start to fall fast.
    pub(crate) one_over_sigma: Option<f64>,
    /// lambda / sigma: the most any number of users could give without coherency.
    pub(crate) amdahl_ceiling: Option<f64>,
    pub(crate) holdout: Option<Holdout>,
    /// The fitted curve as (N, X) points, from 1 to the largest step (to twice it when the peak
    /// is determined): what sweep.html draws.
    pub(crate) curve: Vec<(f64, f64)>,
    /// What could not be determined, and the steps that would determine it.
    pub(crate) notes: Vec<String>,
}

/// The fit as written: a parameter the steps cannot determine is null, never a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Parameters {
    pub(crate) lambda: Estimate,
    pub(crate) sigma: Option<Estimate>,
    pub(crate) kappa: Option<Estimate>,
    pub(crate) residual_se: f64,
    pub(crate) max_residual: f64,
    pub(crate) max_residual_at: f64,
    pub(crate) r_squared: f64,
}

/// The fit of all steps but the two largest, and how far it misses those two.
fn holdout(points: &[(f64, f64)]) -> Option<Holdout> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cut = sorted.len() - 2;
    let part = fit(&sorted[..cut])?;
    let predicted: Vec<(f64, f64, f64)> = sorted[cut..]
        .iter()
        .map(|&(n, x)| (n, x, part.throughput(n)))
        .collect();
    let worst_error = predicted
        .iter()
        .map(|&(_, x, p)| ((p - x) / x).abs())
        .fold(0.0, f64::max);
    Some(Holdout {
        fitted_steps: cut,
        predicted,
        worst_error,
    })
}

/// The peak N* and X(N*) with their errors, when kappa is identified and N* lies within twice
/// the largest step; and whether a measured step past it fell by more than the steps' noise.
fn read_peak(a: &mut Analysis, fit: &Fit, points: &[(f64, f64)], largest: f64) {
    let Some((n, x)) = fit.peak().filter(|_| a.kappa_identified) else {
        return;
    };
    if n.value > 2.0 * largest {
        a.notes.push(format!(
            "the fitted peak lies beyond twice the largest step ({largest:.0}): not printed; add steps above {largest:.0} users"
        ));
        return;
    }
    a.peak_n = Some(n.value);
    a.peak_throughput = Some(x.value);
    a.peak_n_se = n.se.is_finite().then_some(n.se);
    a.peak_throughput_se = x.se.is_finite().then_some(x.se);
    a.fell_past_peak = fell_past(points, (n.value, x.value), fit.residual_se);
    if !a.fell_past_peak {
        let past = if points.iter().any(|p| p.0 > n.value) {
            format!(
                "stayed within the steps' noise ({:.1}/s, twice the fit's residual standard error) of its {:.0}/s",
                2.0 * fit.residual_se,
                x.value
            )
        } else {
            "are none".to_string()
        };
        a.notes.push(format!(
            "the steps past the fitted peak ({:.0} users) {past}: the fit's decline is its curve's, not measured",
            n.value
        ));
    }
}

/// Whether a measured step past the fitted `peak` (N*, X(N*)) fell below it by more than the
/// steps' noise (twice the fit's residual standard error `residual_se`): only then is "beyond
/// the peak, more users give less" what was measured, not the curve's shape alone.
fn fell_past(points: &[(f64, f64)], (n, x): (f64, f64), residual_se: f64) -> bool {
    points
        .iter()
        .filter(|p| p.0 > n)
        .any(|p| x - p.1 > 2.0 * residual_se)
}

/// Fits the steps and says what the fit can be trusted with.
pub(crate) fn analyse(points: &[(f64, f64)]) -> Analysis {
    let mut a = Analysis {
        fit: None,
        parameters: None,
        curve: Vec::new(),
        sigma_identified: false,
        kappa_identified: false,
        peak_n: None,
        peak_throughput: None,
        fell_past_peak: false,
        peak_n_se: None,
        peak_throughput_se: None,
        one_over_sigma: None,
        amdahl_ceiling: None,
        holdout: None,
        notes: Vec::new(),
    };
    let largest = points.iter().map(|p| p.0).fold(0.0, f64::max);
    if points.len() < MIN_STEPS {
        a.notes.push(format!(
            "{} steps: a fit needs at least {MIN_STEPS} to be worth reading",
            points.len()
        ));
        return a;
    }
    let Some(fit) = fit(points) else {
        a.notes
            .push("the least-squares fit did not converge on these steps".into());
        return a;
    };
    let s = fit.sigma;
    let k = fit.kappa;
    a.sigma_identified = s.value > 0.0 && s.se.is_finite() && s.se < s.value;
    if !a.sigma_identified {
        a.notes.push(format!(
            "sigma (contention) is not determined by these steps ({:.4} +/- {:.4}): throughput grows about linearly, or the steps are too noisy; more steps between 1 and {largest:.0}, or longer ones, would tell",
            s.value, s.se
        ));
    }
    // A decline measured: a step after the best one that gave less than it.
    let best = points
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(0.0, |p| p.0);
    let declined = points.iter().any(|p| p.0 > best);
    a.kappa_identified = declined && k.value > 0.0 && k.se.is_finite() && k.se < k.value;
    if !a.kappa_identified {
        a.notes.push(if declined {
            format!(
                "kappa (coherency) is not determined by these steps ({:.2e} +/- {:.2e}); steps past {best:.0} users, where throughput falls, would tell",
                k.value, k.se
            )
        } else {
            format!(
                "kappa (coherency) is not identified: throughput never fell, so no peak was reached; add steps above {largest:.0} users until it falls"
            )
        });
    }
    if a.sigma_identified {
        a.one_over_sigma = Some(1.0 / s.value);
        a.amdahl_ceiling = Some(fit.lambda.value / s.value);
    }
    read_peak(&mut a, &fit, points, largest);
    if points.len() >= MIN_STEPS + 2 {
        a.holdout = holdout(points);
    }
    a.parameters = Some(Parameters {
        lambda: fit.lambda,
        sigma: a.sigma_identified.then_some(fit.sigma),
        kappa: a.kappa_identified.then_some(fit.kappa),
        residual_se: fit.residual_se,
        max_residual: fit.max_residual,
        max_residual_at: fit.max_residual_at,
        r_squared: fit.r_squared,
    });
    let end = if a.peak_n.is_some() {
        2.0 * largest
    } else {
        largest
    };
    let step = (end / 200.0).max(0.5);
    let mut n = 1.0;
    while n <= end {
        a.curve.push((n, fit.throughput(n)));
        n += step;
    }
    a.fit = Some(fit);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cisco() -> Vec<(f64, f64)> {
        let text = include_str!("../../tests/usl/cisco.tsv");
        text.lines()
            .skip(1)
            .map(|l| {
                let (n, x) = l.split_once('\t').unwrap();
                (n.parse().unwrap(), x.parse().unwrap())
            })
            .collect()
    }

    /// Baron Schwartz, "Practical Scalability Analysis with the Universal Scalability Law"
    /// (2015), the Cisco benchmark: the book's fitted lambda 995.6486, sigma 0.02671591, kappa
    /// 7.690945e-4, peak at N = 35 of 12,341/s (tests/usl/README.md says where these come
    /// from). Within 0.02 %, as usl4j checks them.
    #[test]
    fn the_fit_reproduces_the_books_cisco_example() {
        let a = analyse(&cisco());
        let f = a.fit.as_ref().unwrap();
        let close = |want: f64, got: f64| {
            assert!((got - want).abs() <= want * 2e-4, "{got} against {want}")
        };
        close(995.6486, f.lambda.value);
        close(0.02671591, f.sigma.value);
        close(7.690945e-4, f.kappa.value);
        assert_eq!(a.peak_n.unwrap().floor(), 35.0);
        close(12341.0, a.peak_throughput.unwrap().round());
        assert!(a.sigma_identified && a.kappa_identified, "{:?}", a.notes);
        assert!(f.sigma.se > 0.0 && f.sigma.se < f.sigma.value / 2.0);
        assert!(f.r_squared > 0.99);
    }

    /// Points on a known curve, fitted from a start far from it, give the curve back.
    #[test]
    fn exact_points_give_their_parameters_back() {
        let truth = [2000.0, 0.05, 0.002];
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0]
            .iter()
            .map(|&n| (n, model(truth, n)))
            .collect();
        let f = fit(&points).unwrap();
        assert!((f.lambda.value - 2000.0).abs() < 1e-6);
        assert!((f.sigma.value - 0.05).abs() < 1e-9);
        assert!((f.kappa.value - 0.002).abs() < 1e-10);
        let a = analyse(&points);
        let want = ((1.0 - 0.05) / 0.002_f64).sqrt();
        assert!((a.peak_n.unwrap() - want).abs() < 1e-6);
        let h = a.holdout.unwrap();
        assert_eq!(h.fitted_steps, 7);
        assert!(h.worst_error < 1e-9);
    }

    /// The peak's standard errors come from the analytic gradients (X(N*)'s by the envelope
    /// theorem); central differences of N*(p) and X(N*(p), p) give the same.
    #[test]
    fn the_peaks_standard_errors_match_numeric_gradients() {
        let f = fit(&cisco()).unwrap();
        let (n, x) = f.peak().unwrap();
        let p = f.parameters();
        let at = |q: [f64; 3]| {
            let n = ((1.0 - q[1]) / q[2]).sqrt();
            (n, model(q, n))
        };
        let mut gn = [0.0; 3];
        let mut gx = [0.0; 3];
        for i in 0..3 {
            let h = p[i] * 1e-6;
            let (mut up, mut down) = (p, p);
            up[i] += h;
            down[i] -= h;
            let (a, b) = (at(up), at(down));
            gn[i] = (a.0 - b.0) / (2.0 * h);
            gx[i] = (a.1 - b.1) / (2.0 * h);
        }
        let close = |want: f64, got: f64| {
            assert!((got - want).abs() <= want * 1e-4, "{got} against {want}")
        };
        close(f.se_of(gn), n.se);
        close(f.se_of(gx), x.se);
        assert!(n.se > 0.0 && n.se < n.value / 4.0, "{n:?}");
        let a = analyse(&cisco());
        assert_eq!(a.peak_n_se, Some(n.se));
    }

    #[test]
    fn no_decline_leaves_kappa_unidentified_and_no_peak() {
        // Amdahl only: kappa 0, throughput still rising at the last step.
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
            .iter()
            .map(|&n| (n, model([1000.0, 0.03, 0.0], n)))
            .collect();
        let a = analyse(&points);
        assert!(!a.kappa_identified);
        assert_eq!(a.peak_n, None);
        assert!(a.notes.iter().any(|n| n.contains("kappa")), "{:?}", a.notes);
        assert!(a.sigma_identified);
    }

    /// The flat, saturated curve: 12 and 16 users gave 96 and 94/s against a best of
    /// 98: within the steps' noise, so no decline, no kappa and no "more users give less".
    #[test]
    fn a_level_curve_that_wobbles_below_its_best_did_not_decline() {
        let points = [
            (1.0, 20.0),
            (2.0, 42.0),
            (4.0, 75.0),
            (6.0, 98.0),
            (8.0, 92.0),
            (12.0, 96.0),
            (16.0, 94.0),
        ];
        let a = analyse(&points);
        assert!(!a.fell_past_peak, "{:?}", a.notes);
        if a.peak_n.is_some() {
            assert!(
                a.notes.iter().any(|n| n.contains("not measured")),
                "{:?}",
                a.notes
            );
        }
        // A real fall, beyond the noise, is a decline past the peak.
        let fell: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n| (n, model([1000.0, 0.03, 0.002], n)))
            .collect();
        let a = analyse(&fell);
        assert!(a.kappa_identified && a.fell_past_peak, "{:?}", a.notes);
        // The book's Cisco curve: its fitted peak (35) lies past the last step (32).
        assert!(!analyse(&cisco()).fell_past_peak);
    }

    #[test]
    fn too_few_steps_give_no_numbers() {
        let a = analyse(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]);
        assert!(a.fit.is_none());
        assert!(a.notes[0].contains("at least 6"), "{:?}", a.notes);
    }
}
