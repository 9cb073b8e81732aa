package parsers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/internal/jsonw"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// kind is what a tool's JSON schema says about one parameter.
type kind uint8

const (
	kindUndeclared kind = iota // the parameter is not in the schema's properties
	kindUntyped                // declared without a usable "type"
	kindAny                    // a type the parsers do not model (several types, anyOf, ...)
	kindString
	kindInteger
	kindNumber
	kindBoolean
	kindObject
	kindArray
	kindNull
)

var kindNames = [...]string{"undeclared", "untyped", "any", "string", "integer", "number", "boolean", "object", "array", "null"}

func (k kind) String() string { return kindNames[k] }

// param is one declared parameter: its type and the constraints the parsers check (plugins/ABI.md 5.1, the
// argument policy).
type param struct {
	name string
	kind kind
	enum []value // allowed values ("enum", or "const" as a one-value enum); nil: any
	// minimum / maximum and their exclusive forms (JSON Schema draft 6+ numbers, or draft 4's booleans).
	min, max         float64
	hasMin, hasMax   bool
	exclMin, exclMax bool
}

type tool struct {
	name     string
	params   []param
	required []string // "required": names that must be present (and not null)
	closed   bool     // "additionalProperties": false: undeclared names are refused
}

func (t *tool) param(name string) kind {
	if p := t.lookupParam(name); p != nil {
		return p.kind
	}
	return kindUndeclared
}

func (t *tool) lookupParam(name string) *param {
	for i := range t.params {
		if t.params[i].name == name {
			return &t.params[i]
		}
	}
	return nil
}

func (t *tool) paramNames() string {
	names := make([]string, len(t.params))
	for i := range t.params {
		names[i] = t.params[i].name
	}
	return strings.Join(names, ", ")
}

// Tools is a parsed list of tool specifications: the tool names a completion may call and their parameter
// schemas. The zero value, nil and an empty list mean "no tools given": names are then not checked (the
// runtime reports a call to a missing tool when it dispatches it), qwen3_coder keeps every value a string and
// glm45 reads a value as JSON when it is JSON. Tools is immutable after ParseTools and safe for concurrent use.
type Tools struct {
	tools []tool
}

// Len returns the number of tools.
func (ts *Tools) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.tools)
}

// Names returns the tool names in spec order.
func (ts *Tools) Names() []string {
	if ts == nil {
		return nil
	}
	names := make([]string, len(ts.tools))
	for i := range ts.tools {
		names[i] = ts.tools[i].name
	}
	return names
}

func (ts *Tools) lookup(name string) *tool {
	if ts == nil {
		return nil
	}
	for i := range ts.tools {
		if ts.tools[i].name == name {
			return &ts.tools[i]
		}
	}
	return nil
}

// ToolsFromSpecs reads the agent's tool specs as a parser plugin receives them at init (name and parameters of
// each): the one way both the Wasm build (parsers/wasm) and the in-process parsers (runtime/system) read them.
//
// # Errors
//
// As ParseTools.
func ToolsFromSpecs(specs []abi.ToolSpec) (*Tools, error) {
	b := []byte{'['}
	for i, s := range specs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonw.AppendString(b, s.Name)
		if len(s.Parameters) > 0 {
			b = append(b, `,"parameters":`...)
			b = append(b, s.Parameters...)
		}
		b = append(b, '}')
	}
	return ParseTools(append(b, ']'))
}

