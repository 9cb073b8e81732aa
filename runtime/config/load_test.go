package config

import (
	"errors"
	"os"
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

func TestParseMCPTool(t *testing.T) {
	t.Setenv("MCP_PY", "/opt/venv/bin/python")
	src := strings.Replace(good, `plugin = "builtin:calculator"`, "mcp = { command = [\"$MCP_PY\", \"server.py\"], per_episode = true, max_calls = 4 }\nonly = [\"add\"]", 1)
	cfg, err := Parse("/etc/agentrt/runtime.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Agents[0].Tools[0].MCP
	if m == nil || strings.Join(m.Command, " ") != "/opt/venv/bin/python server.py" || !m.PerEpisode || m.MaxCalls != 4 || m.Dir != "/etc/agentrt" {
		t.Errorf("mcp = %+v", m)
	}
}

func TestParseEnvTool(t *testing.T) {
	t.Setenv("ENV_HOST", "sandbox.internal:9000")
	t.Setenv("ENV_TOKEN", "s3cret")
	src := strings.Replace(good, `plugin = "builtin:calculator"`, `env = { url = "http://$ENV_HOST", headers = { Authorization = "Bearer $ENV_TOKEN" }, max_concurrent = 32, creates_per_second = 4.5, retries = 0, create_timeout = "2m", reward = true }
only = ["read_file"]
timeout = "30s"`, 1)
	cfg, err := Parse("/etc/agentrt/runtime.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Agents[0].Tools[0]
	e := tc.Env
	if e == nil || e.URL != "http://sandbox.internal:9000" || e.Headers["Authorization"] != "Bearer s3cret" || e.MaxConcurrent != 32 ||
		e.CreatesPerSecond != 4.5 || e.Retries == nil || *e.Retries != 0 || e.CreateTimeout.Minutes() != 2 || !e.Reward {
		t.Errorf("env = %+v", e)
	}
	if tc.Timeout.Seconds() != 30 || tc.Only[0] != "read_file" {
		t.Errorf("tool entry = %+v", tc)
	}
}

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
	if cfg.Bus.Mode != "embedded" || cfg.Bus.Dir != "/etc/agentrt/spool/bus" {
		t.Errorf("bus defaults: mode %q, dir %q; want embedded under the spool dir", cfg.Bus.Mode, cfg.Bus.Dir)
	}
	// serve's --spool-dir takes the default store along; a bus.dir of the file's own stays.
	if cfg.SetSpoolDir("/srv/node-1"); cfg.Server.SpoolDir != "/srv/node-1" || cfg.Bus.Dir != "/srv/node-1/bus" {
		t.Errorf("after SetSpoolDir: spool %q, bus dir %q; want the store under the new spool dir", cfg.Server.SpoolDir, cfg.Bus.Dir)
	}
	own, err := Parse("/etc/agentrt/runtime.toml", good+"\n[bus]\ndir = \"store\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if own.SetSpoolDir("/srv/node-1"); own.Bus.Dir != "/etc/agentrt/store" {
		t.Errorf("SetSpoolDir moved an explicit bus.dir to %q", own.Bus.Dir)
	}
	if a.Hooks[0].Config["max_tool_iters"] != int64(3) {
		t.Errorf("hook config = %#v", a.Hooks[0].Config)
	}
}

// withContext is good with an [agent.context] table of the given body.
func withContext(body string) string {
	return strings.Replace(good, "[[agent.tools]]", "[agent.context]\n"+body+"\n\n[[agent.tools]]", 1)
}

// contextLine is the line of withContext's body line n (1 for the first).
func contextLine(n int) int {
	return strings.Count(good[:strings.Index(good, "[[agent.tools]]")], "\n") + 1 + n
}

// TestParseContext: a keep_last [agent.context] reaches the agent's config.
func TestParseContext(t *testing.T) {
	c, err := Parse("runtime.toml", withContext(`policy = "keep_last"`+"\nmax_tokens = 3000\nkeep_turns = 4"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Agents[0].Context, (Context{Policy: ContextKeepLast, MaxTokens: 3000, KeepTurns: 4}); got != want {
		t.Fatalf("context %+v, want %+v", got, want)
	}
}

// TestParseContextMaskSummary: mask_summary reaches the agent's config with policy "summarize"; left out, it is
// false (the summary trains).
func TestParseContextMaskSummary(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{{"\nmask_summary = true", true}, {"\nmask_summary = false", false}, {"", false}} {
		c, err := Parse("runtime.toml", withContext(`policy = "summarize"`+"\nmax_tokens = 3000"+tc.body))
		if err != nil {
			t.Fatalf("%q: %v", tc.body, err)
		}
		if got, want := c.Agents[0].Context, (Context{Policy: ContextSummarize, MaxTokens: 3000, MaskSummary: tc.want}); got != want {
			t.Fatalf("%q: context %+v, want %+v", tc.body, got, want)
		}
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
		// A duration is a string: the TOML library would read a number as nanoseconds, in every section.
		{"number as duration", strings.Replace(good, `"5s"`, `5`, 1), 10, "agent.tool_timeout", `want a duration such as "30s"`},
		{"number as sglang duration", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"http://h:1\"]\nrequest_timeout = 30", 1), 4, "sglang.request_timeout", `want a duration such as "30s"`},
		{"number as plugin duration", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\ntimeout = 2", 1), 18, "agent.tools.timeout", `want a duration such as "30s"`},
		{"number as frontdoor duration", good + "\n[frontdoor]\nidle_timeout = 600\n", strings.Count(good, "\n") + 3, "frontdoor.idle_timeout", `want a duration such as "30s"`},
		{"syntax", "[sglang\nworkers = 1\n", 2, "", ""},
		{"no agent", "[sglang]\nworkers=[\"http://h:1\"]\n", 0, "agent", "no [[agent]]"},
		{"bad worker URL", strings.Replace(good, "http://127.0.0.1:30000", "ftp://127.0.0.1:30000", 1), 3, "sglang.workers", "must start with http://"},
		{"adaptive behind a gateway", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "gateway = \"http://127.0.0.1:30000\"\n\n[sglang.adaptive]\nenabled = true", 1), 6, "sglang.adaptive.enabled", "needs workers, not a gateway"},
		{"adaptive typo", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"http://h:1\"]\nadaptive = { enabled = true, intervl = \"1s\" }", 1), 4, "sglang.adaptive.intervl", `did you mean "sglang.adaptive.interval"`},
		{"adaptive decrease", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"http://h:1\"]\nadaptive = { enabled = true, decrease = 1.5 }", 1), 4, "sglang.adaptive.decrease", "must be in (0, 1)"},
		{"emulator among workers", strings.Replace(good, `"http://127.0.0.1:30000"`, `"emulator", "http://h:1"`, 1), 3, "sglang.workers", "must be the only worker"},
		{"bad affinity", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"http://h:1\"]\naffinity = \"item\"", 1), 4, "sglang.affinity", `must be "group" or "episode"`},
		{"bad placement with the emulator", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"emulator\"]\nplacement = \"random\"", 1), 4, "sglang.placement", `must be "least_loaded" or "rendezvous"`},
		{"zero placement_ttl", strings.Replace(good, `workers = ["http://127.0.0.1:30000"]`, "workers = [\"http://h:1\"]\nplacement_ttl = \"0s\"", 1), 4, "sglang.placement_ttl", "must be > 0"},
		{"bad policy", strings.Replace(good, `tool_timeout = "5s"`, `parse_errors = "ignore"`, 1), 10, "agent.parse_errors", "not a policy"},
		{"missing chat_template", strings.Replace(good, `tool_timeout = "5s"`, `chat_template = "no/such.jinja"`, 1), 10, "agent.chat_template", "not a readable template file"},
		{"mcp bad url", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\n\n[[agent.tools]]\nmcp = { url = \"ftp://h\" }", 1), 20, "agent.tools.mcp.url", "not an http:// or https:// URL"},
		{"mcp typo", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\n\n[[agent.tools]]\nmcp = { comand = [\"x\"] }", 1), 20, "agent.tools.mcp.comand", `did you mean "agent.tools.mcp.command"`},
		{"mcp and plugin", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\nmcp = { command = [\"x\"] }", 1), 18, "agent.tools.mcp", "takes no plugin"},
		{"env bad url", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\n\n[[agent.tools]]\nenv = { url = \"sandbox:9000\" }", 1), 20, "agent.tools.env.url", "not an http:// or https:// URL"},
		{"env typo", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\n\n[[agent.tools]]\nenv = { url = \"http://h\", max_concurent = 3 }", 1), 20, "agent.tools.env.max_concurent", `did you mean "agent.tools.env.max_concurrent"`},
		{"env and plugin", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\nenv = { url = \"http://h\" }", 1), 18, "agent.tools.env", "takes no plugin"},
		{"env negative", strings.Replace(good, `plugin = "builtin:calculator"`, "env = { url = \"http://h\", creates_per_second = -1 }", 1), 17, "agent.tools.env.creates_per_second", "must be a number >= 0"},
		{"env limits disagree", strings.Replace(good, `plugin = "builtin:calculator"`, "env = { url = \"http://h\", max_concurrent = 4 }\nonly = [\"a\"]\n\n[[agent.tools]]\nenv = { url = \"http://h/\", max_concurrent = 8 }\nonly = [\"b\"]", 1), 17, "agent.tools.env.max_concurrent", "the limits are the service's"},
		{"two env rewards", strings.Replace(good, `plugin = "builtin:calculator"`, "env = { url = \"http://h\", reward = true }\n\n[[agent.tools]]\nenv = { url = \"http://g\", reward = true }", 1), 17, "agent.tools.env.reward", "only one environment"},
		{"http on a builtin", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"builtin:calculator\"\nhttp = { hosts = [\"api.x.com\"] }", 1), 18, "agent.tools.http", "only a .wasm plugin"},
		{"http bad host", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"t.wasm\"\nhttp = { hosts = [\"ftp://x\"] }", 1), 18, "agent.tools.http", "scheme must be http or https"},
		{"http typo", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"t.wasm\"\nhttp = { hosts = [\"x.com\"], methds = [\"GET\"] }", 1), 18, "agent.tools.http.methds", `did you mean "agent.tools.http.methods"`},
		// The plugin's call limit must cover one request's timeout (issue 27): the documented 5 s and the 10 s default.
		{"http timeout over the call limit", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"t.wasm\"\ntimeout = \"2s\"\nhttp = { hosts = [\"x.com\"], timeout = \"5s\" }", 1), 18, "agent.tools.timeout", "agent.tools.timeout = 2s (the plugin's call limit) is shorter than agent.tools.http.timeout = 5s"},
		{"http default timeout over the call limit", strings.Replace(good, `plugin = "builtin:calculator"`, "plugin = \"t.wasm\"\ntimeout = \"3s\"\nhttp = { hosts = [\"x.com\"] }", 1), 18, "agent.tools.timeout", "shorter than agent.tools.http.timeout = 10s"},
		{"unknown family", strings.Replace(good, `tool_timeout = "5s"`, `family = "qwen9"`, 1), 10, "agent.family", `unknown model family "qwen9" (known: qwen3, `},
		{"bad drift policy", good + "\n[frontdoor]\nenabled = true\ndrift = \"sideways\"\n", strings.Count(good, "\n") + 4, "frontdoor.drift", "want fork, realign or reject"},
		{"frontdoor agent unknown", good + "\n[frontdoor]\nenabled = true\nagent = \"nobody\"\n", strings.Count(good, "\n") + 4, "frontdoor.agent", `no agent "nobody"`},
		{"bad session_ids", good + "\n[frontdoor]\nenabled = true\nsession_ids = \"anyone\"\n", strings.Count(good, "\n") + 4, "frontdoor.session_ids", "want caller or minted"},
		{"frontdoor typo", good + "\n[frontdoor]\nidle_timout = \"1m\"\n", strings.Count(good, "\n") + 3, "frontdoor.idle_timout", `did you mean "frontdoor.idle_timeout"`},
		{"viewer recent 0", good + "\n[viewer]\nrecent = 0\n", strings.Count(good, "\n") + 3, "viewer.recent", "must be >= 1"},
		{"bus bad mode", good + "\n[bus]\nmode = \"mesh\"\n", strings.Count(good, "\n") + 3, "bus.mode", `"mesh" is not a mode`},
		{"bus cluster without name", good + "\n[bus]\nmode = \"cluster\"\nlisten = \"127.0.0.1:6222\"\nroutes = [\"nats-route://127.0.0.1:6222\"]\n", strings.Count(good, "\n") + 2, "bus.name", "needs a server name"},
		{"bus sync", good + "\n[bus]\nsync_interval = \"often\"\n", strings.Count(good, "\n") + 3, "bus.sync_interval", `want "always" or a positive duration`},
		{"bus number as duration", good + "\n[bus]\nack_wait = 30\n", strings.Count(good, "\n") + 3, "bus.ack_wait", `want a duration such as "30s"`},
		{"bus typo", good + "\n[bus]\nmax_delivr = 2\n", strings.Count(good, "\n") + 3, "bus.max_delivr", `did you mean "bus.max_deliver"`},
		{"context bad policy", withContext(`policy = "summarise"`), 0, "agent.context.policy", `"summarise" is not a policy (use "none", "keep_last" or "summarize")`},
		{"context no threshold", withContext(`policy = "keep_last"` + "\nkeep_turns = 2"), 0, "agent.context.policy", "needs max_tokens"},
		{"context negative threshold", withContext(`policy = "keep_last"` + "\nmax_tokens = -1\nkeep_turns = 2"), 0, "agent.context.max_tokens", "must be > 0"},
		{"context no keep_turns", withContext(`policy = "keep_last"` + "\nmax_tokens = 3000"), 0, "agent.context.policy", "needs keep_turns"},
		{"context settings without a policy", withContext("max_tokens = 3000"), 0, "agent.context.max_tokens", "need a policy"},
		{"context past the window", strings.Replace(withContext(`policy = "keep_last"`+"\nmax_tokens = 3800\nkeep_turns = 2"), `tool_timeout = "5s"`, "context_window = 4096", 1), 0, "agent.context.max_tokens", "max_tokens 3800 + sampling.max_new_tokens 512 is past the 4096-token context_window"},
		{"context with mask_offpolicy", strings.Replace(withContext(`policy = "keep_last"`+"\nmax_tokens = 3000\nkeep_turns = 2"), `tool_timeout = "5s"`, "mask_offpolicy = true", 1), 0, "agent.context.policy", "mask_offpolicy is not supported"},
		{"bad history", strings.Replace(good, `tool_timeout = "5s"`, `history = "as-remembered"`, 1), 10, "agent.history", `"as-remembered" is not a history mode`},
		{"summary_prompt without summarize", withContext(`policy = "keep_last"` + "\nmax_tokens = 3000\nkeep_turns = 2\nsummary_prompt = \"x\""), 0, "agent.context.summary_prompt", "needs policy"},
		{"mask_summary without summarize", withContext(`policy = "keep_last"` + "\nmax_tokens = 3000\nkeep_turns = 2\nmask_summary = true"), contextLine(4), "agent.context.mask_summary", `mask_summary needs policy "summarize"`},
		{"mask_summary without a policy", withContext("mask_summary = true"), contextLine(1), "agent.context.mask_summary", `mask_summary needs policy "summarize"`},
		{"mask_summary not a bool", withContext(`policy = "summarize"` + "\nmax_tokens = 3000\nmask_summary = 0"), contextLine(3), "agent.context.mask_summary", "wrong type"},
		{"context typo", withContext("keep_turn = 2"), 0, "agent.context.keep_turn", `did you mean "agent.context.keep_turns"`},
		{"viewer typo", good + "\n[viewer]\nrecnt = 9\n", strings.Count(good, "\n") + 3, "viewer.recnt", `did you mean "viewer.recent"`},
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

