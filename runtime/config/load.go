package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/hfhub"
	"github.com/agentrt/agentrt/runtime/viewer"
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

// shadow is Config with the agents kept raw, so each is decoded over DefaultAgent().
type shadow struct {
	Server   Server           `toml:"server"`
	SGLang   sglang.Config    `toml:"sglang"`
	Emulator Emulator         `toml:"emulator"`
	Plugins  Plugins          `toml:"plugins"`
	Agents   []toml.Primitive `toml:"agent"`
	// Frontdoor is Config's [frontdoor].
	Frontdoor frontdoor.Config `toml:"frontdoor"`
	Viewer    viewer.Config    `toml:"viewer"`
	Bus       bus.Config       `toml:"bus"`
}

// Load reads and validates the config file at path. Relative paths inside it are resolved against the file's
// folder; "~/" and $VARIABLES are expanded in path-valued keys.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, string(src))
}

// Parse decodes src (named path in errors) like Load.
func Parse(path, src string) (cfg *Config, err error) {
	// No input may take the process down: a panic in the TOML library or a validator becomes an error naming
	// the file (FuzzParse looks for such inputs).
	defer func() {
		if p := recover(); p != nil {
			cfg, err = nil, &Error{File: path, Msg: fmt.Sprintf("internal error while reading the file (please report it): %v", p)}
		}
	}()
	return parse(path, src)
}

func parse(path, src string) (*Config, error) {
	def := DefaultConfig()
	sh := shadow{Server: def.Server, SGLang: def.SGLang, Emulator: def.Emulator, Plugins: def.Plugins, Frontdoor: def.Frontdoor, Viewer: def.Viewer, Bus: def.Bus}
	md, err := toml.Decode(src, &sh)
	if err != nil {
		return nil, decodeError(path, src, err)
	}
	cfg := Config{Server: sh.Server, SGLang: sh.SGLang, Emulator: sh.Emulator, Plugins: sh.Plugins, Frontdoor: sh.Frontdoor, Viewer: sh.Viewer, Bus: sh.Bus}
	if md.IsDefined("sglang", "gateway") && !md.IsDefined("sglang", "workers") {
		// A gateway alone replaces the default in-process emulator (workers are then only admin targets).
		cfg.SGLang.Workers = nil
	}
	for _, p := range sh.Agents {
		a := DefaultAgent()
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
	if err := checkDurations(path, src); err != nil {
		return nil, err
	}
	markEntries(path, src, cfg.Agents)
	base := filepath.Dir(path)
	cfg.Server.SpoolDir = expandPath(base, cfg.Server.SpoolDir)
	if cfg.Bus.Dir == "" {
		cfg.Bus.Dir = filepath.Join(cfg.Server.SpoolDir, "bus")
		cfg.busDirDefault = true
	} else {
		cfg.Bus.Dir = expandPath(base, cfg.Bus.Dir)
	}
	cfg.Plugins.CacheDir = expandPath(base, cfg.Plugins.CacheDir)
	cfg.Emulator.Script = expandPath(base, cfg.Emulator.Script)
	cfg.Emulator.Log = expandPath(base, cfg.Emulator.Log)
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		// As transformers reads a name: a folder if there is one, else a hub model id (Org/Name).
		if dir := expandPath(base, a.Model); hfhub.ValidRepoID(a.Model) && !isDir(dir) {
			a.Hub = true
		} else {
			if a.Revision != "" {
				return nil, &Error{File: path, Line: lineOf(src, "agent.revision"), Key: "agent.revision",
					Msg: fmt.Sprintf("agent %q: revision applies to a Hugging Face model id (Org/Name); model %q is a folder", a.Name, a.Model)}
			}
			a.Model = dir
		}
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
		for _, list := range [][]Plugin{a.Tools, a.Hooks} {
			for j := range list {
				list[j].Plugin = expandPlugin(base, list[j].Plugin)
			}
		}
		if a.Reward != nil {
			a.Reward.Plugin = expandPlugin(base, a.Reward.Plugin)
		}
	}
	if err := cfg.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			line := lineOf(src, fe.Key)
			if parent, _, ok := strings.Cut(fe.Key, "."); ok && line == 0 {
				line = lineOf(src, parent) // a key that is missing: its table's header
			}
			return nil, &Error{File: path, Line: line, Key: fe.Key, Msg: fe.Msg}
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return &cfg, nil
}

