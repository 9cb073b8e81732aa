package system

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/envtool"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/mcptool"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/plugin/command"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// BuildEnv is what BuildAgent assembles an agent from: the built components it shares with other agents.
type BuildEnv struct {
	// Host loads the agent's plugins (parser, tools, hooks, reward).
	Host *plugin.Host
	// Generator is the SGLang client (or anything speaking /generate).
	Generator turn.Generator
	// Model is the agent's model folder, loaded.
	Model *tito.Model
	// ModelCommit is the hub commit the model's files are pinned to, when the agent names a hub model id ("" for a
	// folder); trajectories record it as model_revision.
	ModelCommit string
	// MaxModelLen returns the server's context length, for agents whose context_window is 0.
	MaxModelLen func(ctx context.Context) (int, error)
	// Server names the SGLang endpoint(s) in provenance.
	Server string
	// Gate, if set, holds model calls while closed (serve's pause for weight updates).
	Gate *turn.Gate
	// PluginCall, if set, is told the duration of every parser, tool and hook call (for metrics).
	PluginCall func(kind, plugin string, d time.Duration)
	Logger     *slog.Logger
	// Agents, if set, returns a built agent by name: what a sub-agent tool runs (looked up at the call, so that
	// agents may name each other or themselves). Without it an agent with a sub-agent tool is refused.
	Agents func(name string) (*runtime.Agent, error)
}

