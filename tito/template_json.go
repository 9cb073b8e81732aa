package tito

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// This file turns JSON into the values the Jinja engine sees (ordered dicts, Python ints and floats) and back
// into text exactly as Python's json.dumps writes it, which is what transformers' tojson filter calls.

// jsonToValue decodes one raw JSON value into engine values: objects become *exec.Dict (key order kept; a repeated
// key keeps its first position and last value, as Python's json.loads), arrays []any, integers int, other numbers
// float64, null nil. It is a small strict parser: encoding/json's token API costs a quarter of a render.
func jsonToValue(raw json.RawMessage) (any, error) {
	p := jsonParser{s: raw}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("trailing data after JSON value")
	}
	return v, nil
}

type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > 10000 {
		return nil, p.errorf("nested too deeply")
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		d := &exec.Dict{Pairs: []*exec.Pair{}}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return d, nil
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, p.errorf("want an object key")
			}
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errorf("want ':'")
			}
			p.i++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			setPair(d, key, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				d.Pairs = slices.Clip(d.Pairs)
				return d, nil
			}
			return nil, p.errorf("want ',' or '}'")
		}
	case c == '[':
		p.i++
		list := []any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return list, nil
		}
		for {
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return slices.Clip(list), nil // no spare capacity: a template's append cannot write into it
			}
			return nil, p.errorf("want ',' or ']'")
		}
	case c == '"':
		return p.str()
	case c == 't' && bytes.HasPrefix(p.s[p.i:], []byte("true")):
		p.i += 4
		return true, nil
	case c == 'f' && bytes.HasPrefix(p.s[p.i:], []byte("false")):
		p.i += 5
		return false, nil
	case c == 'n' && bytes.HasPrefix(p.s[p.i:], []byte("null")):
		p.i += 4
		return nil, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && strings.IndexByte("0123456789+-.eE", p.s[p.i]) >= 0 {
			p.i++
		}
		num := string(p.s[start:p.i])
		if !numberRe.MatchString(num) {
			return nil, p.errorf("bad number %q", num)
		}
		return pyNumber(num)
	}
	return nil, p.errorf("unexpected character %q", p.s[p.i])
}

var numberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// str parses a JSON string at p.i (which is '"'), as encoding/json does (invalid UTF-8 and lone surrogates
// become U+FFFD).
func (p *jsonParser) str() (string, error) {
	p.i++
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			if s := p.s[start:p.i]; utf8.Valid(s) {
				p.i++
				return string(s), nil
			}
			break // invalid UTF-8: the slow path replaces it as encoding/json does
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	// Slow path: escapes. Let encoding/json unescape the whole string literal.
	p.i = start
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' {
			p.i += 2
			continue
		}
		if c == '"' {
			var out string
			if err := json.Unmarshal(p.s[start-1:p.i+1], &out); err != nil {
				return "", p.errorf("bad string: %v", err)
			}
			p.i++
			return out, nil
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

// setPair sets key in d, replacing an earlier value in place (a Python dict keeps the first position).
func setPair(d *exec.Dict, key string, v any) {
	for _, p := range d.Pairs {
		if p.Key.String() == key {
			p.Value = exec.ToValue(v)
			return
		}
	}
	d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(key), Value: exec.ToValue(v)})
}

// pyNumber parses a JSON number as Python's json.loads does: an int when it has no fraction or exponent.
func pyNumber(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return nil, err
	}
	return f, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// pyJSON holds the options of Python's json.dumps that transformers' tojson exposes.
type pyJSON struct {
	ensureASCII bool
	indent      *string // nil: no newlines
	itemSep     string
	keySep      string
	sortKeys    bool
}

