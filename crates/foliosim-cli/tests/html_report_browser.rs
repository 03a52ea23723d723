//! The HTML reports of `reproduce --html` and `run --html` in a real headless browser
//! (Debian's chromium, installed by setup.sh): no console error, and a screenshot that shows
//! something (not blank, with the plots' colours in it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
        })
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("html-report-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Load `page` headless; returns the browser's log and the screenshot's path.
fn screenshot(browser: &Path, page: &Path, dir: &Path) -> (String, PathBuf) {
    let png = dir.join("shot.png");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("log.txt")).unwrap())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (std::fs::read_to_string(dir.join("log.txt")).unwrap(), png)
}

/// Console messages and uncaught errors in chromium's log.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// The PNG's pixels as RGB (8-bit RGB or RGBA, non-interlaced: what chromium writes).
fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<[u8; 3]>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut pos, mut idat) = (8, Vec::new());
    let (mut w, mut h, mut channels) = (0, 0, 0);
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        let data = &bytes[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        pos += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&idat).expect("zlib data");
    let stride = w * channels;
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let mut cur = line[1..].to_vec();
        for i in 0..stride {
            let a = if i >= channels {
                cur[i - channels] as i32
            } else {
                0
            };
            let b = prev[i] as i32;
            let c = if i >= channels {
                prev[i - channels] as i32
            } else {
                0
            };
            let pred = match line[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("filter {f}"),
            };
            cur[i] = cur[i].wrapping_add(pred as u8);
        }
        for px in cur.chunks(channels) {
            pixels.push([px[0], px[1], px[2]]);
        }
        prev = cur;
    }
    (w, h, pixels)
}

fn check_page(browser: &Path, page: &Path, dir: &Path) {
    let (log, png) = screenshot(browser, page, dir);
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}); log:\n{log}"));
    let (w, h, pixels) = decode_png(&bytes);
    assert_eq!((w, h), (1280, 2400));
    let not_white = pixels.iter().filter(|p| p.iter().any(|c| *c < 240)).count();
    // Saturated pixels: the plots' lines and bars (text and tables are grey).
    let coloured = pixels
        .iter()
        .filter(|p| p.iter().max().unwrap() - p.iter().min().unwrap() > 80)
        .count();
    assert!(
        not_white > pixels.len() / 100,
        "blank screenshot: {not_white} non-white pixels"
    );
    assert!(
        coloured > 2000,
        "no plot colours: {coloured} coloured pixels"
    );
}

fn foliosim(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "foliosim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn html_reports_open_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!(
            "SKIPPED html_reports_open_in_headless_chromium: no chromium on PATH \
             (./setup.sh installs Debian's `chromium`)"
        );
        return;
    };
    // The check itself: a page with a script error must be caught.
    let dir = scratch("control");
    let bad = dir.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><head><link rel=\"icon\" href=\"data:,\"></head>\
         <body><p>x</p><script>undefined_function()</script></body></html>",
    )
    .unwrap();
    let (log, _) = screenshot(&browser, &bad, &dir);
    assert!(
        !console_errors(&log).is_empty(),
        "the console check misses a script error; log:\n{log}"
    );

    // Every seed's report at its smallest scale: their cover figures, the seed's figures
    // beside ours (`seed` names the seed's columns), the time series, each legend whole and in
    // the table's words. CPU time (`/usr/bin/time`, user + sys, 2-core VM): 003 22 s, 004
    // (lookups x0.002) 17 s, the others a few seconds.
    for (seed, scale, seed_columns) in [
        ("000", "0.02", "seed_<wbr>"),
        ("001", "0.02", "seed base"),
        ("002", "0.02", "seed_<wbr>"),
        ("003", "0.02", "seed_<wbr>"),
        ("004", "0.002", "seed BEFORE"), // its figures are in the printed table only
    ] {
        let dir = scratch(&format!("reproduce-{seed}"));
        let page = dir.join("report.html");
        let p = page.to_str().unwrap();
        foliosim(&[
            "reproduce",
            seed,
            "--scale",
            scale,
            "--seeds",
            "1",
            "--html",
            p,
        ]);
        let html = std::fs::read_to_string(&page).unwrap();
        check_charts(seed, &html);
        assert!(html.contains(seed_columns), "{seed}: the seed's columns");
        check_page(&browser, &page, &dir);
    }

    let dir = scratch("run");
    let page = dir.join("run.html");
    let p = page.to_str().unwrap();
    foliosim(&["run", "scenarios/usemem-64k-small.toml", "--html", p]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Per-size mTHP counters"), "run: bars");
    for title in ["Swap-out rate", "CPU time", "Free memory"] {
        assert!(html.contains(title), "run: no {title} plot");
    }
    check_charts("run", &html);
    check_page(&browser, &page, &dir);
}

/// The chart kinds a report must have, with readable legends.
fn check_charts(what: &str, html: &str) {
    assert!(
        html.matches("<svg").count() >= 4,
        "{what}: fewer than 4 charts"
    );
    if what != "run" {
        assert!(
            html.contains("<h2>The figures</h2>"),
            "{what}: no cover figures"
        );
        assert!(html.contains("the seed"), "{what}: no seed beside ours");
    }
    assert!(html.contains("simulated time, s"), "{what}: no time series");
    assert!(!html.contains('…'), "{what}: a label cut with an ellipsis");
    let internal_keys = [
        "kernel.version=",
        "sysfs.",
        "workload[0]",
        "machine.iaa",
        "=true",
        "=false",
        "migrate_tlb_flush=",
    ];
    for internal in internal_keys {
        assert!(
            !html
                .split("<h2>Scenario")
                .next()
                .unwrap()
                .contains(internal),
            "{what}: an internal key in a label: {internal}"
        );
    }
}
