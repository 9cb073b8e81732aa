package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/envtool"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/mcptool"
	"github.com/agentrt/agentrt/runtime/outbound"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/plugin/command"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/runtime/viewer"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// Config is the whole runtime configuration, as runtime.toml spells it: every section, its defaults
// (DefaultConfig, DefaultAgent) and its validation (Validate); Load decodes a file over the defaults.
type Config struct {
	Server Server `toml:"server"`
	// SGLang says where inference runs: sglang.workers (the single value "emulator" starts the built-in
	// emulator in-process) or sglang.gateway, plus the client's limits and retry policy.
	SGLang   sglang.Config `toml:"sglang"`
	Emulator Emulator      `toml:"emulator"`
	Plugins  Plugins       `toml:"plugins"`
	Agents   []Agent       `toml:"agent"`
	// Frontdoor configures the OpenAI-compatible endpoints of `agentrt serve` (docs/frontdoor.md).
	Frontdoor frontdoor.Config `toml:"frontdoor"`
	// Viewer configures the trajectory viewer that `agentrt serve` mounts at /view/ (docs/viewer.md).
	Viewer viewer.Config `toml:"viewer"`
	// Bus is the scale-out store on NATS JetStream (runtime/bus, docs/scale-out.md); bus.dir "" is
	// <server.spool_dir>/bus.
	Bus bus.Config `toml:"bus"`

	busDirDefault bool // Bus.Dir was derived from Server.SpoolDir at load (SetSpoolDir moves it along)
}

// SetSpoolDir replaces server.spool_dir (serve's --spool-dir). An embedded store whose dir came from the spool dir
// moves with it: two serve processes given their own spool dirs must not share one store. A bus.dir set in the
// file stays where it is.
func (c *Config) SetSpoolDir(dir string) {
	c.Server.SpoolDir = dir
	if c.busDirDefault {
		c.Bus.Dir = filepath.Join(dir, "bus")
	}
}

// Server configures `agentrt serve`.
type Server struct {
	// Addr is where the HTTP server (health, metrics, WebSocket) listens.
	Addr string `toml:"addr"`
	// Token is the bearer token trainers must present; required when Addr is not loopback.
	Token string `toml:"token"`
	// SpoolDir holds finished trajectories until a trainer acks them.
	SpoolDir string `toml:"spool_dir"`
	// SpoolMaxTrajectories bounded the bbolt spool; serve now stores on the bus, which has no record bound (unused).
	SpoolMaxTrajectories int `toml:"spool_max_trajectories"`
	// MaxMessageBytes bounds one WebSocket message from a trainer.
	MaxMessageBytes int `toml:"max_message_bytes"`
	// ShutdownGrace is how long in-flight episodes may run after a shutdown signal before they are aborted.
	ShutdownGrace time.Duration `toml:"shutdown_grace"`
	// Concurrency is the number of episodes run at once.
	Concurrency int `toml:"concurrency"`
	// WeightVersionWarnAfter: when a consumer's trajectories keep one weight_version this long (over two or more
	// requests), serve warns that the SGLang server is probably not the one the trainer updates; 0 disables it.
	WeightVersionWarnAfter time.Duration `toml:"weight_version_warn_after"`
}

// Emulator configures the built-in SGLang emulator, started in-process when sglang.workers = ["emulator"].
// Its keys are the emulator's own (see sglang/emulator.Config), plus the script and log files.
type Emulator struct {
	emulator.Config
	// Script is the JSONL file of the scripted policy's replies.
	Script string `toml:"script"`
	// Log writes every request and response as JSON lines to this file.
	Log string `toml:"log"`
}

// Plugins configures the Wasm plugin host.
type Plugins struct {
	// CacheDir holds compiled modules so later starts skip compilation.
	CacheDir string `toml:"cache_dir"`
}

