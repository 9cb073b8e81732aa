package config

import (
	"errors"
	"strings"
	"testing"
)

const good = `
[sglang]
workers = ["http://127.0.0.1:30000"]

[[agent]]
name = "calc"
model = "/models/qwen3"
system_prompt = "You are helpful."
chat_template_kwargs = { enable_thinking = false }
tool_timeout = "5s"

[agent.sampling]
max_new_tokens = 512
temperature = 0.7

[[agent.tools]]
plugin = "builtin:calculator"

[[agent.hooks]]
plugin = "builtin:limiter"
config = { max_tool_iters = 3 }
`

func TestParseGood(t *testing.T) {
	cfg, err := Parse("/etc/agentrt/runtime.toml", good)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents[0]
	if a.Parser != "" || a.Family != "" || a.ParseErrors != "feedback" {
		t.Errorf("agent defaults not applied: parser %q (want \"\": the family's), family %q (want \"\": detected), parse_errors %q", a.Parser, a.Family, a.ParseErrors)
	}
	if a.Sampling.MaxNewTokens != 512 || *a.Sampling.Temperature != 0.7 {
		t.Errorf("sampling = %+v", a.Sampling)
	}
	if a.ToolTimeout.Seconds() != 5 {
		t.Errorf("tool_timeout = %v", a.ToolTimeout)
	}
	if a.ChatTemplateKwargs["enable_thinking"] != false {
		t.Errorf("kwargs = %v", a.ChatTemplateKwargs)
	}
	if cfg.Server.Concurrency != 256 {
		t.Errorf("server defaults not applied: %+v", cfg.Server)
	}
	if cfg.Server.SpoolDir != "/etc/agentrt/spool" {
		t.Errorf("relative path not resolved against the file: %q", cfg.Server.SpoolDir)
	}
	if a.Hooks[0].Config["max_tool_iters"] != int64(3) {
		t.Errorf("hook config = %#v", a.Hooks[0].Config)
	}
}

func TestParseErrorsNameFileLineKey(t *testing.T) {
	tests := []struct {
		name, src                  string
		wantLine                   int
		wantKey, wantMsgSubstrings string
	}{
		{"unknown top-level key", "[sglang]\nworkers=[\"http://h:1\"]\nmax_in_flight_per_workr = 3\n", 3, "sglang.max_in_flight_per_workr", "did you mean \"sglang.max_in_flight_per_worker\""},
		{"typo in agent sampling", strings.Replace(good, "temperature = 0.7", "temperature = 0.7\ntemprature = 1.0", 1), 15, "agent.sampling.temprature", "did you mean \"agent.sampling.temperature\""},
		{"typo in tool table", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\ntimout = \"3s\"", 1), 18, "agent.tools.timout", "did you mean \"agent.tools.timeout\""},
		{"wrong type", strings.Replace(good, "max_new_tokens = 512", `max_new_tokens = "lots"`, 1), 0, "agent.sampling.max_new_tokens", "wrong type"},
		{"bad duration", strings.Replace(good, `"5s"`, `"5 parsecs"`, 1), 0, "agent.tool_timeout", "invalid duration"},
		{"syntax", "[sglang\nworkers = 1\n", 2, "", ""},
		{"no agent", "[sglang]\nworkers=[\"http://h:1\"]\n", 0, "agent", "no [[agent]]"},
		{"bad worker URL", strings.Replace(good, "http://127.0.0.1:30000", "ftp://127.0.0.1:30000", 1), 3, "sglang.workers", "must start with http://"},
		{"emulator among workers", strings.Replace(good, `"http://127.0.0.1:30000"`, `"emulator", "http://h:1"`, 1), 3, "sglang.workers", "must be the only worker"},
		{"bad policy", strings.Replace(good, `tool_timeout = "5s"`, `parse_errors = "ignore"`, 1), 10, "agent.parse_errors", "not a policy"},
		{"unknown family", strings.Replace(good, `tool_timeout = "5s"`, `family = "qwen9"`, 1), 10, "agent.family", `unknown model family "qwen9" (known: qwen3, `},
		{"bad drift policy", good + "\n[frontdoor]\nenabled = true\ndrift = \"sideways\"\n", strings.Count(good, "\n") + 4, "frontdoor.drift", "want fork, realign or reject"},
		{"frontdoor agent unknown", good + "\n[frontdoor]\nenabled = true\nagent = \"nobody\"\n", strings.Count(good, "\n") + 4, "frontdoor.agent", `no agent "nobody"`},
		{"frontdoor typo", good + "\n[frontdoor]\nidle_timout = \"1m\"\n", strings.Count(good, "\n") + 3, "frontdoor.idle_timout", `did you mean "frontdoor.idle_timeout"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("runtime.toml", tt.src)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%T), want *config.Error", err, err)
			}
			if ce.File != "runtime.toml" {
				t.Errorf("file = %q", ce.File)
			}
			if tt.wantLine > 0 && ce.Line != tt.wantLine {
				t.Errorf("line = %d, want %d (%v)", ce.Line, tt.wantLine, err)
			}
			if ce.Line == 0 && tt.name != "no agent" {
				t.Errorf("no line in %v", err)
			}
			if tt.wantKey != "" && ce.Key != tt.wantKey {
				t.Errorf("key = %q, want %q (%v)", ce.Key, tt.wantKey, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsgSubstrings) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsgSubstrings)
			}
		})
	}
}

// The front door's example config loads as documented.
func TestFrontdoorExampleLoads(t *testing.T) {
	cfg, err := Load("../../examples/frontdoor/runtime.toml")
	if err != nil {
		t.Fatal(err)
	}
	fd := cfg.Frontdoor
	if !fd.Enabled || fd.Agent != "qwen3" || fd.Consumer != "trainer" || fd.Drift != "fork" || fd.IdleTimeout.Minutes() != 10 || fd.MaxSessions != 10000 {
		t.Fatalf("frontdoor = %+v", fd)
	}
	if a, err := cfg.Agent(fd.Agent); err != nil || len(a.Tools) != 0 {
		t.Fatalf("agent %+v, %v", a, err)
	}
}
