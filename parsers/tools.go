package parsers

import (
	"fmt"
	"strconv"
	"strings"
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

type param struct {
	name string
	kind kind
}

type tool struct {
	name   string
	params []param
}

func (t *tool) param(name string) kind {
	for i := range t.params {
		if t.params[i].name == name {
			return t.params[i].kind
		}
	}
	return kindUndeclared
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
	props := params.get("properties")
	if props == nil || props.kind == 'z' {
		return t, nil
	}
	if props.kind != 'o' {
		return tool{}, fmt.Errorf("tool %q: \"parameters.properties\" is not an object", t.name)
	}
	for _, m := range props.obj {
		t.params = append(t.params, param{name: m.key, kind: schemaKind(&m.val)})
	}
	return t, nil
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

// checkArgs validates a compact JSON object of arguments against t: no repeated key, and each declared parameter
// with a modelled type has a value of that type. Undeclared keys, "required" and nested values are the tool's
// business. It returns "" when the arguments are acceptable.
func checkArgs(t *tool, args string, ms argsMembers) string {
	end := ms.base + len(args)
	for k := range ms.all {
		m := &ms.all[k]
		if m.depth != ms.depth || m.keyLo <= ms.base || m.keyLo >= end {
			continue
		}
		key := args[m.keyLo-ms.base : m.keyHi-ms.base]
		for j := range k {
			prev := &ms.all[j]
			if prev.depth == ms.depth && prev.keyLo > ms.base && prev.keyHi-prev.keyLo == len(key) &&
				args[prev.keyLo-ms.base:prev.keyHi-ms.base] == key {
				return "repeated key " + key
			}
		}
		if t == nil {
			continue
		}
		name := key[1 : len(key)-1]
		if strings.IndexByte(name, '\\') >= 0 {
			name = unquote(key)
		}
		if kd := t.param(name); kd > kindAny {
			if msg := checkValue(kd, args[m.valueLo-ms.base:m.valueHi-ms.base]); msg != "" {
				return "parameter " + strconv.Quote(name) + ": " + msg
			}
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
