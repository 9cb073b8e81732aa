//! fault: a test plugin (Rust SDK) for plugins/examples TestSDKFaults: mode "log" logs through agentrt_v1.log and
//! returns "logged"; mode "trap" panics (index out of bounds).

use agentrt::{Error, Manifest, Tool, ToolCall, ToolResult, ToolSpec};

#[derive(Default)]
struct Fault;

impl Tool for Fault {
    fn manifest(&self) -> Manifest {
        Manifest::new("fault_rust", "", "SDK fault test plugin.").tool(ToolSpec::new("fault", "Log or crash.", r#"{"type":"object"}"#))
    }
    fn call(&mut self, call: &ToolCall) -> Result<ToolResult, Error> {
        if call.str_arg("mode")? == "trap" {
            let empty: Vec<u8> = Vec::new();
            let i = call.arguments.get("index").and_then(|v| v.as_f64()).unwrap_or(5.0) as usize;
            return Ok(ToolResult::Text(empty[i].to_string()));
        }
        agentrt::log(agentrt::LOG_WARN, "fault: log from rust");
        Ok(ToolResult::Text("logged".to_string()))
    }
}

agentrt::export_tool!(Fault);
