//! The read faults the REST fakes serve instead of an answer (the Jira and GitLab issues fakes): a
//! status with a proxy's body and maybe `Retry-After`, or a connection that drops mid-answer.

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failure served instead of the next answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// That status with a proxy's HTML body, and `Retry-After` when given (429, 503).
    Status { status: u16, retry_after: Option<u32> },
    /// The answer begins and the connection drops (a reset).
    Reset,
}

impl Fault {
    /// The answer this fault stands for.
    pub fn response(self) -> Response {
        match self {
            Fault::Status { status, retry_after } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
                let mut response = (status, "<html>upstream error</html>").into_response();
                if let Some(seconds) = retry_after {
                    response.headers_mut().insert("retry-after", seconds.into());
                }
                response
            }
            Fault::Reset => reset(),
        }
    }
}

/// An answer whose connection drops after its head: the client reads a broken body.
pub fn reset() -> Response {
    let broken = futures_util::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset"))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(broken))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
