//! Any program: the prompt goes to its stdin, every output line is logged, and the last line that is a
//! JSON object is its structured result.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AgentError, AgentEvent, AgentResult, CommandLine, OutputParser, json_object};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandConfig {
    pub program: String,
    pub args: Vec<String>,
}

impl CommandConfig {
    pub(super) fn command_line(&self) -> Result<CommandLine, AgentError> {
        if self.program.trim().is_empty() {
            return Err(AgentError::EmptyProgram);
        }
        Ok(CommandLine { program: self.program.clone(), args: self.args.clone() })
    }
}

#[derive(Debug, Default)]
pub struct CommandParser {
    last_object: Option<Value>,
    last_line: Option<String>,
}

impl OutputParser for CommandParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if line.trim().is_empty() {
            return Vec::new();
        }
        if let Some(map) = json_object(line) {
            self.last_object = Some(Value::Object(map));
        }
        self.last_line = Some(line.to_string());
        vec![AgentEvent::Raw(line.to_string())]
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<AgentEvent> {
        // An adopted command's exit status is unknown (it is not our child): judge it by its output,
        // which ends with its result line (every kind's result has a `summary`) only when it got that
        // far; a JSON line of progress before a kill is not one.
        let is_error = exit_code.is_some_and(|c| c != 0);
        let reached_end = self
            .last_line
            .as_deref()
            .and_then(json_object)
            .is_some_and(|o| o.get("summary").is_some_and(Value::is_string));
        vec![AgentEvent::Result(AgentResult {
            subtype: "exit".into(),
            is_error,
            reached_end,
            text: self.last_line.clone(),
            structured: self.last_object.take(),
            ..Default::default()
        })]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_json_object_line_is_the_result() {
        let mut p = CommandParser::default();
        for l in ["hello", r#"{"a":1}"#, "[1]", r#"{"b":2}"#, "bye", "{broken"] {
            assert_eq!(p.parse_line(l), vec![AgentEvent::Raw(l.into())]);
        }
        let AgentEvent::Result(r) = &p.finish(Some(0))[0] else { panic!() };
        assert_eq!(r.structured, Some(serde_json::json!({"b":2})));
        assert!(!r.is_error);
    }

    #[test]
    fn only_a_last_result_line_reaches_the_end() {
        let ended = |lines: &[&str]| {
            let mut p = CommandParser::default();
            for l in lines {
                p.parse_line(l);
            }
            let AgentEvent::Result(r) = &p.finish(None)[0] else { panic!() };
            r.reached_end
        };
        assert!(ended(&["working", r#"{"summary": "done"}"#]));
        assert!(!ended(&["working", r#"{"progress": 1}"#]), "a JSON line of progress is not the result");
        assert!(!ended(&[r#"{"summary": "done"}"#, "cleaning up"]));
        assert!(!ended(&[]));
    }

    #[test]
    fn empty_program_is_refused() {
        assert_eq!(CommandConfig::default().command_line(), Err(AgentError::EmptyProgram));
    }
}
