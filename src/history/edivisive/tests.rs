//! Apache Otava's own tests of the method (`tests/analysis_test.py`, `tests/tigerbeetle_test.py`,
//! `tests/change_point_divisive_test.py`, `tests/series_test.py` at apache/otava 1ceb153, Apache
//! License 2.0): the same series, the same settings, the change points Otava asserts.

use super::*;

/// Hunter's merge, as Otava; and the tool's (small changes dropped first), which must agree on
/// these series too.
fn indexes(series: &[f64], window: usize, pvalue: f64, min_magnitude: f64) -> Vec<usize> {
    let found = |merge| -> Vec<usize> {
        change_points(
            series,
            Settings {
                window,
                pvalue,
                min_magnitude,
                merge,
            },
        )
        .iter()
        .map(|c| c.index)
        .collect()
    };
    let hunter = found(Merge::Hunter);
    assert_eq!(
        found(Merge::SmallChangesFirst),
        hunter,
        "the tool's merge differs"
    );
    hunter
}

#[test]
fn a_change_at_the_newest_run_beside_a_run_of_noise() {
    // tests/live/history.rs once: run 11 a little slow (0.82 ms), run 12 the index dropped.
    let p50 = [
        0.656, 0.699, 0.716, 0.726, 0.737, 0.76, 0.725, 0.746, 0.745, 0.696, 0.82, 9.687,
    ];
    let s = |merge| Settings {
        window: 50,
        pvalue: 0.05,
        min_magnitude: 0.3,
        merge,
    };
    let at = |merge| -> Vec<usize> {
        change_points(&p50, s(merge))
            .iter()
            .map(|c| c.index)
            .collect()
    };
    assert_eq!(
        at(Merge::Hunter),
        [10],
        "Hunter's order: the change told at run 11"
    );
    assert_eq!(at(Merge::SmallChangesFirst), [11]);
}

