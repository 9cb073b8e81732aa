package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/sglang"
)

// Error is a configuration error that names where it is: file, line (0 when unknown) and key.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// shadow is runtime.Config with the agents kept raw, so each is decoded over runtime.DefaultAgent().
type shadow struct {
	Server   runtime.ServerConfig   `toml:"server"`
	SGLang   sglang.Config          `toml:"sglang"`
	Emulator runtime.EmulatorConfig `toml:"emulator"`
	Plugins  runtime.PluginsConfig  `toml:"plugins"`
	Agents   []toml.Primitive       `toml:"agent"`
	// Frontdoor is runtime.Config's [frontdoor].
	Frontdoor frontdoor.Config `toml:"frontdoor"`
}

// Load reads and validates the config file at path. Relative paths inside it are resolved against the file's
// folder; "~/" and $VARIABLES are expanded in path-valued keys.
func Load(path string) (*runtime.Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, string(src))
}

// Parse decodes src (named path in errors) like Load.
func Parse(path, src string) (cfg *runtime.Config, err error) {
	// No input may take the process down: a panic in the TOML library or a validator becomes an error naming
	// the file (FuzzParse looks for such inputs).
	defer func() {
		if p := recover(); p != nil {
			cfg, err = nil, &Error{File: path, Msg: fmt.Sprintf("internal error while reading the file (please report it): %v", p)}
		}
	}()
	return parse(path, src)
}

func parse(path, src string) (*runtime.Config, error) {
	def := runtime.DefaultConfig()
	sh := shadow{Server: def.Server, SGLang: def.SGLang, Emulator: def.Emulator, Plugins: def.Plugins, Frontdoor: def.Frontdoor}
	md, err := toml.Decode(src, &sh)
	if err != nil {
		return nil, decodeError(path, src, err)
	}
	cfg := runtime.Config{Server: sh.Server, SGLang: sh.SGLang, Emulator: sh.Emulator, Plugins: sh.Plugins, Frontdoor: sh.Frontdoor}
	if md.IsDefined("sglang", "gateway") && !md.IsDefined("sglang", "workers") {
		// A gateway alone replaces the default in-process emulator (workers are then only admin targets).
		cfg.SGLang.Workers = nil
	}
	for _, p := range sh.Agents {
		a := runtime.DefaultAgent()
		if err := md.PrimitiveDecode(p, &a); err != nil {
			return nil, decodeError(path, src, err)
		}
		cfg.Agents = append(cfg.Agents, a)
	}
	for _, k := range md.Undecoded() {
		key := stripIndices(k.String())
		if insideOpenTable(key) {
			continue // a nested table of a free-form value (parameters, config): decoded with its parent
		}
		return nil, &Error{File: path, Line: lineOf(src, key), Key: key, Msg: "unknown key" + suggest(key)}
	}
	base := filepath.Dir(path)
	cfg.Server.SpoolDir = expandPath(base, cfg.Server.SpoolDir)
	cfg.Plugins.CacheDir = expandPath(base, cfg.Plugins.CacheDir)
	cfg.Emulator.Script = expandPath(base, cfg.Emulator.Script)
	cfg.Emulator.Log = expandPath(base, cfg.Emulator.Log)
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		a.Model = expandPath(base, a.Model)
		if a.ChatTemplate != "" {
			a.ChatTemplate = expandPath(base, a.ChatTemplate)
		}
		if strings.HasSuffix(a.Parser, ".wasm") {
			a.Parser = expandPath(base, a.Parser)
		}
		for _, t := range a.Tools {
			if t.MCP != nil { // $VARS expand in the argv; the server runs in the config file's folder
				for k := range t.MCP.Command {
					t.MCP.Command[k] = os.ExpandEnv(t.MCP.Command[k])
				}
				t.MCP.Dir = base
			}
			if t.Env != nil { // $VARS expand in the URL and header values (tokens stay out of the file)
				t.Env.URL = os.ExpandEnv(t.Env.URL)
				for k, v := range t.Env.Headers {
					t.Env.Headers[k] = os.ExpandEnv(v)
				}
			}
		}
		for _, list := range [][]runtime.PluginConfig{a.Tools, a.Hooks} {
			for j := range list {
				list[j].Plugin = expandPlugin(base, list[j].Plugin)
			}
		}
		if a.Reward != nil {
			a.Reward.Plugin = expandPlugin(base, a.Reward.Plugin)
		}
	}
	if err := cfg.Validate(); err != nil {
		var fe *runtime.FieldError
		if errors.As(err, &fe) {
			return nil, &Error{File: path, Line: lineOf(src, fe.Key), Key: fe.Key, Msg: fe.Msg}
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return &cfg, nil
}

var lastKeyRe = regexp.MustCompile(`\(last key "([^"]*)"\)`)

// decodeError turns the TOML library's errors into Errors; they already carry a line, and type errors a key.
func decodeError(path, src string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	msg := err.Error()
	e := &Error{File: path, Msg: strings.TrimPrefix(msg, "toml: ")}
	if m := lastKeyRe.FindStringSubmatch(msg); m != nil {
		e.Key = stripIndices(m[1])
		e.Line = lineOf(src, e.Key)
	}
	if strings.Contains(msg, "incompatible types") || strings.Contains(msg, "cannot") {
		e.Msg = "wrong type: " + e.Msg
	}
	return e
}

var indexRe = regexp.MustCompile(`\.\d+(\.|$)`)

func stripIndices(k string) string {
	for indexRe.MatchString(k) {
		k = indexRe.ReplaceAllString(k, "$1")
	}
	return k
}

// lineOf finds the line that defines key (dotted, array tables without indices) in src; 0 if not found.
// The TOML library records positions but does not export them, so this walks the table headers itself.
func lineOf(src, key string) int {
	table := ""
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			h := strings.Trim(strings.SplitN(line, "#", 2)[0], " \t[]")
			table = unquote(h)
			if table == key {
				return i + 1
			}
			continue
		}
		eq := strings.Index(line, "=")
		if eq < 0 {
			continue
		}
		k := unquote(strings.TrimSpace(line[:eq]))
		full := k
		if table != "" {
			full = table + "." + k
		}
		if full == key {
			return i + 1
		}
		if strings.HasPrefix(key, full+".") && strings.HasPrefix(strings.TrimSpace(line[eq+1:]), "{") {
			return i + 1
		}
	}
	return 0
}