// Agent is one [[agent]] table: a model, a parser, tools, hooks, limits and policies.
type Agent struct {
	Name string `toml:"name"`
	// Model is a Hugging Face model folder (tokenizer.json, tokenizer_config.json, chat template), or a model id
	// on the Hugging Face hub ("Qwen/Qwen3-8B") when no folder of that name exists: its tokenizer and template
	// files are then fetched into the hub cache as huggingface_hub does (runtime/hfhub), pinned to a commit.
	Model string `toml:"model"`
	// Revision is the branch, tag or commit of a hub model id ("" is "main"); only for ids.
	Revision string `toml:"revision"`
	// Hub is set by the config loader when Model is a hub model id rather than a folder.
	Hub bool `toml:"-"`
	// Family names the model family (runtime/family's table: qwen3, llama3.1, glm-4.6, ...); "" detects it from
	// the model folder's chat template and special tokens.
	Family string `toml:"family"`
	// Parser names a built-in tool-call parser (hermes, qwen3_coder, llama3, glm45,
	// kimi_k2, deepseekv3, deepseekv31, minimax-m2, mistral, seed_oss, gpt-oss, pythonic) or a parser
	// plugin file; "" uses the family's parser.
	Parser       string `toml:"parser"`
	SystemPrompt string `toml:"system_prompt"`
	// Sampling are SGLang sampling params; max_new_tokens is always sent.
	Sampling turn.Sampling `toml:"sampling"`
	// ChatTemplate is a chat template file that replaces the model folder's: the file the SGLang server is
	// launched with (--chat-template), e.g. SGLang's tool template for DeepSeek, whose own renders no tools.
	ChatTemplate string `toml:"chat_template"`
	// ChatTemplateKwargs are extra template variables, e.g. enable_thinking = false.
	ChatTemplateKwargs map[string]any `toml:"chat_template_kwargs"`
	// ContextWindow caps prompt+response tokens; 0 reads the server's max_model_len from /v1/models.
	ContextWindow int `toml:"context_window"`
	// ToolTimeout is the default per-tool-call wall-clock limit.
	ToolTimeout time.Duration `toml:"tool_timeout"`
	// MaxToolResultBytes caps one tool result (0: DefaultMaxToolResultBytes); a larger one is replaced by an error
	// result saying so, before it is templated or tokenized.
	MaxToolResultBytes int `toml:"max_tool_result_bytes"`
	// ParseErrors is the parse-error policy: "feedback" (an error result carrying the raw text goes back to the
	// model and the episode continues) or "stop" (the episode ends as completed with the parse errors counted).
	ParseErrors string `toml:"parse_errors"`
	// EpisodeTimeout bounds one episode; past it the episode is aborted (reason deadline).
	EpisodeTimeout time.Duration `toml:"episode_timeout"`
	// MaxResponseTokens is the episode-wide response budget (0: none): the tokens after the first prompt (model
	// output, tool results and template glue alike) that an episode may reach, as slime's rollout_max_response_len
	// and verl's response_length count them. Each model call's max_new_tokens is capped by what is left; an
	// episode that reaches it ends truncated with reason "response_budget". A request's item may set its own.
	MaxResponseTokens int `toml:"max_response_tokens"`
	// PartialRollout is what happens to a turn that SGLang aborts mid-generation (pause_generation mode
	// "abort", a weight update): "drop" ends the episode as aborted; "resume" keeps the partial output
	// verbatim and continues the same turn on the new weights (weight_versions record which made which token).
	PartialRollout string `toml:"partial_rollout"`
	// MaskOffPolicy sets loss_mask 0 on response tokens of an older weight version than the trajectory's last
	// (slime's --mask-offpolicy-in-partial-rollout); the trajectory says so with offpolicy_masked.
	MaskOffPolicy bool `toml:"mask_offpolicy"`
	// History is "as-generated" (the default: an episode is one chain, later turns append deltas after the tokens
	// the model generated) or "as-deployed" (each turn's prompt is the chat template's full render of the
	// conversation so far, as a deployed model sees it, and every turn after the first is a new sample).
	History string `toml:"history"`
	// Context is [agent.context]: what the loop does when an episode's context passes a threshold.
	Context Context  `toml:"context"`
	Tools   []Plugin `toml:"tools"`
	Hooks   []Plugin `toml:"hooks"`
	Reward  *Plugin  `toml:"reward"`
}