// ParseTools reads tool specifications: a JSON array of OpenAI tool objects
// ({"type":"function","function":{"name":...,"parameters":{JSON schema}}}) or of bare function objects
// ({"name":...,"parameters":...}). Empty input and "null" mean no tools.
//
// # Errors
//
// The input is not a JSON array, an element has no string name, a name repeats, or "parameters" is not an
// object. Each error names the element index.
func ParseTools(spec []byte) (*Tools, error) {
	s := string(spec)
	if strings.TrimSpace(s) == "" || strings.TrimSpace(s) == "null" {
		return &Tools{}, nil
	}
	v, i, err := decodeValue(s, 0, 0)
	if err == nil {
		if i = skipSpace(s, i); i != len(s) {
			err = errAt(i, describe(s, i)+" after top-level value")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("parsers: tool specs: %w", err)
	}
	if v.kind != 'a' {
		return nil, fmt.Errorf("parsers: tool specs: want a JSON array of tool objects")
	}
	ts := &Tools{tools: make([]tool, 0, len(v.arr))}
	for n := range v.arr {
		t, err := parseTool(&v.arr[n])
		if err != nil {
			return nil, fmt.Errorf("parsers: tool specs: tools[%d]: %w", n, err)
		}
		if ts.lookup(t.name) != nil {
			return nil, fmt.Errorf("parsers: tool specs: tools[%d]: duplicate tool name %q", n, t.name)
		}
		ts.tools = append(ts.tools, t)
	}
	return ts, nil
}

func parseTool(v *value) (tool, error) {
	if v.kind != 'o' {
		return tool{}, fmt.Errorf("want a tool object")
	}
	fn := v
	if f := v.get("function"); f != nil {
		if f.kind != 'o' {
			return tool{}, fmt.Errorf(`"function" is not an object`)
		}
		fn = f
	}
	name := fn.get("name")
	if name == nil || name.kind != 's' || name.str == "" {
		return tool{}, fmt.Errorf(`missing "name" (a non-empty string)`)
	}
	t := tool{name: name.str}
	params := fn.get("parameters")
	if params == nil || params.kind == 'z' {
		return t, nil
	}
	if params.kind != 'o' {
		return tool{}, fmt.Errorf("tool %q: \"parameters\" is not a JSON schema object", t.name)
	}
	if req := params.get("required"); req != nil && req.kind == 'a' {
		for _, r := range req.arr {
			if r.kind == 's' {
				t.required = append(t.required, r.str)
			}
		}
	}
	if ap := params.get("additionalProperties"); ap != nil && ap.kind == 'b' && ap.str == "false" {
		t.closed = true
	}
	props := params.get("properties")
	if props == nil || props.kind == 'z' {
		return t, nil
	}
	if props.kind != 'o' {
		return tool{}, fmt.Errorf("tool %q: \"parameters.properties\" is not an object", t.name)
	}
	for _, m := range props.obj {
		t.params = append(t.params, schemaParam(m.key, &m.val))
	}
	return t, nil
}

// schemaParam reads one property schema: its kind and the constraints the parsers check. A constraint keyword of
// the wrong shape (a string minimum, an enum that is not an array) is not modelled, and so not checked.
func schemaParam(name string, s *value) param {
	p := param{name: name, kind: schemaKind(s)}
	if s.kind != 'o' {
		return p
	}
	if e := s.get("enum"); e != nil && e.kind == 'a' {
		p.enum = e.arr
		if p.enum == nil {
			p.enum = []value{} // enum: [] allows nothing
		}
	} else if c := s.get("const"); c != nil {
		p.enum = []value{*c}
	}
	num := func(key string) (float64, bool) {
		v := s.get(key)
		if v == nil || v.kind != 'n' {
			return 0, false
		}
		f, err := strconv.ParseFloat(v.str, 64)
		return f, err == nil
	}
	flag := func(key string) bool {
		v := s.get(key)
		return v != nil && v.kind == 'b' && v.str == "true"
	}
	p.min, p.hasMin = num("minimum")
	p.max, p.hasMax = num("maximum")
	p.exclMin, p.exclMax = p.hasMin && flag("exclusiveMinimum"), p.hasMax && flag("exclusiveMaximum") // draft 4
	if x, ok := num("exclusiveMinimum"); ok && (!p.hasMin || x >= p.min) {
		p.min, p.hasMin, p.exclMin = x, true, true
	}
	if x, ok := num("exclusiveMaximum"); ok && (!p.hasMax || x <= p.max) {
		p.max, p.hasMax, p.exclMax = x, true, true
	}
	return p
}

// schemaKind maps a property schema to a kind. Type names follow SGLang's Qwen3-Coder detector: int*, uint*,
// long*, short*, unsigned* are integers; num* and float* numbers; bool/binary booleans; dict*/list*/arr aliases.
func schemaKind(s *value) kind {
	if s.kind != 'o' {
		return kindUntyped
	}
	t := s.get("type")
	if t == nil {
		switch {
		case s.get("anyOf") != nil || s.get("oneOf") != nil || s.get("allOf") != nil:
			return kindAny
		case s.get("properties") != nil:
			return kindObject
		case s.get("items") != nil:
			return kindArray
		}
		return kindUntyped
	}
	switch t.kind {
	case 's':
		return typeName(t.str)
	case 'a':
		// ["T", "null"] is T (null is accepted for every kind anyway); anything wider is not modelled.
		k := kindNull
		for _, el := range t.arr {
			if el.kind != 's' {
				return kindAny
			}
			if el.str == "null" {
				continue
			}
			if k != kindNull {
				return kindAny
			}
			k = typeName(el.str)
		}
		return k
	}
	return kindUntyped
}

func typeName(name string) kind {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "string" || n == "str" || n == "text" || n == "varchar" || n == "char" || n == "enum":
		return kindString
	case strings.HasPrefix(n, "int") || strings.HasPrefix(n, "uint") || strings.HasPrefix(n, "long") ||
		strings.HasPrefix(n, "short") || strings.HasPrefix(n, "unsigned"):
		return kindInteger
	case strings.HasPrefix(n, "num") || strings.HasPrefix(n, "float") || n == "double":
		return kindNumber
	case n == "boolean" || n == "bool" || n == "binary":
		return kindBoolean
	case n == "object" || strings.HasPrefix(n, "dict"):
		return kindObject
	case n == "array" || n == "arr" || strings.HasPrefix(n, "list"):
		return kindArray
	case n == "null":
		return kindNull
	}
	return kindAny
}