/// Nyrkiö's TigerBeetle demo series (`tigerbeetle_test.py`).
const TIGERBEETLE: [f64; 365] = [
    26705.0, 26475.0, 26641.0, 26806.0, 26835.0, 26911.0, 26564.0, 26812.0, 26874.0, 26682.0,
    15672.0, 26745.0, 26460.0, 26977.0, 26851.0, 23412.0, 23547.0, 23674.0, 23519.0, 23670.0,
    23662.0, 23462.0, 23750.0, 23717.0, 23524.0, 23588.0, 23687.0, 23793.0, 23937.0, 23715.0,
    23570.0, 23730.0, 23690.0, 23699.0, 23670.0, 23860.0, 23988.0, 23652.0, 23681.0, 23798.0,
    23728.0, 23604.0, 23523.0, 23412.0, 23685.0, 23773.0, 23771.0, 23718.0, 23409.0, 23739.0,
    23674.0, 23597.0, 23682.0, 23680.0, 23711.0, 23660.0, 23990.0, 23938.0, 23742.0, 23703.0,
    23536.0, 24363.0, 24414.0, 24483.0, 24509.0, 24944.0, 24235.0, 24560.0, 24236.0, 24667.0,
    24730.0, 28346.0, 28437.0, 28436.0, 28057.0, 28217.0, 28456.0, 28427.0, 28398.0, 28250.0,
    28331.0, 28222.0, 28726.0, 28578.0, 28345.0, 28274.0, 28514.0, 28590.0, 28449.0, 28305.0,
    28411.0, 28788.0, 28404.0, 28821.0, 28580.0, 27483.0, 26805.0, 27487.0, 27124.0, 26898.0,
    27295.0, 26951.0, 27312.0, 27660.0, 27154.0, 27050.0, 26989.0, 27193.0, 27503.0, 27326.0,
    27375.0, 27513.0, 27057.0, 27421.0, 27574.0, 27609.0, 27123.0, 27824.0, 27644.0, 27394.0,
    27836.0, 27949.0, 27702.0, 27457.0, 27272.0, 28207.0, 27802.0, 27516.0, 27586.0, 28005.0,
    27768.0, 28543.0, 28237.0, 27915.0, 28437.0, 28342.0, 27733.0, 28296.0, 28524.0, 28687.0,
    28258.0, 28611.0, 29360.0, 28590.0, 29641.0, 28965.0, 29474.0, 29256.0, 28611.0, 28205.0,
    28539.0, 27962.0, 28398.0, 28509.0, 28240.0, 28592.0, 28102.0, 28461.0, 28578.0, 28669.0,
    28507.0, 28535.0, 28226.0, 28536.0, 28561.0, 28087.0, 27953.0, 28398.0, 28007.0, 28518.0,
    28337.0, 28242.0, 28607.0, 28545.0, 28514.0, 28377.0, 28010.0, 28412.0, 28633.0, 28576.0,
    28195.0, 28637.0, 28724.0, 28466.0, 28287.0, 28719.0, 28425.0, 28860.0, 28842.0, 28604.0,
    28327.0, 28216.0, 28946.0, 28918.0, 29287.0, 28725.0, 29148.0, 29541.0, 29137.0, 29628.0,
    29087.0, 28612.0, 29154.0, 29108.0, 28884.0, 29234.0, 28695.0, 28969.0, 28809.0, 28695.0,
    28634.0, 28916.0, 29852.0, 29389.0, 29757.0, 29531.0, 29363.0, 29251.0, 29552.0, 29561.0,
    29046.0, 29795.0, 29022.0, 29395.0, 28921.0, 29739.0, 29257.0, 29455.0, 29376.0, 29528.0,
    28909.0, 29492.0, 28984.0, 29621.0, 29026.0, 29457.0, 29102.0, 29114.0, 28924.0, 29162.0,
    29259.0, 29554.0, 29616.0, 29211.0, 29367.0, 29460.0, 28836.0, 29645.0, 29586.0, 28848.0,
    29324.0, 28969.0, 29150.0, 29243.0, 29081.0, 29312.0, 28923.0, 29272.0, 29117.0, 29072.0,
    29529.0, 29737.0, 29652.0, 29612.0, 29856.0, 29012.0, 30402.0, 29969.0, 29309.0, 29439.0,
    29285.0, 29421.0, 29023.0, 28772.0, 29692.0, 29416.0, 29267.0, 29542.0, 29904.0, 30045.0,
    29739.0, 29945.0, 29141.0, 29163.0, 29765.0, 29197.0, 29441.0, 28910.0, 29504.0, 29614.0,
    29643.0, 29506.0, 29420.0, 29672.0, 29432.0, 29784.0, 29888.0, 29309.0, 29247.0, 29816.0,
    29254.0, 29813.0, 29451.0, 29382.0, 29618.0, 28558.0, 29845.0, 29499.0, 29283.0, 29184.0,
    29246.0, 28790.0, 29952.0, 29145.0, 29415.0, 30437.0, 29227.0, 29605.0, 29859.0, 29156.0,
    29807.0, 29406.0, 29734.0, 29861.0, 29140.0, 29983.0, 29832.0, 29919.0, 29896.0, 29991.0,
    29266.0, 29001.0, 29459.0, 29548.0, 29310.0, 29042.0, 29303.0, 29894.0, 29091.0, 29018.0,
    29537.0, 29614.0, 29180.0, 29736.0, 29500.0, 29218.0, 29581.0, 28906.0, 28542.0, 29306.0,
    28987.0, 29878.0, 28865.0, 30272.0, 29707.0, 29662.0, 29815.0, 30492.0, 29347.0, 30096.0,
    29054.0, 30238.0, 28813.0, 31895.0, 28915.0,
];

#[test]
fn tigerbeetle_with_hunters_old_defaults() {
    // test_tb_old_defaults*: window 30, min_magnitude 0.05.
    assert_eq!(indexes(&TIGERBEETLE, 30, 0.01, 0.05), [15, 71]);
    assert_eq!(indexes(&TIGERBEETLE, 30, 0.05, 0.05), [15, 71]);
    assert_eq!(indexes(&TIGERBEETLE, 30, 0.1, 0.05), [10, 11, 15, 71, 363]);
    assert_eq!(indexes(&TIGERBEETLE, 30, 0.2, 0.05), [10, 11, 15, 71]);
}

#[test]
fn tigerbeetle_with_no_minimum_magnitude() {
    // test_tb_magnitude0_*.
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.2, 0.0),
        [
            3, 6, 7, 10, 11, 13, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 56, 58, 61, 65, 66,
            69, 71, 74, 76, 82, 95, 108, 117, 125, 126, 129, 131, 136, 137, 142, 148, 165, 169,
            187, 190, 192, 197, 200, 212, 220, 241, 243, 246, 247, 249, 250, 260, 265, 266, 268,
            278, 282, 288, 305, 306, 325, 330, 337, 338, 340, 347, 349, 363
        ]
    );
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.1, 0.0),
        [
            3, 6, 10, 11, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 61, 71, 95, 117, 131, 142,
            148, 165, 169, 192, 206, 212, 260, 265, 268, 278, 282, 288, 305, 363
        ]
    );
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.01, 0.0),
        [15, 26, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 212, 260]
    );
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.001, 0.0),
        [15, 61, 71, 95, 117, 131, 142, 148, 192, 212, 260]
    );
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.0001, 0.0),
        [71, 95, 117, 131, 142, 148, 192, 212]
    );
    assert_eq!(
        indexes(&TIGERBEETLE, 30, 0.00001, 0.0),
        [71, 95, 131, 192, 212]
    );
}