// dumps writes v as Python's json.dumps would.
func (o *pyJSON) dumps(v *exec.Value) (string, error) {
	var b strings.Builder
	if err := o.write(&b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (o *pyJSON) newline(b *strings.Builder, level int) {
	b.WriteByte('\n')
	for range level {
		b.WriteString(*o.indent)
	}
}

func (o *pyJSON) write(b *strings.Builder, v *exec.Value, level int) error {
	if level > 200 {
		return fmt.Errorf("tojson: value nested too deeply")
	}
	if v == nil || v.IsNil() {
		b.WriteString("null")
		return nil
	}
	if v.IsError() {
		return fmt.Errorf("tojson: %s", v.Error())
	}
	switch {
	case v.IsBool():
		if v.Bool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
		return nil
	case v.IsInteger():
		b.WriteString(strconv.FormatInt(int64(v.Integer()), 10))
		return nil
	case v.IsFloat():
		b.WriteString(pyFloatJSON(v.Float()))
		return nil
	case v.IsString():
		o.writeString(b, v.String())
		return nil
	case v.IsDict():
		return o.writeDict(b, v, level)
	case v.IsList():
		n := v.Len()
		if n == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			if o.indent != nil {
				o.newline(b, level+1)
			}
			if err := o.write(b, exec.ToValue(v.Index(i)), level+1); err != nil {
				return err
			}
		}
		if o.indent != nil {
			o.newline(b, level)
		}
		b.WriteByte(']')
		return nil
	}
	return fmt.Errorf("tojson: object of type %s is not JSON serializable", v.Val.Kind())
}

func (o *pyJSON) writeDict(b *strings.Builder, v *exec.Value, level int) error {
	type pair struct {
		key string
		val *exec.Value
	}
	var pairs []pair
	for _, k := range v.Keys() {
		val, _ := v.GetItem(k.Interface())
		key, err := pyKey(k)
		if err != nil {
			return err
		}
		pairs = append(pairs, pair{key, val})
	}
	if o.sortKeys {
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	}
	if len(pairs) == 0 {
		b.WriteString("{}")
		return nil
	}
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		if o.indent != nil {
			o.newline(b, level+1)
		}
		o.writeString(b, p.key)
		b.WriteString(o.keySep)
		if err := o.write(b, p.val, level+1); err != nil {
			return err
		}
	}
	if o.indent != nil {
		o.newline(b, level)
	}
	b.WriteByte('}')
	return nil
}

// pyKey converts a dict key as json.dumps does: strings as they are, numbers and booleans to their JSON text.
func pyKey(k *exec.Value) (string, error) {
	switch {
	case k.IsString():
		return k.String(), nil
	case k.IsBool():
		if k.Bool() {
			return "true", nil
		}
		return "false", nil
	case k.IsInteger():
		return strconv.Itoa(k.Integer()), nil
	case k.IsFloat():
		return pyFloatJSON(k.Float()), nil
	case k.IsNil():
		return "null", nil
	}
	return "", fmt.Errorf("tojson: keys must be str, int, float, bool or None, not %s", k.Val.Kind())
}

// writeString quotes s as json.dumps does (ensure_ascii decides whether non-ASCII is escaped).
func (o *pyJSON) writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 || (o.ensureASCII && c == 0x7f) {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if o.ensureASCII {
			if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// pyFloatJSON formats f as Python's float.__repr__ (which json.dumps uses), with NaN and Infinity as json.dumps
// writes them.
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits, in positional notation when the
// decimal exponent is in [-4, 16), else in scientific notation with at least two exponent digits.
func pyFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // like -1.2345e+06
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		var s string
		switch {
		case exp < 0:
			s = "0." + strings.Repeat("0", -exp-1) + digits
		case exp+1 >= len(digits):
			s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		default:
			s = digits[:exp+1] + "." + digits[exp+1:]
		}
		return sign + s
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// goToValue converts plain Go values (as a caller passes template kwargs) into engine values: json.RawMessage is
// decoded with key order kept; maps become dicts with sorted keys; everything else passes through.
func goToValue(v any) (any, error) {
	switch t := v.(type) {
	case nil, string, bool, int, float64, *exec.Dict:
		return t, nil
	case json.RawMessage:
		return jsonToValue(t)
	case int32:
		return int(t), nil
	case int64:
		return int(t), nil
	case float32:
		return float64(t), nil
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := goToValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := &exec.Dict{Pairs: []*exec.Pair{}}
		for _, k := range keys {
			c, err := goToValue(t[k])
			if err != nil {
				return nil, err
			}
			setPair(d, k, c)
		}
		return d, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return int(rv.Convert(reflect.TypeFor[int64]()).Int()), nil
	}
	return nil, fmt.Errorf("unsupported value of type %T (use JSON-like values or json.RawMessage)", v)
}