// markEntries sets the At of each agent's [[agent.tools]], [[agent.hooks]] and [agent.reward] entry to the line of
// its table header. An agent whose entries are not all written as headers (inline arrays) keeps them unmarked
// rather than guess.
func markEntries(path, src string, agents []Agent) {
	type lines struct{ tools, hooks, reward []int }
	var found []lines
	for i, raw := range strings.Split(src, "\n") {
		h := strings.TrimSpace(strings.SplitN(raw, "#", 2)[0])
		if !strings.HasPrefix(h, "[") {
			continue
		}
		h = strings.ReplaceAll(strings.ReplaceAll(h, " ", ""), "\t", "")
		if h == "[[agent]]" {
			found = append(found, lines{})
			continue
		}
		if len(found) == 0 {
			continue
		}
		cur := &found[len(found)-1]
		switch h {
		case "[[agent.tools]]":
			cur.tools = append(cur.tools, i+1)
		case "[[agent.hooks]]":
			cur.hooks = append(cur.hooks, i+1)
		case "[agent.reward]":
			cur.reward = append(cur.reward, i+1)
		}
	}
	if len(found) != len(agents) {
		return
	}
	mark := func(pcs []Plugin, at []int) {
		if len(at) != len(pcs) {
			return
		}
		for i := range pcs {
			pcs[i].At = fmt.Sprintf("%s:%d", path, at[i])
		}
	}
	for i := range agents {
		a := &agents[i]
		mark(a.Tools, found[i].tools)
		mark(a.Hooks, found[i].hooks)
		if a.Reward != nil {
			if len(found[i].reward) == 1 {
				a.Reward.At = fmt.Sprintf("%s:%d", path, found[i].reward[0])
			}
		}
	}
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
	if strings.Contains(msg, "invalid duration") {
		e.Msg += ` (use e.g. "30s", "2m")`
	}
	return e
}

var durationType = reflect.TypeFor[time.Duration]()

// checkDurations refuses a duration written as a number: the TOML library reads `timeout = 30` as 30 ns, which
// no one means. Every duration of runtime.toml is a string such as "30s" (the library parses those itself). It
// walks the file's tables alongside Config's fields, so it covers every section's durations, the components'
// own (sglang, emulator, environment tools, outbound grants) included.
func checkDurations(path, src string) error {
	var raw map[string]any
	if _, err := toml.Decode(src, &raw); err != nil {
		return nil // the strict decode reported it already
	}
	var walk func(key string, t reflect.Type, v any) error
	walk = func(key string, t reflect.Type, v any) error {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == durationType:
			if _, ok := v.(string); !ok {
				return &Error{File: path, Line: lineOf(src, key), Key: key, Msg: fmt.Sprintf("want a duration such as \"30s\" (a number has no unit), got %v", v)}
			}
		case t.Kind() == reflect.Slice:
			switch list := v.(type) {
			case []map[string]any:
				for _, e := range list {
					if err := walk(key, t.Elem(), e); err != nil {
						return err
					}
				}
			case []any:
				for _, e := range list {
					if err := walk(key, t.Elem(), e); err != nil {
						return err
					}
				}
			}
		case t.Kind() == reflect.Struct:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ft := range tomlFields(t) {
				if sub, ok := m[name]; ok {
					if err := walk(strings.TrimPrefix(key+"."+name, "."), ft, sub); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return walk("", reflect.TypeFor[Config](), raw)
}

// tomlFields maps the TOML keys of a struct type (its embedded structs' included) to their field types.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			for k, v := range tomlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out[name] = f.Type
		}
	}
	return out
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
		if t.Kind() != reflect.Struct {
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
	walk("", reflect.TypeOf(Config{}))
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

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// expandPlugin expands a plugin reference: "builtin:NAME" stays as it is, anything else is a path.
func expandPlugin(base, p string) string {
	if strings.HasPrefix(p, "builtin:") {
		return p
	}
	return expandPath(base, p)
}