// Context is an agent's [agent.context] table. With Policy "keep_last", when the episode's context (the current
// sample's tokens, the pending tool results included) passes MaxTokens before a model call, the conversation is
// replaced by its first prompt's messages (the system prompt and the item's messages) and its last KeepTurns turns
// (an assistant message and the messages after it), and a new sample of the episode begins, its prompt the chat
// template's full render of that conversation (docs/PROTOCOL.md section 7).
type Context struct {
	// Policy is "" or "none" (the default: an episode is one chain and ends truncated/context_window when it fills
	// the window) or "keep_last".
	Policy string `toml:"policy"`
	// MaxTokens is the threshold in tokens; it must leave room for a reply in the context window.
	MaxTokens int `toml:"max_tokens"`
	// KeepTurns is how many of the latest turns a compaction keeps (>= 1 for keep_last, >= 0 for summarize).
	KeepTurns int `toml:"keep_turns"`
	// SummaryPrompt is the summarize policy's request to the model ("": the runtime's default, which asks for the
	// task, what was done and found, and what is left, without tool calls).
	SummaryPrompt string `toml:"summary_prompt"`
	// MaskSummary gives the summarize policy's summary call loss mask 0 (false, the default: it trains as any
	// response); its logprobs are kept and its sample says "masked": true.
	MaskSummary bool `toml:"mask_summary"`
}

// The history modes (agent.history).
const (
	HistoryAsGenerated = "as-generated"
	HistoryAsDeployed  = "as-deployed"
)

// The [agent.context] policies.
const (
	ContextNone      = "none"
	ContextKeepLast  = "keep_last"
	ContextSummarize = "summarize"
)

// Plugin is a [[agent.tools]], [[agent.hooks]] or [agent.reward] entry: a plugin (a built-in such as
// "builtin:calculator", or a .wasm file) and its settings, or a command, MCP or environment tool.
type Plugin struct {
	Plugin string `toml:"plugin"`
	// At is where the entry is written, "FILE:LINE" (set by the config loader; "" when not known): errors about
	// the entry that only loading can find (a hook listed as a tool) name it, as config errors do.
	At string `toml:"-"`
	// Only restricts a tool plugin to some of its tools; empty means all.
	Only []string `toml:"only"`
	// Timeout is the per-call wall-clock limit (tools: overrides the agent's tool_timeout).
	Timeout time.Duration `toml:"timeout"`
	// MaxMemoryMB caps each instance's memory (default 64 for plugin files).
	MaxMemoryMB int `toml:"max_memory_mb"`
	// Mounts grants read-only directories: "host_dir:guest_dir".
	Mounts []string `toml:"mounts"`
	// Clock and Random grant the real clock and a random source to a sandboxed plugin.
	Clock  bool `toml:"clock"`
	Random bool `toml:"random"`
	// Config is passed to the plugin at instantiation, as JSON.
	Config map[string]any `toml:"config"`
	// Command makes a tool entry a WASI command tool: Plugin is then a command module (one that exports _start,
	// e.g. "$AGENTRT_PYTHON_WASM"), run fresh for every call with the entry's timeout, max_memory_mb, mounts, clock
	// and random (runtime/plugin/command).
	Command *Command `toml:"command"`
	// MCP makes a tool entry an MCP server's tools (runtime/mcptool): `mcp = { command = [...] }` (stdio) or
	// `mcp = { url = "..." }` (streamable HTTP); Plugin stays empty, Only and Timeout apply.
	MCP *mcptool.Config `toml:"mcp"`
	// Env makes a tool entry a remote environment service's tools (runtime/envtool, docs/environments.md):
	// `env = { url = "http://..." }`, one environment per episode; Plugin stays empty, Only and Timeout (per call)
	// apply.
	Env *envtool.Config `toml:"env"`
	// HTTP grants a sandboxed plugin outbound HTTP through agentrt_v1.http_request (plugins/ABI.md 3.1): allowed
	// hosts, methods, timeout, body caps, requests per episode and per second, headers from env vars.
	HTTP *outbound.Grant `toml:"http"`
	// Agent makes a tool entry a sub-agent: a tool that runs another [[agent]] on a sub-task (SubAgent):
	// `agent = { name = "coder", max_depth = 1, max_turns = 16, max_tokens = 8192 }`; nothing else in the entry
	// but timeout, which bounds the whole sub-episode (default: the agent's tool_timeout).
	Agent *SubAgent `toml:"agent"`
}

