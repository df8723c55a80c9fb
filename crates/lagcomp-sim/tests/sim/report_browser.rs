//! The report in a real browser: headless Chromium loads the page from disk, the DOM it
//! builds has every chart's elements with a real size, and its screenshot shows the
//! charts drawn (not blank, the series colours on screen where each chart is).
//!
//! Needs Chromium: `$CHROMIUM`, else `chromium` or `chromium-browser` on the `PATH`.
//! Without one the test fails when `CI` is set (`.ci/run` installs Debian's `chromium`)
//! and is skipped with a message elsewhere.

use crate::fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lagcomp_sim::report::{render_html, write_report};

/// Browser window: wide enough for the 760 px charts, tall enough for the whole page,
/// so one screenshot shows every chart.
const WINDOW: (u32, u32) = (1100, 4000);
/// Longest one Chromium run may take before the test gives up on it.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);

/// Colours the report draws with (`src/report/palette.rs`), as the screenshot shows them.
const MODE_COLOURS: [(&str, [u8; 3]); 3] = [
    ("no compensation", [0xcc, 0x79, 0xa7]),
    ("server guess", [0x56, 0xb4, 0xe9]),
    ("full", [0x00, 0x9e, 0x73]),
];
const PRESENT: [u8; 3] = [0x00, 0x72, 0xb2];
const REWOUND: [u8; 3] = [0xe6, 0x9f, 0x00];
const RAY: [u8; 3] = [0xd5, 0x5e, 0x00];
/// The darkest network condition's colour (the last of the blue ramp).
const LAST_PRESET: [u8; 3] = [0x08, 0x30, 0x6b];

/// The Chromium to use, if any.
fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Runs Chromium headless on `page` with `action` (`--screenshot=…` or `--dump-dom`),
/// and returns what it printed on standard output.
///
/// Output goes to a file rather than a pipe: the dumped DOM is larger than a pipe holds,
/// and nothing reads the pipe while this waits for the process.
fn run_chromium(chromium: &Path, work: &Path, name: &str, page: &Path, action: &str) -> String {
    let stdout_path = work.join(format!("{name}.stdout"));
    let stderr_path = work.join(format!("{name}.stderr"));
    let stdout = std::fs::File::create(&stdout_path).expect("create stdout file");
    let stderr = std::fs::File::create(&stderr_path).expect("create stderr file");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            // Tests often run as root in containers, where the sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--hide-scrollbars",
            // One CSS pixel per screenshot pixel, colours as written, so the pixel checks
            // below can look for exact colours at known places.
            "--force-device-scale-factor=1",
            "--force-color-profile=srgb",
        ])
        // A profile of its own, so two runs at once do not fight over one.
        .arg(format!(
            "--user-data-dir={}",
            work.join(format!("{name}-profile")).display()
        ))
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium ({name}) took longer than {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let errors = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        status.success(),
        "chromium ({name}) failed: {status}\n{errors}"
    );
    std::fs::read_to_string(&stdout_path).expect("read chromium's output")
}

/// A script added to a copy of the page (the report itself has none): it writes, for
/// each chart, where the browser laid it out and how many of its data elements have a
/// drawn size, into `<pre id="probe">` at the end of the page, which `--dump-dom` then
/// prints. Added at the end, so the charts above sit where they do in the screenshot.
const PROBE: &str = r#"<pre id="probe"></pre><script>
const lines = [];
for (const id of ["chart-agreement", "chart-reconstruction", "chart-rejections", "chart-shot"]) {
  const svg = document.getElementById(id);
  if (!svg) { lines.push(id + " missing"); continue; }
  const box = svg.getBoundingClientRect();
  const data = svg.querySelectorAll(".series, .bar, .segment, .hitbox, line.ray, .point");
  let drawn = 0;
  for (const element of data) {
    const b = element.getBBox();
    if (b.width > 0 || b.height > 0) drawn++;
  }
  lines.push([id, Math.round(box.left + scrollX), Math.round(box.top + scrollY),
              Math.round(box.width), Math.round(box.height), data.length, drawn].join(" "));
}
const main = document.querySelector("main").getBoundingClientRect();
lines.push("page " + Math.ceil(main.right + scrollX) + " " + Math.ceil(main.bottom + scrollY));
document.getElementById("probe").textContent = lines.join("\n");
</script>"#;

/// Where a chart was laid out, in CSS pixels from the page's top left.
#[derive(Debug)]
struct Placed {
    id: String,
    x: u32,
    y: u32,
    width: u32,
    height: u32,
}

/// A decoded screenshot, RGB.
struct Screenshot {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Screenshot {
    fn load(path: &Path) -> Self {
        let file = std::fs::File::open(path).expect("open the screenshot");
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buffer = vec![0; reader.output_buffer_size().expect("a size")];
        let frame = reader
            .next_frame(&mut buffer)
            .expect("decode the screenshot");
        let channels = frame.color_type.samples();
        assert!(
            channels >= 3,
            "a colour screenshot, got {:?}",
            frame.color_type
        );
        let rgb = buffer[..frame.buffer_size()]
            .chunks_exact(channels)
            .flat_map(|px| [px[0], px[1], px[2]])
            .collect();
        Self {
            width: frame.width,
            height: frame.height,
            rgb,
        }
    }