func unquote(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// knownKeys lists every key runtime.toml accepts (from the struct tags), to suggest the closest one for a typo.
func knownKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeOf(runtime.Duration{}) {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(prefix, f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			keys = append(keys, prefix+name)
			walk(prefix+name+".", f.Type)
		}
	}
	walk("", reflect.TypeOf(runtime.Config{}))
	return keys
}

// openTables are the keys whose values are free-form (any TOML, passed on as JSON): the TOML library reports
// their nested [a.b.c] tables as undecoded although the parent's value holds them.
var openTables = []string{"agent.tools.command.parameters", "agent.tools.config", "agent.hooks.config", "agent.reward.config",
	"agent.chat_template_kwargs"}

func insideOpenTable(key string) bool {
	for _, p := range openTables {
		if strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

func suggest(key string) string {
	prefix, last := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		prefix, last = key[:i+1], key[i+1:]
	}
	best, bestD := "", 3
	for _, k := range knownKeys() {
		if !strings.HasPrefix(k, prefix) || strings.Contains(k[len(prefix):], ".") {
			continue
		}
		if d := editDistance(last, k[len(prefix):]); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// expandPath expands "~/" and $VARS and makes a relative path relative to base. Empty stays empty.
func expandPath(base, p string) string {
	if p == "" {
		return p
	}
	p = os.ExpandEnv(p)
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return p
}

// expandPlugin expands a plugin reference: "builtin:NAME" stays as it is, anything else is a path.
func expandPlugin(base, p string) string {
	if strings.HasPrefix(p, "builtin:") {
		return p
	}
	return expandPath(base, p)
}