// checkValue reports whether the compact JSON value v has kind k; null is accepted for every kind (optional
// parameters are commonly passed as null). It returns "" when v is acceptable, else what is wrong.
func checkValue(k kind, v string) string {
	if v == "null" {
		return ""
	}
	var got kind
	switch v[0] {
	case '{':
		got = kindObject
	case '[':
		got = kindArray
	case '"':
		got = kindString
	case 't', 'f':
		got = kindBoolean
	default:
		got = kindNumber
		if _, integer, _ := scanNumber(v, 0); integer {
			got = kindInteger
		}
	}
	switch {
	case k == got, k == kindNumber && got == kindInteger:
		return ""
	case k <= kindAny:
		return ""
	}
	return "want " + k.String() + ", got " + got.String() + " " + clip(v)
}

// argsMembers selects, from the members compactValue recorded, those of an arguments object: the ones at depth,
// with keys inside the object, whose offsets are relative to the output of compactValue; base is where the
// arguments object starts in that output. The zero value selects nothing (arguments checked by the caller).
type argsMembers struct {
	all   []jmember
	depth int
	base  int
}

// checkArgs validates a compact JSON object of arguments against t, the argument policy of plugins/ABI.md 5.1: no
// repeated key; each declared parameter's value has the declared type (null is accepted for an optional
// parameter), is one of its enum (or its const) and within its minimum/maximum; every required parameter is
// present and not null; with "additionalProperties": false, no undeclared key. Nested values and the other
// keywords (pattern, lengths, formats, ...) are the tool's business. It returns "" when the arguments are
// acceptable, else what is wrong: which parameter, what was wanted, what was got.
func checkArgs(t *tool, args string, ms argsMembers) string {
	end := ms.base + len(args)
	present := 0 // how many of t.required are present and not null (names are distinct in a valid call)
	for k := range ms.all {
		m := &ms.all[k]
		if m.depth != ms.depth || m.keyLo <= ms.base || m.keyLo >= end {
			continue
		}
		key := args[m.keyLo-ms.base : m.keyHi-ms.base]
		for j := range k {
			prev := &ms.all[j]
			if prev.depth == ms.depth && prev.keyLo > ms.base && prev.keyLo < end && prev.keyHi-prev.keyLo == len(key) &&
				args[prev.keyLo-ms.base:prev.keyHi-ms.base] == key {
				return "parameter " + key + " is given twice"
			}
		}
		if t == nil {
			continue
		}
		name := key[1 : len(key)-1]
		if strings.IndexByte(name, '\\') >= 0 {
			name = unquote(key)
		}
		v := args[m.valueLo-ms.base : m.valueHi-ms.base]
		required := t.isRequired(name)
		if required && v != "null" {
			present++
		}
		p := t.lookupParam(name)
		if p == nil {
			if t.closed {
				return "unknown parameter " + strconv.Quote(name) + " (the tool takes: " + t.paramNames() + ")"
			}
			continue
		}
		if v == "null" {
			if required {
				return "parameter " + strconv.Quote(name) + " is required, got null"
			}
			continue
		}
		if msg := p.check(v); msg != "" {
			return "parameter " + strconv.Quote(name) + ": " + msg
		}
	}
	if t != nil && present < len(t.required) {
		var missing []string
		for _, r := range t.required {
			if !hasMember(args, ms, r) {
				missing = append(missing, strconv.Quote(r))
			}
		}
		switch len(missing) {
		case 0:
		case 1:
			return "missing required parameter " + missing[0]
		default:
			return "missing required parameters " + strings.Join(missing, ", ")
		}
	}
	return ""
}

