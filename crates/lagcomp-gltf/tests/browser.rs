//! Scenes rendered in a real browser: headless Chromium loads a small page that draws
//! the .glb of the example recording's confirmed hit (and the one lagcomp-sim's report
//! wrote for its chosen confirmed shot) with three.js (npm `three`,
//! `GLTFLoader`), served from a tiny HTTP server on 127.0.0.1 (module scripts do not
//! load from file://). The page posts what it loaded back to the server; Chromium's
//! screenshot must show the drawing, with both hitbox colours.
//!
//! Needs node/npm (for three.js) and Chromium (`$CHROMIUM`, else `chromium` or
//! `chromium-browser` on the `PATH`); without them the test fails when `CI` is set and is
//! skipped with a message elsewhere.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use lagcomp_gltf::scene_of_shot;

use crate::support::{
    example_recording, missing, npm_packages, on_path, report_scenes, run, work_dir,
};

/// The page: renders `/scene.glb` framed on its hitboxes, then posts "rendered …" or
/// the error to `/report`.
const PAGE: &str = include_str!("page.html");
/// The page's canvas, and Chromium's window.
const WINDOW: (u32, u32) = (800, 600);

/// What the server hands out, and what the page reported.
struct Site {
    glb: Vec<u8>,
    three: PathBuf,
    report: Mutex<Option<String>>,
}

/// A tiny HTTP/1.0-style server: one request per connection, answered and closed.
struct Server {
    address: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(site: Arc<Site>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        // One failed request shows in the page's report or the screenshot.
                        let _ = serve(&site, stream);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => break,
                }
            }
        });
        Self {
            address,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(site: &Site, stream: TcpStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, kind, body): (&str, &str, Vec<u8>) = match (method, path) {
        ("POST", "/report") => {
            let mut body = vec![0; length.min(1 << 20)];
            reader.read_exact(&mut body)?;
            *site.report.lock().unwrap() = Some(String::from_utf8_lossy(&body).into_owned());
            ("200 OK", "text/plain", Vec::new())
        }
        ("GET", "/") => ("200 OK", "text/html", PAGE.as_bytes().to_vec()),
        ("GET", "/scene.glb") => ("200 OK", "model/gltf-binary", site.glb.clone()),
        ("GET", p) if p.starts_with("/three/") => match file_under(&site.three, &p[7..]) {
            Some(bytes) => ("200 OK", "text/javascript", bytes),
            None => ("404 Not Found", "text/plain", Vec::new()),
        },
        _ => ("404 Not Found", "text/plain", Vec::new()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// A file below `root` (no way out of it through `..`).
fn file_under(root: &Path, relative: &str) -> Option<Vec<u8>> {
    let relative = Path::new(relative);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return None;
    }
    std::fs::read(root.join(relative)).ok()
}

/// The Chromium to use, if any.
fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    on_path("chromium").or_else(|| on_path("chromium-browser"))
}

/// A decoded screenshot's RGB pixels.
fn pixels(path: &Path) -> Vec<[u8; 3]> {
    let file = std::fs::File::open(path).expect("the screenshot");
    let mut decoder = png::Decoder::new(BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader
        .next_frame(&mut buffer)
        .expect("decode the screenshot");
    let channels = info.color_type.samples();
    buffer[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

/// The present hitboxes' blue, as lit and blended over the grey background.
fn bluish([r, g, b]: [u8; 3]) -> bool {
    i32::from(b) > i32::from(r) + 60 && i32::from(b) > i32::from(g) + 30
}

/// The rewound hitboxes' orange (not the shot's yellow, whose green is as strong).
fn orangish([r, g, b]: [u8; 3]) -> bool {
    i32::from(r) > i32::from(b) + 80 && i32::from(r) > i32::from(g) + 40
}

#[test]
fn a_scene_renders_in_headless_chromium_with_three_js() {
    let scene = scene_of_shot(&example_recording(), None, 1, None).expect("the confirmed hit");
    renders_with_both_colours(scene.to_glb().unwrap(), "scene");
}

#[test]
fn the_report_s_confirmed_shot_renders_too() {
    let (_, glb) = report_scenes()
        .into_iter()
        .find(|(name, _)| name == "report-shot-confirmed.glb")
        .expect("the report wrote its confirmed shot");
    renders_with_both_colours(glb, "report-scene");
}

/// Renders `glb` in Chromium (screenshot `NAME.png`, profile `NAME-profile` in the work
/// directory) and checks the page drew a confirmed shot: not blank, both hitbox colours.
fn renders_with_both_colours(glb: Vec<u8>, name: &str) {
    let Some(chromium) = find_chromium().or_else(|| missing("Chromium is not installed")) else {
        return;
    };
    let Some((npm, _)) = npm_packages() else {
        return;
    };
    let site = Arc::new(Site {
        glb,
        three: npm.join("node_modules/three"),
        report: Mutex::new(None),
    });
    let server = Server::start(Arc::clone(&site));
    let work = work_dir();
    let screenshot = work.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    let (ok, output) = run(
        Command::new(chromium)
            .args([
                "--headless",
                // Tests often run as root in containers, where the sandbox cannot start.
                "--no-sandbox",
                // WebGL without a GPU: ANGLE on SwiftShader, the software renderer.
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                "--force-color-profile=srgb",
                // Virtual time runs on while the page loads and draws, then the shot.
                "--virtual-time-budget=30000",
            ])
            .arg(format!(
                "--user-data-dir={}",
                work.join(format!("{name}-profile")).display()
            ))
            .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
            .arg(format!("--screenshot={}", screenshot.display()))
            .arg(format!("http://{}/", server.address)),
        "chromium",
    )
    .expect("chromium runs");
    drop(server);
    assert!(ok, "chromium failed:\n{output}");
    let report = site.report.lock().unwrap().clone();
    let report = report.expect("the page reported (did three.js load?)");
    assert!(
        report.starts_with("rendered") && report.contains("outcome confirmed"),
        "{report}"
    );

    let pixels = pixels(&screenshot);
    assert_eq!(pixels.len(), (WINDOW.0 * WINDOW.1) as usize);
    let background = pixels[0];
    let drawn = pixels.iter().filter(|&&p| p != background).count();
    let blue = pixels.iter().filter(|&&p| bluish(p)).count();
    let orange = pixels.iter().filter(|&&p| orangish(p)).count();
    let one_percent = pixels.len() / 100;
    assert!(drawn > 5 * one_percent, "blank: {drawn} pixels drawn");
    assert!(
        blue > one_percent,
        "present hitboxes not seen: {blue} blue pixels"
    );
    assert!(
        orange > one_percent,
        "rewound hitboxes not seen: {orange} orange pixels"
    );
}
