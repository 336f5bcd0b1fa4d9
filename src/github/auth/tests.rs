//! Token sources in order, `gh`, the PEM keys and the JWT, without a server (the App's HTTP flow is
//! tested with the client, in `client/tests.rs`).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use super::*;

fn env(pairs: &[(&str, &str)]) -> EnvLookup {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Arc::new(move |name| map.get(name).cloned())
}

fn sources(names: &[&str], env: EnvLookup) -> TokenSources {
    TokenSources {
        given: None,
        env_names: names.iter().map(|n| n.to_string()).collect(),
        env,
        gh_program: None,
        gh_hostname: "github.com".into(),
        app: None,
    }
}

/// Resolves a credential; these sources never reach the network.
async fn resolve(sources: TokenSources) -> Result<Credential, GitHubError> {
    let http = reqwest::Client::new();
    let count = AtomicU64::new(0);
    let call = AppCall { http: &http, api_url: "http://127.0.0.1:9", rest_count: &count };
    Auth::new(sources).credential(&call).await
}

#[tokio::test]
async fn the_first_variable_set_wins_in_the_configured_order() {
    let both = env(&[("GH_TOKEN", "from-gh-token"), ("GITHUB_TOKEN", "from-github-token")]);
    let c = resolve(sources(&["GH_TOKEN", "GITHUB_TOKEN"], both.clone())).await.unwrap();
    assert_eq!(c.token.expose(), "from-gh-token");
    assert!(c.origin.contains("GH_TOKEN"), "{}", c.origin);

    let c = resolve(sources(&["GITHUB_TOKEN", "GH_TOKEN"], both)).await.unwrap();
    assert_eq!(c.token.expose(), "from-github-token");

    let blank_first = env(&[("GH_TOKEN", "  "), ("GITHUB_TOKEN", "second\n")]);
    let c = resolve(sources(&["GH_TOKEN", "GITHUB_TOKEN"], blank_first)).await.unwrap();
    assert_eq!(c.token.expose(), "second", "an empty variable is not set; the value is trimmed");
}

#[tokio::test]
async fn without_any_source_the_error_says_what_was_tried() {
    let err = resolve(sources(&["GH_TOKEN", "GITHUB_TOKEN"], env(&[]))).await.unwrap_err();
    let message = err.to_string();
    for part in ["GH_TOKEN, GITHUB_TOKEN", "gh auth login", "app_id"] {
        assert!(message.contains(part), "{message}");
    }
}

#[cfg(unix)]
fn fake_gh(dir: &Path, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("gh");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[tokio::test]
async fn gh_auth_token_comes_after_the_variables() {
    let dir = tempfile::tempdir().unwrap();
    // Answers only the exact command executor should run.
    let gh = fake_gh(
        dir.path(),
        r#"[ "$*" = "auth token --hostname ghe.example.com" ] && echo "  gho_from_gh  " && exit 0; exit 1"#,
    );
    let mut s = sources(&["GH_TOKEN"], env(&[]));
    s.gh_program = Some(gh.clone());
    s.gh_hostname = "ghe.example.com".into();
    let c = resolve(s.clone()).await.unwrap();
    assert_eq!(c.token.expose(), "gho_from_gh");
    assert!(c.origin.contains("gh auth token"), "{}", c.origin);

    s.env = env(&[("GH_TOKEN", "from-env")]);
    assert_eq!(resolve(s).await.unwrap().token.expose(), "from-env");
}

#[cfg(unix)]
#[tokio::test]
async fn a_failing_or_absent_gh_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = sources(&[], env(&[]));
    s.gh_program = Some(fake_gh(dir.path(), "echo 'not logged in' >&2; exit 1"));
    assert!(matches!(resolve(s.clone()).await, Err(GitHubError::Auth(_))));
    s.gh_program = Some(dir.path().join("no-such-gh"));
    assert!(matches!(resolve(s).await, Err(GitHubError::Auth(_))));
}

#[test]
fn gh_is_asked_for_the_web_host() {
    assert_eq!(gh_hostname("https://api.github.com"), "github.com");
    assert_eq!(gh_hostname("https://ghe.example.com/api/v3"), "ghe.example.com");
    assert_eq!(gh_hostname("http://127.0.0.1:8080"), "127.0.0.1:8080");
}

#[test]
fn both_pem_encodings_of_an_rsa_key_are_read() {
    let pkcs1 = parse_pem_key(include_str!("../testdata/app_key_pkcs1.pem")).unwrap();
    let pkcs8 = parse_pem_key(include_str!("../testdata/app_key_pkcs8.pem")).unwrap();
    assert_eq!(pkcs1.public().as_ref(), pkcs8.public().as_ref());
    assert_eq!(pkcs1.public().as_ref(), include_bytes!("../testdata/app_key_public_pkcs1.der"));
    assert!(parse_pem_key("hello").unwrap_err().contains("not a PEM"));
    assert!(parse_pem_key("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").is_err());
    assert!(parse_pem_key("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n").unwrap_err().contains("END"));
}

#[test]
fn the_jwt_is_rs256_with_the_app_as_issuer() {
    let key = parse_pem_key(include_str!("../testdata/app_key_pkcs1.pem")).unwrap();
    let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let jwt = app_jwt(&key, 42, now).unwrap();
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    let public = include_bytes!("../testdata/app_key_public_pkcs1.der");
    ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public)
        .verify(signed.as_bytes(), &signature)
        .unwrap();
    let claims = signed.split_once('.').unwrap().1;
    let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    assert_eq!(claims, serde_json::json!({"iat": 1_799_999_940, "exp": 1_800_000_540, "iss": "42"}));
}

#[test]
fn debug_output_never_shows_a_token() {
    let s = TokenSources::given("ghp_secret_value");
    let shown = format!("{s:?} {:?} {:?}", Auth::new(s.clone()), Secret::new("ghp_secret_value"));
    assert!(!shown.contains("ghp_secret_value"), "{shown}");
    assert!(shown.contains("<redacted>"));
}
