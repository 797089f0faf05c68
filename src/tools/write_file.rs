//! The WriteFile tool (stub: being written).

use serde_json::{Value, json};

use super::{Category, Tool, ToolContext, ToolError, ToolResult};

pub(crate) struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "WriteFile"
    }
    fn description(&self) -> &'static str {
        "Stub description of the WriteFile tool, to be written for the model with care."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn is_read_only(&self) -> bool {
        false
    }
    fn category(&self) -> Category {
        Category::File
    }
    fn execute(&self, _ctx: &ToolContext, _input: &Value) -> Result<ToolResult, ToolError> {
        Err(ToolError::failed("not implemented"))
    }
}
