//! Seed 001's published tables (Vlastimil Babka, "[RFC 0/4] Outsourcing page fault THP
//! allocations to khugepaged", 2015), transcribed by a script from the text: per defrag mode,
//! 4.1-rc2 baseline and with the series.
//! Generated data; edit the seed, not this file.

/// Thread counts of the seed's runs (mmtests' thpscale on 4 CPUs).
pub const THREADS: [u32; 6] = [1, 3, 5, 7, 12, 16];

/// One latency statistic (µs) per thread count: (baseline, patched).
pub type LatencyRow = [(f64, f64); 6];

pub struct SeedTables {
    /// [Min, Amean, Stddev, CoeffVar, Max] of fault-base-N.
    pub base: [LatencyRow; 5],
    /// [Min, Amean, Stddev, CoeffVar, Max] of fault-huge-N.
    pub huge: [LatencyRow; 5],
    /// Percentage huge-N.
    pub percent_huge: LatencyRow,
    /// mmtests' vmstat summary rows: (its name, baseline, patched).
    pub vmstat: &'static [(&'static str, u64, u64)],
    /// User, System, Elapsed seconds: (baseline, patched).
    pub times_s: [(f64, f64); 3],
}

/// defrag=always (the default then).
pub const ALWAYS: SeedTables = SeedTables {
    base: [
        [
            (1562.0, 1407.0),
            (1855.0, 1808.0),
            (2091.0, 1930.0),
            (2082.0, 2222.0),
            (2489.0, 2292.0),
            (2092.0, 1928.0),
        ],
        [
            (3322.97, 2130.35),
            (3372.55, 3331.46),
            (7684.34, 4086.17),
            (10010.14, 5367.27),
            (11000.0, 8529.81),
            (15021.71, 14164.72),
        ],
        [
            (3652.46, 3197.59),
            (4960.05, 5633.47),
            (9309.31, 6587.24),
            (11266.55, 7629.93),
            (10899.31, 9803.98),
            (17360.78, 18654.45),
        ],
        [
            (109.92, 150.1),
            (147.07, 169.1),
            (121.15, 161.21),
            (112.55, 142.16),
            (99.08, 114.94),
            (115.57, 131.7),
        ],
        [
            (47334.0, 49600.0),
            (65729.0, 74554.0),
            (64057.0, 56862.0),
            (78693.0, 63878.0),
            (129893.0, 53485.0),
            (120831.0, 155015.0),
        ],
    ],
    huge: [
        [
            (953.0, 1282.0),
            (1319.0, 1218.0),
            (1527.0, 1268.0),
            (1277.0, 1276.0),
            (2286.0, 1419.0),
            (2395.0, 2158.0),
        ],
        [
            (2534.19, 2419.83),
            (5312.42, 4783.9),
            (8086.82, 7050.06),
            (11184.91, 6359.74),
            (17218.58, 9120.6),
            (18176.03, 21161.54),
        ],
        [
            (764.26, 379.14),
            (6030.37, 4231.11),
            (5953.79, 7069.4),
            (8557.6, 5742.9),
            (12563.23, 7376.7),
            (10370.34, 14153.56),
        ],
        [
            (30.16, 15.67),
            (113.51, 88.44),
            (73.62, 100.27),
            (76.51, 90.3),
            (72.96, 80.88),
            (57.06, 66.88),
        ],
        [
            (12520.0, 8713.0),
            (56081.0, 48753.0),
            (37449.0, 40032.0),
            (46929.0, 32946.0),
            (73446.0, 39423.0),
            (51139.0, 67562.0),
        ],
    ],
    percent_huge: [
        (78.23, 71.27),
        (11.41, 35.23),
        (57.72, 28.99),
        (52.81, 15.56),
        (22.69, 51.03),
        (7.65, 12.5),
    ],
    vmstat: &[
        ("Allocation stalls", 3191, 691),
        ("Direct pages scanned", 910953, 619549),
        ("Kswapd pages scanned", 302034, 310422),
        ("Kswapd pages reclaimed", 57791, 89525),
        ("Direct pages reclaimed", 182170, 62029),
        ("THP fault alloc", 11385, 11058),
        ("THP collapse alloc", 2, 105),
        ("THP splits", 9568, 9375),
        ("THP fault fallback", 2937, 3269),
        ("THP collapse fail", 0, 1),
        ("Compaction stalls", 7551, 1500),
        ("Compaction success", 1611, 1191),
        ("Compaction failures", 5940, 309),
        ("Page migrate success", 569476, 421021),
        ("Page migrate failure", 0, 0),
        ("Compaction pages isolated", 1451445, 937675),
        ("Compaction migrate scanned", 1416728, 768084),
        ("Compaction free scanned", 3800385, 5859981),
        ("Minor Faults", 1721504, 1891067),
        ("Major Faults", 315, 317),
    ],
    times_s: [(15.14, 14.93), (56.75, 51.12), (199.85, 196.71)],
};

