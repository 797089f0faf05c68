//! A loopback static file server for the release tests: serves a directory (a release
//! directory made by `ci/release/pack.sh`) over HTTP/1.1 GET, 404 for anything else, and
//! records each requested path, so a test can tell what was downloaded (a cache hit
//! downloads nothing).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) struct FileServer {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    overrides: Overrides,
}

/// Bodies served instead of the files at those paths (a truncated download, an edited
/// SHA256SUMS), so a test need not copy the release directory.
type Overrides = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

impl FileServer {
    /// Serves `root` on 127.0.0.1 (an ephemeral port) from a thread that lives as long as
    /// the test process (each test gets its own server and port).
    pub(crate) fn start(root: &Path) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let overrides: Overrides = Arc::new(Mutex::new(Vec::new()));
        let (root, seen, over) = (root.to_path_buf(), requests.clone(), overrides.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (root, seen, over) = (root.clone(), seen.clone(), over.clone());
                std::thread::spawn(move || serve(stream, &root, &seen, &over));
            }
        });
        FileServer {
            addr,
            requests,
            overrides,
        }
    }

    /// Serves `body` at `path` from now on, instead of the file there.
    pub(crate) fn set(&self, path: &str, body: Vec<u8>) {
        self.overrides
            .lock()
            .unwrap()
            .push((path.to_string(), body));
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The paths requested so far, in order.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, root: &Path, seen: &Mutex<Vec<String>>, over: &Overrides) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
        let path = path.split('?').next().unwrap_or("/").to_string();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
        }
        seen.lock().unwrap().push(path.clone());
        let given = over
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(p, _)| *p == path)
            .map(|(_, b)| b.clone());
        let file = given.or_else(|| local_path(root, &path).and_then(|p| std::fs::read(p).ok()));
        let (status, body) = match (method, file) {
            ("GET", Some(body)) => ("200 OK", body),
            _ => ("404 Not Found", b"not found\n".to_vec()),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() {
            return;
        }
    }
}

/// The file under `root` a URL path names; `None` for anything leaving `root`.
fn local_path(root: &Path, url_path: &str) -> Option<PathBuf> {
    let rel = Path::new(url_path.trim_start_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let p = root.join(rel);
    p.is_file().then_some(p)
}