    /// The pixels inside a chart's box.
    fn pixels_in(&self, chart: &Placed) -> impl Iterator<Item = [u8; 3]> + '_ {
        let (x0, y0) = (chart.x.min(self.width), chart.y.min(self.height));
        let x_end = (chart.x + chart.width).min(self.width);
        let y_end = (chart.y + chart.height).min(self.height);
        (y0..y_end).flat_map(move |y| {
            (x0..x_end).map(move |x| {
                let i = ((y * self.width + x) * 3) as usize;
                [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
            })
        })
    }

    /// How many pixels in the chart's box are `colour`, give or take antialiasing.
    fn count(&self, chart: &Placed, colour: [u8; 3]) -> usize {
        self.pixels_in(chart)
            .filter(|px| close(*px, colour, 24))
            .count()
    }
}

fn close(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(chromium) = find_chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no Chromium was found (set $CHROMIUM, or install Debian's `chromium`, as .ci/run does)"
        );
        eprintln!(
            "SKIPPED report_browser: no Chromium found (set $CHROMIUM, or `apt-get install chromium`); \
             the report was not checked in a browser"
        );
        return;
    };
    let started = Instant::now();
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    let _ = std::fs::remove_dir_all(&work);
    let result = fixture::realistic();
    let page = write_report(&result, &work).expect("write the report");
    let page = page.canonicalize().expect("an absolute path");
    let html = render_html(&result);
    let probed = work.join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>")))
        .expect("write the probed copy");

    // Two browsers at once: the screenshot of the report and the DOM of the probed copy.
    let screenshot_path = work.join("screenshot.png");
    let (dom, _) = std::thread::scope(|scope| {
        let shot = scope.spawn(|| {
            run_chromium(
                &chromium,
                &work,
                "screenshot",
                &page,
                &format!("--screenshot={}", screenshot_path.display()),
            )
        });
        let dom = run_chromium(&chromium, &work, "dom", &probed, "--dump-dom");
        (dom, shot.join().expect("the screenshot run"))
    });

    // The DOM as the browser built it has every chart and its data elements.
    for needle in [
        "id=\"chart-agreement\"",
        "id=\"chart-reconstruction\"",
        "id=\"chart-rejections\"",
        "id=\"chart-shot\"",
        "class=\"series mode-none\"",
        "class=\"series mode-server-guess\"",
        "class=\"series mode-full\"",
        "class=\"hitbox present\"",
        "class=\"hitbox rewound\"",
        "class=\"ray\"",
        "id=\"results-table\"",
        "id=\"cheat-table\"",
    ] {
        assert!(dom.contains(needle), "the browser's DOM lacks {needle}");
    }
    let probe = dom
        .split_once("<pre id=\"probe\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| text.to_owned())
        .expect("the probe's output in the DOM");
    let mut charts = Vec::new();
    for line in probe.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields[0] == "page" {
            let height: u32 = fields[2].parse().expect("page height");
            assert!(
                height <= WINDOW.1,
                "the page ({height} px) is taller than the screenshot window {WINDOW:?}"
            );
            continue;
        }
        assert_eq!(fields.len(), 7, "probe line {line:?}");
        let number = |i: usize| -> u32 {
            fields[i]
                .parse()
                .unwrap_or_else(|_| panic!("probe line {line:?}"))
        };
        let (elements, drawn) = (number(5), number(6));
        assert!(
            elements > 0 && drawn == elements,
            "{}: {drawn} of {elements} data elements have a size",
            fields[0]
        );
        let chart = Placed {
            id: fields[0].to_owned(),
            x: number(1),
            y: number(2),
            width: number(3),
            height: number(4),
        };
        assert!(
            chart.width >= 300 && chart.height >= 150,
            "{chart:?} is laid out too small"
        );
        charts.push(chart);
    }
    assert_eq!(charts.len(), 4, "probe: {probe}");

    // The screenshot shows them.
    let screenshot = Screenshot::load(&screenshot_path);
    assert_eq!(
        (screenshot.width, screenshot.height),
        WINDOW,
        "screenshot size"
    );
    let background = screenshot
        .pixels_in(&Placed {
            id: "page".into(),
            x: 0,
            y: 0,
            width: 4,
            height: 4,
        })
        .next();
    assert_eq!(background, Some([255, 255, 255]), "a white page");
    for chart in &charts {
        let area = chart.width as usize * chart.height as usize;
        let inked = screenshot
            .pixels_in(chart)
            .filter(|px| !close(*px, [255, 255, 255], 16))
            .count();
        assert!(
            inked * 100 >= area * 2,
            "{}: only {inked} of {area} pixels drawn",
            chart.id
        );
    }
    let chart = |id: &str| charts.iter().find(|c| c.id == id).expect("a chart");
    let must_show = |id: &str, what: &str, colour: [u8; 3], at_least: usize| {
        let seen = screenshot.count(chart(id), colour);
        assert!(
            seen >= at_least,
            "{id}: {what} shows in {seen} pixels, expected at least {at_least}"
        );
    };
    for (mode, colour) in MODE_COLOURS {
        must_show("chart-agreement", mode, colour, 150);
    }
    must_show(
        "chart-reconstruction",
        "the last network condition",
        LAST_PRESET,
        100,
    );
    must_show(
        "chart-rejections",
        "the last network condition",
        LAST_PRESET,
        100,
    );
    must_show("chart-shot", "present hitboxes", PRESENT, 150);
    must_show("chart-shot", "rewound hitboxes", REWOUND, 150);
    must_show("chart-shot", "the ray", RAY, 150);
    eprintln!(
        "report_browser: checked in {} in {:.1?}",
        chromium.display(),
        started.elapsed()
    );
}
