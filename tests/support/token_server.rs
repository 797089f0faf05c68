//! A loopback server for the credential services the cloud providers call (AWS STS,
//! IMDSv2, the container credentials endpoint, Google's token endpoints): each request is
//! recorded and answered by the test's handler, which sees the method, path, headers and
//! body. Connection per request (`connection: close`), a thread per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub(crate) struct TokenRequest {
    pub method: String,
    /// With the query.
    pub path: String,
    /// (lower-case name, value).
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl TokenRequest {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key` in a form body (percent-decoded).
    pub(crate) fn form(&self, key: &str) -> Option<String> {
        self.body.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| percent_decode(v))
        })
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the handler answers: status, content type, body.
pub(crate) type Answer = (u16, &'static str, String);

type Handler = dyn Fn(&TokenRequest) -> Answer + Send + Sync;

/// The server; dropping it stops it.
pub(crate) struct TokenServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<TokenRequest>>>,
    stop: Arc<Mutex<bool>>,
    accept: Option<JoinHandle<()>>,
}

impl TokenServer {
    pub(crate) fn start(handler: impl Fn(&TokenRequest) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(Mutex::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, stopped) = (requests.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if *stopped.lock().unwrap() {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (reqs, handler) = (reqs.clone(), handler.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &reqs, &*handler);
                });
            }
        });
        TokenServer {
            addr,
            requests,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn requests(&self) -> Vec<TokenRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests to `path` (query ignored).
    pub(crate) fn requests_to(&self, path: &str) -> Vec<TokenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .collect()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        *self.stop.lock().unwrap() = true;
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(
    conn: TcpStream,
    requests: &Mutex<Vec<TokenRequest>>,
    handler: &Handler,
) -> std::io::Result<()> {
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    let Some(super::mock::RawRequest {
        method,
        target: path,
        headers,
        body,
    }) = super::mock::read_raw_request(&mut reader)?
    else {
        return Ok(());
    };
    let request = TokenRequest {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (status, content_type, answer) = handler(&request);
    requests.lock().unwrap().push(request);
    // A redirect's body is its Location.
    let location = match status {
        300..=399 => format!("location: {answer}\r\n"),
        _ => String::new(),
    };
    write!(
        writer,
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{location}connection: close\r\n\r\n{answer}",
        answer.len()
    )?;
    writer.flush()
}

/// An STS answer in STS's XML, for `action` (`AssumeRoleWithWebIdentity`, `AssumeRole`).
pub(crate) fn sts_xml(
    action: &str,
    key_id: &str,
    secret: &str,
    token: &str,
    expiration: &str,
) -> String {
    format!(
        "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result>\
         <Credentials><AccessKeyId>{key_id}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>\
         <SessionToken>{token}</SessionToken><Expiration>{expiration}</Expiration></Credentials>\
         </{action}Result></{action}Response>"
    )
}

/// An RFC 3339 UTC time `secs` from now.
pub(crate) fn in_secs(secs: u64) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs;
    let days = (t / 86_400) as i64;
    let rem = t % 86_400;
    // civil-from-days, written out again here (the agent's is not visible to tests).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}