// BuildAgent loads an agent's plugins through the host and returns the agent. Plugin references are
// "builtin:NAME" (trusted, embedded: calculator, limiter) or a .wasm file (sandboxed with the entry's limits and
// grants); the parser is a built-in parser name or a .wasm parser plugin.
func BuildAgent(ctx context.Context, ac config.Agent, env BuildEnv) (_ *runtime.Agent, err error) {
	m := env.Model
	if ac.ChatTemplate != "" {
		src, err := os.ReadFile(ac.ChatTemplate)
		if err != nil {
			return nil, fmt.Errorf("agent %q: chat_template: %w", ac.Name, err)
		}
		m = m.WithChatTemplate(string(src), ac.ChatTemplate)
	}
	fam, err := family.Detect(m, ac.Family)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", ac.Model, err)
	}
	tmpl, err := m.ChatTemplate(fam.Profile.TemplateOptions()...)
	if err != nil {
		return nil, err
	}
	fam, report := CheckFamily(ctx, env.Host, m, tmpl, ac.Family, ac.Parser, ac.ChatTemplateKwargs)
	if err := report.Err(); err != nil {
		return nil, fmt.Errorf("model %s (family %s, by %s): %w (run `agentrt model check --model %s` for the whole report)", ac.Model, fam.Profile.Name, fam.By, err, ac.Model)
	}
	parser := report.Parser
	extra := family.StopIDs(m, fam.Profile)
	prov := map[string]any{
		ProvFamily:               fam.Profile.Name,
		ProvAgent:                ac.Name,
		tito.ProvModel:           ac.Model,
		tito.ProvTokenizerSHA256: m.TokenizerSHA256,
		tito.ProvTemplateSHA256:  m.TemplateSHA256,
		"server":                 env.Server,
	}
	if env.ModelCommit != "" {
		prov[tito.ProvModelRevision] = env.ModelCommit
	}
	plugins := map[string]string{}
	// The family's extra stops end a turn too: trimmed before parsing, and sent as stop_token_ids.
	model := &turn.Model{Generator: env.Generator, Tokenizer: tito.NewPieceCache(m.Tokenizer, 8192), Template: tmpl,
		StopIDs: append(slices.Clone(m.StopIDs), extra...), ExtraStopIDs: extra, Kwargs: ac.ChatTemplateKwargs,
		Reasoning: fam.Profile.Reasoning, CallIDs: fam.Profile.CallIDs, Gate: env.Gate, Window: report.Window}
	d := runtime.Deps{Model: model, Provenance: prov, Logger: env.Logger}

	var specs []abi.ToolSpec
	// A failed build closes what the tools opened outside the host (MCP server processes, command modules) and
	// the plugin modules it loaded.
	defer func() {
		if err != nil {
			for _, tb := range d.Tools {
				if c, ok := tb.Tool.(interface{ Close(context.Context) error }); ok {
					c.Close(context.WithoutCancel(ctx))
				}
			}
			for _, c := range d.Owned {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	for _, pc := range ac.Tools {
		tb, sps, err := openTool(ctx, pc, ac, env, &d.Owned)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sps...)
		// MCP servers and environments give no module hash: provenance records what they called themselves.
		plugins[tb.Plugin] = tb.SHA256
		d.Tools = append(d.Tools, tb)
	}
	for _, pc := range ac.Hooks {
		h, sha, err := loadHook(ctx, env.Host, pc, &d.Owned, "[[agent.hooks]]")
		if err != nil {
			return nil, err
		}
		h.name, h.observe = pc.Plugin, env.PluginCall
		plugins[pc.Plugin] = sha
		d.Hooks = append(d.Hooks, runtime.HookBinding{Plugin: pc.Plugin, SHA256: sha, Hook: h})
	}
	if ac.Reward != nil {
		h, sha, err := loadHook(ctx, env.Host, *ac.Reward, &d.Owned, "[agent.reward]")
		if err != nil {
			return nil, err
		}
		h.name, h.observe = ac.Reward.Plugin, env.PluginCall
		if !h.h.Wants(abi.EventEpisodeEnd) {
			return nil, fmt.Errorf("reward %s: the hook does not subscribe to %s", ac.Reward.Plugin, abi.EventEpisodeEnd)
		}
		plugins[ac.Reward.Plugin] = sha
		d.Reward = &runtime.HookBinding{Plugin: ac.Reward.Plugin, SHA256: sha, Hook: h}
	}

	pool := 0
	if !strings.HasSuffix(parser, ".wasm") {
		pool = 1 // a built-in parser runs in process (parserAdapter): its Wasm build only serves texts not valid UTF-8
	}
	pmod, err := loadParser(ctx, env.Host, parser, specs, pool)
	if err != nil {
		return nil, err
	}
	d.Owned = append(d.Owned, pmod)
	p, err := pmod.Parser()
	if err != nil {
		return nil, err
	}
	pa := parserAdapter{p: p, name: parser, observe: env.PluginCall}
	if !strings.HasSuffix(parser, ".wasm") {
		if pa.native, pa.tools, err = nativeParser(parser, specs); err != nil {
			return nil, fmt.Errorf("parser %s: %w", parser, err)
		}
	}
	model.Parser = pa
	plugins["parser:"+parser] = pmod.SHA256()
	prov[tito.ProvPlugins] = plugins

	model.ContextWindow = ac.ContextWindow
	if model.ContextWindow == 0 {
		if env.MaxModelLen == nil {
			return nil, fmt.Errorf("context_window is 0 (use the server's) but no server to ask")
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := env.MaxModelLen(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("agent %q: context_window is 0 (read the server's max_model_len) but %w: set agent.context_window in runtime.toml to the model's context length", ac.Name, err)
		}
		model.ContextWindow = n
	}
	return runtime.NewAgent(Settings(ac), d)
}

// Settings are the loop's settings of an [[agent]] table.
func Settings(ac config.Agent) runtime.Settings {
	return runtime.Settings{Name: ac.Name, SystemPrompt: ac.SystemPrompt, Sampling: ac.Sampling, ToolTimeout: ac.ToolTimeout,
		MaxToolResultBytes: ac.MaxToolResultBytes, ParseErrors: ac.ParseErrors, EpisodeTimeout: ac.EpisodeTimeout, MaxResponseTokens: ac.MaxResponseTokens,
		PartialRollout: ac.PartialRollout, MaskOffPolicy: ac.MaskOffPolicy, History: ac.History,
		Context: runtime.ContextPolicy{Policy: ac.Context.Policy, MaxTokens: ac.Context.MaxTokens, KeepTurns: ac.Context.KeepTurns,
			SummaryPrompt: ac.Context.SummaryPrompt, MaskSummary: ac.Context.MaskSummary}}
}

// ProvFamily is the provenance key of the model family an agent ran as; ProvAgent the agent's name.
const (
	ProvFamily = "family"
	ProvAgent  = "agent"
)

// loadParser loads a built-in parser by name, or a parser plugin (.wasm), given the tool specs; pool is the number
// of built-in instances (0: the host's default).
func loadParser(ctx context.Context, host *plugin.Host, name string, specs []abi.ToolSpec, pool int) (*plugin.Module, error) {
	var mod *plugin.Module
	var err error
	if strings.HasSuffix(name, ".wasm") {
		mod, err = loadPlugin(ctx, host, config.Plugin{Plugin: name}, specs)
	} else {
		cfg, cerr := parsers.WasmConfig(name)
		if cerr != nil {
			return nil, fmt.Errorf("parser: %w (built-ins: %s; or a parser plugin .wasm file)", cerr, strings.Join(parsers.Names(), ", "))
		}
		mod, err = host.Load(ctx, plugin.Spec{Name: "builtin:parser:" + name, Wasm: parsers.Wasm(), Trusted: true, Config: cfg, Tools: specs, PoolSize: pool})
	}
	if err != nil {
		return nil, fmt.Errorf("parser %s: %w", name, err)
	}
	return mod, nil
}

// CheckFamily runs the family self-test of a model as BuildAgent does before it builds an agent (which does not
// start when the report has a failure): the family (familyName, else detected from the folder), the parser
// (parser, else the family's; built-in or a .wasm plugin, run through the plugin host), the agent's
// chat_template_kwargs. tmpl may be nil (the model's template is parsed).
func CheckFamily(ctx context.Context, host *plugin.Host, m *tito.Model, tmpl *tito.ChatTemplate, familyName, parser string, kwargs map[string]any) (family.Detection, *family.Report) {
	load := func(name string) (family.ParseFunc, func(), error) {
		mod, err := loadParser(ctx, host, name, selfTestSpecs(), 1)
		if err != nil {
			return nil, nil, err
		}
		release := func() { mod.Close(context.WithoutCancel(ctx)) }
		p, err := mod.Parser()
		if err != nil {
			release()
			return nil, nil, err
		}
		return hostParse(ctx, p), release, nil
	}
	return family.CheckModel(m, tmpl, familyName, parser, kwargs, load)
}

// selfTestSpecs are the family self-test's tool specs, as the plugin host takes them.
func selfTestSpecs() []abi.ToolSpec {
	var specs []abi.ToolSpec
	for _, raw := range family.Tools() {
		var t struct {
			Function abi.ToolSpec `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			panic("system: family.Tools() is not OpenAI tool JSON: " + err.Error()) // a bug, not input
		}
		specs = append(specs, t.Function)
	}
	return specs
}

// hostParse adapts a parser plugin to the self-test.
func hostParse(ctx context.Context, p *plugin.Parser) family.ParseFunc {
	return func(text string) ([]family.Call, []string, error) {
		r, err := p.Parse(ctx, text)
		if err != nil {
			return nil, nil, err
		}
		var calls []family.Call
		for _, c := range r.Calls {
			calls = append(calls, family.Call{Name: c.Name, Arguments: json.RawMessage(c.Arguments)})
		}
		var rejected []string
		for _, e := range r.Errors {
			rejected = append(rejected, fmt.Sprintf("%s: %s (raw %q)", e.Reason, e.Message, e.Raw))
		}
		return calls, rejected, nil
	}
}

// loadPlugin loads a plugin reference ("builtin:NAME" or a .wasm file) with its config, limits and grants.
func loadPlugin(ctx context.Context, host *plugin.Host, pc config.Plugin, tools []abi.ToolSpec) (*plugin.Module, error) {
	spec := plugin.Spec{Name: pc.Plugin, Tools: tools}
	var err error
	if spec.Config, err = pc.ConfigJSON(); err != nil {
		return nil, err
	}
	if name, ok := strings.CutPrefix(pc.Plugin, "builtin:"); ok {
		wasm, ok := builtin.Wasm(name)
		if !ok {
			return nil, fmt.Errorf("no built-in plugin %q (have %s)", name, strings.Join(builtin.Names(), ", "))
		}
		spec.Wasm, spec.Trusted = wasm, true
		return host.Load(ctx, spec)
	}
	if spec.Wasm, err = os.ReadFile(pc.Plugin); err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	spec.Limits = plugin.Limits{Timeout: pc.CallLimit(), MaxMemoryMB: pc.MaxMemoryMB}
	spec.Grants = plugin.Grants{Clock: pc.Clock, Random: pc.Random, HTTP: pc.HTTP}
	for _, m := range pc.Mounts {
		mt, err := plugin.ParseMount(m)
		if err != nil {
			return nil, err
		}
		spec.Grants.Mounts = append(spec.Grants.Mounts, mt)
	}
	return host.Load(ctx, spec)
}

// wrongKind is the error for a plugin listed in a section of another kind: where the entry is, what the module is,
// and where it belongs. It matches plugin.ErrWrongKind.
func wrongKind(pc config.Plugin, section string, mod *plugin.Module) error {
	at := ""
	if pc.At != "" {
		at = pc.At + ": "
	}
	want, fix := abi.KindHook, ""
	if section == "[[agent.tools]]" {
		want = abi.KindTool
	}
	switch mod.Kind() {
	case abi.KindHook:
		fix = "list it under [[agent.hooks]] (or as [agent.reward] if it sets the reward at episode_end)"
	case abi.KindTool:
		fix = "list it under [[agent.tools]]"
	case abi.KindParser:
		fix = fmt.Sprintf("make it the agent's parser: parser = %q", pc.Plugin)
	}
	return &wrongKindError{fmt.Sprintf("%s%s plugin = %q is a %s plugin (%s), not a %s: %s", at, section, pc.Plugin, mod.Kind(), mod.Name(), want, fix)}
}

type wrongKindError struct{ msg string }

func (e *wrongKindError) Error() string { return e.msg }
func (e *wrongKindError) Unwrap() error { return plugin.ErrWrongKind }

// loadCommand compiles a WASI command tool (through the host's compilation cache directory).
func loadCommand(ctx context.Context, host *plugin.Host, pc config.Plugin) (*command.Tool, error) {
	c := pc.Command
	cfg := command.Config{}
	if c.Preset == "python" {
		cfg = command.Python()
	}
	if c.Name != "" {
		cfg.Name = c.Name
	}
	if c.Description != "" {
		cfg.Description = c.Description
	}
	if b, err := c.ParametersJSON(); err != nil {
		return nil, fmt.Errorf("command parameters: %w", err)
	} else if b != nil {
		cfg.Parameters = b
	}
	if len(c.Args) > 0 {
		cfg.Args = c.Args
	}
	if c.Stdin != "" {
		cfg.Stdin = c.Stdin
	}
	if c.Env != nil {
		cfg.Env = c.Env
	}
	if c.Scratch != nil {
		cfg.Scratch = *c.Scratch
	}
	if c.ScratchScope != "" {
		cfg.ScratchScope = c.ScratchScope
	}
	cfg.MaxOutputBytes, cfg.MaxConcurrent = c.MaxOutputBytes, c.MaxConcurrent
	cfg.Timeout, cfg.MaxMemoryMB = pc.Timeout, pc.MaxMemoryMB
	cfg.Clock, cfg.Random = pc.Clock, pc.Random
	cfg.CacheDir = host.CacheDir()
	for _, m := range pc.Mounts {
		mt, err := plugin.ParseMount(m)
		if err != nil {
			return nil, err
		}
		cfg.Mounts = append(cfg.Mounts, mt)
	}
	wasm, err := os.ReadFile(pc.Plugin)
	if err != nil {
		return nil, fmt.Errorf("command module: %w", err)
	}
	return command.New(ctx, wasm, cfg)
}

// loadHook loads a hook plugin and adds its module to owned.
func loadHook(ctx context.Context, host *plugin.Host, pc config.Plugin, owned *[]interface{ Close(context.Context) error }, section string) (hookAdapter, string, error) {
	mod, err := loadPlugin(ctx, host, pc, nil)
	if err != nil {
		return hookAdapter{}, "", fmt.Errorf("hook %s: %w", pc.Plugin, err)
	}
	*owned = append(*owned, mod)
	h, err := mod.Hook()
	if err != nil {
		return hookAdapter{}, "", wrongKind(pc, section, mod)
	}
	return hookAdapter{h: h}, mod.SHA256(), nil
}

// openTool opens one [[agent.tools]] entry of agent ac and binds the tools it offers (those in only, if set): a
// remote environment service, an MCP server, a WASI command, or a tool plugin (whose module goes to owned).
func openTool(ctx context.Context, pc config.Plugin, ac config.Agent, env BuildEnv, owned *[]interface{ Close(context.Context) error }) (runtime.ToolBinding, []abi.ToolSpec, error) {
	callTimeout := ac.ToolTimeout
	if pc.Timeout > 0 {
		callTimeout = pc.Timeout
	}
	switch {
	case pc.Agent != nil:
		return subAgentTool(*pc.Agent, pc.Timeout, env)
	case pc.Env != nil:
		cfg := *pc.Env
		cfg.CallTimeout = callTimeout
		t, err := envtool.Open(ctx, cfg)
		if err != nil {
			return runtime.ToolBinding{}, nil, fmt.Errorf("tool %w", err)
		}
		name, service := pc.Env.Name(), t.Service()
		if service == "" {
			service = name
		}
		// The binding's limit leaves the tool its own timeout message (the call timed out, the environment lives on).
		tb := runtime.ToolBinding{Plugin: name, SHA256: "service:" + service, Tool: envAdapter{timed{t, name, env.PluginCall}, t},
			Timeout: cfg.CallTimeout + 5*time.Second}
		specs, err := bindRemote(ctx, &tb, t, t.Specs(), func(s envtool.Spec) (string, string, json.RawMessage) { return s.Name, s.Description, s.Parameters }, pc.Only)
		if err == nil && env.Logger != nil {
			c := t.Config()
			env.Logger.Info("environment service configured", "service", name, "tools", len(tb.Specs),
				"max_concurrent", c.MaxConcurrent, "creates_per_second", c.CreatesPerSecond, "retries", *c.Retries,
				"create_timeout", c.CreateTimeout, "call_timeout", c.CallTimeout, "reward", c.Reward)
		}
		return tb, specs, err
	case pc.MCP != nil:
		cfg := *pc.MCP
		maxResult := ac.MaxToolResultBytes
		if maxResult == 0 {
			maxResult = runtime.DefaultMaxToolResultBytes
		}
		// max_tool_result_bytes also caps what is read of the server's answers.
		cfg.MaxMessageBytes = mcptool.MessageCap(maxResult)
		cfg.CallTimeout = callTimeout
		if cfg.ConnectTimeout <= 0 {
			cfg.ConnectTimeout = 30 * time.Second
		}
		t, err := mcptool.Open(ctx, cfg)
		if err != nil {
			return runtime.ToolBinding{}, nil, fmt.Errorf("tool %w", err)
		}
		name := pc.MCP.Name()
		// Like a command tool's, the binding's limit leaves the tool its own timeout message; it also leaves room to
		// restart a crashed server, which the call's timeout does not pay for.
		tb := runtime.ToolBinding{Plugin: name, SHA256: "server:" + t.Server(), Tool: timed{t, name, env.PluginCall},
			Timeout: cfg.CallTimeout + cfg.ConnectTimeout + 5*time.Second}
		specs, err := bindRemote(ctx, &tb, t, t.Specs(), func(s mcptool.Spec) (string, string, json.RawMessage) { return s.Name, s.Description, s.Parameters }, pc.Only)
		if err == nil && env.Logger != nil {
			env.Logger.Info("mcp server connected", "server", name, "tools", len(tb.Specs), "per_episode", pc.MCP.PerEpisode, "max_calls", pc.MCP.MaxCalls)
		}
		return tb, specs, err
	case pc.Command != nil:
		ct, err := loadCommand(ctx, env.Host, pc)
		if err != nil {
			return runtime.ToolBinding{}, nil, fmt.Errorf("tool %s: %w", pc.Plugin, err)
		}
		sp := ct.Spec()
		// The binding's limit leaves the command its own (clearer) timeout message.
		tb := runtime.ToolBinding{Plugin: pc.Plugin, SHA256: ct.SHA256(), Tool: ct, Timeout: ct.Config().Timeout + 5*time.Second}
		specs, err := bindSpecs(&tb, []abi.ToolSpec{sp}, nil)
		if err != nil {
			ct.Close(context.WithoutCancel(ctx))
		}
		return tb, specs, err
	}
	mod, err := loadPlugin(ctx, env.Host, pc, nil)
	if err != nil {
		return runtime.ToolBinding{}, nil, fmt.Errorf("tool %s: %w", pc.Plugin, err)
	}
	*owned = append(*owned, mod)
	t, err := mod.Tool()
	if err != nil {
		return runtime.ToolBinding{}, nil, wrongKind(pc, "[[agent.tools]]", mod)
	}
	tb := runtime.ToolBinding{Plugin: pc.Plugin, SHA256: mod.SHA256(), Tool: toolAdapter{t, pc.Plugin, env.PluginCall, mod}, Timeout: pc.CallLimit()}
	if mod.HTTPGranted() && env.Logger != nil {
		env.Logger.Info("plugin granted outbound http", "plugin", pc.Plugin, "hosts", pc.HTTP.Hosts, "methods", pc.HTTP.Methods)
	}
	specs, err := bindSpecs(&tb, t.Specs(), pc.Only)
	return tb, specs, err
}

// bindRemote binds the tools an MCP server or environment service lists (spec reads each one's name,
// description and parameters); a failure closes the tool.
func bindRemote[S any](ctx context.Context, tb *runtime.ToolBinding, t interface{ Close(context.Context) error }, listed []S, spec func(S) (string, string, json.RawMessage), only []string) ([]abi.ToolSpec, error) {
	var specs []abi.ToolSpec
	for _, s := range listed {
		name, desc, params := spec(s)
		specs = append(specs, abi.ToolSpec{Name: name, Description: desc, Parameters: abi.RawJSON(params)})
	}
	specs, err := bindSpecs(tb, specs, only)
	if err != nil {
		t.Close(ctx)
		return nil, err
	}
	return specs, nil
}

// episodeTool is what the MCP and environment tools share: calls with their episode, per-episode state, closing.
type episodeTool interface {
	CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error)
	EndEpisode(episodeID string)
	Close(ctx context.Context) error
}

// timed times an MCP server's or an environment's calls like a plugin's; it is a runtime.EpisodeTool.
type timed struct {
	t       episodeTool
	name    string
	observe func(kind, plugin string, d time.Duration)
}

func (a timed) Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error) {
	return a.CallEpisode(ctx, "", name, args)
}

func (a timed) CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error) {
	t0 := time.Now()
	r, err := a.t.CallEpisode(ctx, episodeID, name, args)
	if a.observe != nil {
		a.observe("tool", a.name, time.Since(t0))
	}
	return r, err
}

func (a timed) EndEpisode(episodeID string)     { a.t.EndEpisode(episodeID) }
func (a timed) Close(ctx context.Context) error { return a.t.Close(ctx) }

// envAdapter is an environment service's tools: a runtime.EpisodeEnv (one environment per episode).
type envAdapter struct {
	timed
	env *envtool.Tool
}

func (a envAdapter) BeginEpisode(ctx context.Context, episodeID string, metadata json.RawMessage) error {
	return a.env.BeginEpisode(ctx, episodeID, metadata)
}

func (a envAdapter) EpisodeReward(ctx context.Context, episodeID string) (*float64, error) {
	return a.env.EpisodeReward(ctx, episodeID)
}

func (a envAdapter) CloseEpisode(ctx context.Context, episodeID string) error {
	return a.env.CloseEpisode(ctx, episodeID)
}

// bindSpecs puts the listed specs that only names (all of them when only is empty) on tb in the OpenAI format
// and returns them; a name in only that is not listed is an error naming tb's plugin.
func bindSpecs(tb *runtime.ToolBinding, listed []abi.ToolSpec, only []string) ([]abi.ToolSpec, error) {
	var specs []abi.ToolSpec
	have := map[string]bool{}
	for _, sp := range listed {
		have[sp.Name] = true
		if len(only) > 0 && !slices.Contains(only, sp.Name) {
			continue
		}
		b, err := turn.ToolSpec(sp.Name, sp.Description, json.RawMessage(sp.Parameters))
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", tb.Plugin, err)
		}
		specs = append(specs, sp)
		tb.Specs = append(tb.Specs, b)
	}
	for _, want := range only {
		if !have[want] {
			return nil, fmt.Errorf("tool %s: no tool %q in it", tb.Plugin, want)
		}
	}
	return specs, nil
}

// toolAdapter turns the plugin host's tool facade into a Tool.
type toolAdapter struct {
	t       *plugin.Tool
	name    string
	observe func(kind, plugin string, d time.Duration)
	mod     *plugin.Module // for per-episode state (the HTTP grant's counts)
}

func (a toolAdapter) Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error) {
	t0 := time.Now()
	r, err := a.t.Call(ctx, name, args)
	if a.observe != nil {
		a.observe("tool", a.name, time.Since(t0))
	}
	if err != nil {
		return abi.ToolResult{}, err
	}
	out := abi.ToolResult{IsError: r.IsError}
	if len(r.JSON) > 0 {
		out.JSON = abi.RawJSON(r.JSON)
	} else {
		text := r.Text
		out.Text = &text
	}
	return out, nil
}

// CallEpisode runs a plugin tool call with its episode in the context (the HTTP grant's per-episode count) and
// the episode's outbound log as the recorder.
func (a toolAdapter) CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error) {
	return a.Call(plugin.WithEpisode(ctx, episodeID, runtime.OutboundRecorder(ctx)), name, args)
}

// EndEpisode forgets the episode's outbound request count.
func (a toolAdapter) EndEpisode(episodeID string) {
	if a.mod != nil {
		a.mod.EndEpisode(episodeID)
	}
}

// hookAdapter turns the plugin host's hook facade into a Hook.
type hookAdapter struct {
	h       *plugin.Hook
	name    string
	observe func(kind, plugin string, d time.Duration)
}

func (a hookAdapter) Subscribed(event string) bool { return a.h.Wants(event) }
func (a hookAdapter) Handle(ctx context.Context, ev *abi.Event) (abi.HookResponse, error) {
	t0 := time.Now()
	r, err := a.h.Handle(ctx, ev)
	if a.observe != nil {
		a.observe("hook", a.name, time.Since(t0))
	}
	return r, err
}

// parserAdapter times the parser. A built-in parser (native set) runs in process: the same Go code as the
// embedded parsers.wasm, which the plugin host would run with its Wasm glue (parsers/wasm), giving the same result
// (TestNativeParsersMatchWasm runs both). In an agent loop a Wasm call of a Go guest cost 45-55 µs a turn, most of it
// cache misses in the guest's runtime between turns (a hot benchmark: 7-10 µs); the native call costs a few µs. A
// .wasm parser plugin always goes through the host, and so does a text that is not valid UTF-8 (never the
// tokenizer's decode): the host's JSON boundary replaces its invalid bytes.
type parserAdapter struct {
	p       *plugin.Parser
	native  *parsers.Parser
	tools   *parsers.Tools
	name    string
	observe func(kind, plugin string, d time.Duration)
}

func (a parserAdapter) Parse(ctx context.Context, text string) (abi.ParseResult, error) {
	t0 := time.Now()
	var r abi.ParseResult
	var err error
	if a.native != nil && utf8.ValidString(text) {
		r, err = a.parseNative(ctx, text)
	} else {
		r, err = a.p.Parse(ctx, text)
	}
	if a.observe != nil {
		a.observe("parser", a.name, time.Since(t0))
	}
	return r, err
}

// parseNative is the built-in parser's answer as the Wasm glue writes it and the host reads it back. A panic is
// the parser's failure, as a trap of the Wasm guest would be, never the process's.
func (a parserAdapter) parseNative(ctx context.Context, text string) (r abi.ParseResult, err error) {
	if err := ctx.Err(); err != nil {
		return r, err
	}
	defer func() {
		if v := recover(); v != nil {
			r, err = abi.ParseResult{}, fmt.Errorf("parser %s: panic: %v", a.name, v)
		}
	}()
	res := a.native.Parse(text, a.tools)
	for _, c := range res.Calls {
		r.Calls = append(r.Calls, abi.ParsedCall{ID: c.ID, Name: c.Name, Arguments: abi.RawJSON(c.Arguments), Span: abi.Span(c.Span)})
	}
	for _, e := range res.Errors {
		r.Errors = append(r.Errors, abi.ParseError{Reason: string(e.Reason), Name: e.Name, Message: e.Message, Raw: e.Raw, Span: abi.Span(e.Span)})
	}
	r.NormalText = res.NormalText
	return r, nil
}

// nativeParser returns a built-in parser and the agent's tools as parsers/wasm's init reads them.
func nativeParser(name string, specs []abi.ToolSpec) (*parsers.Parser, *parsers.Tools, error) {
	p, err := parsers.New(name)
	if err != nil {
		return nil, nil, err
	}
	tools, err := parsers.ToolsFromSpecs(specs)
	if err != nil {
		return nil, nil, err
	}
	return p, tools, nil
}
