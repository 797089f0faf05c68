//! The Grep tool (stub: being written).

use serde_json::{Value, json};

use super::{Category, Tool, ToolContext, ToolError, ToolResult};

pub(crate) struct Grep;

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "Grep"
    }
    fn description(&self) -> &'static str {
        "Stub description of the Grep tool, to be written for the model with care."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    fn category(&self) -> Category {
        Category::Search
    }
    fn execute(&self, _ctx: &ToolContext, _input: &Value) -> Result<ToolResult, ToolError> {
        Err(ToolError::failed("not implemented"))
    }
}
