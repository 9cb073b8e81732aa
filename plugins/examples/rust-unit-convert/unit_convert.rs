//! unit_convert: an example tool plugin written with agentrt's Rust SDK (plugins/sdk/rust).
//! Converts a value between units of length, mass or temperature.
//! Built by scripts/wasm.d/30-sdk-examples.sh into unit_convert.wasm next to this file.

use agentrt::{Error, Manifest, Tool, ToolCall, ToolResult, ToolSpec, Value};

#[derive(Default)]
struct UnitConvert;

/// (unit, dimension, factor to the base unit); temperatures are handled apart.
const UNITS: &[(&str, &str, f64)] = &[
    ("m", "length", 1.0),
    ("km", "length", 1000.0),
    ("cm", "length", 0.01),
    ("mm", "length", 0.001),
    ("mi", "length", 1609.344),
    ("ft", "length", 0.3048),
    ("in", "length", 0.0254),
    ("kg", "mass", 1.0),
    ("g", "mass", 0.001),
    ("lb", "mass", 0.45359237),
    ("oz", "mass", 0.028349523125),
    ("C", "temperature", 0.0),
    ("F", "temperature", 0.0),
    ("K", "temperature", 0.0),
];

fn unit(name: &str) -> Result<(&'static str, f64), Error> {
    UNITS
        .iter()
        .find(|u| u.0 == name)
        .map(|u| (u.1, u.2))
        .ok_or_else(|| {
            let known: Vec<&str> = UNITS.iter().map(|u| u.0).collect();
            Error::bad_input(format!("unknown unit {:?}; known units: {}", name, known.join(", ")))
        })
}

fn to_kelvin(v: f64, u: &str) -> f64 {
    match u {
        "C" => v + 273.15,
        "F" => (v - 32.0) * 5.0 / 9.0 + 273.15,
        _ => v,
    }
}

fn from_kelvin(k: f64, u: &str) -> f64 {
    match u {
        "C" => k - 273.15,
        "F" => (k - 273.15) * 9.0 / 5.0 + 32.0,
        _ => k,
    }
}

impl Tool for UnitConvert {
    fn manifest(&self) -> Manifest {
        Manifest::new("unit_convert", "1.0.0", "Unit conversion (Rust SDK example).").tool(ToolSpec::new(
            "convert",
            "Convert a value between units of length (m, km, cm, mm, mi, ft, in), mass (kg, g, lb, oz) or temperature (C, F, K).",
            r#"{"type":"object","properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}},"required":["value","from","to"]}"#,
        ))
    }

    fn call(&mut self, call: &ToolCall) -> Result<ToolResult, Error> {
        let value = call.num_arg("value")?;
        let (from, to) = (call.str_arg("from")?, call.str_arg("to")?);
        let ((fd, ff), (td, tf)) = (unit(from)?, unit(to)?);
        if fd != td {
            return Err(Error::bad_input(format!("cannot convert {} ({}) to {} ({})", from, fd, to, td)));
        }
        let result = if fd == "temperature" {
            let k = to_kelvin(value, from);
            if k < 0.0 {
                return Err(Error::bad_input(format!("{} {} is below absolute zero", value, from)));
            }
            from_kelvin(k, to)
        } else {
            value * ff / tf
        };
        Ok(ToolResult::Json(Value::object(vec![
            ("value", Value::Number(result)),
            ("unit", Value::from(to)),
        ])))
    }
}

agentrt::export_tool!(UnitConvert);