// Command is a WASI command tool: how a call's arguments become the program's argv and stdin. Templates
// replace "{name}" with the argument name; every name used is a required argument.
type Command struct {
	// Preset fills unset fields for a known program: "python" is execute_python_code (python -I -c {code}, a
	// scratch /tmp, 10 s, 256 MiB).
	Preset string `toml:"preset"`
	// Name is the tool's name as the model calls it.
	Name        string `toml:"name"`
	Description string `toml:"description"`
	// Parameters is the JSON Schema of the arguments (default: each template name as a required string): a TOML
	// table, or a string holding a JSON object. See ParametersJSON.
	Parameters any `toml:"parameters"`
	// Args is the program's argv, argv[0] first.
	Args []string `toml:"args"`
	// Stdin is the program's standard input.
	Stdin string `toml:"stdin"`
	// Env are KEY=VALUE environment variables.
	Env []string `toml:"env"`
	// Scratch grants a writable /tmp, empty at first and removed afterwards.
	Scratch *bool `toml:"scratch"`
	// ScratchScope is "episode" (default: the calls of an episode share /tmp, removed when the episode ends) or
	// "call" (a fresh /tmp per call).
	ScratchScope string `toml:"scratch_scope"`
	// MaxOutputBytes caps stdout and stderr each (default 16 KiB).
	MaxOutputBytes int `toml:"max_output_bytes"`
	// MaxConcurrent bounds the runs in flight (default GOMAXPROCS).
	MaxConcurrent int `toml:"max_concurrent"`
}

// ParametersJSON is the command's parameter schema as JSON (nil: derived from the templates). A string must hold
// a JSON object; a table is encoded as one.
func (c *Command) ParametersJSON() (json.RawMessage, error) {
	switch v := c.Parameters.(type) {
	case nil:
		return nil, nil
	case string:
		var obj map[string]any
		if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("a string must hold a JSON object (the schema), got %.60q", v)
		}
		return json.RawMessage(v), nil
	case map[string]any:
		return json.Marshal(v)
	default:
		return nil, fmt.Errorf("want a table (the JSON Schema) or a string holding a JSON object, got %T", v)
	}
}

// ConfigJSON is the plugin's config as the JSON object the plugin receives.
func (p Plugin) ConfigJSON() (json.RawMessage, error) {
	if p.Config == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(p.Config)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: config: %w", p.Plugin, err)
	}
	return b, nil
}

// DefaultConfig returns the defaults that runtime.toml is decoded over.
func DefaultConfig() Config {
	return Config{
		Server: Server{
			Addr:                   "127.0.0.1:8080",
			SpoolDir:               "spool",
			SpoolMaxTrajectories:   100000,
			MaxMessageBytes:        16 << 20,
			ShutdownGrace:          30 * time.Second,
			Concurrency:            256,
			WeightVersionWarnAfter: 30 * time.Minute,
		},
		SGLang:    defaultSGLang(),
		Emulator:  Emulator{Config: emulator.DefaultConfig()},
		Plugins:   Plugins{CacheDir: "~/.cache/agentrt/wazero"},
		Frontdoor: frontdoor.DefaultConfig(),
		Viewer:    viewer.DefaultConfig(),
		Bus:       bus.DefaultConfig(),
	}
}

func defaultSGLang() sglang.Config {
	c := sglang.DefaultConfig()
	c.Workers = []string{EmulatorWorker}
	return c
}