#[test]
fn single_series() {
    // analysis_test.py test_single_series.
    let series = [
        1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48, 0.55,
        0.50, 0.49, 0.51, 0.50, 0.49,
    ];
    assert_eq!(indexes(&series, 10, 0.0001, 0.0), [10]);
}

#[test]
fn significance_tester() {
    // analysis_test.py test_significance_tester.
    let s = [1.00, 1.02, 1.05, 0.95, 0.98, 1.00, 1.02, 1.05, 0.95, 0.98];
    let t = TTest::of(&s[..5], &s[5..]);
    assert!(0.99 < t.pvalue && t.pvalue < 1.01, "{t:?}");
    let s = [1.00, 1.02, 1.05, 0.95, 0.98, 0.80, 0.82, 0.85, 0.79, 0.77];
    let t = TTest::of(&s[..5], &s[5..]);
    assert!(0.0 < t.pvalue && t.pvalue < 0.001, "{t:?}");
}

#[test]
fn divisive_with_the_ttest() {
    // change_point_divisive_test.py test_ttest: the detector alone at p 0.01.
    let sequence = [
        0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0,
    ];
    let found: Vec<usize> = divisive(&sequence, 0.01).iter().map(|c| c.index).collect();
    assert_eq!(found, [5, 8]);
}

#[test]
fn candidate_is_the_slow_definitions_argmax() {
    // change_point_divisive_test.py test_calculator_candidate: Q̂ from its definition.
    let z: [f64; 14] = [
        0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0,
    ];
    let (mut best, mut at) = (0.0, 0);
    for tau in 1..z.len() {
        for kappa in tau + 1..=z.len() {
            let (x, y): (&[f64], &[f64]) = (&z[..tau], &z[tau..kappa]);
            let (n, m) = (crate::num::real_len(x.len()), crate::num::real_len(y.len()));
            let mut a = 0.0;
            for p in x {
                for q in y {
                    a += (p - q).abs();
                }
            }
            let within = |w: &[f64]| {
                let mut s = 0.0;
                for i in 0..w.len() {
                    for k in i + 1..w.len() {
                        s += (w[i] - w[k]).abs();
                    }
                }
                s
            };
            let b = if n > 1.0 {
                2.0 * m / (m + n) / (n - 1.0) * within(x)
            } else {
                0.0
            };
            let c = if m > 1.0 {
                2.0 * n / (m + n) / (m - 1.0) * within(y)
            } else {
                0.0
            };
            let q = 2.0 / (m + n) * a - b - c;
            if q > best {
                (best, at) = (q, tau);
            }
        }
    }
    let (index, qhat) = Divergence::new(&z).candidate(0, z.len());
    assert_eq!(index, at);
    assert!((qhat - best).abs() < 1e-9 * best, "{qhat} against {best}");
}

#[test]
fn two_series_and_a_minimum_magnitude() {
    // series_test.py: Otava's defaults (window 50, p 0.001), then min_magnitude 0.2.
    let series_1 = [
        1.02, 0.95, 0.99, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55,
    ];
    let series_2 = [
        2.02, 2.03, 2.01, 2.04, 1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78,
    ];
    assert_eq!(indexes(&series_1, 50, 0.001, 0.0), [6]);
    assert_eq!(indexes(&series_2, 50, 0.001, 0.0), [4]);
    assert_eq!(indexes(&series_1, 50, 0.001, 0.2), [6]);
    assert_eq!(indexes(&series_2, 50, 0.001, 0.2), Vec::<usize>::new());
}

#[test]
fn zeros_before_a_change() {
    // series_test.py test_div_by_zero: two change points, the first at 3.
    let series = [
        0.0, 0.0, 0.0, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55,
    ];
    let found = indexes(&series, 50, 0.001, 0.0);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0], 3);
}

#[test]
fn a_constant_series_has_none() {
    assert!(indexes(&[5.0; 20], 50, 0.05, 0.0).is_empty());
    assert!(indexes(&[], 50, 0.05, 0.0).is_empty());
    assert!(indexes(&[1.0], 50, 0.05, 0.0).is_empty());
}