// TestParseEverySamplingParam: [agent.sampling] takes every key of SGLang's sampling_params (nested tables
// included), and n other than 1 is refused with the file, line and key.
func TestParseEverySamplingParam(t *testing.T) {
	src := strings.Replace(good, "temperature = 0.7", `temperature = 0.7
stop = "END"
stop_token_ids = [7]
stop_regex = ["^x$"]
top_p = 0.9
top_k = 20
min_p = 0.05
frequency_penalty = 0.1
presence_penalty = 0.1
repetition_penalty = 1.05
min_new_tokens = 1
n = 1
json_schema = "{}"
ignore_eos = false
skip_special_tokens = false
spaces_between_special_tokens = false
no_stop_trim = true
stream_interval = 4
logit_bias = { "11" = -1.5 }
sampling_seed = 42
custom_params = { return_top_p_token_ids = true }
beam_width = 1
watermark = { enabled = false }
choice = ["a", "b"]`, 1)
	cfg, err := Parse("runtime.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Agents[0].Sampling
	if s.Stop[0] != "END" || *s.SkipSpecialTokens || !*s.NoStopTrim || s.LogitBias["11"] != -1.5 || *s.SamplingSeed != 42 ||
		s.CustomParams["return_top_p_token_ids"] != true || s.Watermark["enabled"] != false {
		t.Errorf("decoded %+v", s)
	}
	// What SGLang refuses is refused at load, with its message and the key: one constraint at a time, a
	// temperature in range.
	for _, bad := range []struct{ add, key, msg string }{
		{"json_schema = \"{}\"\nregex = \"a+\"", "agent.sampling.regex", "Only one of json_schema, regex"},
		{"top_p = 1.5", "agent.sampling.top_p", "top_p must be in (0, 1]"},
	} {
		_, err := Parse("runtime.toml", strings.Replace(good, "temperature = 0.7", "temperature = 0.7\n"+bad.add, 1))
		var e *Error
		if !errors.As(err, &e) || e.Key != bad.key || !strings.Contains(e.Msg, bad.msg) {
			t.Errorf("%s: %v", bad.add, err)
		}
	}
	_, err = Parse("runtime.toml", strings.Replace(good, "temperature = 0.7", "temperature = 0.7\nn = 8", 1))
	var e *Error
	if !errors.As(err, &e) || e.Key != "agent.sampling.n" || e.Line != 15 || !strings.Contains(e.Msg, `item's "n"`) {
		t.Errorf("n = 8: %v", err)
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

// The README's one-line change: the shipped runtime.toml with workers replaced by a gateway runs through the
// gateway alone (the default ["emulator"] does not survive), and workers next to a gateway stay admin targets.
func TestParseGatewayReplacesTheEmulator(t *testing.T) {
	src, err := os.ReadFile("../../runtime.toml")
	if err != nil {
		t.Fatal(err)
	}
	shipped := string(src)
	if !strings.Contains(shipped, "\nworkers = [\"emulator\"]\n") {
		t.Fatal(`runtime.toml no longer has the line workers = ["emulator"]`)
	}
	cfg, err := Parse("runtime.toml", strings.Replace(shipped, "\nworkers = [\"emulator\"]\n", "\ngateway = \"http://router:30000\"\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SGLang.Gateway != "http://router:30000" || len(cfg.SGLang.Workers) != 0 || cfg.UsesEmulator() {
		t.Fatalf("gateway %q, workers %v, emulator %v", cfg.SGLang.Gateway, cfg.SGLang.Workers, cfg.UsesEmulator())
	}
	cfg, err = Parse("runtime.toml", strings.Replace(shipped, "\nworkers = [\"emulator\"]\n", "\ngateway = \"http://router:30000\"\nworkers = [\"http://w1:30000\"]\n", 1))
	if err != nil || len(cfg.SGLang.Workers) != 1 || cfg.SGLang.Gateway == "" {
		t.Fatalf("gateway and workers: %+v, %v", cfg.SGLang, err)
	}
}

// TestParseModelIDOrFolder: a model is a folder when one of that name exists (relative to the config file), else a
// Hugging Face model id when it reads as one (Org/Name); revision goes with ids only.
func TestParseModelIDOrFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/models/qwen3", 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := dir + "/runtime.toml"
	tests := []struct {
		name, model, extra string
		hub                bool
		want, wantErr      string
	}{
		{"hub id", `"Qwen/Qwen3-8B"`, "", true, "Qwen/Qwen3-8B", ""},
		{"hub id with revision", `"Qwen/Qwen3-8B"`, `revision = "v1.0"`, true, "Qwen/Qwen3-8B", ""},
		{"existing folder that reads as an id", `"models/qwen3"`, "", false, dir + "/models/qwen3", ""},
		{"absolute folder", `"/models/qwen3"`, "", false, "/models/qwen3", ""},
		{"relative folder", `"./qwen3"`, "", false, dir + "/qwen3", ""},
		{"one word is a folder", `"qwen3"`, "", false, dir + "/qwen3", ""},
		{"revision with a folder", `"models/qwen3"`, `revision = "main"`, false, "", "runtime.toml:8: agent.revision: agent \"calc\": revision applies to a Hugging Face model id (Org/Name); model \"models/qwen3\" is a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, `model = "/models/qwen3"`, "model = "+tt.model+"\n"+tt.extra, 1)
			cfg, err := Parse(cfgPath, src)
			if tt.wantErr != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := cfg.Agents[0]
			if a.Hub != tt.hub || a.Model != tt.want {
				t.Errorf("model %s: Hub=%v Model=%q, want Hub=%v Model=%q", tt.model, a.Hub, a.Model, tt.hub, tt.want)
			}
		})
	}
}