// sglangKeyRe matches a key of [sglang] at the start of an sglang.Config.Validate message.
var sglangKeyRe = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*,?$`)

// EmulatorWorker is the sglang.workers value that starts the built-in SGLang emulator in-process.
const EmulatorWorker = "emulator"

// UsesEmulator reports whether the config asks for the in-process emulator.
func (c *Config) UsesEmulator() bool {
	return len(c.SGLang.Workers) == 1 && c.SGLang.Workers[0] == EmulatorWorker && c.SGLang.Gateway == ""
}

// DefaultAgent returns the defaults each [[agent]] table is decoded over.
func DefaultAgent() Agent {
	return Agent{
		Sampling:       turn.Sampling{MaxNewTokens: 1024},
		ToolTimeout:    30 * time.Second,
		ParseErrors:    ParseFeedback,
		PartialRollout: PartialDrop,
	}
}

// The parse_errors and partial_rollout policies (runtime.Settings takes the same values).
const (
	ParseFeedback = "feedback"
	ParseStop     = "stop"
	PartialDrop   = "drop"
	PartialResume = "resume"
)

// validateContext checks [agent.context].
func (a *Agent) validateContext() error {
	c := a.Context
	switch c.Policy {
	case "", ContextNone:
		if c.MaskSummary {
			return &FieldError{"agent.context.mask_summary", fmt.Sprintf("agent %q: mask_summary needs policy \"summarize\" (only it makes a summary call)", a.Name)}
		}
		if c.MaxTokens != 0 || c.KeepTurns != 0 || c.SummaryPrompt != "" {
			key := "agent.context.max_tokens"
			if c.MaxTokens == 0 {
				key = "agent.context.keep_turns"
			}
			return &FieldError{key, fmt.Sprintf("agent %q: max_tokens and keep_turns need a policy (\"keep_last\")", a.Name)}
		}
		return nil
	case ContextKeepLast, ContextSummarize:
	default:
		return &FieldError{"agent.context.policy", fmt.Sprintf("agent %q: %q is not a policy (use \"none\", \"keep_last\" or \"summarize\")", a.Name, c.Policy)}
	}
	if c.SummaryPrompt != "" && c.Policy != ContextSummarize {
		return &FieldError{"agent.context.summary_prompt", fmt.Sprintf("agent %q: summary_prompt needs policy \"summarize\"", a.Name)}
	}
	if c.MaskSummary && c.Policy != ContextSummarize {
		return &FieldError{"agent.context.mask_summary", fmt.Sprintf("agent %q: mask_summary needs policy \"summarize\" (only it makes a summary call)", a.Name)}
	}
	// A setting left out is named by the policy's line; one given out of range by its own.
	switch {
	case c.MaxTokens == 0:
		return &FieldError{"agent.context.policy", fmt.Sprintf("agent %q: policy %q needs max_tokens (the threshold, > 0)", a.Name, c.Policy)}
	case c.MaxTokens < 0:
		return &FieldError{"agent.context.max_tokens", fmt.Sprintf("agent %q: must be > 0 with policy %q", a.Name, c.Policy)}
	case c.KeepTurns == 0 && c.Policy == ContextKeepLast:
		return &FieldError{"agent.context.policy", fmt.Sprintf("agent %q: policy %q needs keep_turns (>= 1)", a.Name, c.Policy)}
	case c.KeepTurns < 0:
		return &FieldError{"agent.context.keep_turns", fmt.Sprintf("agent %q: must be >= 1 with policy %q", a.Name, c.Policy)}
	}
	if a.ContextWindow > 0 && c.MaxTokens+a.Sampling.MaxNewTokens > a.ContextWindow {
		return &FieldError{"agent.context.max_tokens", fmt.Sprintf("agent %q: max_tokens %d + sampling.max_new_tokens %d is past the %d-token context_window: a turn at the threshold would have no room for its reply", a.Name, c.MaxTokens, a.Sampling.MaxNewTokens, a.ContextWindow)}
	}
	if a.MaskOffPolicy {
		return &FieldError{"agent.context.policy", fmt.Sprintf("agent %q: mask_offpolicy is not supported with a context policy yet (it masks one chain)", a.Name)}
	}
	return nil
}

// FieldError is a validation error tied to a config key, so the loader can name the file and line.
type FieldError struct {
	Key string // dotted key, e.g. "agent.sampling.max_new_tokens" (array tables without indices)
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// Validate checks values that decode fine but make no sense. Errors are *FieldError.
func (c *Config) Validate() error {
	if len(c.SGLang.Workers) == 0 && c.SGLang.Gateway == "" {
		return &FieldError{"sglang.workers", "no SGLang server: set workers (or [\"emulator\"]) or gateway"}
	}
	sc := c.SGLang
	if c.UsesEmulator() {
		sc.Workers = []string{"http://127.0.0.1"} // the in-process emulator: check the other keys
	} else {
		for _, w := range c.SGLang.Workers {
			if w == EmulatorWorker {
				return &FieldError{"sglang.workers", "\"emulator\" must be the only worker (and no gateway)"}
			}
		}
	}
	if err := sc.Validate(); err != nil {
		// sglang's messages start with the key they are about ("placement_ttl must be > 0, got 0s")
		msg := strings.TrimPrefix(err.Error(), "sglang: config: ")
		key := "sglang.workers"
		if k, _, ok := strings.Cut(msg, " "); ok && sglangKeyRe.MatchString(k) {
			key = "sglang." + strings.TrimRight(k, ",")
		}
		return &FieldError{key, msg}
	}
	if c.Server.Concurrency <= 0 {
		return &FieldError{"server.concurrency", "must be > 0"}
	}
	if len(c.Agents) == 0 {
		return &FieldError{"agent", "no [[agent]] defined"}
	}
	if c.Frontdoor.Enabled {
		if key, err := c.Frontdoor.Validate(); err != nil {
			return &FieldError{"frontdoor." + key, err.Error()}
		}
		if _, err := c.Agent(c.Frontdoor.Agent); err != nil {
			return &FieldError{"frontdoor.agent", err.Error()}
		}
	}
	if key, err := c.Viewer.Validate(); err != nil {
		return &FieldError{"viewer." + key, err.Error()}
	}
	if key, err := c.Bus.Validate(); err != nil {
		return &FieldError{"bus." + key, err.Error()}
	}
	names := map[string]bool{}
	services := map[string]*envtool.Config{} // an environment service's limits are shared by the entries naming it
	for i := range c.Agents {
		a := &c.Agents[i]
		if a.Name == "" {
			return &FieldError{"agent.name", fmt.Sprintf("agent #%d has no name", i+1)}
		}
		if names[a.Name] {
			return &FieldError{"agent.name", fmt.Sprintf("duplicate agent name %q", a.Name)}
		}
		names[a.Name] = true
		if a.Model == "" {
			return &FieldError{"agent.model", fmt.Sprintf("agent %q: model (a model folder or a Hugging Face model id) is required", a.Name)}
		}
		if a.ChatTemplate != "" {
			if st, err := os.Stat(a.ChatTemplate); err != nil || st.IsDir() {
				return &FieldError{"agent.chat_template", fmt.Sprintf("agent %q: %q is not a readable template file", a.Name, a.ChatTemplate)}
			}
		}
		if a.Family != "" {
			if _, err := family.Lookup(a.Family); err != nil {
				return &FieldError{"agent.family", fmt.Sprintf("agent %q: %s", a.Name, strings.TrimPrefix(err.Error(), "family: "))}
			}
		}
		if a.Sampling.MaxNewTokens <= 0 {
			return &FieldError{"agent.sampling.max_new_tokens", fmt.Sprintf("agent %q: must be > 0", a.Name)}
		}
		if err := a.Sampling.Validate(); err != nil {
			key := "agent.sampling.n"
			if pe, ok := errors.AsType[*sglang.ParamError](err); ok {
				key = "agent.sampling." + pe.Param
			}
			return &FieldError{key, fmt.Sprintf("agent %q: %v", a.Name, err)}
		}
		if a.ParseErrors != ParseFeedback && a.ParseErrors != ParseStop {
			return &FieldError{"agent.parse_errors", fmt.Sprintf("agent %q: %q is not a policy (use \"feedback\" or \"stop\")", a.Name, a.ParseErrors)}
		}
		if a.PartialRollout != PartialDrop && a.PartialRollout != PartialResume {
			return &FieldError{"agent.partial_rollout", fmt.Sprintf("agent %q: %q is not a policy (use \"drop\" or \"resume\")", a.Name, a.PartialRollout)}
		}
		if a.ContextWindow < 0 {
			return &FieldError{"agent.context_window", fmt.Sprintf("agent %q: must be >= 0", a.Name)}
		}
		if a.MaxToolResultBytes < 0 {
			return &FieldError{"agent.max_tool_result_bytes", fmt.Sprintf("agent %q: must be >= 0", a.Name)}
		}
		if a.MaxResponseTokens < 0 {
			return &FieldError{"agent.max_response_tokens", fmt.Sprintf("agent %q: must be >= 0 (0: no budget)", a.Name)}
		}
		if a.History != "" && a.History != HistoryAsGenerated && a.History != HistoryAsDeployed {
			return &FieldError{"agent.history", fmt.Sprintf("agent %q: %q is not a history mode (use %q or %q)", a.Name, a.History, HistoryAsGenerated, HistoryAsDeployed)}
		}
		if a.History == HistoryAsDeployed && a.MaskOffPolicy {
			return &FieldError{"agent.history", fmt.Sprintf("agent %q: mask_offpolicy is not supported with history %q yet (it masks one chain)", a.Name, a.History)}
		}
		if err := a.validateContext(); err != nil {
			return err
		}
		rewards := 0
		for _, p := range a.Tools {
			if p.Agent != nil {
				continue // validateSubAgents, once every agent is known
			}
			if p.Env != nil {
				if p.Plugin != "" || p.Command != nil || p.MCP != nil {
					return &FieldError{"agent.tools.env", fmt.Sprintf("agent %q: an env tool entry takes no plugin, command or mcp table", a.Name)}
				}
				if p.HTTP != nil {
					return &FieldError{"agent.tools.http", fmt.Sprintf("agent %q: %s: only a .wasm plugin can be granted outbound http", a.Name, p.Env.Name())}
				}
				if key, err := p.Env.Validate(); err != nil {
					return &FieldError{"agent.tools.env." + key, fmt.Sprintf("agent %q: %v", a.Name, err)}
				}
				if p.Env.Reward {
					if rewards++; rewards > 1 {
						return &FieldError{"agent.tools.env.reward", fmt.Sprintf("agent %q: only one environment can give the reward", a.Name)}
					}
				}
				if prev := services[p.Env.ServiceKey()]; prev != nil && (prev.MaxConcurrent != p.Env.MaxConcurrent || prev.CreatesPerSecond != p.Env.CreatesPerSecond) {
					return &FieldError{"agent.tools.env.max_concurrent", fmt.Sprintf("agent %q: %s: max_concurrent %d, creates_per_second %v, but another entry gives this service %d and %v: the limits are the service's, shared by every entry naming it (set the same on each)",
						a.Name, p.Env.Name(), p.Env.MaxConcurrent, p.Env.CreatesPerSecond, prev.MaxConcurrent, prev.CreatesPerSecond)}
				}
				services[p.Env.ServiceKey()] = p.Env
				continue
			}
			if p.MCP != nil {
				if p.Plugin != "" || p.Command != nil {
					return &FieldError{"agent.tools.mcp", fmt.Sprintf("agent %q: an mcp tool entry takes no plugin or command table", a.Name)}
				}
				if key, err := p.MCP.Validate(); err != nil {
					return &FieldError{"agent.tools.mcp." + key, fmt.Sprintf("agent %q: %v", a.Name, err)}
				}
				continue
			}
			if err := validateHTTP(a.Name, "agent.tools", p); err != nil {
				return err
			}
			if p.Plugin == "" && p.Command != nil {
				return &FieldError{"agent.tools.plugin", fmt.Sprintf("agent %q: a command tool has no module (is $AGENTRT_PYTHON_WASM set? run `make setup` and source ~/.cache/agentrt/env.sh)", a.Name)}
			}
			if p.Plugin == "" {
				return &FieldError{"agent.tools.plugin", fmt.Sprintf("agent %q: a tool entry has no plugin", a.Name)}
			}
			if p.Command != nil {
				if _, err := p.Command.ParametersJSON(); err != nil {
					return &FieldError{"agent.tools.command.parameters", fmt.Sprintf("agent %q: tool %s: %v", a.Name, p.Plugin, err)}
				}
			}
			if err := p.Command.validate(a.Name, p); err != nil {
				return err
			}
		}
		for _, p := range a.Hooks {
			if p.Command != nil {
				return &FieldError{"agent.hooks.command", fmt.Sprintf("agent %q: hook %s: only tools can be commands", a.Name, p.Plugin)}
			}
			if p.Plugin == "" {
				return &FieldError{"agent.hooks.plugin", fmt.Sprintf("agent %q: a hook entry has no plugin", a.Name)}
			}
			if err := validateHTTP(a.Name, "agent.hooks", p); err != nil {
				return err
			}
		}
	}
	return c.validateSubAgents()
}

// validateHTTP checks an http grant: only sandboxed plugin files take one, and it must be a valid grant (its
// header variables set).
func validateHTTP(agent, table string, p Plugin) error {
	if p.HTTP == nil {
		return nil
	}
	if p.Command != nil || p.MCP != nil || strings.HasPrefix(p.Plugin, "builtin:") {
		return &FieldError{table + ".http", fmt.Sprintf("agent %q: %s: only a .wasm plugin can be granted outbound http", agent, p.Plugin)}
	}
	if _, err := outbound.New(*p.HTTP); err != nil {
		return &FieldError{table + ".http", fmt.Sprintf("agent %q: %s: %s", agent, p.Plugin, strings.TrimPrefix(err.Error(), "outbound: "))}
	}
	if t, ht := p.Timeout, p.HTTP.RequestTimeout(); t > 0 && t < ht {
		return &FieldError{table + ".timeout", fmt.Sprintf("agent %q: %s: %s.timeout = %s (the plugin's call limit) is shorter than %s.http.timeout = %s, so a request could never use its timeout: raise timeout, lower http.timeout, or leave timeout unset (the call limit is then http.timeout + %s)",
			agent, p.Plugin, table, t, table, ht, plugin.DefaultTimeout)}
	}
	return nil
}

// CallLimit is an entry's per-call limit: its timeout; unset, for a plugin granted outbound HTTP, the grant's
// request timeout plus the plugin host's default limit (so that one request can use its whole timeout and the
// plugin still has its usual time for its own work); otherwise 0 (the defaults: the plugin host's for the
// sandbox, the agent's tool_timeout for the call).
func (p Plugin) CallLimit() time.Duration {
	if p.Timeout > 0 || p.HTTP == nil {
		return p.Timeout
	}
	return p.HTTP.RequestTimeout() + plugin.DefaultTimeout
}

// validate checks a command tool entry (nil: not a command tool).
func (c *Command) validate(agent string, p Plugin) error {
	if c == nil {
		return nil
	}
	switch {
	case c.Preset != "" && c.Preset != "python":
		return &FieldError{"agent.tools.command.preset", fmt.Sprintf("agent %q: unknown preset %q (have \"python\")", agent, c.Preset)}
	case c.Preset == "" && c.Name == "":
		return &FieldError{"agent.tools.command.name", fmt.Sprintf("agent %q: command tool %s has no name (or set preset)", agent, p.Plugin)}
	case c.Preset == "" && len(c.Args) == 0:
		return &FieldError{"agent.tools.command.args", fmt.Sprintf("agent %q: command tool %s has no args (argv[0] first; or set preset)", agent, p.Plugin)}
	case strings.HasPrefix(p.Plugin, "builtin:"):
		return &FieldError{"agent.tools.plugin", fmt.Sprintf("agent %q: a command tool needs a .wasm command module, not %s", agent, p.Plugin)}
	case p.Config != nil:
		return &FieldError{"agent.tools.config", fmt.Sprintf("agent %q: command tool %s: config is for ABI plugins; a command takes args and stdin", agent, p.Plugin)}
	case len(p.Only) > 0:
		return &FieldError{"agent.tools.only", fmt.Sprintf("agent %q: command tool %s is one tool: only does not apply", agent, p.Plugin)}
	case c.ScratchScope != "" && c.ScratchScope != command.ScopeEpisode && c.ScratchScope != command.ScopeCall:
		return &FieldError{"agent.tools.command.scratch_scope", fmt.Sprintf("agent %q: command tool %s: scratch_scope %q: want %q or %q", agent, p.Plugin, c.ScratchScope, command.ScopeEpisode, command.ScopeCall)}
	case c.MaxOutputBytes < 0 || c.MaxConcurrent < 0:
		return &FieldError{"agent.tools.command", fmt.Sprintf("agent %q: command tool %s: max_output_bytes and max_concurrent must be >= 0", agent, p.Plugin)}
	}
	return nil
}

// Agent returns the agent config named name, or the only one when name is empty.
func (c *Config) Agent(name string) (*Agent, error) {
	if name == "" && len(c.Agents) == 1 {
		return &c.Agents[0], nil
	}
	for i := range c.Agents {
		if c.Agents[i].Name == name {
			return &c.Agents[i], nil
		}
	}
	var have []string
	for _, a := range c.Agents {
		have = append(have, a.Name)
	}
	if name == "" {
		return nil, fmt.Errorf("config: several agents (%v): name one", have)
	}
	return nil, fmt.Errorf("config: no agent %q (have %v)", name, have)
}