func (t *tool) isRequired(name string) bool {
	for _, r := range t.required {
		if r == name {
			return true
		}
	}
	return false
}

// hasMember reports whether the arguments have a member name (any value).
func hasMember(args string, ms argsMembers, name string) bool {
	end := ms.base + len(args)
	for k := range ms.all {
		m := &ms.all[k]
		if m.depth != ms.depth || m.keyLo <= ms.base || m.keyLo >= end {
			continue
		}
		key := args[m.keyLo-ms.base : m.keyHi-ms.base]
		if key[1:len(key)-1] == name || (strings.IndexByte(key, '\\') >= 0 && unquote(key) == name) {
			return true
		}
	}
	return false
}

// check checks a compact, non-null JSON value against p's type, enum and range; "" when it fits.
func (p *param) check(v string) string {
	if p.kind > kindAny {
		if msg := checkValue(p.kind, v); msg != "" {
			return msg
		}
	}
	if p.enum != nil && !inEnum(p.enum, v) {
		return "want one of " + enumList(p.enum) + ", got " + clip(v)
	}
	if (p.hasMin || p.hasMax) && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return ""
		}
		switch {
		case p.hasMin && p.exclMin && !(f > p.min):
			return "want > " + formatNum(p.min) + ", got " + clip(v)
		case p.hasMin && !p.exclMin && !(f >= p.min):
			return "want >= " + formatNum(p.min) + ", got " + clip(v)
		case p.hasMax && p.exclMax && !(f < p.max):
			return "want < " + formatNum(p.max) + ", got " + clip(v)
		case p.hasMax && !p.exclMax && !(f <= p.max):
			return "want <= " + formatNum(p.max) + ", got " + clip(v)
		}
	}
	return ""
}

func formatNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// inEnum reports whether the compact JSON value v equals one of the enum's values (JSON equality: strings by
// their decoded text, numbers by value, objects by members in any order).
func inEnum(enum []value, v string) bool {
	dv, _, err := decodeValue(v, 0, 0)
	if err != nil {
		return false
	}
	for i := range enum {
		if equalValue(&enum[i], &dv) {
			return true
		}
	}
	return false
}

func equalValue(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 'n':
		x, errx := strconv.ParseFloat(a.str, 64)
		y, erry := strconv.ParseFloat(b.str, 64)
		return errx == nil && erry == nil && x == y
	case 'a':
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !equalValue(&a.arr[i], &b.arr[i]) {
				return false
			}
		}
		return true
	case 'o':
		if len(a.obj) != len(b.obj) {
			return false
		}
		for i := range a.obj {
			bv := b.get(a.obj[i].key)
			if bv == nil || !equalValue(&a.obj[i].val, bv) {
				return false
			}
		}
		return true
	}
	return a.str == b.str
}

// enumList writes an enum's values as compact JSON, the first 10 of them.
func enumList(enum []value) string {
	var b []byte
	for i := range enum {
		if i == 10 {
			b = append(b, ", ..."...)
			break
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendValue(b, &enum[i])
	}
	if len(b) == 0 {
		return "nothing (an empty enum)"
	}
	return string(b)
}

// appendValue appends v as compact JSON.
func appendValue(b []byte, v *value) []byte {
	switch v.kind {
	case 'z':
		return append(b, "null"...)
	case 's':
		return appendQuoted(b, v.str)
	case 'a':
		b = append(b, '[')
		for i := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, &v.arr[i])
		}
		return append(b, ']')
	case 'o':
		b = append(b, '{')
		for i := range v.obj {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, v.obj[i].key)
			b = append(b, ':')
			b = appendValue(b, &v.obj[i].val)
		}
		return append(b, '}')
	}
	return append(b, v.str...) // numbers and booleans keep their literal
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
