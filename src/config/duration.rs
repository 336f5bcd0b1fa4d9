use std::fmt;

/// A length of time written as in `30m`, `3h`, `90s`, `1h 30m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const fn secs(s: u64) -> Self {
        Duration(std::time::Duration::from_secs(s))
    }

    pub fn std(self) -> std::time::Duration {
        self.0
    }

    pub fn chrono(self) -> chrono::Duration {
        chrono::Duration::from_std(self.0).unwrap_or(chrono::Duration::MAX)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl std::str::FromStr for Duration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        humantime::parse_duration(s)
            .map(Duration)
            .map_err(|e| format!("invalid duration {s:?} ({e}); write it like \"90s\", \"30m\" or \"3h\""))
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A bare number is a common slip (`loop_interval = 60`): answered with the way to write it.
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Number(f64),
        }
        match Written::deserialize(d)? {
            Written::Text(s) => s.parse().map_err(serde::de::Error::custom),
            Written::Number(n) => Err(serde::de::Error::custom(format!(
                "a duration is text with its unit: write \"{n}s\" for {n} seconds (or \"{n}m\", \"{n}h\")"
            ))),
        }
    }
}
