//! Python's datetime.strftime for the C locale, for the strftime_now global.

use crate::Clock;
use minijinja::{Error, ErrorKind};

const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS: [&str; 12] = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
];

pub fn format(f: &str, c: &Clock) -> Result<String, Error> {
    let day = DAYS[c.weekday.rem_euclid(7) as usize];
    let month = MONTHS[(c.month - 1).clamp(0, 11) as usize];
    let hour12 = if c.hour % 12 == 0 { 12 } else { c.hour % 12 };
    let mut out = String::with_capacity(f.len() + 16);
    let mut chars = f.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        // glibc's "-" flag drops the padding ("%-d" -> "5")
        let mut spec = chars.next();
        let pad = if spec == Some('-') {
            spec = chars.next();
            false
        } else {
            true
        };
        let num = |n: i32, w: usize| if pad { format!("{n:0w$}") } else { n.to_string() };
        match spec {
            Some('a') => out.push_str(&day[..3]),
            Some('A') => out.push_str(day),
            Some('b') | Some('h') => out.push_str(&month[..3]),
            Some('B') => out.push_str(month),
            Some('d') => out.push_str(&num(c.day, 2)),
            Some('e') => out.push_str(&if pad { format!("{:2}", c.day) } else { c.day.to_string() }),
            Some('m') => out.push_str(&num(c.month, 2)),
            Some('y') => out.push_str(&num(c.year.rem_euclid(100), 2)),
            Some('Y') => out.push_str(&c.year.to_string()),
            Some('H') => out.push_str(&num(c.hour, 2)),
            Some('I') => out.push_str(&num(hour12, 2)),
            Some('M') => out.push_str(&num(c.minute, 2)),
            Some('S') => out.push_str(&num(c.second, 2)),
            Some('p') => out.push_str(if c.hour < 12 { "AM" } else { "PM" }),
            Some('j') => out.push_str(&num(c.yday, 3)),
            Some('u') => out.push_str(&(c.weekday + 1).to_string()),
            Some('w') => out.push_str(&((c.weekday + 1) % 7).to_string()),
            Some('F') => out.push_str(&format!("{}-{:02}-{:02}", c.year, c.month, c.day)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", c.hour, c.minute, c.second)),
            Some('D') => out.push_str(&format!("{:02}/{:02}/{:02}", c.month, c.day, c.year.rem_euclid(100))),
            Some('%') => out.push('%'),
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("strftime_now: unsupported directive %{other}"),
                ))
            }
            None => out.push('%'),
        }
    }
    Ok(out)
}