/// defrag=never (faults never reclaim or compact).
pub const NEVER: SeedTables = SeedTables {
    base: [
        [
            (1378.0, 1390.0),
            (1479.0, 1623.0),
            (1440.0, 1415.0),
            (1379.0, 1434.0),
            (1946.0, 2132.0),
            (1913.0, 2007.0),
        ],
        [
            (1573.16, 2095.32),
            (2544.3, 3256.53),
            (3412.16, 3687.55),
            (4633.68, 5329.99),
            (7794.71, 8441.45),
            (13747.18, 11033.65),
        ],
        [
            (1986.46, 1377.2),
            (5293.92, 5594.88),
            (5291.19, 5583.54),
            (5861.45, 7460.34),
            (10754.38, 11992.12),
            (17183.11, 12995.81),
        ],
        [
            (126.27, 65.73),
            (208.07, 171.81),
            (155.07, 151.42),
            (126.5, 139.97),
            (137.97, 142.06),
            (124.99, 117.78),
        ],
        [
            (56069.0, 37361.0),
            (75921.0, 74860.0),
            (53708.0, 60756.0),
            (43282.0, 58071.0),
            (86499.0, 95819.0),
            (106264.0, 81830.0),
        ],
    ],
    huge: [
        [
            (1031.0, 964.0),
            (1535.0, 1037.0),
            (1261.0, 1282.0),
            (1265.0, 1464.0),
            (1275.0, 1179.0),
            (1231.0, 1231.0),
        ],
        [
            (1279.44, 1300.09),
            (2300.4, 2267.17),
            (1929.86, 2899.17),
            (1803.33, 3549.11),
            (2714.91, 6106.21),
            (5166.36, 9565.15),
        ],
        [
            (71.03, 54.49),
            (441.09, 730.62),
            (3291.41, 4308.06),
            (713.08, 1226.08),
            (2667.32, 7780.83),
            (4618.22, 8364.24),
        ],
        [
            (5.55, 4.19),
            (19.17, 32.23),
            (170.55, 148.6),
            (39.54, 34.55),
            (98.25, 127.42),
            (89.39, 87.44),
        ],
        [
            (1387.0, 1365.0),
            (2831.0, 3395.0),
            (19345.0, 23269.0),
            (2811.0, 5935.0),
            (10869.0, 36037.0),
            (13614.0, 40513.0),
        ],
    ],
    percent_huge: [
        (2.28, 7.09),
        (0.63, 8.11),
        (3.67, 4.56),
        (0.38, 1.15),
        (1.41, 3.08),
        (1.79, 10.97),
    ],
    vmstat: &[
        ("Allocation stalls", 586, 329),
        ("Direct pages scanned", 443280, 263574),
        ("Kswapd pages scanned", 314174, 233582),
        ("Kswapd pages reclaimed", 108029, 60679),
        ("Direct pages reclaimed", 27267, 40383),
        ("THP fault alloc", 9022, 9375),
        ("THP collapse alloc", 0, 377),
        ("THP splits", 8939, 9150),
        ("THP fault fallback", 5300, 4953),
        ("THP collapse fail", 0, 2),
        ("Compaction stalls", 0, 434),
        ("Compaction success", 0, 291),
        ("Compaction failures", 0, 143),
        ("Page migrate success", 0, 287093),
        ("Page migrate failure", 0, 1),
        ("Compaction pages isolated", 0, 608761),
        ("Compaction migrate scanned", 0, 365724),
        ("Compaction free scanned", 0, 3588885),
        ("Minor Faults", 2916846, 2738269),
        ("Major Faults", 205, 203),
    ],
    times_s: [(13.61, 14.1), (50.16, 48.65), (195.12, 194.67)],
};
